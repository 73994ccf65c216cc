"""Compiled outputs against eager: every floating-point tensor of an output, compared within
`tolerance x max(1, max |eager|)`."""

from __future__ import annotations

from typing import Any


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


def compare(ref: list[Any], out: list[Any], tolerance: float) -> tuple[float, bool]:
    """(max abs diff, passed): each tensor must be within tolerance * max(1, max|ref|)."""
    import torch

    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out, strict=False)):
        return float("inf"), False
    worst, passed = 0.0, True
    for a, b in zip(ref, out, strict=False):
        if a.numel() == 0:
            continue
        both_nan = torch.isnan(a) & torch.isnan(b)
        diff = torch.where(both_nan, torch.zeros_like(a), (a - b).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"))
        d = float(diff.max())
        scale = max(1.0, float(torch.nan_to_num(a.abs(), nan=0.0).max()))
        worst = max(worst, d)
        passed = passed and d <= tolerance * scale
    return worst, passed
