"""The pair's coordinator and its workers' side, with fake workers: the suite's own timing loop
(suite.measure.timing) on fake functions and a fake clock, over the real socket protocol. No
torch: what is tested is who times when, what the rounds give, and what a lost partner costs."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from suite.measure.pairing import Partner
from suite.measure.timing import PAIRED_STOP, StopRule, TimingLoop
from suite.run import pairrule
from suite.run.pair import Coordinator, PairRule, RoundLog, RunnerLine, pair_fields
from suite.spec.pair_protocol import BASE, NEW, PAIRED, SOLO, pair_key
from suite.system.cpus import cpu_text

KEY = {"build": "x", "device": "cpu", "model": "ResNet", "batch_size": 1, "mode": "default"}
RULE = {"rule": "ci", "min_calls": 10, "max_calls": 100, "ci_target_pct": 1.0, "max_seconds": 60.0}


class Device:
    """Counts the processes using the device at once: the coordinator must keep it at one."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.active = 0
        self.most = 0

    def use(self) -> None:
        with self.lock:
            self.active += 1
            self.most = max(self.most, self.active)

    def free(self) -> None:
        with self.lock:
            self.active -= 1


class Clock:
    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def fake_worker(
    path: Path,
    role: str,
    device: Device,
    ms: tuple[float, float],
    out: dict[str, Any],
    die_after: int | None = None,
    key: dict[str, object] = KEY,
) -> None:
    """A compiled cell's worker: eager and compiled calls of `ms` milliseconds (+-1% noise) on a
    fake clock, timed by the suite's loop under the coordinator's turns."""
    rng = random.Random(role)
    clock = Clock()
    calls = {"n": 0}

    def fn(base_ms: float) -> Callable[[], None]:
        def call() -> None:
            calls["n"] += 1
            if die_after is not None and calls["n"] > die_after:
                raise SystemExit  # the process dies mid-rounds: its socket closes
            clock.ns += int(base_ms * rng.uniform(0.99, 1.01) * 1e6)
            time.sleep(0.0002)  # real time on the device, so that two at once would overlap

        return call

    partner = Partner.open(str(path), role, key, build=f"build-{role}", functions=2, rule=RULE)
    try:
        partner.prepare()
        device.use()  # building and compiling the model: alone on the device too
        time.sleep(0.01)
        device.free()
        loop = TimingLoop(lambda: None, clock=clock, probe=lambda: 1.0, settle_ms=0, partner=partner)
        out["mode"] = partner.ready(compile_s=2.0 if role == BASE else 2.6)
        timed = _until(loop, [fn(ms[0]), fn(ms[1])], device)
        out["timed"] = timed
        out["fields"] = partner.timed()
    except SystemExit:
        out["died"] = True
    finally:
        partner.close()


def _until(loop: TimingLoop, fns: list[Callable[[], None]], device: Device) -> Any:
    """The loop, with the device marked busy while a call runs."""
    wrapped = []
    for f in fns:

        def busy(f: Callable[[], None] = f) -> None:
            device.use()
            try:
                f()
            finally:
                device.free()

        wrapped.append(busy)
    return loop.until(wrapped, StopRule("ci", 100, 10, 1.0, 60.0))


