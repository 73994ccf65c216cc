"""Compiled outputs against eager: every floating-point tensor of an output, compared within
`tolerance x max |eager|` (scale-relative: a tensor of small values is judged on its own scale).

A tensor whose largest finite |eager| value is below `VANISHING` cannot be judged: its values
are float32 rounding of far larger intermediates (a random-weight MobileNet's outputs are
~1e-25), so any difference or none says nothing about the compiled function. Such a tensor is
checked only for NaN and infinities; when every output vanishes, the cell's accuracy is *not
judgeable* (`judge` gives None, the row an empty `accuracy` and an `accuracy_note`)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

VANISHING = 1e-6  # below this largest |eager| value a tensor is not judged (module docstring)


def flatten_tensors(obj: Any) -> list[Any]:
    """Every floating-point tensor in a model output, in a stable order."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj] if obj.is_floating_point() else []
    if isinstance(obj, dict) or hasattr(obj, "to_tuple"):
        items = obj.items() if isinstance(obj, dict) else zip(obj.keys(), obj.to_tuple(), strict=False)
        return [t for _, v in items for t in flatten_tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in flatten_tensors(v)]
    return []


def snapshot(obj: Any) -> list[Any]:
    """Copies of an output's tensors (CUDA-graph outputs are overwritten by the next replay)."""
    return [t.detach().float().clone() for t in flatten_tensors(obj)]


@dataclass(frozen=True)
class Judged:
    """Compiled against eager: the max |diff| over every output, whether it is within the
    tolerance (None: not judgeable, every output vanishes), and a note for the row."""

    max_diff: float
    passed: bool | None
    note: str = ""


def compare(ref: list[Any], out: list[Any], tolerance: float) -> tuple[float, bool]:
    """(max abs diff, passed) as `judge` decides; an output that cannot be judged passes (the
    train and dynamic-batch scenarios' checks, which have no note)."""
    j = judge(ref, out, tolerance)
    return j.max_diff, j.passed is not False


def judge(ref: list[Any], out: list[Any], tolerance: float) -> Judged:
    """Each tensor must be within tolerance * max finite |ref| (the module docstring).

    A NaN (or an infinity) in the compiled output where eager has none is a difference the
    tolerance cannot cover: the max abs diff is then `nan` (or `inf`) and the check fails; the
    reason, which output and how many values, goes to the worker's log. Values equal in both
    (NaN in both, the same infinity) differ by nothing."""
    import torch

    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out, strict=False)):
        shapes = [tuple(t.shape) for t in ref], [tuple(t.shape) for t in out]
        print(f"accuracy: the outputs differ in number or shape: eager {shapes[0]}, compiled {shapes[1]}")
        return Judged(float("inf"), False)
    worst, passed, judged, vanished, largest = 0.0, True, 0, 0, 0.0
    for i, (a, b) in enumerate(zip(ref, out, strict=False)):
        if a.numel() == 0:
            continue
        same = (a == b) | (torch.isnan(a) & torch.isnan(b))
        diff = torch.where(same, torch.zeros_like(a), (a - b).abs())  # NaN or inf where one side is
        nan = bool(torch.isnan(diff).any())
        d = float("nan") if nan else float(diff.max())
        if nan or math.isinf(d):
            print(f"accuracy: output {i + 1} of {len(ref)} {tuple(a.shape)}: {_nonfinite(a, b)}", flush=True)
        finite = a[torch.isfinite(a)].abs()
        scale = float(finite.max()) if finite.numel() else 0.0
        largest = max(largest, scale)
        if math.isnan(d) or (not math.isnan(worst) and d > worst):  # a NaN, once seen, stays
            worst = d
        if scale < VANISHING:  # not judgeable: only a NaN or an infinity fails it
            vanished += 1
            passed = passed and math.isfinite(d)
            continue
        judged += 1
        passed = passed and d <= tolerance * scale  # False for NaN and inf
    if judged == 0 and vanished:
        note = f"not judgeable: every output vanishes (max |eager| {largest:.3g} < {VANISHING:g})"
        return Judged(worst, None if passed else False, note)
    note = f"{vanished} of {judged + vanished} outputs vanish (not judged)" if vanished else ""
    return Judged(worst, passed, note)


def _nonfinite(a: Any, b: Any) -> str:
    """How many NaN and infinite values each side has, in words (for the worker's log)."""
    import torch

    def count(t: Any) -> str:
        return f"{int(torch.isnan(t).sum())} NaN, {int(torch.isinf(t).sum())} inf"

    return f"compiled has {count(b)}; eager has {count(a)} (of {a.numel()} values)"
