"""Tables in the guide's shape (compile vs eager, stable vs nightly, compile modes), the same
for training steps, peak memory per model and batch size, and the summary figures, each as
Markdown and CSV.

Host side only. What the cells show, and why:
- durations are the mean per inference (or per training step) over the timed iterations, the
  guide's statistic ("the mean of 300 inferences"), so they can be laid next to its tables;
- a speed-up is the paired one: eager median / compiled median, both timed interleaved in
  the compiled cell's own process, with its 95% CI. It is printed as the guide's
  "% improvement" (the share of time saved, (1 - 1/speed-up) x 100) and as the factor with
  its CI. Medians of interleaved runs are robust to outliers and to drift between processes;
  a ratio of the two means shown would mix two processes;
- a failed cell prints its status (OOM, error, timeout, skipped), never a number;
- a compiled output that failed the accuracy check is marked with a dagger.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from suite.report.reference import GuideFigure, Reference
from suite.report.study import EAGER, Gpu, Measurement, Setup, Study, ratio_interval
from suite.results import slug
from suite.spec.model import MODES

FAILURE_WORDS: dict[str, str] = {"oom": "OOM", "error": "error", "timeout": "timeout", "skipped": "skipped"}
NOT_MEASURED = "—"
DAGGER = "†"
GUIDE_ERRATUM = "erratum"
LEGEND = (
    "Durations: mean per inference in ms over the timed iterations (the guide's statistic). "
    "Speed-up: % improvement (time saved, (1 - 1/speed-up) x 100) · eager median / compiled median "
    "[95% CI], paired within the compiled cell's process. "
    f"OOM / error / timeout / skipped: the cell failed (reason in the raw CSV); {NOT_MEASURED}: not measured."
)
TRAIN_LEGEND = (
    "Durations: mean per training step in ms (forward + loss + backward + AdamW step) over the timed "
    "iterations. Speed-up: % improvement (time saved, (1 - 1/speed-up) x 100) · eager median / compiled "
    "median [95% CI], paired within the compiled cell's process. "
    f"OOM / error / timeout / skipped: the cell failed or has no training step (reason in the raw CSV); "
    f"{NOT_MEASURED}: not measured."
)
DAGGER_NOTE = f"{DAGGER} compiled output differs from eager beyond the tolerance (accuracy check failed)."
TRAIN_DAGGER_NOTE = (
    f"{DAGGER} the first compiled step's loss differs from the eager loss at the same weights, inputs and "
    "dropout masks beyond the tolerance (accuracy check failed)."
)
TRAIN = "train"
MEMORY_NOTE = (
    "Peak memory in MB (2^20 bytes) over the warm-up calls. CUDA: torch.cuda.max_memory_allocated, "
    "tensors only (weights, activations, and for training steps the gradients and AdamW's two state "
    "tensors per parameter; CUDA-graph pools under reduce-overhead). CPU: the worker process's peak "
    "resident set, which also holds the Python, torch and compiler runtime (a few hundred MB), so "
    "compare CPU figures with each other only. params (M): parameters in millions, as built."
)


def legend(scenario: str) -> str:
    """How to read a table's durations and speed-ups, for its scenario."""
    return TRAIN_LEGEND if scenario == TRAIN else LEGEND


GUIDE_SETUP = "float32 inference of the full (not shrunk) models"
GUIDE_NOTE = (
    "Guide: its published means ({table}, torch {build}), speed-up = without / with compile; "
    "the guide published no spread, so no CI."
)


# ---------------------------------------------------------------------------------------
# Cell values and how they render.


@dataclass(frozen=True)
class Ms:
    """A duration cell: one measurement (or none), compiled or not."""

    m: Measurement | None
    compiled: bool


@dataclass(frozen=True)
class Mb:
    """A peak-memory cell: one measurement (or none)."""

    m: Measurement | None


@dataclass(frozen=True)
class Gain:
    """A speed-up factor (> 1: faster) with its 95% interval where known."""

    factor: float
    low: float | None
    high: float | None
    flagged: bool = False  # accuracy check failed

    @property
    def pct(self) -> float:
        return improvement_pct(self.factor)


