"""The one timing loop. Used for every mode, device and scenario.

Latency of one call = wall time from a synchronized start to a synchronized end
(`torch.cuda.synchronize()` on CUDA, a no-op on CPU), read with `perf_counter_ns`.
Several functions are timed *interleaved* (A B, B A, A B, ...): slow drift (clock
boost, thermal throttling, a neighbour) then hits both alike, which is what makes
the eager/compiled speed-up a paired measurement.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any


def synchronizer(device: str) -> Callable[[], None]:
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


def time_call(fn: Callable[[], Any], sync: Callable[[], None]) -> tuple[float, Any]:
    """(milliseconds, result) of one call, synchronized before and after."""
    sync()
    start = time.perf_counter_ns()
    out = fn()
    sync()
    return (time.perf_counter_ns() - start) / 1e6, out


def time_interleaved(
    fns: Sequence[Callable[[], Any]], iterations: int, sync: Callable[[], None]
) -> list[list[float]]:
    """`iterations` timed calls of each function, interleaved, alternating the order.

    Returns one list of milliseconds per function, index-aligned: sample i of every
    list was taken in the same round, which is what pairs them.
    """
    samples: list[list[float]] = [[] for _ in fns]
    order = list(range(len(fns)))
    for i in range(iterations):
        for j in order if i % 2 == 0 else reversed(order):
            ms, _ = time_call(fns[j], sync)
            samples[j].append(ms)
    return samples
