"""The one timing loop, warm-up included. Used for every mode, device and scenario.

Two figures of each timed function (docs/measurement.md):
- latency of one call = wall time from a synchronized start to a synchronized end
  (`torch.cuda.synchronize()` on CUDA, a no-op on CPU), read with `perf_counter_ns`;
- throughput = milliseconds per call over a block of `BLOCK_CALLS` back-to-back calls with one
  synchronize at its end: CUDA events around the block on CUDA, `perf_counter_ns` elsewhere.
`TimingLoop.until` times the functions in short blocks, interleaved (A's block, B's, B's, A's,
...): slow drift (clock boost, thermal throttling, a neighbour) hits both alike, which is what
makes the eager/compiled speed-up a paired measurement (block i of each in the same round). A
block that follows a call of another function starts with one synchronized *switch call*, timed
apart and kept out of both figures: its cost against the block's other calls is the switch
penalty. Then the function *settles*: untimed calls of it until `SETTLE_MS` have passed since the
switch call began (suite.spec.warmup: a switch costs more than its first call, and unsettled,
the calls after a switch would charge that to the compiled figure alone). Each round starts
with a fixed pure-Python calibration loop (`host_probe_us`), untimed by the figures: the host
CPU's speed over the timing, which a launch-bound GPU call follows.

Before a function is timed, the loop runs its warm-up calls: as many as the warm-up policy
(suite.spec.warmup) gives for the cell's `warmup` setting and the function's kind, untimed,
and it returns how many ran, which is the figure the CSV's `warmup` column reports.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from suite.measure.pairing import Partner
from suite.spec.pair_protocol import PAIRED, SOLO, STOP
from suite.spec.settings import Settings
from suite.spec.vocab import STOP_CI, STOP_RULES
from suite.spec.warmup import BLOCK_CALLS, SETTLE_MAX_CALLS, SETTLE_MS, warmup_calls
from suite.stats import Speedup, Summary, median, median_ci, percentile

# Why a timed loop stopped (the CSV's `stop_reason`).
FIXED, CI, MAX_CALLS, MAX_SECONDS = "fixed", "ci", "max_calls", "max_seconds"
PAIRED_STOP = "pair"  # a pair's coordinator stopped both builds' workers (suite.measure.pairing)
STOP_REASONS: tuple[str, ...] = (FIXED, CI, MAX_CALLS, MAX_SECONDS, PAIRED_STOP)
CHECK_EVERY = 5  # rounds between two checks of `interleaved`-style rules (a check sorts each series once)
PROBE_LOOPS = 2000  # iterations of the host probe's fixed loop (about 0.1 ms on a current core)


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

    def reason(
        self, samples: Sequence[Sequence[float]], elapsed_s: float, blocks: Sequence[Sequence[float]] = ()
    ) -> str | None:
        """Why to stop after these samples (`elapsed_s` of timing so far), or None to go on. The
        counts are the first series' (latency calls); `ci` needs every series narrow, the
        throughput blocks' (`blocks`) too."""
        n = len(samples[0]) if samples else 0
        if n >= self.max_calls:
            return FIXED if self.rule != STOP_CI else MAX_CALLS
        if self.rule != STOP_CI or n < self.min_calls:
            return None
        if all(half_width_pct(s) <= self.ci_target_pct for s in (*samples, *blocks)):
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


class Events:
    """A pair of CUDA events (`torch.cuda.Event(enable_timing=True)`, torch 2.0.1 has them too):
    recorded on the current stream around a block; read after a synchronize."""

    def __init__(self) -> None:
        import torch

        self.begin = torch.cuda.Event(enable_timing=True)
        self.end = torch.cuda.Event(enable_timing=True)

    def start(self) -> None:
        self.begin.record()

    def stop(self) -> None:
        self.end.record()

    def ms(self) -> float:
        return float(self.begin.elapsed_time(self.end))


def events_of(device: str) -> Events | None:
    """The throughput blocks' timer on `device`: CUDA events, or None (the loop's own clock)."""
    return Events() if device == "cuda" else None