def improvement_pct(factor: float) -> float:
    """The guide's "% improvement": time saved, in % of the slower duration."""
    return (1.0 - 1.0 / factor) * 100.0


def paired_gain(m: Measurement | None) -> Gain | str | None:
    """The compiled cell's own paired speed-up, its failure word, or None (not measured)."""
    if m is None:
        return None
    if not m.ok:
        return FAILURE_WORDS[m.status]
    if m.speedup is None:
        return None
    return Gain(m.speedup, m.speedup_low, m.speedup_high, m.accuracy_failed)


def cross_gain(base: Measurement | None, new: Measurement | None) -> Gain | str | None:
    """new vs base from two processes: base median / new median, with the widest interval
    the two medians' 95% CIs allow (conservative: no raw samples to pair)."""
    for m in (base, new):
        if m is not None and not m.ok:
            return FAILURE_WORDS[m.status]
    if base is None or new is None or base.median_ms is None or new.median_ms is None:
        return None
    return Gain(base.median_ms / new.median_ms, *ratio_interval(base, new))


def cross_note(base: str, new: str) -> str:
    return (
        f"`{new} vs {base}`: {base}'s median / {new}'s median (> 1x: {new} is faster), from separate "
        "processes; its interval runs from the lowest to the highest ratio the two medians' 95% CIs allow."
    )


def fmt_ms(value: float) -> str:
    return f"{value:.3f}"


def fmt_factor(gain: Gain) -> str:
    text = f"{gain.factor:.2f}x"
    if gain.low is not None and gain.high is not None:
        text += f" [{gain.low:.2f}, {gain.high:.2f}]"
    return text


def md_cell(kind: str, value: object) -> str:
    """How a value reads in Markdown."""
    if kind == "ms":
        assert isinstance(value, Ms)
        if value.m is None:
            return NOT_MEASURED
        if not value.m.ok:
            return FAILURE_WORDS[value.m.status]
        assert value.m.mean_ms is not None
        mark = f" {DAGGER}" if value.compiled and value.m.accuracy_failed else ""
        return fmt_ms(value.m.mean_ms) + mark
    if kind == "gain":
        if value is None:
            return NOT_MEASURED
        if isinstance(value, str):
            return value
        assert isinstance(value, Gain)
        return f"{value.pct:.1f}% · {fmt_factor(value)}" + (f" {DAGGER}" if value.flagged else "")
    if kind == "mb":
        assert isinstance(value, Mb)
        if value.m is None:
            return NOT_MEASURED
        if not value.m.ok:
            return FAILURE_WORDS[value.m.status]
        return NOT_MEASURED if value.m.peak_mem_mb is None else f"{value.m.peak_mem_mb:.0f}"
    if kind == "guide":
        if value is None:
            return NOT_MEASURED
        assert isinstance(value, GuideFigure)
        if value.erratum:
            return GUIDE_ERRATUM
        if value.speedup is None:
            return "OOM"
        return f"{improvement_pct(value.speedup):.1f}% · {value.speedup:.2f}x"
    return str(value)


def csv_cells(name: str, kind: str, value: object) -> dict[str, object]:
    """How a value reads in the CSV: plain numbers in their own columns, failures as words."""
    if kind == "ms":
        assert isinstance(value, Ms)
        m = value.m
        if m is None:
            return {name: ""}
        return {name: m.mean_ms if m.ok else FAILURE_WORDS[m.status]}
    if kind == "mb":
        assert isinstance(value, Mb)
        m = value.m
        if m is None:
            return {name: ""}
        return {
            name: (m.peak_mem_mb if m.peak_mem_mb is not None else "") if m.ok else FAILURE_WORDS[m.status]
        }
    if kind == "gain":
        pre = f"{name} " if name else ""
        out: dict[str, object] = {f"{pre}{c}": "" for c in ("improvement %", "speed-up", "CI low", "CI high")}
        if isinstance(value, str):
            out[f"{pre}speed-up"] = value
        elif isinstance(value, Gain):
            out[f"{pre}improvement %"] = round(value.pct, 2)
            out[f"{pre}speed-up"] = round(value.factor, 4)
            out[f"{pre}CI low"] = "" if value.low is None else round(value.low, 4)
            out[f"{pre}CI high"] = "" if value.high is None else round(value.high, 4)
        return out
    if kind == "guide":
        out = {f"{name} without torch.compile": "", f"{name} with torch.compile": "", f"{name} speed-up": ""}
        if isinstance(value, GuideFigure):
            if value.erratum:
                out[f"{name} speed-up"] = GUIDE_ERRATUM
            elif value.speedup is None:
                out.update({k: "OOM" for k in out})
            else:
                out[f"{name} without torch.compile"] = value.eager_ms
                out[f"{name} with torch.compile"] = value.compiled_ms
                out[f"{name} speed-up"] = round(value.speedup, 4)
        return out
    return {name: value}


