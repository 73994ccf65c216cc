"""Batch sizes that change: the dynamic-batch cells (one process serving the batch sizes in turn,
then the first again, under each `dynamic` setting) beside the static cells of the same batch
sizes (one process each), per GPU, build and compile mode.

Host side only. The dynamic-batch rows are the `Study`'s `dynamic` (their keys carry the
`dynamic` setting).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from suite.report.measurement import Measurement
from suite.report.study import CellKey, Gpu, Setup, Study
from suite.report.tables.cells import Dyn
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context
from suite.spec.vocab import DYNAMIC_SETTINGS, MIXED_RESOLUTION

INFERENCE = "inference"
DYNAMIC_NOTE = (
    "Each setting is one process serving the batch sizes in turn ({sequence}) with one compiled model: "
    "static = torch.compile(dynamic=False); auto = torch's default (a graph for the first shape, then one "
    "with a symbolic batch dimension when another comes); marked = the default plus "
    "torch._dynamo.mark_dynamic on every input's batch dimension. A cell reads compile seconds paid when "
    "that batch size first arrived (the first compiled call minus an eager call there) · graphs dynamo "
    "compiled then and on the return to it (the process's first compile not counted) · median compiled ms · "
    "paired speed-up (eager median / compiled median, interleaved in that process). static cell: the "
    "inference cell of that batch size, in its own process (compile: a cold compile for that size "
    "alone; recompiles while timed). all: the sequence's totals (static cells: the compiles separate "
    "processes pay, one per size)."
)
SPECIALISE_NOTE = (
    "torch specialises batch sizes 0 and 1: a graph compiled at batch size 1 serves 1 alone, marked or "
    "not, so a dynamic graph comes with the next size (it then serves 2 and up); the raw CSV's "
    "compile_note has dynamo's reason for each graph (its guard failures)."
)


@dataclass(frozen=True)
class DynGroup:
    gpu: Gpu
    setup: Setup
    build: str
    mode: str


def dynamic_tables(study: Study) -> list[Table]:
    """One table per (GPU, setup, build, compiled mode) of the dynamic-batch rows."""
    # mixed-resolution rows carry a `dynamic` setting too: their own table (tables.mixed_resolution)
    keys = [k for k in study.dynamic if k.setup.scenario != MIXED_RESOLUTION]
    groups = list(dict.fromkeys(DynGroup(k.gpu, k.setup, k.build, k.mode) for k in keys))
    return [_table(study, g) for g in groups]


def _notes(rows: Sequence[Measurement]) -> list[str]:
    """Why a setting has no figures (a skipped cell's reason) and what a setting meant in this build
    (the rows' notes that start with `torch `), each once."""
    out: list[str] = []
    for m in rows:
        if m.status == "skipped":
            out.append(f"Skipped: {m.error}")
        out += [f"{p}." for p in m.compile_note.split("; ") if p.startswith("torch ")]
    return list(dict.fromkeys(out))


def _table(study: Study, g: DynGroup) -> Table:
    keys = [k for k in study.dynamic if DynGroup(k.gpu, k.setup, k.build, k.mode) == g]
    sizes = list(dict.fromkeys(k.batch_size for k in keys))
    settings = [d for d in DYNAMIC_SETTINGS if any(k.dynamic == d for k in keys)]
    static_setup = replace(g.setup, scenario=INFERENCE)
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column("static cell: s · recompiles · median ms · speed-up", "static cell", "dyn"),
        *(Column(f"{d}: s · recompiles · median ms · speed-up", d, "dyn") for d in settings),
    ]
    sequence = " → ".join(map(str, [*sizes, sizes[0]]))
    table = Table(
        name=group_stem(study, "dynamic-shapes", gpu_stem(g.gpu), g.build, g.mode, setup=static_setup),
        section="dynamic shapes",
        title=f"Batch sizes that change · {g.gpu.label} · {study.torch_label(g.build)} · mode {g.mode}",
        subtitle=f"Build kind: {study.kind(g.build)}. Setup: {static_setup.label}; batch sizes {sequence}.",
        columns=columns,
        notes=[DYNAMIC_NOTE.format(sequence=sequence), SPECIALISE_NOTE],
    )
    models = list(dict.fromkeys((k.task, k.model) for k in keys))
    for task, model in models:
        statics: list[Measurement | None] = []
        per_setting: dict[str, list[Measurement | None]] = {d: [] for d in settings}
        for bs in sizes:
            static = study.get(CellKey(g.build, g.gpu, static_setup, task, model, bs, g.mode))
            statics.append(static)
            cells = [
                study.get(CellKey(g.build, g.gpu, g.setup, task, model, bs, g.mode, d)) for d in settings
            ]
            for d, m in zip(settings, cells, strict=True):
                per_setting[d].append(m)
            context = row_context(
                g.gpu, static_setup, task, model, **{"batch size": bs, "build": g.build, "mode": g.mode}
            )
            table.add(context, [study.model_label(task, model), str(bs), Dyn(static), *map(Dyn, cells)])
        totals = [_total(statics, with_recompiles=False), *(_total(per_setting[d]) for d in settings)]
        context = row_context(
            g.gpu, static_setup, task, model, **{"batch size": "all", "build": g.build, "mode": g.mode}
        )
        table.add(context, [study.model_label(task, model), f"all ({sequence})", *totals])
    table.notes += _notes([study.dynamic[k] for k in keys])
    return table


def _total(cells: Sequence[Measurement | None], with_recompiles: bool = True) -> Dyn:
    """The compile seconds (and graphs) a whole sequence paid; none when a size has no figure."""
    ok = [m for m in cells if m is not None and m.ok and m.compile_s is not None]
    if not ok or len(ok) != len(cells):
        return Dyn(None)
    recompiles = sum(m.recompiles or 0 for m in ok) if with_recompiles else None
    return Dyn(None, total_s=sum(m.compile_s or 0.0 for m in ok), total_recompiles=recompiles)
