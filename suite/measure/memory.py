"""Peak memory of a block of calls: CUDA's allocator peak, or the process's peak resident set."""

from __future__ import annotations

import os
import resource
from dataclasses import dataclass


@dataclass
class PeakMemory:
    """Peak memory of the block it wraps, in MB (2**20 bytes).

    CUDA: `torch.cuda.max_memory_allocated` (tensors: weights, activations, CUDA-graph
    pools' live tensors), and `reserved_mb`, `torch.cuda.max_memory_reserved` (the caching
    allocator's segments: a CUDA graph's private pool holds its segments whether or not a tensor
    lives in them, so only this peak counts the pool whole). CPU: the process's peak resident
    set (VmHWM), reset at entry where Linux allows (`/proc/self/clear_refs`), else the
    process's lifetime peak; no `reserved_mb`.
    """

    device: str
    peak_mb: float | None = None
    reserved_mb: float | None = None

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
            self.reserved_mb = torch.cuda.max_memory_reserved() / 2**20
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