# ---------------------------------------------------------------------------------------
# A table: columns, rows, its CSV and Markdown forms.


@dataclass(frozen=True)
class Column:
    md: str  # Markdown header
    csv: str  # CSV column name (or prefix, for gain and guide columns)
    kind: str  # text | ms | mb | gain | guide


@dataclass
class Table:
    name: str  # file stem
    section: str
    title: str
    subtitle: str
    columns: list[Column]
    rows: list[list[object]] = field(default_factory=list)
    context: list[dict[str, object]] = field(default_factory=list)  # CSV-only columns per row
    notes: list[str] = field(default_factory=list)

    def add(self, context: dict[str, object], values: list[object]) -> None:
        self.context.append(context)
        self.rows.append(values)

    def markdown_rows(self) -> list[list[str]]:
        return [[md_cell(c.kind, v) for c, v in zip(self.columns, row, strict=True)] for row in self.rows]

    def frame(self) -> pd.DataFrame:
        records = []
        for context, row in zip(self.context, self.rows, strict=True):
            record = dict(context)
            for col, value in zip(self.columns, row, strict=True):
                if col.kind != "text":
                    record.update(csv_cells(col.csv, col.kind, value))
            records.append(record)
        return pd.DataFrame(records)

    def markdown(self, heading: str = "###", legend: bool = True) -> str:
        """The table under its title, then its notes (the legend left out where the page has it)."""
        flagged = any(DAGGER in cell for row in self.markdown_rows() for cell in row)
        dagger = TRAIN_DAGGER_NOTE if TRAIN_LEGEND in self.notes else DAGGER_NOTE
        notes = [n for n in self.notes if legend or n not in (LEGEND, TRAIN_LEGEND)]
        notes += [dagger] if flagged else []
        lines = [f"{heading} {self.title}", "", self.subtitle, "", *markdown_table(self)]
        lines += ["", *(f"- {n}" for n in notes)] if notes else []
        return "\n".join(lines) + "\n"


def markdown_table(table: Table) -> list[str]:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    align = ["---" if c.kind == "text" else "---:" for c in table.columns]
    lines = ["| " + " | ".join(esc(c.md) for c in table.columns) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(esc(cell) for cell in row) + " |" for row in table.markdown_rows()]
    return lines


# ---------------------------------------------------------------------------------------
# The study's groups.


@dataclass(frozen=True)
class CompileGroup:
    """One compile-vs-eager comparison: a GPU, setup, build, batch size and compile mode."""

    gpu: Gpu
    setup: Setup
    build: str
    batch_size: int
    mode: str


def compile_groups(study: Study) -> list[CompileGroup]:
    """Every (GPU, setup, build, batch size, compiled mode) with at least one row."""
    groups = {
        CompileGroup(k.gpu, k.setup, k.build, k.batch_size, k.mode) for k in study.cells if k.mode != EAGER
    }
    return sorted(
        groups,
        key=lambda g: (
            study.gpus.index(g.gpu),
            study.setups.index(g.setup),
            study.builds.index(g.build),
            study.modes.index(g.mode),
            g.batch_size,
        ),
    )


