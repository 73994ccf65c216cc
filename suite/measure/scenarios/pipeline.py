"""The `pipeline` scenario: one request as a user serves it, from a decoded image to the task's
answer, timed per stage: preprocessing (the model's image processor; its fast variant too where
this transformers has one), the forward (eager, and compiled in a compiled cell), and the
task's post-processing (the classifier's top-5, `post_process_object_detection`,
`post_process_semantic_segmentation` or `_panoptic_`). Every stage and the whole request
(`e2e`: preprocess, forward, post-process in one call) are timed interleaved and synchronized in
one loop (suite.measure.timing), so the stages' medians can be held against the end-to-end one.

The row's own timing columns are the forward's, as in `inference`; the pipeline's are
`pre_*`, `pre_fast_*`, `forward_*`, `post_*`, `e2e_*` (docs/pipeline.md). The request is
`batch_size` copies of the decoded photograph, each preprocessed (the processor's cost grows
with the batch).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.measure import inputs, models
from suite.measure.scenarios.inference import Inference
from suite.measure.timing import TimingLoop
from suite.results import one_line
from suite.spec.model import Cell
from suite.stats import Speedup, Summary

CLASSIFICATION, DETECTION = "Image Classification", "Object Detection"
TOP_K = 5


def fast_processor(cell: Cell, slow: Any) -> tuple[Any, str]:
    """(the fast variant of `slow`, "") or (None, why there is none here): `<Slow>Fast` where this
    transformers has it (not 4.31; 5.x keeps the name for its torchvision processor, which needs
    torchvision). A candidate of the same class as `slow` is not a fast variant."""
    import transformers

    name = type(slow).__name__.removesuffix("Pil")
    cls = getattr(transformers, name + "Fast", None)
    if cls is None:
        return None, f"transformers {transformers.__version__} has no {name}Fast"
    try:
        if cell.settings.weights == "pretrained":
            fast = cls.from_pretrained(cell.model.hub_id, revision=cell.model.revision or None)
        else:
            kwargs = dict(slow.to_dict())
            for key in ("image_processor_type", "processor_class", "_processor_class"):
                kwargs.pop(key, None)
            fast = cls(**kwargs)
    except Exception as exc:  # e.g. 5.x without torchvision: said in the row
        return None, one_line(f"no fast processor: {type(exc).__name__}: {exc}", 160)
    if type(fast) is type(slow):
        return None, f"transformers {transformers.__version__}'s {name}Fast is {name} here"
    return fast, ""


def post_process_name(cell: Cell, processor: Any) -> str:
    """The task's post-processing as a user calls it (a `processor` method, or top-k)."""
    if cell.model.task == CLASSIFICATION:
        return f"top-{TOP_K}"
    if cell.model.task == DETECTION:
        return "post_process_object_detection"
    panoptic = "panoptic" in (cell.model.hub_id or "").lower()
    name = "post_process_panoptic_segmentation" if panoptic else "post_process_semantic_segmentation"
    return name if hasattr(processor, name) else "argmax"


