"""The path every scenario's cell takes, written once, and what a scenario supplies to it.

A scenario (inference, train, ...) is a `Scenario` subclass that says only what differs: its
eager call, how its compiled call is built, its accuracy check, and any steps around the
first compiled call. `measure` runs the rest in a fixed order, because the order is part of
what the figures mean (docs/measurement.md): warm-up before timing, compile time = first compiled
call - one eager call, dynamo's counters after the first call and at the end, peak memory
over the warm-up of the function the row is about, eager and compiled timed interleaved.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from suite.measure import cell as parts
from suite.measure import cudagraphs, devicetime, gate
from suite.measure.accuracy_rule import Verdict
from suite.measure.compile_cost import FirstCall, first_results, seconds_since_spawn
from suite.measure.counters import cudagraph_skips, dynamo_counts
from suite.measure.energy import COMPILED, EAGER, Energy
from suite.measure.faults import inject_fault, slowed
from suite.measure.health import Health
from suite.measure.memory import PeakMemory
from suite.measure.pairing import Partner
from suite.measure.phases import Calls, Ledger
from suite.measure.provenance import matmul_fields
from suite.measure.timing import StopRule, TimingLoop, synchronizer
from suite.spec.model import Cell
from suite.stats import median
from suite.system.cpus import cpu_text

# the result's per-call milliseconds by series (not a CSV column: suite.run.launch keeps them
# apart for the samples file beside the CSV, suite.results.samples)
SAMPLES = "samples"


class Scenario:
    """One way of using a model. A subclass sets `eager` (one call of the eager function, the
    thing timed) in its constructor and implements `compile` and `accuracy`; the other
    methods have the defaults most scenarios want. The constructor may raise (e.g. the train
    scenario's `Unsupported`): the cell is then recorded with that status, nothing timed."""

    eager: Callable[[], Any]

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        self.cell, self.model, self.batch = cell, model, batch

    def grad_mode(self) -> contextlib.AbstractContextManager[Any]:
        """The autograd mode every call of the cell runs under (inference: no_grad)."""
        return contextlib.nullcontext()

    def warm_up_eager(self, loop: TimingLoop) -> int:
        """Warm the eager function up (the loop's policy); the number of calls made."""
        return loop.warm_up(self.eager, compiled=False)

    def compile(self) -> Callable[[], Any]:
        """A callable making one call of the compiled function (torch.compile is lazy: nothing
        compiles before that callable's first call)."""
        raise NotImplementedError

    def first_compiled_call(self, loop: TimingLoop, compiled: Callable[[], Any]) -> float:
        """Milliseconds of the compiled function's first call, the one that compiles it. A
        scenario whose accuracy check needs that very call (train) overrides this."""
        ms, _ = loop.call(compiled)
        return ms

    def accuracy(self, compiled: Callable[[], Any]) -> Verdict:
        """Compiled against eager (suite.measure.accuracy_rule's verdict: pass, fail, degenerate,
        eager-nondeterministic, or skipped with why), asked for after the compiled warm-up."""
        raise NotImplementedError

    def extra_fields(self, loop: TimingLoop, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        """A scenario's own columns, measured after the row's timed calls (the pipeline's stages,
        the precision cell's parity); `compiled` is None in an eager cell."""
        return {}


def measure(cell: Cell, device: str, kind: type[Scenario]) -> dict[str, Any]:
    """The row fields of one cell measured as scenario `kind` on `device`; in a pair
    (suite.measure.pairing) taking the device only when its coordinator says."""
    rule = StopRule.of(cell.settings)
    partner = Partner.connect(
        cell.key_fields(device),
        build=cell.build,
        functions=1 if cell.mode == "eager" else 2,
        rule={
            "rule": rule.rule,
            "min_calls": rule.min_calls,
            "max_calls": rule.max_calls,
            "ci_target_pct": rule.ci_target_pct,
            "max_seconds": rule.max_seconds,
        },
    )
    try:
        if partner is not None:
            partner.prepare()
        return _measure(cell, device, kind, partner)
    finally:
        if partner is not None:
            partner.close()


def _measure(cell: Cell, device: str, kind: type[Scenario], partner: Partner | None) -> dict[str, Any]:
    # the idle power before anything touches the device (a GPU that just ran stays at high clocks)
    owner = (cell.model.name, cell.variant, cell.batch_size, cell.settings.dtype, cell.scenario)
    energy = Energy(device, cell.batch_size, synchronizer(device), owner=owner).start(before_work=True)
    model, batch, facts = parts.prepare(cell, device)
    scenario = kind(cell, model, batch)
    ready_s = seconds_since_spawn()  # process start to model, batch (and a train step's state) ready
    first_eager = FirstCall(scenario, device)  # times the first eager call: time to first result
    loop = TimingLoop.on(device, cell.settings.warmup)
    loop.partner = partner
    inject_fault(cell.model.name)  # test-only (suite.measure.faults): once, before any call
    row: dict[str, Any] = {**facts, **matmul_fields()}  # TF32 and matmul precision as timed
    # energy per image in blocks after the timed calls
    with scenario.grad_mode(), energy:
        if cell.mode == "eager":
            row.update(_eager_cell(scenario, loop, device, energy))
        else:
            row.update(_compiled_cell(scenario, loop, device, energy))
    row.update(energy.fields())
    row.update(first_results(ready_s, first_eager.ms, row.get("compile_s")))
    return row


def _gate(
    loop: TimingLoop, fns: list[Callable[[], Any]], device: str, compile_s: float | None = None
) -> None:
    """Under `ahead`, wait until the runner lets this process time alone (suite.measure.gate);
    in a pair, until the coordinator grants the timing (suite.measure.pairing: each of its rounds
    starts with a switch call and settling, and both workers are let go at once, so no untimed
    call here). After a gate's wait, torch's threads fitted to the CPUs the process was pinned to
    for its timing, if any, then one untimed call of each function, so the timing starts as warm
    as without."""
    if loop.partner is not None:
        loop.partner.ready(compile_s)
    elif gate.wait() > 0:
        _fit_threads(device)
        for fn in fns:
            fn()
            loop.sync()


def _fit_threads(device: str) -> None:
    """A CPU process pinned for its timing to fewer cores than torch has threads (`--overlap`,
    `--pin-timing`) times with one thread a core: threads sharing a core wait on each other
    (a compiled shrunk ViT's call, 2 threads on 1 core: 380 ms; 1 thread: 0.57 ms)."""
    import torch

    cpus = gate.timing_cpus()
    if device == "cpu" and cpus and len(cpus) < torch.get_num_threads():
        torch.set_num_threads(len(cpus))


def _timed_done(loop: TimingLoop, device: str) -> dict[str, Any]:
    """The timing is over: in a pair, wait for the go to finish the cell alone; the pair's
    fields for the row. Outside a pair, a CPU process the runner pinned to time: the CPUs and
    torch's threads it timed with, settings of its figures (`compare` matches rows on them). A
    GPU's figures are the device's: its rows stay comparable with those timed unpinned."""
    if loop.partner is not None:
        return loop.partner.timed()
    cpus = gate.timing_cpus()
    if not cpus or device != "cpu":
        return {}
    import torch

    return {"timing_cpus": cpu_text(cpus), "torch_threads": torch.get_num_threads()}


def _eager_cell(scenario: Scenario, loop: TimingLoop, device: str, energy: Energy) -> dict[str, Any]:
    with PeakMemory(device) as mem:
        warmup = scenario.warm_up_eager(loop)
    _gate(loop, [scenario.eager], device)
    rule = StopRule.of(scenario.cell.settings)
    with Health(device, calls=rule.max_calls) as health:  # the machine's health while timed
        timed = loop.until([scenario.eager], rule)
        health.calls = timed.fields()["calls"]  # (suite.measure.health: page faults per call)
    pair = _timed_done(loop, device)
    (samples,) = timed.samples
    pair.update(devicetime.fields(device, {"": scenario.eager}, loop.sync, {"": median(samples)}))
    energy.blocks([(EAGER, scenario.eager)], who=scenario.cell.label)
    row = {**parts.latency_fields(samples), "peak_mem_mb": mem.peak_mb, "warmup": warmup}
    return {
        **row,
        **pair,
        **health.fields(),
        **timed.fields(),
        **timed.throughput_fields(),
        **scenario.extra_fields(loop, None),
        SAMPLES: {"eager": samples},
    }


def _compiled_cell(scenario: Scenario, loop: TimingLoop, device: str, energy: Energy) -> dict[str, Any]:
    """The compiled function's figures, with the eager function timed beside it. `warmup` is
    the compiled function's warm-up calls (the eager one's are not counted). torch's compile-time
    accounting is read around the first compiled call and the warm-up (suite.measure.phases)."""
    s, mode = scenario.cell.settings, scenario.cell.mode
    with PeakMemory(device) as eager_mem:  # what CUDA graphs take beyond eager's peak
        scenario.warm_up_eager(loop)
    eager_call_ms, _ = loop.call(scenario.eager)
    compiled = scenario.compile()
    _, graphs_before = dynamo_counts()
    ledger = Ledger.start()
    first_ms = scenario.first_compiled_call(loop, compiled)
    ledger.first_call_done()
    breaks, graphs_after_first = dynamo_counts()
    compiled = slowed(compiled, scenario.cell.model.name, loop.sync)  # test-only (faults)
    with PeakMemory(device) as mem:
        warmup = loop.warm_up(compiled, compiled=True)
    ledger.warm_up_done()
    accuracy = scenario.accuracy(compiled)
    _gate(loop, [scenario.eager, compiled], device, (first_ms - eager_call_ms) / 1000)
    rule = StopRule.of(s)
    with Health(device, calls=2 * rule.max_calls) as health:
        timed = loop.until([scenario.eager, compiled], rule)
        health.calls = timed.fields()["calls"]
    pair = _timed_done(loop, device)
    eager_samples, samples = timed.samples
    fns, medians = (
        {"": compiled, "eager_": scenario.eager},
        {"": median(samples), "eager_": median(eager_samples)},
    )
    pair.update(devicetime.fields(device, fns, loop.sync, medians))
    extra = scenario.extra_fields(loop, compiled)  # before the end count: its compiles are recompiles
    _, graphs_end = dynamo_counts()
    energy.blocks([(EAGER, scenario.eager), (COMPILED, compiled)], who=scenario.cell.label)
    graphs = (breaks, graphs_after_first, graphs_end)
    row = parts.compiled_fields(eager_samples, samples, first_ms - eager_call_ms, graphs, accuracy)
    row.update(parts.latency_fields(samples), peak_mem_mb=mem.peak_mb, warmup=warmup)
    row.update(health.fields(), **timed.fields(), **timed.throughput_fields(), **extra, **pair)
    row[SAMPLES] = {"eager": eager_samples, "compiled": samples}
    calls = Calls(first_ms, eager_call_ms, row["median_ms"])  # what names the phases' remainder
    row.update(ledger.fields(row["compile_s"], device, mode, graphs_after_first - graphs_before, calls))
    row.update(cudagraphs.fields(device, mode, ledger, eager_mem.reserved_mb, mem.reserved_mb))
    skipped = cudagraph_skips()  # a reduce-overhead row timed without CUDA graphs says so
    if skipped:
        row["compile_note"] = (
            f"{CUDAGRAPHS_SKIPPED}: {skipped} graph(s), timed without them (the log says why)"
        )
    return row


CUDAGRAPHS_SKIPPED = "CUDA graphs skipped"