def group_stem(study: Study, *parts: object, setup: Setup | None = None) -> str:
    """File stem: slugged parts joined by `__`, the setup added when runs differ in it."""
    names = [slug(str(p)) for p in parts]
    if setup is not None and len(study.setups) > 1:
        names.append(slug(setup.label))
    return "__".join(names)


def gpu_stem(gpu: Gpu) -> str:
    return slug(gpu.name) if gpu.device == "cuda" else slug(f"{gpu.device} {gpu.name}")


def _context(gpu: Gpu, setup: Setup, task: str, model: str, **more: object) -> dict[str, object]:
    return {
        "task": task,
        "model": model,
        "GPU": gpu.name,
        "device": gpu.device,
        **more,
        "dtype": setup.dtype,
        "scenario": setup.scenario,
        "weights": setup.weights,
        "variant": setup.variant,
    }


def compile_vs_eager(study: Study, group: CompileGroup, reference: Reference) -> Table:
    """`Task/Model | no compile | compile | speed-up` (+ the guide's figure when one matches)."""
    g = group
    kind = study.kind(g.build)
    guide_table = reference.table_for(g.gpu.name, kind, g.mode, g.batch_size) if g.setup.guide_like else None
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("no compile (ms)", "without torch.compile", "ms"),
        Column("compile (ms)", "with torch.compile", "ms"),
        Column("speed-up", "", "gain"),
    ]
    training = g.setup.scenario == TRAIN
    notes = [legend(g.setup.scenario)]
    if guide_table is not None:
        columns.append(Column(f"guide: {guide_table}", "guide", "guide"))
        guide_build = next(f.build for f in reference.figures if f.table == guide_table)
        notes.append(GUIDE_NOTE.format(table=f"table '{guide_table}'", build=guide_build))
    elif not g.setup.guide_like:
        notes.append(f"No guide comparison: the guide measured {GUIDE_SETUP}, not {g.setup.label}.")
    table = Table(
        name=group_stem(
            study,
            "train-compile-vs-eager" if training else "compile-vs-eager",
            gpu_stem(g.gpu),
            g.build,
            f"bs{g.batch_size}",
            g.mode,
            setup=g.setup,
        ),
        section="train compile vs eager" if training else "compile vs eager",
        title=("Training step · " if training else "")
        + f"{g.gpu.label} · {study.torch_label(g.build)} · batch size {g.batch_size} · mode {g.mode}",
        subtitle=f"Build kind: {kind}. Setup: {g.setup.label}.",
        columns=columns,
        notes=notes,
    )
    for task, model in study.models:
        eager = study.get(g.build, g.gpu, g.setup, task, model, g.batch_size, EAGER)
        compiled = study.get(g.build, g.gpu, g.setup, task, model, g.batch_size, g.mode)
        if eager is None and compiled is None:
            continue
        values: list[object] = [
            study.model_label(task, model),
            Ms(eager, False),
            Ms(compiled, True),
            paired_gain(compiled),
        ]
        if guide_table is not None:
            values.append(reference.lookup(g.gpu.name, kind, g.mode, g.batch_size, task, model))
        context = _context(
            g.gpu,
            g.setup,
            task,
            model,
            **{"batch size": g.batch_size, "build": g.build, "mode": g.mode},
            accuracy=compiled.accuracy if compiled is not None else "",
        )
        table.add(context, values)
    return table


def stable_vs_others(study: Study) -> list[Table]:
    """For each stable build S and each other build B: `S no compile | S compile | B no compile |
    B compile`, per GPU, setup and compile mode, rows by model and batch size (the guide's
    nightly tables), with both builds' speed-ups and B against S."""
    stables = [b for b in study.builds if study.kind(b) == "stable"]
    others = [b for b in study.builds if study.kind(b) != "stable"]
    tables = []
    for s in stables:
        for b in others:
            for gpu in study.gpus:
                for setup in study.setups:
                    for mode in study.modes:
                        if mode == EAGER:
                            continue
                        if not (
                            study.keys_where(build=s, gpu=gpu, setup=setup, mode=mode)
                            and study.keys_where(build=b, gpu=gpu, setup=setup, mode=mode)
                        ):
                            continue
                        tables.append(_stable_vs(study, s, b, gpu, setup, mode))
    return tables


