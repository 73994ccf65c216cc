"""Where compile time, memory and energy go (issue 29, docs/phases-energy.md), per GPU, setup,
build and compile mode: a cold start taken apart into torch's phases, the CUDA graphs'
recording and memory, and the energy per image of eager and compiled calls.

Host side only. Each table's rows are the compiled cells of its group (a dynamic-batch cell's
rows, one per batch size, labelled with their `dynamic` setting: that is where re-recording
shows); a figure a build or device does not give reads "—", and the notes give the rows'
reasons (their `phase_note`, `cudagraph_note`, `energy_note`), each once.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from suite.measure.phases import CUDAGRAPH_MODES, MARGIN_FRACTION, MARGIN_S, OTHER, PHASES, margin_s
from suite.report.study import EAGER, Gpu, Measurement, Setup, Study
from suite.report.tables.cells import Qty
from suite.report.tables.dynamic import DynamicStudy
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context
from suite.spec.model import DYNAMIC_BATCH

BEYOND = "!"  # a sum of phases beyond the stated margin of compile_s
PHASE_LABELS: dict[str, str] = {
    "dynamo": "dynamo",
    "pre_aot": "pre-AOT",
    "aot": "AOTAutograd",
    "lowering": "lowering",
    "codegen": "codegen",
    "kernels": "kernels",
    "autotune": "autotune",
    "cudagraphs": "CUDA graphs",
}
PHASES_NOTE = (
    "Seconds of the first compiled call by torch's own accounting (its timed functions, read around "
    "that call): dynamo = frame compile - backend call (tracing, guards); pre-AOT = backend call - "
    "AOTAutograd (first-use imports, pre-grad passes, cache keys and lookups); AOTAutograd = without "
    "inductor's compile of each graph; lowering = inductor's graph passes and lowering; codegen = "
    "scheduling, kernel and wrapper source; kernels = compiling the C++ or Triton kernels and loading "
    "the module; autotune = template benchmarks and Triton configs; CUDA graphs = recording within "
    "that call. other = compile (s) - their sum: outside torch's accounting (the first run beyond "
    f"an eager call, untimed glue). The stated margin: |other| <= {MARGIN_FRACTION:.0%} of compile + "
    f"{MARGIN_S:g} s. graphs, guards: of the first call's compile; recompiles: graphs compiled while "
    "timed."
)
BEYOND_NOTE = f"{BEYOND} the phases' sum is beyond the stated margin of compile (s)."
CUDAGRAPH_NOTE = (
    "graphs recorded, recording (s): CUDA graphs recorded in the first compiled call and the compiled "
    "warm-up, by torch's accounting (CUDA-graph trees record in the calls after the first); a "
    "dynamic-batch row counts those of its batch size's arrival and of the return to it (a new size "
    "re-records). pool (MB): what the CUDA graphs' private memory pools hold after the warm-up (the "
    "allocator's snapshot). beyond eager's peak (MB): the compiled warm-up's peak allocated memory "
    "(recording included) minus the eager warm-up's, in the same process."
)
ENERGY_NOTE = (
    "mJ/image: the device's energy counter (NVML's total-energy counter on a GPU, RAPL's package counters "
    "on a CPU) over blocks of calls of each function after the timed calls (each block at least 1 s, "
    "eager and compiled alternating), divided by the images they processed. idle (W): the same counter "
    "over 1 s before the cell's first call, nothing running; shown apart, never subtracted. compiled / "
    "eager: < 1x, compiling saves energy per image."
)


@dataclass(frozen=True)
class Group:
    """One table: a GPU, setup, build and compiled mode."""

    gpu: Gpu
    setup: Setup
    build: str
    mode: str


@dataclass(frozen=True)
class Entry:
    """A row: a compiled cell (or one batch size of a dynamic-batch cell) and its context."""

    task: str
    model: str
    label: str
    batch_size: int
    m: Measurement
    dynamic: str = ""


def entries(study: Study, dyn: DynamicStudy | None = None) -> dict[Group, list[Entry]]:
    """Every compiled row, by group: the study's in its model and batch-size order, then the
    dynamic-batch rows in theirs."""
    out: dict[Group, list[Entry]] = {}
    by_key = sorted(
        (k for k in study.cells if k.mode != EAGER),
        key=lambda k: (study.models.index((k.task, k.model)), k.batch_size),
    )
    for k in by_key:
        group = Group(k.gpu, k.setup, k.build, k.mode)
        label = study.model_label(k.task, k.model)
        out.setdefault(group, []).append(Entry(k.task, k.model, label, k.batch_size, study.cells[k]))
    for d, m in dyn.cells.items() if dyn is not None else ():
        group = Group(d.gpu, d.setup, d.build, d.mode)
        label = f"{d.task}/{d.model} ({d.dynamic})"
        out.setdefault(group, []).append(Entry(d.task, d.model, label, d.batch_size, m, d.dynamic))
    order = {g: i for i, g in enumerate(study.gpus)}
    return dict(sorted(out.items(), key=lambda kv: order.get(kv[0].gpu, len(order))))


def _notes(rows: Iterable[Entry], column: str, prefix: str = "") -> list[str]:
    """The rows' notes in `column`, each part once."""
    parts = [p for e in rows if e.m.ok for p in str(e.m.more.get(column) or "").split("; ") if p]
    return [f"{prefix}{p}." for p in dict.fromkeys(parts)]


def _context(g: Group, e: Entry) -> dict[str, object]:
    more = {"batch size": e.batch_size, "build": g.build, "mode": g.mode, "dynamic": e.dynamic}
    return row_context(g.gpu, g.setup, e.task, e.model, **more)


