"""The one timing loop (suite/measure/timing.py) on a fake clock and a recording device sync, and
the warm-up policy it runs (suite/spec/warmup.py): what is synchronized, what is timed, in which
order, and how many untimed calls come first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from suite.measure.timing import (
    FIXED,
    SETTLE_MAX_CALLS,
    StopRule,
    TimingLoop,
    Witness,
    host_fields,
    host_probe_us,
)
from suite.spec import expand, load_matrix
from suite.spec.cost import forwards
from suite.spec.warmup import warmup_calls
from suite.stats import median

SYNC_NS = 7  # the fake device's wait: the sync after a call is part of its time, the one before is not
TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


class FakeDevice:
    """A clock that moves only when something runs, and a log of every sync, clock read and call."""

    def __init__(self) -> None:
        self.now = 1_000_000_000
        self.log: list[str] = []
        self.calls = 0

    def sync(self) -> None:
        self.log.append("sync")
        self.now += SYNC_NS

    def clock(self) -> int:
        self.log.append("clock")
        return self.now

    def fn(self, name: str) -> Callable[[], str]:
        """A function whose n-th call (over all functions) takes a distinct, known time."""

        def call() -> str:
            self.calls += 1
            self.log.append(name)
            self.now += self.cost(self.calls)
            return name

        return call

    @staticmethod
    def cost(n: int) -> int:
        return 1_000_000 * n + 13 * n * n  # ns: no two calls alike, not round in ms

    def loop(self, warmup: int = 0) -> TimingLoop:
        return TimingLoop(self.sync, warmup, clock=self.clock)


def test_one_call_is_timed_from_a_synchronized_start_to_a_synchronized_end() -> None:
    dev = FakeDevice()
    ms, out = dev.loop().call(dev.fn("A"))
    assert out == "A"
    assert dev.log == ["sync", "clock", "A", "sync", "clock"]
    assert ms == (FakeDevice.cost(1) + SYNC_NS) / 1e6  # exactly the clock's difference


@pytest.mark.parametrize(("names", "iterations"), [("AB", 5), ("ABC", 4), ("A", 3), ("AB", 0)])
def test_interleaved_calls_alternate_the_order_and_pair_samples_by_round(names: str, iterations: int) -> None:
    dev = FakeDevice()
    samples = dev.loop().interleaved([dev.fn(n) for n in names], iterations)

    # every timed call sits between a sync + clock read and a sync + clock read, nothing else
    calls = [e for e in dev.log if e not in ("sync", "clock")]
    assert dev.log == [e for c in calls for e in ("sync", "clock", c, "sync", "clock")]
    # round i runs the functions forward when i is even, backward when odd: A B, B A, A B, ...
    rounds = [calls[i : i + len(names)] for i in range(0, len(calls), len(names))]
    assert len(rounds) == iterations
    for i, order in enumerate(rounds):
        assert "".join(order) == (names if i % 2 == 0 else names[::-1]), f"round {i}"

    # sample i of every function is its call in round i, in milliseconds, exactly as the clock
    # moved: the call's own time plus the sync after it
    assert len(samples) == len(names)
    for j, name in enumerate(names):
        assert len(samples[j]) == iterations
        for i in range(iterations):
            n = i * len(names) + rounds[i].index(name) + 1  # which call, over all, it was
            assert samples[j][i] == (FakeDevice.cost(n) + SYNC_NS) / 1e6, f"{name} sample {i}"


@pytest.mark.parametrize(
    ("setting", "compiled", "calls"), [(0, False, 1), (0, True, 3), (2, True, 3), (5, False, 5)]
)
def test_warm_up_runs_the_policys_calls_untimed(setting: int, compiled: bool, calls: int) -> None:
    dev = FakeDevice()
    loop = dev.loop(warmup=setting)
    assert loop.warm_up(dev.fn("W"), compiled=compiled) == calls
    assert dev.log == ["W"] * calls  # no sync, no clock: nothing of it is timed
    dev.log.clear()
    loop.interleaved([dev.fn("A")], 2)
    assert "W" not in dev.log and dev.log[0] == "sync"


def test_the_warm_up_policy() -> None:
    # eager: the setting, at least 1; compiled: the setting, at least 3 (CUDA-graph trees warm
    # up on the 1st call after compiling, record on the 2nd, replay from the 3rd)
    assert [warmup_calls(n, compiled=False) for n in range(6)] == [1, 1, 2, 3, 4, 5]
    assert [warmup_calls(n, compiled=True) for n in range(6)] == [3, 3, 3, 3, 4, 5]


@pytest.mark.parametrize("setting", [0, 1, 4])
def test_the_cost_model_counts_the_warm_up_the_loop_runs(setting: int) -> None:
    """The cost model's forward count is built from the same policy as the loop's warm-up."""
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyViT"]
    cell = replace(cell, settings=replace(cell.settings, warmup=setting, iterations=5))
    dev = FakeDevice()
    eager = dev.loop(setting).warm_up(dev.fn("E"), compiled=False)
    compiled = dev.loop(setting).warm_up(dev.fn("C"), compiled=True)
    assert forwards(cell) == eager + 5
    # + one eager call for the compile time, the first compiled call, the accuracy pass's four
    # (eager twice, compiled, float64)
    assert forwards(replace(cell, mode="default")) == eager + compiled + 2 * 5 + 6


class FakeEvents:
    """CUDA events on the fake device: they read the fake clock when recorded, less a fixed
    offset so that a test can tell their figure from the host clock's."""

    def __init__(self, dev: FakeDevice) -> None:
        self.dev, self.marks = dev, [0, 0]

    def start(self) -> None:
        self.dev.log.append("ev-start")
        self.marks[0] = self.dev.now

    def stop(self) -> None:
        self.dev.log.append("ev-stop")
        self.marks[1] = self.dev.now

    def ms(self) -> float:
        return (self.marks[1] - self.marks[0]) / 1e6