def _stable_vs(study: Study, s: str, b: str, gpu: Gpu, setup: Setup, mode: str) -> Table:
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column(f"{s} no compile (ms)", f"{s} without torch.compile", "ms"),
        Column(f"{s} compile (ms)", f"{s} with torch.compile", "ms"),
        Column(f"{b} no compile (ms)", f"{b} without torch.compile", "ms"),
        Column(f"{b} compile (ms)", f"{b} with torch.compile", "ms"),
        Column(f"{s} speed-up", f"{s}", "gain"),
        Column(f"{b} speed-up", f"{b}", "gain"),
        Column(f"{b} vs {s}, no compile", f"{b} vs {s} without torch.compile", "gain"),
        Column(f"{b} vs {s}, compile", f"{b} vs {s} with torch.compile", "gain"),
    ]
    table = Table(
        name=group_stem(study, "stable-vs-nightly", gpu_stem(gpu), f"{s}-vs-{b}", mode, setup=setup),
        section="stable vs nightly",
        title=f"{gpu.label} · {study.torch_label(s)} vs {study.torch_label(b)} · mode {mode}",
        subtitle=f"Build kinds: {s} {study.kind(s)}, {b} {study.kind(b)}. Setup: {setup.label}.",
        columns=columns,
        notes=[legend(setup.scenario), cross_note(s, b)],
    )
    for task, model in study.models:
        for bs in study.batch_sizes:
            cells = {
                (build, m): study.get(build, gpu, setup, task, model, bs, m)
                for build in (s, b)
                for m in (EAGER, mode)
            }
            if all(v is None for v in cells.values()):
                continue
            values: list[object] = [
                study.model_label(task, model),
                str(bs),
                Ms(cells[s, EAGER], False),
                Ms(cells[s, mode], True),
                Ms(cells[b, EAGER], False),
                Ms(cells[b, mode], True),
                paired_gain(cells[s, mode]),
                paired_gain(cells[b, mode]),
                cross_gain(cells[s, EAGER], cells[b, EAGER]),
                cross_gain(cells[s, mode], cells[b, mode]),
            ]
            table.add(_context(gpu, setup, task, model, **{"batch size": bs, "mode": mode}), values)
    return table


def compile_modes(study: Study) -> list[Table]:
    """`no compile | default | reduce-overhead | ...` per build, GPU and setup where a build ran
    two or more compile modes (the guide's reduce-overhead tables, side by side with default)."""
    tables = []
    for build in study.builds:
        for gpu in study.gpus:
            for setup in study.setups:
                modes = [
                    m
                    for m in study.modes
                    if m != EAGER and study.keys_where(build=build, gpu=gpu, setup=setup, mode=m)
                ]
                if len(modes) >= 2:
                    tables.append(_modes_table(study, build, gpu, setup, modes))
    return tables


def _modes_table(study: Study, build: str, gpu: Gpu, setup: Setup, modes: Sequence[str]) -> Table:
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column("no compile (ms)", "without torch.compile", "ms"),
        *(Column(f"{m} (ms)", m, "ms") for m in modes),
        *(Column(f"{m} speed-up", m, "gain") for m in modes),
    ]
    table = Table(
        name=group_stem(study, "modes", gpu_stem(gpu), build, setup=setup),
        section="compile modes",
        title=f"{gpu.label} · {study.torch_label(build)} · modes {', '.join(modes)}",
        subtitle=f"Build kind: {study.kind(build)}. Setup: {setup.label}.",
        columns=columns,
        notes=[legend(setup.scenario)],
    )
    for task, model in study.models:
        for bs in study.batch_sizes:
            eager = study.get(build, gpu, setup, task, model, bs, EAGER)
            compiled = [study.get(build, gpu, setup, task, model, bs, m) for m in modes]
            if eager is None and all(c is None for c in compiled):
                continue
            values: list[object] = [
                study.model_label(task, model),
                str(bs),
                Ms(eager, False),
                *(Ms(c, True) for c in compiled),
                *(paired_gain(c) for c in compiled),
            ]
            table.add(_context(gpu, setup, task, model, **{"batch size": bs, "build": build}), values)
    return table


