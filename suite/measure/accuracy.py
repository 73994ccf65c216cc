"""Outputs as tensors, and the scale-relative comparison of two of them: every floating-point
tensor within `tolerance x max |eager|` (a tensor of small values judged on its own scale).

A compiled inference row's verdict is suite.measure.accuracy_rule's (the float64 rule,
docs/accuracy.md). This comparison is what the other checks use: a training step's loss
(suite.measure.scenarios.train), the mixed-resolution scenario's other sizes, the parity
figures' max |diff|. A tensor whose largest finite |eager| value is below `VANISHING` cannot be
judged on its own scale: it is checked only for NaN and infinities (`compare` then passes it).
"""

from __future__ import annotations

import math
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


def max_abs_diff(a: Any, b: Any) -> float:
    """max |a - b| over two tensors of one shape: `nan` (or `inf`) where one side has a NaN (an
    infinity) the other has not; values equal in both (NaN in both, the same infinity) differ by
    nothing."""
    import torch

    if a.numel() == 0:
        return 0.0
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    diff = torch.where(same, torch.zeros_like(a), (a - b).abs())
    return float("nan") if bool(torch.isnan(diff).any()) else float(diff.max())


def worse(current: float, value: float) -> float:
    """The larger of two differences; a NaN, once seen, stays."""
    return current if math.isnan(current) or value <= current else value


def compare(ref: list[Any], out: list[Any], tolerance: float) -> tuple[float, bool]:
    """(max abs diff, passed): each tensor within tolerance * max finite |ref| (the module
    docstring). A NaN (or an infinity) in `out` where `ref` has none fails: the max abs diff is
    then `nan` (or `inf`); which output and how many values go to the worker's log."""
    import torch

    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out, strict=False)):
        shapes = [tuple(t.shape) for t in ref], [tuple(t.shape) for t in out]
        print(f"accuracy: the outputs differ in number or shape: eager {shapes[0]}, compiled {shapes[1]}")
        return float("inf"), False
    worst, passed = 0.0, True
    for i, (a, b) in enumerate(zip(ref, out, strict=False)):
        d = max_abs_diff(a, b)
        if not math.isfinite(d):
            print(f"accuracy: output {i + 1} of {len(ref)} {tuple(a.shape)}: {nonfinite(a, b)}", flush=True)
        worst = worse(worst, d)
        finite = a[torch.isfinite(a)].abs()
        scale = float(finite.max()) if finite.numel() else 0.0
        if scale < VANISHING:  # not judgeable: only a NaN or an infinity fails it
            passed = passed and math.isfinite(d)
            continue
        passed = passed and d <= tolerance * scale  # False for NaN and inf
    return worst, passed


def nonfinite(a: Any, b: Any) -> str:
    """How many NaN and infinite values each side has, in words (`b`: compiled, `a`: eager)."""
    import torch

    def count(t: Any) -> str:
        return f"{int(torch.isnan(t).sum())} NaN, {int(torch.isinf(t).sum())} inf"

    return f"compiled has {count(b)}; eager has {count(a)} (of {a.numel()} values)"