def run_pair_of(
    tmp_path: Path, base_ms: tuple[float, float], new_ms: tuple[float, float], **kw: Any
) -> tuple[Coordinator, dict[str, dict[str, Any]], Device]:
    coordinator = Coordinator(tmp_path / "pair.sock").start()
    device = Device()
    keys = [pair_key(KEY)]
    lines = [RunnerLine.connect(str(coordinator.path), role, keys) for role in (BASE, NEW)]
    outs: dict[str, dict[str, Any]] = {BASE: {}, NEW: {}}
    threads = [
        threading.Thread(
            target=fake_worker, args=(coordinator.path, role, device, ms, outs[role]), kwargs=kw.get(role, {})
        )
        for role, ms in ((BASE, base_ms), (NEW, new_ms))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
        assert not t.is_alive(), "a worker never finished: the coordinator deadlocked"
    for line in lines:
        line.ended(keys[0])
        line.close()
    coordinator.close()
    return coordinator, outs, device


def test_a_pair_times_in_turn_and_hands_the_new_row_its_ratios(tmp_path: Path) -> None:
    coordinator, outs, device = run_pair_of(tmp_path, (10.0, 5.0), (10.0, 5.5))  # new compiled 10% slower
    assert device.most == 1, "two workers used the device at once"
    assert outs[BASE]["mode"] == outs[NEW]["mode"] == PAIRED
    assert outs[BASE]["timed"].reason == outs[NEW]["timed"].reason == PAIRED_STOP
    assert len(outs[BASE]["timed"].samples[1]) == len(outs[NEW]["timed"].samples[1])  # the same rounds
    new = outs[NEW]["fields"]
    assert (
        new["pair_role"] == NEW
        and new["pair_partner"] == "build-base"
        and new["pair_id"] == coordinator.pair_id
    )
    assert new["pair_latency"] == pytest.approx(1 / 1.1, rel=0.02)
    assert new["pair_eager_latency"] == pytest.approx(1.0, rel=0.02)
    assert new["pair_speedup"] == pytest.approx(1 / 1.1, rel=0.02)
    assert new["pair_compile_time_ratio"] == pytest.approx(1.3)
    assert new["pair_latency_ci95_high"] < 0.95
    verdict = pairrule.judge(pairrule.PairFigures.of(new.get))  # type: ignore[arg-type]
    assert verdict.verdict == pairrule.SLOWER and verdict.regressed
    base = outs[BASE]["fields"]
    assert base["pair_role"] == BASE and "pair_latency" not in base


def test_an_a_a_pair_is_unchanged(tmp_path: Path) -> None:
    _, outs, _ = run_pair_of(tmp_path, (10.0, 5.0), (10.0, 5.0))
    figures = pairrule.PairFigures.of(outs[NEW]["fields"].get)
    assert figures is not None
    assert pairrule.judge(figures).verdict == pairrule.SLOWER_COMPILE  # compile 2.6 s against 2.0 s
    assert (
        figures.ratios["latency"].low < 1 < figures.ratios["latency"].high
        or abs(figures.ratios["latency"].value - 1) < 0.01
    )


def test_a_partner_that_dies_lets_the_other_finish_alone(tmp_path: Path) -> None:
    _, outs, device = run_pair_of(tmp_path, (10.0, 5.0), (10.0, 5.0), **{NEW: {"die_after": 40}})
    assert outs[NEW].get("died")
    assert device.most == 1
    assert outs[BASE]["timed"].reason != PAIRED_STOP  # it went on under its own rule
    assert "pair_latency" not in outs[BASE]["fields"]


def test_a_cell_the_other_build_does_not_run_is_timed_alone(tmp_path: Path) -> None:
    coordinator = Coordinator(tmp_path / "pair.sock").start()
    base_line = RunnerLine.connect(str(coordinator.path), BASE, [pair_key(KEY)])
    new_line = RunnerLine.connect(str(coordinator.path), NEW, [])  # the new build lacks the cell
    out: dict[str, Any] = {}
    t = threading.Thread(target=fake_worker, args=(coordinator.path, BASE, Device(), (10.0, 5.0), out))
    t.start()
    t.join(timeout=60)
    assert out["mode"] == SOLO and out["timed"].reason != PAIRED_STOP
    for line in (base_line, new_line):
        line.close()
    coordinator.close()


def test_the_pair_rule_stops_on_a_narrow_interval_and_never_before_its_minimum() -> None:
    rule = PairRule.of(RULE)
    assert (rule.min_rounds, rule.max_rounds) == (10, 20)
    log = RoundLog(2)
    figures = {"latency": [10.0, 5.0], "block": [10.0, 5.0], "probe": 1.0}
    for _ in range(9):
        log.figures[BASE].append(figures)
        log.figures[NEW].append(figures)
    assert not rule.enough(log, 0.0)
    log.figures[BASE].append(figures)
    log.figures[NEW].append(figures)
    assert rule.enough(log, 0.0)
    assert pair_fields(log, {BASE: None, NEW: 1.0})["pair_latency"] == 1.0


def test_cpu_text_writes_ranges() -> None:
    assert cpu_text([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert cpu_text([]) == ""
