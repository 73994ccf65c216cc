"""The one timing loop, and the peak-memory tracker. Used for every mode and device.

Latency of one call = wall time from a synchronized start to a synchronized end
(`torch.cuda.synchronize()` on CUDA, a no-op on CPU), read with `perf_counter_ns`.
Several functions are timed *interleaved* (A B, B A, A B, ...): slow drift (clock
boost, thermal throttling, a neighbour) then hits both alike, which is what makes
the eager/compiled speed-up a paired measurement.
"""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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


@dataclass
class PeakMemory:
    """Peak memory of the block it wraps, in MB (2**20 bytes).

    CUDA: `torch.cuda.max_memory_allocated` (tensors: weights, activations, CUDA-graph
    pools). CPU: the process's peak resident set (VmHWM), reset at entry where Linux
    allows (`/proc/self/clear_refs`), else the process's lifetime peak.
    """

    device: str
    peak_mb: float | None = None

    def __enter__(self) -> PeakMemory:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
        else:
            try:
                with open("/proc/self/clear_refs", "w") as fh:
                    fh.write("5")
            except OSError:
                pass
        return self

    def __exit__(self, *exc: object) -> None:
        if self.device == "cuda":
            import torch

            torch.cuda.synchronize()
            self.peak_mb = torch.cuda.max_memory_allocated() / 2**20
        else:
            self.peak_mb = _cpu_peak_rss_mb()


def _cpu_peak_rss_mb() -> float:
    try:
        with open(f"/proc/{os.getpid()}/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024  # kB
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux
