"""Where compile time, memory and energy go (docs/phases-energy.md), per GPU, setup,
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
from suite.report.measurement import Measurement
from suite.report.study import EAGER, Gpu, Setup, Study
from suite.report.tables.cells import Qty
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context
from suite.spec.vocab import DYNAMIC_BATCH

PER_ROW = "compile, largest phases:"  # a phase_note part about one row (its warm, mega-cache compile)
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


def entries(study: Study) -> dict[Group, list[Entry]]:
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
    for d, m in study.dynamic.items():
        group = Group(d.gpu, d.setup, d.build, d.mode)
        label = f"{d.task}/{d.model} ({d.dynamic})"
        out.setdefault(group, []).append(Entry(d.task, d.model, label, d.batch_size, m, d.dynamic))

    def rank(g: Group) -> tuple[int, ...]:  # the study's orders; a dynamic-batch setup after the others
        place = [study.gpus, study.setups, study.builds, study.modes]
        return tuple(
            xs.index(x) if x in xs else len(xs)
            for xs, x in zip(place, (g.gpu, g.setup, g.build, g.mode), strict=True)
        )

    return dict(sorted(out.items(), key=lambda kv: rank(kv[0])))


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
    parts += ["dynamic"] if g.setup.scenario == DYNAMIC_BATCH else []
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


@dataclass(frozen=True)
class Figure:
    """A column of a table here: its header, its CSV name, the row's column it shows (`more`, or
    the Measurement's own attribute), its digits and a scale (J -> mJ)."""

    md: str
    csv: str
    column: str
    digits: int = 2
    scale: float = 1.0

    def cell(self, m: Measurement, mark: str = "") -> Qty:
        value = m.more[self.column] if self.column in m.more else getattr(m, self.column)
        return Qty(m, None if value is None else value * self.scale, self.digits, mark=mark)


def _figures_table(
    study: Study, g: Group, rows: list[Entry], what: tuple[str, str, str], figures: list[Figure]
) -> Table:
    """A group's table of `figures` per row; `what`: (file stem, section, title)."""
    columns = [Column("Task/Model", "Task/Model", "text"), Column("Batch Size", "Batch Size", "text")]
    columns += [Column(f.md, f.csv, "qty") for f in figures]
    table = _table(study, g, *what, columns)
    for e in rows:
        marks = {OTHER: BEYOND if beyond_margin(e.m) else ""}
        values: list[object] = [e.label, str(e.batch_size)]
        table.add(_context(g, e), values + [f.cell(e.m, marks.get(f.column, "")) for f in figures])
    return table


PHASE_FIGURES: list[Figure] = [
    Figure("compile (s)", "compile s", "compile_s"),
    *(Figure(f"{PHASE_LABELS[n]} (s)", column, column) for n, column, _ in PHASES),
    Figure("other (s)", OTHER, OTHER),
    Figure("graphs", "graphs", "graphs", 0),
    Figure("guards", "guards", "guards", 0),
    Figure("recompiles", "recompiles", "recompiles", 0),
]
CUDAGRAPH_FIGURES: list[Figure] = [
    Figure("graphs recorded", "cudagraph_records", "cudagraph_records", 0),
    Figure("recording (s)", "cudagraph_record_s", "cudagraph_record_s"),
    Figure("pool (MB)", "cudagraph_pool_mb", "cudagraph_pool_mb", 0),
    Figure("beyond eager's peak (MB)", "cudagraph_extra_mb", "cudagraph_extra_mb", 0),
]
ENERGY_FIGURES: list[Figure] = [
    Figure("idle (W)", "idle_power_w", "idle_power_w", 1),
    Figure("eager (mJ/image)", "eager mJ/image", "eager_j_per_image", 2, 1000.0),
    Figure("compiled (mJ/image)", "compiled mJ/image", "compiled_j_per_image", 2, 1000.0),
    Figure("compiled / eager", "energy_ratio", "energy_ratio", 3),
]


def phase_tables(study: Study) -> list[Table]:
    """Per group, the first compiled call's seconds by phase (torch's accounting) and what is left."""
    tables = []
    for g, rows in entries(study).items():
        what = ("compile-phases", "compile phases", "Where the compile goes")
        table = _figures_table(study, g, rows, what, PHASE_FIGURES)
        table.notes = [PHASES_NOTE, *([BEYOND_NOTE] if any(beyond_margin(e.m) for e in rows) else [])]
        per_row = [
            f"{e.label} bs {e.batch_size}: {part}."
            for e in rows
            for part in str(e.m.more.get("phase_note") or "").split("; ")
            if PER_ROW in part
        ]
        table.notes += [n for n in _notes(rows, "phase_note") if PER_ROW not in n] + per_row
        reasons = [
            f"Recompiled ({e.label} bs {e.batch_size}: {e.m.more['recompile_reasons']})."
            for e in rows
            if e.m.more.get("recompile_reasons")
        ]
        table.notes += reasons
        tables.append(table)
    return tables


def cudagraph_tables(study: Study) -> list[Table]:
    """Per group of a mode that records CUDA graphs: the recordings, their seconds and memory."""
    tables = []
    for g, rows in entries(study).items():
        if g.mode in CUDAGRAPH_MODES:
            what = ("cuda-graphs", "cuda graphs", "What CUDA graphs cost")
            table = _figures_table(study, g, rows, what, CUDAGRAPH_FIGURES)
            table.notes = [CUDAGRAPH_NOTE, *_notes(rows, "cudagraph_note", "Empty: ")]
            tables.append(table)
    return tables


def energy_tables(study: Study) -> list[Table]:
    """Per group (inference and train cells): the idle power, eager and compiled mJ per image, their
    ratio; the counter each row's figures come from is in the notes."""
    tables = []
    for g, rows in entries(study).items():
        table = _figures_table(study, g, rows, ("energy", "energy", "Energy per image"), ENERGY_FIGURES)
        sources = [
            f"Counter: {s}."
            for s in dict.fromkeys(str(e.m.more.get("energy_source") or "") for e in rows)
            if s
        ]
        table.notes = [ENERGY_NOTE, *sources, *_notes(rows, "energy_note")]
        tables.append(table)
    return tables