def test_until_times_short_blocks_latency_throughput_and_switch_calls_apart() -> None:
    """A round: each function's block, forward then backward; a switch call only where the
    previous timed call was the other function's; 5 synchronized calls (latency); one block of
    5 back-to-back calls between one sync pair (throughput, on the events where there are some).
    No settling here (settle_ms=0: the next test's subject), so every call is a timed one."""
    dev = FakeDevice()
    loop = TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: 100.0, settle_ms=0)
    loop.events = FakeEvents(dev)  # type: ignore[assignment]
    timed = loop.until([dev.fn("A"), dev.fn("B")], StopRule(FIXED, max_calls=10, min_calls=10))
    calls = "".join(e for e in dev.log if e in ("A", "B"))
    # round 0: A (switch) + 5 + 5, B (switch) + 5 + 5; round 1: B (no switch) 5 + 5, A (switch) + 5 + 5
    assert calls == "A" * 11 + "B" * 11 + "B" * 10 + "A" * 11
    assert [len(s) for s in timed.samples] == [10, 10] and [len(b) for b in timed.blocks] == [2, 2]
    assert [len(s) for s in timed.switch] == [2, 1] and timed.block_calls == 5
    # a block: sync, clock, events around 5 calls, sync, clock; its figure is the events' per call
    first_block = dev.log.index("ev-start")
    assert dev.log[first_block - 2 : first_block] == ["sync", "clock"]
    assert dev.log[first_block + 1 : first_block + 6] == ["A"] * 5
    assert dev.log[first_block + 6 : first_block + 9] == ["ev-stop", "sync", "clock"]
    n0 = 7  # the block's first call over all: the switch call and 5 latency calls came first
    assert timed.blocks[0][0] == sum(FakeDevice.cost(n) for n in range(n0, n0 + 5)) / 5 / 1e6
    f = timed.throughput_fields()
    assert f["throughput_ms"] == pytest.approx(median(timed.blocks[1]))
    assert f["eager_throughput_ms"] == pytest.approx(median(timed.blocks[0]))
    assert f["throughput_speedup"] == pytest.approx(f["eager_throughput_ms"] / f["throughput_ms"])
    assert f["throughput_blocks"] == 2 and f["block_calls"] == 5
    assert f["switch_penalty_pct"] == pytest.approx(
        100 * (median(timed.switch[1]) / median(timed.samples[1]) - 1)
    )
    assert timed.fields()["calls"] == 2 * (10 + 10) + 3


