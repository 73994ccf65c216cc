"""The path every scenario's cell takes (suite/measure/scenarios/base.py), with a fake scenario,
a fake clock and a recording device: the order of its steps, what is timed, the fault hook run
once outside the timed calls, and the `warmup` figure it reports (the calls that ran), which the
runner writes to the CSV instead of the setting."""

from __future__ import annotations

import contextlib
import math
import types
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from support import stub_environment

from suite.measure.accuracy_rule import Verdict
from suite.measure.scenarios import SCENARIOS, base
from suite.measure.timing import SETTLE_MS, TimingLoop
from suite.results import PASS
from suite.run.runner import build_row
from suite.spec import Cell, expand, load_matrix

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"
CALL_NS = {"eager": 2_000_000, "compiled": 1_000_000, "first": 50_000_000}


def tiny_cell(mode: str, warmup: int, iterations: int = 2) -> Cell:
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyViT"]
    return replace(cell, mode=mode, settings=replace(cell.settings, warmup=warmup, iterations=iterations))


class Recorder:
    """One log for everything the path does, and a clock that moves only when a call runs."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.now = 0

    def note(self, event: str, ns: int = 0) -> None:
        self.log.append(event)
        self.now += ns

    def clock(self) -> int:
        return self.now


class FakeScenario(base.Scenario):
    """Calls that log themselves; the `model` the path hands over is the Recorder."""

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        super().__init__(cell, model, batch)
        self.rec: Recorder = model
        self.eager = lambda: self.rec.note("eager", CALL_NS["eager"])
        self.compiled_calls = 0

    @contextlib.contextmanager
    def grad_mode(self) -> Iterator[None]:
        self.rec.note("grad[")
        yield
        self.rec.note("]grad")

    def compile(self) -> Callable[[], Any]:
        self.rec.note("compile")

        def compiled() -> None:
            self.compiled_calls += 1
            self.rec.note("compiled", CALL_NS["first" if self.compiled_calls == 1 else "compiled"])

        return compiled

    def accuracy(self, compiled: Callable[[], Any]) -> Verdict:
        self.rec.note("accuracy")
        return Verdict(PASS, 0.5)


class FakeMemory:
    """suite.measure.memory.PeakMemory, logging its entry and exit (`rec`: set per test)."""

    rec: Recorder

    def __init__(self, device: str) -> None:
        self.peak_mb = 42.0
        self.reserved_mb: float | None = None

    def __enter__(self) -> FakeMemory:
        self.rec.note("mem[")
        return self

    def __exit__(self, *exc: object) -> None:
        self.rec.note("]mem")


class FakeLedger:
    """torch's compile-time accounting (suite.measure.phases): when it is read."""

    rec: Recorder

    @classmethod
    def start(cls) -> FakeLedger:
        cls.rec.note("ledger[")
        return cls()

    def first_call_done(self) -> None:
        self.rec.note("]ledger:first")

    def warm_up_done(self) -> None:
        self.rec.note("ledger:warm-up")

    def fields(self, *args: object) -> dict[str, Any]:
        return {"phase_note": "planted"}


class FakeEnergy:
    """suite.measure.energy: idle power at entry, blocks after the timed calls."""

    rec: Recorder

    def __init__(self, device: str, images: int, sync: Callable[[], None], owner: Any = None) -> None:
        pass

    def start(self, before_work: bool = False) -> FakeEnergy:
        if not getattr(self, "started", False):  # once, as the real one
            self.started = True
            self.rec.note("energy[")
        return self

    def __enter__(self) -> FakeEnergy:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.rec.note("]energy")

    def blocks(self, functions: list[tuple[str, Callable[[], Any]]], who: str = "") -> None:
        self.rec.note("blocks:" + ",".join(label for label, _ in functions))

    def fields(self) -> dict[str, Any]:
        return {"energy_note": "planted"}