def group_name(study: Study, stem: str, g: Group) -> str:
    """A group's file stem (a dynamic-batch group's names its scenario: the study's setups do not
    hold it, so group_stem would not tell it from the inference group's)."""
    parts = [stem, gpu_stem(g.gpu), g.build, g.mode]
    parts += [DYNAMIC_BATCH] if g.setup.scenario == DYNAMIC_BATCH else []
    return group_stem(study, *parts, setup=g.setup)


def _table(study: Study, g: Group, stem: str, section: str, title: str, columns: list[Column]) -> Table:
    return Table(
        name=group_name(study, stem, g),
        section=section,
        title=f"{title} · {g.gpu.label} · {study.torch_label(g.build)} · mode {g.mode}",
        subtitle=f"Build kind: {study.kind(g.build)}. Setup: {g.setup.label}.",
        columns=columns,
    )


def beyond_margin(m: Measurement) -> bool:
    other = m.more.get(OTHER)
    return m.ok and other is not None and m.compile_s is not None and abs(other) > margin_s(m.compile_s)


def phase_tables(study: Study, dyn: DynamicStudy | None = None) -> list[Table]:
    """Per group, the first compiled call's seconds by phase (torch's accounting) and what is left."""
    tables = []
    for g, rows in entries(study, dyn).items():
        columns = [
            Column("Task/Model", "Task/Model", "text"),
            Column("Batch Size", "Batch Size", "text"),
            Column("compile (s)", "compile s", "qty"),
            *(Column(f"{PHASE_LABELS[n]} (s)", column, "qty") for n, column, _ in PHASES),
            Column("other (s)", OTHER, "qty"),
            Column("graphs", "graphs", "qty"),
            Column("guards", "guards", "qty"),
            Column("recompiles", "recompiles", "qty"),
        ]
        table = _table(study, g, "compile-phases", "compile phases", "Where the compile goes", columns)
        table.notes = [PHASES_NOTE]
        for e in rows:
            m = e.m
            values: list[object] = [e.label, str(e.batch_size), Qty(m, m.compile_s, digits=2)]
            values += [Qty(m, m.more.get(column), digits=2) for _, column, _ in PHASES]
            values.append(Qty(m, m.more.get(OTHER), digits=2, mark=BEYOND if beyond_margin(m) else ""))
            values += [
                Qty(m, m.more.get("graphs"), 0),
                Qty(m, m.more.get("guards"), 0),
                Qty(m, m.recompiles, 0),
            ]
            table.add(_context(g, e), values)
        table.notes += [BEYOND_NOTE] if any(beyond_margin(e.m) for e in rows) else []
        table.notes += _notes(rows, "phase_note")
        reasons = [
            f"{e.label} bs {e.batch_size}: {e.m.more['recompile_reasons']}"
            for e in rows
            if e.m.more.get("recompile_reasons")
        ]
        table.notes += [f"Recompiled ({r})." for r in reasons]
        tables.append(table)
    return tables


def cudagraph_tables(study: Study, dyn: DynamicStudy | None = None) -> list[Table]:
    """Per group of a mode that records CUDA graphs: the recordings, their seconds and memory."""
    tables = []
    for g, rows in entries(study, dyn).items():
        if g.mode not in CUDAGRAPH_MODES:
            continue
        columns = [
            Column("Task/Model", "Task/Model", "text"),
            Column("Batch Size", "Batch Size", "text"),
            Column("graphs recorded", "cudagraph_records", "qty"),
            Column("recording (s)", "cudagraph_record_s", "qty"),
            Column("pool (MB)", "cudagraph_pool_mb", "qty"),
            Column("beyond eager's peak (MB)", "cudagraph_extra_mb", "qty"),
        ]
        table = _table(study, g, "cuda-graphs", "cuda graphs", "What CUDA graphs cost", columns)
        table.notes = [CUDAGRAPH_NOTE]
        for e in rows:
            more = e.m.more
            values: list[object] = [e.label, str(e.batch_size), Qty(e.m, more.get("cudagraph_records"), 0)]
            values += [Qty(e.m, more.get("cudagraph_record_s"), 2)]
            values += [Qty(e.m, more.get(c), 0) for c in ("cudagraph_pool_mb", "cudagraph_extra_mb")]
            table.add(_context(g, e), values)
        table.notes += _notes(rows, "cudagraph_note", "Empty: ")
        tables.append(table)
    return tables


def _milli(value: float | None) -> float | None:
    return None if value is None else value * 1000.0


def energy_tables(study: Study) -> list[Table]:
    """Per group (inference and train cells), J/image of eager and compiled calls and the idle power."""
    tables = []
    for g, rows in entries(study).items():
        columns = [
            Column("Task/Model", "Task/Model", "text"),
            Column("Batch Size", "Batch Size", "text"),
            Column("idle (W)", "idle_power_w", "qty"),
            Column("eager (mJ/image)", "eager mJ/image", "qty"),
            Column("compiled (mJ/image)", "compiled mJ/image", "qty"),
            Column("compiled / eager", "energy_ratio", "qty"),
            Column("source", "energy_source", "word"),
        ]
        table = _table(study, g, "energy", "energy", "Energy per image", columns)
        table.notes = [ENERGY_NOTE]
        for e in rows:
            more, m = e.m.more, e.m
            values: list[object] = [e.label, str(e.batch_size), Qty(m, more.get("idle_power_w"), 1)]
            values += [Qty(m, _milli(more.get(c)), 2) for c in ("eager_j_per_image", "compiled_j_per_image")]
            values += [Qty(m, more.get("energy_ratio"), 3), str(more.get("energy_source") or "—")]
            table.add(_context(g, e), values)
        table.notes += _notes(rows, "energy_note")
        tables.append(table)
    return tables