# ---------------------------------------------------------------------------------------
# Peak memory: what a user sizing a batch needs, inference and training side by side.


@dataclass(frozen=True)
class MemoryGroup:
    """Rows that share a GPU, build, dtype, weights and variant; scenarios and modes are columns."""

    gpu: Gpu
    build: str
    dtype: str
    weights: str
    variant: str

    @property
    def label(self) -> str:
        parts = [self.dtype, f"{self.weights} weights"]
        if self.variant:
            parts.append(f"{self.variant} models" if self.variant == "smoke" else self.variant)
        return ", ".join(parts)


def _memory_group(gpu: Gpu, build: str, setup: Setup) -> MemoryGroup:
    return MemoryGroup(gpu, build, setup.dtype, setup.weights, setup.variant)


def peak_memory(study: Study) -> list[Table]:
    """`Task/Model | Batch Size | params (M) | inference <mode> (MB) ... | train <mode> (MB) ...`
    per GPU, build, dtype, weights and variant."""
    groups = list(dict.fromkeys(_memory_group(k.gpu, k.build, k.setup) for k in study.cells))
    groups.sort(key=lambda g: (study.gpus.index(g.gpu), study.builds.index(g.build)))
    return [
        _memory_table(study, g, several=len(groups) > len({(x.gpu, x.build) for x in groups})) for g in groups
    ]


def _memory_table(study: Study, g: MemoryGroup, several: bool) -> Table:
    keys = [k for k in study.cells if _memory_group(k.gpu, k.build, k.setup) == g]
    setups = list(dict.fromkeys(k.setup for k in keys))
    setups.sort(key=lambda x: (x.scenario == TRAIN, study.setups.index(x)))  # inference first
    modes = sorted(
        study.modes, key=lambda m: (MODES.index(m) if m in MODES else len(MODES), study.modes.index(m))
    )
    columns_of = [(x, m) for x in setups for m in modes if any(k.setup == x and k.mode == m for k in keys)]
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column("params (M)", "params (M)", "text"),
        *(Column(f"{x.scenario} {m} (MB)", f"{x.scenario} {m} peak MB", "mb") for x, m in columns_of),
    ]
    parts = ["peak-memory", gpu_stem(g.gpu), g.build] + ([g.label] if several else [])
    table = Table(
        name="__".join(slug(str(p)) for p in parts),
        section="peak memory",
        title=f"Peak memory · {g.gpu.label} · {study.torch_label(g.build)}",
        subtitle=f"Build kind: {study.kind(g.build)}. Setup: {g.label}.",
        columns=columns,
        notes=[MEMORY_NOTE],
    )
    for task, model in study.models:
        for bs in study.batch_sizes:
            cells = [study.get(g.build, g.gpu, x, task, model, bs, m) for x, m in columns_of]
            if all(c is None for c in cells):
                continue
            params = next((c.params_m for c in cells if c is not None and c.params_m is not None), None)
            shown = "" if params is None else f"{params:.2f}"
            context = {
                "task": task,
                "model": model,
                "GPU": g.gpu.name,
                "device": g.gpu.device,
                "batch size": bs,
                "build": g.build,
                "params (M)": "" if params is None else round(params, 4),
                "dtype": g.dtype,
                "weights": g.weights,
                "variant": g.variant,
            }
            table.add(
                context, [study.model_label(task, model), str(bs), shown or NOT_MEASURED, *map(Mb, cells)]
            )
    return table


# ---------------------------------------------------------------------------------------
# Summary figures.


def geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else None


@dataclass(frozen=True)
class SummaryRow:
    build: str
    kind: str
    mode: str
    gpu: Gpu
    batch_size: int
    setup: Setup
    cells: int
    ok: int
    accuracy_fail: int
    speedups: tuple[float, ...]

    @property
    def pass_rate(self) -> float:
        return self.ok / self.cells

    @property
    def geomean(self) -> float | None:
        return geomean(self.speedups)

    @property
    def geomean_clipped(self) -> float | None:
        """Each cell's speed-up floored at 1x: what you get if you keep eager where compile loses."""
        return geomean(max(1.0, s) for s in self.speedups)