def host_probe_us(loops: int = PROBE_LOOPS) -> float:
    """Microseconds of a fixed pure-Python loop, the best of three: the host CPU's speed now (a
    launch-bound GPU call is interpreter and dispatcher work on this CPU). Best of three so that
    one interrupt does not read as a slower host."""
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter_ns()
        x = 0
        for i in range(loops):
            x += i * i
        best = min(best, time.perf_counter_ns() - start)
    return best / 1e3


class Witness:
    """An independent timer inside the loop's own timed calls (the cross-check's,
    suite.measure.crosscheck): `start` and `stop` run inside each timed window, `took` after its
    closing synchronize with the suite's figure and the window's kind (`call`, `switch` or
    `block`, with the block's host-clock figure). The loop itself has none."""

    def start(self) -> None:  # pragma: no cover - an interface
        pass

    def stop(self) -> None:  # pragma: no cover - an interface
        pass

    def took(self, kind: str, index: int, suite_ms: float, host_ms: float) -> None:  # pragma: no cover
        pass


@dataclass
class TimingLoop:
    """Warm-up and timed calls of one cell's functions.

    `sync` waits for the device (see `synchronizer`); `warmup` is the cell's setting; `clock`
    reads nanoseconds (a parameter so that a test can hand it a fake clock); `events` times the
    throughput blocks on CUDA (`events_of`; None: `clock`); `probe` is the host's speed
    (`host_probe_us`); `witness` an independent timer inside the timed windows (the cross-check);
    `settle_ms` how long a function settles after a switch (`settle`); `partner` the worker's
    line to a pair's coordinator, which then takes turns with the other build's worker (`until`).
    """

    sync: Callable[[], None]
    warmup: int = 0
    clock: Callable[[], int] = field(default=time.perf_counter_ns)
    events: Events | None = None
    probe: Callable[[], float] = field(default=host_probe_us)
    witness: Witness | None = None
    settle_ms: float = SETTLE_MS
    partner: Partner | None = None  # a pair's line to its coordinator (suite.measure.pairing)
    current: int = -1  # which function the window being timed belongs to (for the witness)
    window: str = "call"  # what the next `call` is: "call" (latency) or "switch" (for the witness)

    @staticmethod
    def on(device: str, warmup: int) -> TimingLoop:
        """The loop of a cell on `device`: its synchronize, and CUDA events there."""
        return TimingLoop(synchronizer(device), warmup, events=events_of(device))

    def warm_up(self, fn: Callable[[], Any], compiled: bool) -> int:
        """Call `fn` as often as the warm-up policy says, untimed; the number of calls made."""
        calls = warmup_calls(self.warmup, compiled)
        for _ in range(calls):
            fn()
        return calls

    def call(self, fn: Callable[[], Any]) -> tuple[float, Any]:
        """(milliseconds, result) of one call, synchronized before and after."""
        w = self.witness
        self.sync()
        start = self.clock()
        if w is not None:
            w.start()
        out = fn()
        if w is not None:
            w.stop()
        self.sync()
        ms = (self.clock() - start) / 1e6
        if w is not None:
            w.took(self.window, self.current, ms, ms)
        return ms, out

    def settle(self, fn: Callable[[], Any], since_ns: int) -> int:
        """Untimed calls of `fn` until `settle_ms` have passed since `since_ns` (a clock reading:
        the switch call's start); how many ran (none where `settle_ms` is 0). Each call is
        synchronized, as the latency calls after it are: on a GPU the host would otherwise queue
        far more than `settle_ms` of device work, which the next timed call would wait for."""
        if self.settle_ms <= 0:
            return 0
        calls, until = 0, since_ns + int(self.settle_ms * 1e6)
        while calls < SETTLE_MAX_CALLS and self.clock() < until:
            fn()
            self.sync()
            calls += 1
        return calls

    def block(self, fn: Callable[[], Any], calls: int) -> float:
        """Milliseconds per call of `calls` back-to-back calls with one synchronize at the end:
        CUDA events around them where the loop has them, else the clock (synchronized before and
        after, as a single call)."""
        ev, w = self.events, self.witness
        self.sync()
        start = self.clock()
        if ev is not None:
            ev.start()
        if w is not None:
            w.start()
        for _ in range(calls):
            fn()
        if w is not None:
            w.stop()
        if ev is not None:
            ev.stop()
        self.sync()
        host = (self.clock() - start) / 1e6 / calls
        ms = ev.ms() / calls if ev is not None else host
        if w is not None:
            w.took("block", self.current, ms, host)
        return ms

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
        """Rounds of short blocks until `rule` says stop (checked each round after the minimum).

        A round: the host probe, then each function's block, forward in even rounds and backward
        in odd ones: a switch call if the previous timed call was another function's, up to
        `BLOCK_CALLS` synchronized calls (latency), one throughput block of `BLOCK_CALLS` calls
        (fewer where the rule's maximum is smaller). After a switch call the function settles
        (`settle`), untimed. In a pair (`partner`, suite.measure.pairing) each round waits for
        this worker's turn, starts with a switch call (another process ran in between), and the
        coordinator, not `rule`, says when to stop, unless the partner is gone (then `rule`)."""
        t, partner = _Series(len(fns)), self.partner
        size = min(BLOCK_CALLS, rule.max_calls)
        start = time.monotonic()
        last, r = -1, 0
        while True:
            paired = partner is not None and partner.mode == PAIRED and partner.turn() != SOLO
            if paired and partner is not None and partner.mode == STOP:
                t.probes.append(self.probe())
                return t.timed(PAIRED_STOP, time.monotonic() - start, size)
            take = BLOCK_CALLS if paired else min(BLOCK_CALLS, rule.max_calls - len(t.latency[0]))
            t.probes.append(self.probe())
            before = [len(s) for s in t.latency]
            # in a pair the partner's calls ran since this worker's last one: a switch first
            last = self._round(fns, t, r, take, size, -1 if paired else last, paired)
            r += 1
            if paired and partner is not None:
                partner.round_done(t.round_figures(before))
                continue
            if len(t.latency[0]) >= rule.min_calls:
                why = rule.reason(t.latency, time.monotonic() - start, t.blocks)
                if why is not None:
                    t.probes.append(self.probe())  # and once after the last round
                    return t.timed(why, time.monotonic() - start, size)

    def _round(
        self,
        fns: Sequence[Callable[[], Any]],
        t: _Series,
        r: int,
        take: int,
        size: int,
        last: int,
        after: bool,
    ) -> int:
        """One round of `until` (its docstring); the function timed last. `after`: another
        process's calls ran just before, so even a lone function starts with a switch call."""
        for j in range(len(fns)) if r % 2 == 0 else reversed(range(len(fns))):
            self.current = j
            if (len(fns) > 1 or after) and last != j:
                self.window = "switch"
                began = self.clock()
                t.switch[j].append(self.call(fns[j])[0])
                self.window = "call"
                self.settle(fns[j], began)
            t.latency[j].extend(self.call(fns[j])[0] for _ in range(take))
            t.blocks[j].append(self.block(fns[j], size))
            last = j
        return last


