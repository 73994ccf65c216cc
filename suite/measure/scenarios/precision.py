"""The `precision` scenario: the guide's forward at the cell's dtype (eager or compiled), timed as
`inference` is, and its answers judged against float32 eager's on the same inputs
(suite.measure.parity): what reduced precision and compiling change in the answer.

Before anything is timed, a float32 copy of the model (the same weights: the same seed, the
same checkpoint) answers every input of `parity.variants` and is dropped. After the timed
calls, the cell's own function answers them too; the row gets the agreement figures and the
`parity` verdict. A dtype this torch cannot run on this device is `skipped` with the reason.

An autocast cell (`autocast-bfloat16`, `autocast-float16`: suite.measure.autocast) keeps float32
weights and inputs and makes every call of its function, eager or compiled, under
torch.autocast; one this torch would silently run in float32 is `skipped` too.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from suite.measure import autocast, inputs, models, parity
from suite.measure import cell as parts
from suite.measure.accuracy import snapshot
from suite.measure.faults import lower_precision
from suite.measure.scenarios.inference import Inference
from suite.measure.timing import TimingLoop
from suite.results import one_line
from suite.spec.model import Cell
from suite.spec.vocab import autocast_to, weights_dtype


class Unsupported(Exception):
    """This torch cannot run the cell's dtype on its device; the message says why (`skipped`)."""


class Precision(Inference):
    """Inference plus the parity check; the fault `lowp` plants a precision bug in the model."""

    task_agreement = False  # its parity (against float32 eager, on every variant) is the agreement

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        import torch

        super().__init__(cell, model, batch)
        self.device = str(next(model.parameters()).device)
        self.dtype = getattr(torch, weights_dtype(cell.settings.dtype))  # the weights' and inputs'
        self.autocast = autocast_to(cell.settings.dtype)  # "" for a plain dtype
        if self.autocast:
            why = autocast.unsupported(self.device, self.autocast)
            if why:
                raise Unsupported(why)
            self.eager = self._call(self.eager)
        with torch.no_grad():
            self._probe()
            self.batches, self.reference = self._reference()
        self.planted = lower_precision(model, cell.model.name)  # test-only (suite.measure.faults)
        self.compiled_model: Any = None

    def _call(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        """`fn` as this cell calls it: under torch.autocast in an autocast cell."""
        return autocast.under(fn, self.device, self.autocast) if self.autocast else fn

    def _probe(self) -> None:
        """One eager call: a dtype the device's kernels lack becomes Unsupported."""
        try:
            self.eager()
        except (RuntimeError, NotImplementedError) as exc:
            text = str(exc)
            if "not implemented for" not in text and "not supported" not in text.lower():
                raise
            import torch

            raise Unsupported(
                f"torch {torch.__version__} cannot run {self.cell.model.name} in {self.cell.settings.dtype} "
                f"on {self.device}: {one_line(text, 160)}"
            ) from None

    def _reference(self) -> tuple[list[dict[str, Any]], list[tuple[list[Any], list[Any]]]]:
        """The variants' batches at the cell's dtype, and float32 eager's (answers, output
        snapshot) for each."""
        import torch

        s = self.cell.settings
        fp32 = replace(self.cell, settings=replace(s, dtype="float32"))
        ref_model, _, _ = parts.prepare(fp32, self.device)
        processor, text_offline = models.build_processor(self.cell.model, s)
        self.processor = processor
        image, _ = inputs.load_image(s.image, offline=inputs.is_offline(s.weights))
        text_cfg = getattr(ref_model.config, "text_config", None)
        batches, reference = [], []
        for _, variant in parity.variants(image):
            batch = inputs.make_batch(
                processor,
                variant,
                self.cell.batch_size,
                self.cell.model.text_queries,
                text_offline=text_offline,
                vocab_size=getattr(text_cfg, "vocab_size", 49408),
            )
            batch = {k: v.to(device=self.device) for k, v in batch.items()}
            out = ref_model(**batch)
            reference.append((parity.answers(self.cell.model.task, processor, out), snapshot(out)))
            batches.append(
                {k: v.to(dtype=self.dtype) if v.is_floating_point() else v for k, v in batch.items()}
            )
        del ref_model
        if self.device.startswith("cuda"):
            torch.cuda.empty_cache()
        return batches, reference

    def compile(self) -> Callable[[], Any]:
        self.compiled_model = parts.compile_model(self.model, self.cell.mode)
        compiled_model, batch = self._call(self.compiled_model), self.batch

        def compiled() -> Any:
            return compiled_model(**batch)

        return compiled

    def extra_fields(self, loop: TimingLoop, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        """The parity columns: the row's function (compiled, or eager) on every variant."""
        fn = self._call(self.compiled_model if compiled is not None else self.model)
        task, refs, outs, ref_tensors, out_tensors = self.cell.model.task, [], [], [], []
        rows: list[Any] | None = []
        for batch, (ref_answers, ref_snapshot) in zip(self.batches, self.reference, strict=True):
            out = fn(**batch)
            ref_tensors += ref_snapshot
            out_tensors += snapshot(out)
            refs += ref_answers
            outs += parity.answers(task, self.processor, out)
            logits = parity.logit_rows(task, ref_snapshot, len(ref_answers))
            rows = None if rows is None or logits is None else rows + logits
        diffs = parity.scaled_diff(ref_tensors, out_tensors)
        judged = parity.agreement(task, refs, outs, diffs, rows)
        fields = judged.fields(self.cell.settings)
        notes = [f"against float32 eager on {len(self.batches)} inputs x batch {self.cell.batch_size}"]
        if self.autocast:
            notes.append(f"float32 weights, each call under torch.autocast({self.device!r}, {self.autocast})")
        tie = judged.tie_note(self.cell.settings)
        if tie:
            notes.append(tie)
        if self.planted:
            notes.append(f"planted precision bug (SUITE_FAULT={os.environ.get('SUITE_FAULT', '')})")
        fields["parity_note"] = "; ".join(notes)
        return fields