def summary_rows(study: Study) -> list[SummaryRow]:
    groups: dict[tuple[str, str, Gpu, int, Setup], list[Measurement]] = {}
    for key, m in study.cells.items():
        groups.setdefault((key.build, key.mode, key.gpu, key.batch_size, key.setup), []).append(m)
    rows = []
    for (build, mode, gpu, bs, setup), ms in groups.items():
        rows.append(
            SummaryRow(
                build=build,
                kind=study.kind(build),
                mode=mode,
                gpu=gpu,
                batch_size=bs,
                setup=setup,
                cells=len(ms),
                ok=sum(m.ok for m in ms),
                accuracy_fail=sum(m.ok and m.accuracy_failed for m in ms),
                speedups=tuple(m.speedup for m in ms if m.ok and m.speedup is not None and mode != EAGER),
            )
        )
    order = (study.builds, study.modes, study.gpus, study.setups)
    return sorted(
        rows,
        key=lambda r: (
            order[0].index(r.build),
            order[1].index(r.mode),
            order[2].index(r.gpu),
            order[3].index(r.setup),
            r.batch_size,
        ),
    )


def summary_table(study: Study) -> Table:
    """Geometric-mean speed-up (unclipped and clipped at 1x) and pass rate per build, mode, GPU,
    batch size and setup."""
    columns = [
        Column("Build", "build", "text"),
        Column("Mode", "mode", "text"),
        Column("GPU", "GPU", "text"),
        Column("Batch Size", "batch size", "text"),
        Column("Setup", "setup", "text"),
        Column("pass rate (ok / cells)", "pass rate", "text"),
        Column("accuracy fails", "accuracy fails", "text"),
        Column("geomean speed-up", "geomean speed-up", "text"),
        Column("geomean speed-up, clipped at 1x", "geomean speed-up clipped", "text"),
    ]
    table = Table(
        name="summary",
        section="summary",
        title="Summary",
        subtitle="Per build, mode, GPU, batch size and setup.",
        columns=columns,
        notes=[
            "pass rate: cells with status ok / all cells recorded (failures: OOM, error, timeout, skipped).",
            "geomean speed-up: geometric mean of the paired speed-ups (eager median / compiled median) of "
            "the ok cells, n = how many; clipped: each speed-up floored at 1x first (keep eager where "
            "compile loses). Eager rows have no speed-up.",
        ],
    )
    for r in summary_rows(study):
        n = len(r.speedups)
        gm, gmc = r.geomean, r.geomean_clipped
        table.add(
            {
                "build": r.build,
                "kind": r.kind,
                "mode": r.mode,
                "GPU": r.gpu.name,
                "device": r.gpu.device,
                "batch size": r.batch_size,
                "setup": r.setup.label,
                "cells": r.cells,
                "ok": r.ok,
                "pass rate": round(r.pass_rate, 4),
                "accuracy fails": r.accuracy_fail,
                "speed-ups": n,
                "geomean speed-up": "" if gm is None else round(gm, 4),
                "geomean speed-up clipped": "" if gmc is None else round(gmc, 4),
            },
            [
                r.build,
                r.mode,
                r.gpu.label,
                str(r.batch_size),
                r.setup.label,
                f"{r.ok}/{r.cells} ({r.pass_rate:.0%})",
                str(r.accuracy_fail) if r.mode != EAGER else NOT_MEASURED,
                f"{gm:.3f}x (n={n})" if gm is not None else NOT_MEASURED,
                f"{gmc:.3f}x (n={n})" if gmc is not None else NOT_MEASURED,
            ],
        )
    return table


# ---------------------------------------------------------------------------------------
# Writing.


def write_table(table: Table, folder: Path) -> tuple[Path, Path]:
    md = folder / f"{table.name}.md"
    csv = folder / f"{table.name}.csv"
    md.write_text(table.markdown(heading="#"), encoding="utf-8")
    table.frame().to_csv(csv, index=False)
    return md, csv