@dataclass
class _Series:
    """What `until` gathers, per function: latency calls, throughput blocks, switch calls; and
    the host probes of the rounds."""

    n: int
    latency: list[list[float]] = field(default_factory=list)
    blocks: list[list[float]] = field(default_factory=list)
    switch: list[list[float]] = field(default_factory=list)
    probes: list[float] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.latency = [[] for _ in range(self.n)]
        self.blocks = [[] for _ in range(self.n)]
        self.switch = [[] for _ in range(self.n)]

    def round_figures(self, before: Sequence[int]) -> dict[str, Any]:
        """The last round's figures for a pair's coordinator: per function the median of its
        latency calls (since `before`, the series' lengths when it began) and its throughput
        block; the round's host probe."""
        calls = [s[b:] for s, b in zip(self.latency, before, strict=True)]
        return {
            "latency": [median(c) for c in calls],
            "block": [b[-1] for b in self.blocks],
            "probe": self.probes[-1],
        }

    def timed(self, reason: str, seconds: float, block_calls: int) -> Timed:
        return Timed(self.latency, reason, seconds, self.blocks, self.switch, self.probes, block_calls)


@dataclass(frozen=True)
class Timed:
    """What a stopping loop gave: one list of milliseconds per function (index-aligned), why it
    stopped, and the seconds it took; and per function its throughput blocks (ms per call, block
    i of each in the same round) and switch calls; the host probes (microseconds)."""

    samples: list[list[float]]
    reason: str
    seconds: float
    blocks: list[list[float]] = field(default_factory=list)
    switch: list[list[float]] = field(default_factory=list)
    probes: list[float] = field(default_factory=list)
    block_calls: int = 0

    def __post_init__(self) -> None:
        if self.reason not in STOP_REASONS:
            raise ValueError(f"stop reason {self.reason!r} is not one of: {', '.join(STOP_REASONS)}")

    def fields(self) -> dict[str, Any]:
        """The row's columns: every timed call made (latency, switch and block calls), why the
        loop stopped, its seconds; the host's speed over it."""
        calls = sum(len(s) for s in self.samples) + sum(len(s) for s in self.switch)
        calls += self.block_calls * sum(len(b) for b in self.blocks)
        out: dict[str, Any] = {"calls": calls, "stop_reason": self.reason, "timed_s": round(self.seconds, 3)}
        out.update(host_fields(self.probes))
        return out

    def throughput_fields(self) -> dict[str, Any]:
        """The throughput columns of the row's function (the last one timed: compiled on a
        compiled row), its eager one's and their paired speed-up over blocks, where blocks ran;
        the switch penalty of each."""
        if not self.blocks or not all(self.blocks):
            return {}
        own = Summary.of(self.blocks[-1])
        out: dict[str, Any] = {
            "throughput_ms": own.median,
            "throughput_ci95_low_ms": own.ci95_low,
            "throughput_ci95_high_ms": own.ci95_high,
            "throughput_blocks": own.n,
            "block_calls": self.block_calls,
            "switch_penalty_pct": switch_penalty_pct(self.switch[-1], self.samples[-1]),
        }
        if len(self.blocks) > 1:
            eager = Summary.of(self.blocks[0])
            speed = Speedup.of(self.blocks[0], self.blocks[-1])
            out.update(
                eager_throughput_ms=eager.median,
                eager_throughput_ci95_low_ms=eager.ci95_low,
                eager_throughput_ci95_high_ms=eager.ci95_high,
                throughput_speedup=speed.ratio,
                throughput_speedup_ci95_low=speed.ci95_low,
                throughput_speedup_ci95_high=speed.ci95_high,
                eager_switch_penalty_pct=switch_penalty_pct(self.switch[0], self.samples[0]),
            )
        return out


def switch_penalty_pct(switch: Sequence[float], latency: Sequence[float]) -> float | None:
    """How much slower a call is right after a call of another function: the switch calls'
    median over the latency calls' median, minus 1, in percent; None without switch calls."""
    if not switch or not latency:
        return None
    return 100.0 * (median(switch) / median(latency) - 1.0)


def host_fields(probes: Sequence[float]) -> dict[str, Any]:
    """The host's speed over the timing: the probe's median (microseconds), and how far it moved
    (p90 / p10 - 1 of the rounds' probes, percent; max / min under ten probes)."""
    if not probes:
        return {}
    if len(probes) >= 10:
        lo, hi = percentile(probes, 10), percentile(probes, 90)
    else:
        lo, hi = min(probes), max(probes)
    return {
        "host_probe_us": median(probes),
        "host_speed_moved_pct": 100.0 * (hi / lo - 1.0) if lo > 0 else None,
    }