class Pipeline(Inference):
    """Inference, plus the request's stages timed after the row's own calls."""

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        super().__init__(cell, model, batch)
        s = cell.settings
        self.device = str(next(model.parameters()).device)
        self.dtype = next(model.parameters()).dtype
        processor, text_offline = models.build_processor(cell.model, s)
        # OwlViT's processor is text + image: the image processor is the stage; the queries are
        # tokenized once (a deployment's queries are fixed), their rows added to every batch
        self.processor = getattr(processor, "image_processor", processor)
        image, _ = inputs.load_image(s.image, offline=inputs.is_offline(s.weights))
        self.size = (image.size[1], image.size[0])  # (height, width): the answer's coordinates
        self.images = [image] * cell.batch_size
        self.fast, self.fast_note = fast_processor(cell, self.processor)
        self.post_name = post_process_name(cell, self.processor)
        self.text = self._text_rows(processor, text_offline, model)
        self.compiled_model: Any = None

    def _text_rows(self, processor: Any, offline: bool, model: Any) -> dict[str, Any]:
        """OwlViT's query rows for the whole batch (none for the other models)."""
        queries = self.cell.model.text_queries
        if not queries:
            return {}
        if offline:
            text_cfg = getattr(model.config, "text_config", None)
            rows = inputs.standin_text_inputs(queries, getattr(text_cfg, "vocab_size", 49408))
        else:
            rows = dict(processor(text=[list(queries)], return_tensors="pt"))
        return {k: v.repeat(self.cell.batch_size, 1).to(self.device) for k, v in rows.items()}

    def compile(self) -> Callable[[], Any]:
        from suite.measure.cell import compile_model

        self.compiled_model = compile_model(self.model, self.cell.mode)
        compiled_model, batch = self.compiled_model, self.batch

        def compiled() -> Any:
            return compiled_model(**batch)

        return compiled

    def preprocess(self, processor: Any) -> dict[str, Any]:
        """The batch from the decoded images: the processor's tensors (and OwlViT's text rows)
        on the device, floating ones in the model's dtype."""
        import torch

        kwargs: dict[str, Any] = {"return_tensors": "pt"}
        if processor is self.fast and self.device.startswith("cuda"):
            kwargs["device"] = self.device  # a fast processor runs on the GPU
        encoded = dict(processor(images=self.images, **kwargs))
        batch = {k: v for k, v in encoded.items() if isinstance(v, torch.Tensor)}
        batch.update(self.text)
        return {
            k: v.to(device=self.device, dtype=self.dtype if v.is_floating_point() else v.dtype)
            for k, v in batch.items()
        }

    def postprocess(self, out: Any) -> Any:
        """The task's answer from the model's output, as the user would ask for it."""
        import torch

        if self.post_name.startswith("top-"):
            return out.logits.softmax(-1).topk(TOP_K, dim=-1)
        if self.post_name == "argmax":
            return out.logits.argmax(dim=1)
        sizes = [self.size] * self.cell.batch_size
        method = getattr(self.processor, self.post_name)
        if self.post_name == "post_process_object_detection":
            return method(out, threshold=0.5, target_sizes=torch.tensor(sizes))
        return method(out, target_sizes=sizes)

    def extra_fields(self, loop: TimingLoop, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        """The stages and the whole request, timed interleaved: the pipeline's columns."""
        model = self.compiled_model if compiled is not None else self.model
        batch = self.preprocess(self.processor)
        out = model(**batch)

        def pre() -> Any:
            return self.preprocess(self.processor)

        def forward() -> Any:
            return model(**batch)

        def post() -> Any:
            return self.postprocess(out)

        def e2e_of(fn: Any) -> Callable[[], Any]:
            return lambda: self.postprocess(fn(**self.preprocess(self.processor)))

        stages: dict[str, Callable[[], Any]] = {"pre": pre, "forward": forward, "post": post}
        if self.fast is not None:
            stages["pre_fast"] = lambda: self.preprocess(self.fast)
        stages["e2e"] = e2e_of(model)
        if compiled is not None:
            stages["e2e_eager"] = e2e_of(self.model)
        names = list(stages)
        loop.warm_up(stages["e2e"], compiled=compiled is not None)
        timed = loop.interleaved([stages[n] for n in names], self.cell.settings.iterations)
        samples = dict(zip(names, timed, strict=True))
        row: dict[str, Any] = {"pipeline_post": self.post_name, "pre_fast_note": self.fast_note}
        for name in ("pre", "pre_fast", "forward", "post", "e2e"):
            if name in samples:
                summary = Summary.of(samples[name])
                row[f"{name}_median_ms"] = summary.median
                row[f"{name}_ci95_low_ms"] = summary.ci95_low
                row[f"{name}_ci95_high_ms"] = summary.ci95_high
        if compiled is not None:
            speed = Speedup.of(samples["e2e_eager"], samples["e2e"])
            row["e2e_eager_median_ms"] = Summary.of(samples["e2e_eager"]).median
            row["e2e_speedup"] = speed.ratio
            row["e2e_speedup_ci95_low"] = speed.ci95_low
            row["e2e_speedup_ci95_high"] = speed.ci95_high
        return row