def test_after_a_switch_call_the_function_settles_untimed() -> None:
    """After each switch call, untimed calls of the same function until settle_ms have passed
    since the switch call began; none of them is in any figure or seen by the witness; an
    eager-only loop never settles."""
    seen: list[tuple[str, int]] = []

    class Recorder(Witness):
        def took(self, kind: str, index: int, suite_ms: float, host_ms: float) -> None:
            seen.append((kind, index))

    dev = FakeDevice()
    loop = TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: 1.0, settle_ms=5.0, witness=Recorder())
    timed = loop.until([dev.fn("A"), dev.fn("B")], StopRule(FIXED, max_calls=5, min_calls=5))
    calls = "".join(e for e in dev.log if e in ("A", "B"))
    settled_a = calls.index("B") - 11  # A: the switch call, settling, 5 latency calls, a block of 5
    # the fake calls take 1, 2, 3 ... ms: after the 1st (the switch call) A runs until 5 ms have
    # passed since it began: the 2nd and 3rd calls (1 + 2 + 3 ms, and the syncs)
    assert settled_a == 2
    # each settling call is synchronized, as a latency call is (on a GPU no work piles up)
    after_switch = [e for e in dev.log[dev.log.index("A") + 1 :] if e != "clock"]
    assert after_switch[: 1 + 2 * settled_a] == ["sync"] + ["A", "sync"] * settled_a
    # B's switch call alone takes 14 ms: no settling
    assert calls == "A" * (1 + settled_a + 10) + "B" * (1 + 10)
    # the first latency call is the call after the settling ones; the switch call is the 1st
    assert timed.samples[0][0] == pytest.approx((FakeDevice.cost(2 + settled_a) + SYNC_NS) / 1e6)
    assert timed.switch[0] == [pytest.approx((FakeDevice.cost(1) + SYNC_NS) / 1e6)]
    assert seen.count(("switch", 0)) == 1 and seen.count(("call", 0)) == 5 and seen.count(("block", 0)) == 1
    assert timed.fields()["calls"] == 2 * (5 + 5) + 2  # timed calls only: settling is untimed
    # one function: no switch, so no settling
    dev = FakeDevice()
    TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: 1.0, settle_ms=5.0).until(
        [dev.fn("A")], StopRule(FIXED, max_calls=5, min_calls=5)
    )
    assert dev.calls == 10
    # a clock that does not move: settling stops at its bound
    stuck = FakeDevice()
    loop = TimingLoop(stuck.sync, 0, clock=lambda: 0, settle_ms=1.0)
    assert loop.settle(stuck.fn("A"), 0) == SETTLE_MAX_CALLS


def test_an_eager_only_loop_has_no_switch_calls_and_times_blocks_on_the_clock() -> None:
    dev = FakeDevice()
    loop = TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: 100.0)
    timed = loop.until([dev.fn("A")], StopRule(FIXED, max_calls=3, min_calls=3))
    assert timed.switch == [[]] and timed.block_calls == 3 and len(timed.blocks[0]) == 1
    # no events: the block is timed by the clock, its closing sync included, per call
    cost = sum(FakeDevice.cost(n) for n in (4, 5, 6))
    assert timed.blocks[0][0] == pytest.approx((cost + SYNC_NS) / 3 / 1e6)
    f = timed.throughput_fields()
    assert f["switch_penalty_pct"] is None and "throughput_speedup" not in f


def test_the_host_probe_shows_a_step_in_the_hosts_speed() -> None:
    probes = iter([100.0] * 6 + [180.0] * 6)
    dev = FakeDevice()
    loop = TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: next(probes))
    timed = loop.until([dev.fn("A")], StopRule(FIXED, max_calls=55, min_calls=55))
    f = timed.fields()
    assert len(timed.probes) == 12  # one before each of the 11 rounds, one after the last
    assert f["host_speed_moved_pct"] == pytest.approx(80.0) and f["host_probe_us"] == pytest.approx(140.0)
    assert host_fields([100.0, 101.0])["host_speed_moved_pct"] == pytest.approx(1.0)
    assert host_fields([]) == {}
    assert host_probe_us(loops=1000) > 0  # the real probe runs


def test_a_witness_sees_every_timed_window_of_the_suites_own_loop() -> None:
    """The cross-check's timers sit inside the suite's own windows (latency and blocks)."""
    seen: list[tuple[str, int]] = []

    class Recorder(Witness):
        def took(self, kind: str, index: int, suite_ms: float, host_ms: float) -> None:
            seen.append((kind, index))

    dev = FakeDevice()
    loop = TimingLoop(dev.sync, 0, clock=dev.clock, probe=lambda: 1.0, witness=Recorder())
    timed = loop.until([dev.fn("A"), dev.fn("B")], StopRule(FIXED, max_calls=5, min_calls=5))
    assert seen.count(("block", 0)) == seen.count(("block", 1)) == 1
    assert seen.count(("call", 0)) == 5 and seen.count(("switch", 0)) == len(timed.switch[0]) == 1
