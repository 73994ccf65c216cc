"""The one timing loop, warm-up included. Used for every mode, device and scenario.

Latency of one call = wall time from a synchronized start to a synchronized end
(`torch.cuda.synchronize()` on CUDA, a no-op on CPU), read with `perf_counter_ns`.
Several functions are timed *interleaved* (A B, B A, A B, ...): slow drift (clock
boost, thermal throttling, a neighbour) then hits both alike, which is what makes
the eager/compiled speed-up a paired measurement.

Before a function is timed, the loop runs its warm-up calls: as many as the warm-up policy
(suite.spec.warmup) gives for the cell's `warmup` setting and the function's kind, untimed,
and it returns how many ran, which is the figure the CSV's `warmup` column reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from suite.spec.warmup import warmup_calls


def synchronizer(device: str) -> Callable[[], None]:
    if device == "cuda":
        import torch

        return torch.cuda.synchronize
    return lambda: None


@dataclass
class TimingLoop:
    """Warm-up and timed calls of one cell's functions.

    `sync` waits for the device (see `synchronizer`); `warmup` is the cell's setting; `clock`
    reads nanoseconds (a parameter so that a test can hand it a fake clock).
    """

    sync: Callable[[], None]
    warmup: int = 0
    clock: Callable[[], int] = field(default=time.perf_counter_ns)

    def warm_up(self, fn: Callable[[], Any], compiled: bool) -> int:
        """Call `fn` as often as the warm-up policy says, untimed; the number of calls made."""
        calls = warmup_calls(self.warmup, compiled)
        for _ in range(calls):
            fn()
        return calls

    def call(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """(milliseconds, result) of one call, synchronized before and after."""
        self.sync()
        start = self.clock()
        out = fn()
        self.sync()
        return (self.clock() - start) / 1e6, out

    def interleaved(self, fns: Sequence[Callable[[], Any]], iterations: int) -> list[list[float]]:
        """`iterations` timed calls of each function, interleaved, alternating the order.

        Returns one list of milliseconds per function, index-aligned: sample i of every
        list was taken in the same round, which is what pairs them.
        """
        samples: list[list[float]] = [[] for _ in fns]
        order = list(range(len(fns)))
        for i in range(iterations):
            for j in order if i % 2 == 0 else reversed(order):
                ms, _ = self.call(fns[j])
                samples[j].append(ms)
        return samples
