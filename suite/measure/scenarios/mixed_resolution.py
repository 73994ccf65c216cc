"""The `mixed-resolution` scenario: one process, one compiled model, a fixed sequence of image
sizes in turn, under one `dynamic` setting (static, auto, marked: as the dynamic-batch scenario's,
suite.measure.scenarios.dynamic; `marked` marks the height and width of the pixels).

The cell is first measured as an inference cell at the model's own size (the row's latency
columns, compile_s: the first compile). Then, in the same process (docs/mixed-resolution.md):

1. the compiled function at that one size again (`iterations` calls): `fixed_p50_ms`, `fixed_p99_ms`;
2. each other size of the sequence in turn, then the first again: an eager call there, the first
   compiled call (its time over the eager call's: that size's compile), the compiled warm-up
   (CUDA graphs recorded there under reduce-overhead), the compiled output checked against eager's;
3. every size round-robin, eager and compiled interleaved, `iterations` rounds: `mixed_p50_ms`,
   `mixed_p99_ms` (compiled) beside `mixed_eager_p50_ms`, `mixed_eager_p99_ms`.

`recompiles` counts the graphs compiled after the first size's compile (the sequence's);
`mixed_compile_s` the compile seconds paid after the first call; `mixed_cudagraph_records` the
CUDA graphs recorded then. The sizes: the `resolution_scales` setting times the model's own input
size (default 1, 0.75, 1.25; detection 1, 0.75, 0.6: the DETR family's short side 800, 600, 480),
each side rounded to the model's patch size (ViT family) or 32. The ViT family (any model whose
forward takes `interpolate_pos_encoding`) is called with it set.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

from suite.measure.accuracy import compare, snapshot
from suite.measure.cell import compile_model
from suite.measure.counters import dynamo_counts, guard_failures
from suite.measure.phases import Ledger
from suite.measure.scenarios.dynamic import check_supported, compile_options
from suite.measure.scenarios.inference import Inference
from suite.measure.timing import TimingLoop
from suite.spec.model import Cell
from suite.stats import percentile

DEFAULT_SCALES: tuple[float, ...] = (1.0, 0.75, 1.25)
DETECTION_SCALES: tuple[float, ...] = (1.0, 0.75, 0.6)
DEFAULT_ALIGN = 32


def align_of(config: Any) -> int:
    """What each side is rounded to: the patch size of a ViT-like config, else 32."""
    patch = getattr(config, "patch_size", None)
    return patch if isinstance(patch, int) and patch > 0 else DEFAULT_ALIGN


def sizes_for(base: tuple[int, int], scales: tuple[float, ...], align: int) -> list[tuple[int, int]]:
    """The distinct (height, width) of each scale of `base`, rounded to `align`, in order."""
    out: list[tuple[int, int]] = []
    for s in scales:
        size = tuple(max(align, round(side * s / align) * align) for side in base)
        if size not in out:
            out.append(size)  # type: ignore[arg-type]
    return out


def at_size(batch: dict[str, Any], size: tuple[int, int]) -> dict[str, Any]:
    """The batch's images resized to `size` (bilinear); a pixel mask all ones at that size."""
    import torch
    import torch.nn.functional as F

    out = dict(batch)
    pixels = batch["pixel_values"]
    out["pixel_values"] = F.interpolate(pixels.float(), size=size, mode="bilinear", align_corners=False).to(
        pixels.dtype
    )
    if "pixel_mask" in batch:
        mask = batch["pixel_mask"]
        out["pixel_mask"] = torch.ones((mask.shape[0], *size), dtype=mask.dtype, device=mask.device)
    return out