@pytest.fixture
def rec(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    """The path's collaborators replaced by ones that log into one Recorder."""
    rec = Recorder()
    bound = {"rec": rec}

    def prepare(cell: Cell, device: str) -> tuple[Recorder, dict[str, Any], dict[str, Any]]:
        rec.note("prepare")
        return rec, {}, {"params_m": 1.5}

    def dynamo_counts() -> tuple[int, int]:  # 1 graph break, 2 graphs: after the first call and at the end
        rec.note("counts")
        return 1, 2

    monkeypatch.setattr(base, "Ledger", type("Ledger", (FakeLedger,), bound))
    monkeypatch.setattr(base, "Energy", type("Energy", (FakeEnergy,), bound))
    monkeypatch.setattr(base.parts, "prepare", prepare)
    monkeypatch.setattr(base, "synchronizer", lambda device: lambda: rec.note("sync"))

    def loop_on(device: str, warmup: int) -> TimingLoop:  # TimingLoop.on, on the Recorder's clock
        return TimingLoop(base.synchronizer(device), warmup, clock=rec.clock)

    monkeypatch.setattr(base, "TimingLoop", types.SimpleNamespace(on=loop_on))
    monkeypatch.setattr(base, "PeakMemory", type("Memory", (FakeMemory,), bound))
    monkeypatch.setattr(base, "dynamo_counts", dynamo_counts)
    monkeypatch.setattr(base, "inject_fault", lambda name: rec.note(f"fault:{name}"))
    return rec


def timed(call: str) -> list[str]:
    return ["sync", call, "sync"]


def settling(call: str) -> int:
    """The untimed calls after a switch call of `call` (the Recorder's clock moves by calls only)."""
    return math.ceil(SETTLE_MS * 1e6 / CALL_NS[call]) - 1


def test_an_eager_cell_warms_up_under_the_memory_tracker_then_times(rec: Recorder) -> None:
    row = base.measure(tiny_cell("eager", warmup=0, iterations=3), "cpu", FakeScenario)
    assert rec.log == [
        "energy[",  # the idle power, before anything touches the device
        "prepare",  # the model and batch built
        "fault:TinyViT",
        "grad[",
        *["mem[", "eager", "]mem"],  # the policy's 1 eager warm-up call, though the setting is 0
        *timed("eager") * 3,
        *["sync", "eager", "eager", "eager", "sync"],  # the back-to-back (throughput) block
        "blocks:eager",  # energy per image: blocks after the timed calls
        "]energy",
        "]grad",
    ]
    assert row["energy_note"] == "planted" and "phase_note" not in row
    assert row["warmup"] == 1 and row["iterations"] == 3 and row["peak_mem_mb"] == 42.0
    assert row["median_ms"] == CALL_NS["eager"] / 1e6 and row["params_m"] == 1.5
    assert "speedup" not in row and "accuracy" not in row


def test_a_compiled_cell_takes_the_shared_path_in_order(rec: Recorder) -> None:
    row = base.measure(tiny_cell("default", warmup=0, iterations=2), "cpu", FakeScenario)
    assert rec.log == [
        "energy[",
        "prepare",  # the model and batch built
        "fault:TinyViT",
        "grad[",
        *["mem[", "eager", "]mem"],  # eager warm-up: 1 call (its peak: what CUDA graphs add beyond)
        *timed("eager"),  # the eager call compile time is measured against
        "compile",
        "counts",
        "ledger[",  # torch's accounting read around the first compiled call
        *timed("compiled"),  # the first compiled call: it compiles
        "]ledger:first",
        "counts",
        *["mem[", "compiled", "compiled", "compiled", "]mem"],  # compiled warm-up: 3 calls
        "ledger:warm-up",  # and after the warm-up (CUDA graphs are recorded there)
        "accuracy",
        # one round of short blocks, eager's first: a switch call (timed apart: the previous call
        # was the other function's), untimed synchronized calls until SETTLE_MS after it began, the latency
        # calls, then a back-to-back throughput block
        *timed("eager"),
        *["eager", "sync"] * settling("eager"),
        *timed("eager") * 2,
        *["sync", "eager", "eager", "sync"],
        *timed("compiled"),
        *["compiled", "sync"] * settling("compiled"),
        *timed("compiled") * 2,
        *["sync", "compiled", "compiled", "sync"],
        "counts",
        "blocks:eager,compiled",
        "]energy",
        "]grad",
    ]
    assert (row["phase_note"], row["energy_note"]) == ("planted", "planted")
    assert row["cudagraph_note"] == "no CUDA graphs on cpu"
    assert row["warmup"] == 3, "the compiled function's warm-up calls that ran, not the setting (0)"
    assert row["compile_s"] == (CALL_NS["first"] - CALL_NS["eager"]) / 1e9
    assert row["median_ms"] == CALL_NS["compiled"] / 1e6 and row["eager_median_ms"] == CALL_NS["eager"] / 1e6
    assert row["speedup"] == 2.0 and row["peak_mem_mb"] == 42.0
    assert (row["max_abs_diff"], row["accuracy"]) == (0.5, "pass")
    assert (row["graph_breaks"], row["recompiles"]) == (1, 0)


@pytest.mark.parametrize("mode", ["eager", "reduce-overhead"])
def test_a_warmup_setting_above_the_minimum_is_what_runs(rec: Recorder, mode: str) -> None:
    row = base.measure(tiny_cell(mode, warmup=5), "cpu", FakeScenario)
    start, end = rec.log.index("mem["), rec.log.index("]mem")
    assert len(rec.log[start + 1 : end]) == row["warmup"] == 5


def test_the_fault_hook_runs_once_per_cell_before_any_call(
    rec: Recorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    def fail(name: str) -> None:
        rec.note("fault")
        raise RuntimeError("injected")

    monkeypatch.setattr(base, "inject_fault", fail)
    with pytest.raises(RuntimeError, match="injected"):
        base.measure(tiny_cell("default", warmup=0), "cpu", FakeScenario)
    assert rec.log == ["energy[", "prepare", "fault"]


def test_every_scenario_supplies_its_own_calls() -> None:
    for kind in SCENARIOS.values():
        assert issubclass(kind, base.Scenario)
        assert kind.compile is not base.Scenario.compile and kind.accuracy is not base.Scenario.accuracy


def test_the_csv_gets_the_warmup_that_ran_not_the_setting() -> None:
    cell = tiny_cell("default", warmup=0)
    args = (stub_environment(), "r")
    ok = build_row(cell, *args, {"status": "ok", "error": "", "warmup": 3}, "t0", 1.0, "log", "")
    assert ok["warmup"] == 3
    failed = build_row(cell, *args, {"status": "error", "error": "x"}, "t0", 1.0, "log", "")
    assert failed["warmup"] is None  # not known to have run: empty, not the setting
