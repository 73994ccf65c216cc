"""Compile vs eager, the guide's main tables: per GPU, setup, build, batch size and compile
mode, each model's duration without and with torch.compile and the paired speed-up (the two
durations are the compiled cell's paired medians of latency, so they and the % agree), then the
same as throughput (back-to-back calls) where the rows have it, beside the guide's figure: the
throughput is the guide's statistic (its mean of back-to-back calls), and each cell's mean stands
in for it in rows from before it (inference and training alike).
A column is one `Column` and one value per row: add one in both lists.
"""

from __future__ import annotations

from dataclasses import dataclass

from suite.report.reference import Reference
from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cells import (
    COMPILE_NOTE,
    MEANS_NOTE,
    THROUGHPUT_NOTE,
    TRAIN,
    Ms,
    Qty,
    back_to_back,
    breakeven,
    durations,
    legend,
    paired_gain,
)
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context

GUIDE_SETUP = "float32 inference of the full (not shrunk) models"
GUIDE_NOTE = (
    "Guide: its published means ({table}, torch {build}), speed-up = without / with compile; "
    "the guide published no spread, so no CI."
)


@dataclass(frozen=True)
class CompileGroup:
    """One compile-vs-eager comparison: a GPU, setup, build, batch size and compile mode."""

    gpu: Gpu
    setup: Setup
    build: str
    batch_size: int
    mode: str

    def key(self, task: str, model: str, mode: str | None = None) -> CellKey:
        """A model's cell in this group (or in its `mode`: `EAGER` for its eager cell)."""
        return CellKey(self.build, self.gpu, self.setup, task, model, self.batch_size, mode or self.mode)


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


def _notes(
    g: CompileGroup, reference: Reference, guide_table: str | None, *, timed_compile: bool, throughput: bool
) -> list[str]:
    """The table's notes: the legend, then what its optional columns mean, then the guide's."""
    notes = [legend(g.setup.scenario), *([COMPILE_NOTE] if timed_compile else [])]
    notes += [THROUGHPUT_NOTE] if throughput else []
    if guide_table is not None and not throughput:
        notes.append(MEANS_NOTE)
    if guide_table is not None:
        guide_build = next(f.build for f in reference.figures if f.table == guide_table)
        notes.append(GUIDE_NOTE.format(table=f"table '{guide_table}'", build=guide_build))
    elif not g.setup.guide_like:
        notes.append(f"No guide comparison: the guide measured {GUIDE_SETUP}, not {g.setup.label}.")
    return notes


def compile_vs_eager(study: Study, group: CompileGroup, reference: Reference) -> Table:
    """`Task/Model | no compile | compile | speed-up` (+ the guide's figure when one matches)."""
    g = group
    kind = study.kind(g.build)
    guide_table = reference.table_for(g.gpu.name, kind, g.mode, g.batch_size) if g.setup.guide_like else None
    beside_guide = guide_table is not None
    # throughput (back-to-back calls, docs/measurement.md) where the rows have it: the guide's statistic
    throughput = any(
        m is not None and m.more.get("throughput_speedup") is not None
        for m in (study.get(g.key(t, mo)) for t, mo in study.models)
    )
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("no compile (ms)", "without torch.compile", "dur"),
        Column("compile (ms)", "with torch.compile", "dur"),
        Column("speed-up", "", "gain"),
        # the guide's statistic: in the CSV always, in Markdown beside the guide's figures (the
        # back-to-back figures where the rows have them, else each cell's mean)
        Column(
            "mean, no compile (ms)", "eager cell mean (ms)", "ms", markdown=beside_guide and not throughput
        ),
        Column(
            "mean, compile (ms)", "compiled cell mean (ms)", "ms", markdown=beside_guide and not throughput
        ),
    ]
    if throughput:
        columns += [
            Column("back-to-back, no compile (ms)", "eager throughput (ms)", "dur"),
            Column("back-to-back, compile (ms)", "compiled throughput (ms)", "dur"),
            Column("back-to-back speed-up", "throughput", "gain"),
        ]
    # compile time and break-even calls where the rows have them (an older CSV may not)
    timed_compile = any(
        m is not None and m.compile_s is not None for m in (study.get(g.key(t, mo)) for t, mo in study.models)
    )
    if timed_compile:
        columns += [
            Column("compile (s)", "compile s", "qty"),
            Column("break-even (calls)", "break-even calls", "qty"),
        ]
    training = g.setup.scenario == TRAIN
    notes = _notes(g, reference, guide_table, timed_compile=timed_compile, throughput=throughput)
    if guide_table is not None:
        columns.append(Column(f"guide: {guide_table}", "guide", "guide"))
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
        eager = study.get(g.key(task, model, EAGER))
        compiled = study.get(g.key(task, model))
        if eager is None and compiled is None:
            continue
        values: list[object] = [
            study.model_label(task, model),
            *durations(eager, compiled),
            paired_gain(compiled),
            Ms(eager, False),
            Ms(compiled, True),
        ]
        if throughput:
            values += [*back_to_back(compiled)]
        if timed_compile:
            values += [Qty(compiled, compiled.compile_s if compiled else None), breakeven(compiled)]
        if guide_table is not None:
            values.append(reference.lookup(g.gpu.name, kind, g.mode, g.batch_size, task, model))
        context = row_context(
            g.gpu,
            g.setup,
            task,
            model,
            **{"batch size": g.batch_size, "build": g.build, "mode": g.mode},
            accuracy=compiled.accuracy if compiled is not None else "",
        )
        table.add(context, values)
    return table
