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

from suite.spec.model import STOP_CI, STOP_RULES, Settings
from suite.spec.warmup import warmup_calls
from suite.stats import median, median_ci

# Why a timed loop stopped (the CSV's `stop_reason`).
FIXED, CI, MAX_CALLS, MAX_SECONDS = "fixed", "ci", "max_calls", "max_seconds"
STOP_REASONS: tuple[str, ...] = (FIXED, CI, MAX_CALLS, MAX_SECONDS)
CHECK_EVERY = 5  # rounds between two checks of the rule (a check sorts each series once)


@dataclass(frozen=True)
class StopRule:
    """When the interleaved rounds stop. `fixed`: after `max_calls` rounds. `ci`: once every
    function's 95% CI of its median is within `ci_target_pct` percent of it (half-width over
    median), after at least `min_calls` rounds; or at `max_calls` rounds; or once `max_seconds` of
    timing have passed (checked between rounds, after the minimum)."""

    rule: str = FIXED
    max_calls: int = 300
    min_calls: int = 10
    ci_target_pct: float = 1.0
    max_seconds: float = 300.0

    def __post_init__(self) -> None:
        if self.rule not in STOP_RULES:
            raise ValueError(f"stop rule {self.rule!r} is not one of: {', '.join(STOP_RULES)}")
        if not 1 <= self.min_calls <= self.max_calls:
            raise ValueError(f"needs 1 <= min_calls <= max_calls, got {self.min_calls}, {self.max_calls}")
        if not (self.ci_target_pct > 0 and self.max_seconds > 0):
            raise ValueError("ci_target_pct and max_seconds must be > 0")

    @staticmethod
    def of(settings: Settings) -> StopRule:
        return StopRule(
            settings.stop_rule,
            settings.iterations,
            min(settings.min_iterations, settings.iterations),
            settings.ci_target_pct,
            settings.max_timing_s,
        )

    def reason(self, samples: Sequence[Sequence[float]], elapsed_s: float) -> str | None:
        """Why to stop after these samples (`elapsed_s` of timing so far), or None to go on."""
        n = len(samples[0]) if samples else 0
        if n >= self.max_calls:
            return FIXED if self.rule != STOP_CI else MAX_CALLS
        if self.rule != STOP_CI or n < self.min_calls:
            return None
        if all(half_width_pct(s) <= self.ci_target_pct for s in samples):
            return CI
        if elapsed_s >= self.max_seconds:
            return MAX_SECONDS
        return None


def half_width_pct(samples: Sequence[float]) -> float:
    """Half the width of the 95% CI of the median, in percent of the median."""
    lo, hi = median_ci(samples)
    mid = median(samples)
    return 100.0 * (hi - lo) / 2 / mid if mid > 0 else float("inf")


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

    def until(self, fns: Sequence[Callable[[], Any]], rule: StopRule) -> Timed:
        """Interleaved rounds as in `interleaved`, until `rule` says stop (checked after the
        minimum, every CHECK_EVERY rounds and at the maximum)."""
        samples: list[list[float]] = [[] for _ in fns]
        order = list(range(len(fns)))
        start = time.monotonic()
        i = 0
        while True:
            for j in order if i % 2 == 0 else reversed(order):
                ms, _ = self.call(fns[j])
                samples[j].append(ms)
            i += 1
            if i >= rule.max_calls or (i >= rule.min_calls and (i - rule.min_calls) % CHECK_EVERY == 0):
                why = rule.reason(samples, time.monotonic() - start)
                if why is not None:
                    return Timed(samples, why, time.monotonic() - start)


@dataclass(frozen=True)
class Timed:
    """What a stopping loop gave: one list of milliseconds per function (index-aligned), why it
    stopped, and the seconds it took."""

    samples: list[list[float]]
    reason: str
    seconds: float

    def __post_init__(self) -> None:
        if self.reason not in STOP_REASONS:
            raise ValueError(f"stop reason {self.reason!r} is not one of: {', '.join(STOP_REASONS)}")

    def fields(self) -> dict[str, Any]:
        """The row's columns: every timed call made, why the loop stopped, its seconds."""
        calls = sum(len(s) for s in self.samples)
        return {"calls": calls, "stop_reason": self.reason, "timed_s": round(self.seconds, 3)}