class MixedResolution(Inference):
    """Inference at the model's own size, then the sequence of sizes on the same compiled model."""

    compiled_model: Any = None

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        self.meaning = check_supported(cell.dynamic)  # raises Unsupported (-> skipped) where it must
        if "pixel_values" not in batch:
            raise ValueError(f"{cell.model.name}: no pixel_values input to resize")
        params = inspect.signature(model.forward).parameters
        self.extra = {"interpolate_pos_encoding": True} if "interpolate_pos_encoding" in params else {}
        scales = cell.settings.resolution_scales or (
            DETECTION_SCALES if cell.model.task == "Object Detection" else DEFAULT_SCALES
        )
        base = tuple(batch["pixel_values"].shape[-2:])
        # the model's own size first (its compile is the row's compile_s), then the others
        others = [z for z in sizes_for(base, scales, align_of(model.config)) if z != base]  # type: ignore[arg-type]
        self.sizes: list[tuple[int, int]] = [base, *others]  # type: ignore[list-item]
        self.batches = {s: batch if s == base else at_size(batch, s) for s in self.sizes}
        super().__init__(cell, model, batch)
        extra = self.extra

        def eager() -> Any:
            return model(**batch, **extra)

        self.eager = eager

    def call(self, fn: Any, size: tuple[int, int]) -> Callable[[], Any]:
        batch, extra = self.batches[size], self.extra
        return lambda: fn(**batch, **extra)

    def compile(self) -> Callable[[], Any]:
        if self.cell.dynamic == "marked":
            import torch._dynamo

            for batch in self.batches.values():
                for name in ("pixel_values", "pixel_mask"):
                    if name in batch:
                        torch._dynamo.mark_dynamic(batch[name], batch[name].dim() - 2)
                        torch._dynamo.mark_dynamic(batch[name], batch[name].dim() - 1)
        self.compiled_model = compile_model(self.model, self.cell.mode, **compile_options(self.cell.dynamic))
        return self.call(self.compiled_model, self.sizes[0])

    def extra_fields(self, loop: TimingLoop, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        if compiled is None:
            return {}
        return Sequence(self, loop).fields()


class Sequence:
    """Steps 1 to 3 of the module's docstring."""

    def __init__(self, scenario: MixedResolution, loop: TimingLoop) -> None:
        self.s, self.loop = scenario, loop
        self.notes: list[str] = [scenario.meaning] if scenario.meaning else []

    def arrive(self, size: tuple[int, int]) -> tuple[float, int, tuple[float, bool]]:
        """(compile s, graphs compiled, accuracy) of a size's arrival."""
        s, loop = self.s, self.loop
        eager, compiled = s.call(s.model, size), s.call(s.compiled_model, size)
        loop.warm_up(eager, compiled=False)
        eager_ms, _ = loop.call(eager)
        _, before = dynamo_counts()
        failures = len(guard_failures())
        first_ms, _ = loop.call(compiled)
        _, after = dynamo_counts()
        loop.warm_up(compiled, compiled=True)
        accuracy = compare(snapshot(eager()), snapshot(compiled()), s.cell.settings.tolerance)
        compile_s = max(0.0, first_ms - eager_ms) / 1000.0
        why = "; ".join(dict.fromkeys(guard_failures()[failures:]))
        label = "x".join(map(str, size))
        self.notes.append(
            f"{label}: {after - before} graph(s), {compile_s:.2f} s" + (f" ({why})" if why else "")
        )
        return compile_s, after - before, accuracy

    def fields(self) -> dict[str, Any]:
        s, loop, n = self.s, self.loop, self.s.cell.settings.iterations
        (fixed,) = loop.interleaved([s.call(s.compiled_model, s.sizes[0])], n)
        ledger = Ledger.start()  # CUDA graphs recorded from here on: the sequence's
        compile_s, worst = 0.0, 0.0
        for size in [*s.sizes[1:], s.sizes[0]]:
            seconds, _, (diff, passed) = self.arrive(size)
            compile_s += seconds
            worst = diff if diff != diff or worst != worst else max(worst, diff)  # NaN stays NaN
            if not passed:
                self.notes.append(f"accuracy fail at {'x'.join(map(str, size))} (max |diff| {diff:.3g})")
        ledger.first_call_done()
        records, record_s = ledger.recordings()
        fns = [f for size in s.sizes for f in (s.call(s.model, size), s.call(s.compiled_model, size))]
        samples = loop.interleaved(fns, n)
        eager = [x for i in range(0, len(fns), 2) for x in samples[i]]
        mixed = [x for i in range(1, len(fns), 2) for x in samples[i]]
        return {
            "mixed_sizes": ">".join("x".join(map(str, z)) for z in [*s.sizes, s.sizes[0]]),
            "mixed_compile_s": compile_s,
            "mixed_cudagraph_records": records,
            "mixed_p50_ms": percentile(mixed, 50),
            "mixed_p99_ms": percentile(mixed, 99),
            "mixed_eager_p50_ms": percentile(eager, 50),
            "mixed_eager_p99_ms": percentile(eager, 99),
            "fixed_p50_ms": percentile(fixed, 50),
            "fixed_p99_ms": percentile(fixed, 99),
            "mixed_max_abs_diff": worst,
            "mixed_note": "; ".join(self.notes)
            + (f"; {records} CUDA graph(s) recorded in {record_s:.2f} s" if records else ""),
        }
