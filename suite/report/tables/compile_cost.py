"""What compiling costs a user, per GPU, setup, build and compile mode: the cold compile, the warm
and mega-cache ones, the time to the first result with and without compiling, and the number
of calls after which compiling has paid for itself (docs/compile-cost.md).

Host side only. A figure a build cannot give (torch 2.0.1 has no FX graph cache and no
mega-cache) reads "—", and the table's notes give the reason the rows' `compile_note` gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from suite.report.measurement import Measurement
from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cells import NEVER, Qty, breakeven
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context

PARTLY_WARM = "*"
COST_NOTE = (
    "cold: compile_s, the first compiled call minus an eager call in the cell's own process (fresh "
    "caches with compile_cache: cold). warm: the same in a second fresh process pointed at the caches "
    "the first left (inductor's FX graph cache, AOTAutograd's cache, compiled kernels). mega-cache: "
    "torch.compiler.load_cache_artifacts of the first process's saved artifacts plus the same compile, "
    "in a fresh process with empty cache folders. first result: seconds from the process's start "
    "(the runner's clock as it starts the worker: interpreter, imports, model build and input "
    "included) to the first output; compiled = eager + cold compile. break-even: calls after which "
    "compiling has paid for itself, compile seconds / (eager - compiled median per call), "
    f"{NEVER} where compiling is not faster."
)
PARTLY_WARM_NOTE = (
    f"{PARTLY_WARM} its process missed or bypassed a cache for some graph (the raw CSV's compile_note "
    "says which): partly a cold compile."
)


@dataclass(frozen=True)
class CostGroup:
    """One compile-cost table: a GPU, setup, build and compiled mode."""

    gpu: Gpu
    setup: Setup
    build: str
    mode: str


def compile_cost_tables(study: Study) -> list[Table]:
    """One table per (GPU, setup, build, compiled mode) with at least one compiled cell."""
    groups = list(
        dict.fromkeys(CostGroup(k.gpu, k.setup, k.build, k.mode) for k in study.cells if k.mode != EAGER)
    )
    groups.sort(
        key=lambda g: (
            study.gpus.index(g.gpu),
            study.setups.index(g.setup),
            study.builds.index(g.build),
            study.modes.index(g.mode),
        )
    )
    return [_table(study, g) for g in groups]


def table_name(study: Study, g: CostGroup) -> str:
    """The file stem of a group's table (the amortization plots are linked under it)."""
    return group_stem(study, "compile-cost", gpu_stem(g.gpu), g.build, g.mode, setup=g.setup)


def partly_warm(m: Measurement, label: str) -> bool:
    """Did the warm (or mega-cache) process of this row miss or bypass a cache?"""
    part = next((p for p in m.compile_note.split("; ") if p.startswith(f"{label}:")), "")
    return " miss" in part or " bypass" in part


def reasons(rows: list[Measurement]) -> list[str]:
    """What the rows' notes say about their warm and mega-cache figures, each reason once: why one
    is empty, and what "warm" means where only compiled kernels are cached."""
    out: list[str] = []
    for m in (m for m in rows if m.ok):
        parts = m.compile_note.split("; ")
        warm = [p for p in parts if p.startswith("warm:")]
        mega = [p for p in parts if p.startswith("mega-cache")]
        if m.compile_warm_s is None:
            out += [f"Empty {p}" for p in warm] or ["Empty warm: no warm process (compile_cost off)"]
        else:
            out += [f"Warm: {p.removeprefix('warm:').strip()}." for p in warm if "kernels only" in p]
        if m.compile_megacache_s is None:
            out += [f"Empty {p}" for p in mega] or [
                "Empty mega-cache: no mega-cache process (compile_cost off)"
            ]
    return list(dict.fromkeys(out))


def _table(study: Study, g: CostGroup) -> Table:
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column("cold (s)", "compile cold s", "qty"),
        Column("warm (s)", "compile warm s", "qty"),
        Column("mega-cache (s)", "compile mega-cache s", "qty"),
        Column("first result, eager (s)", "first result eager s", "qty"),
        Column("first result, compiled (s)", "first result compiled s", "qty"),
        Column("break-even (calls)", "break-even calls", "qty"),
        Column("break-even, warm (calls)", "break-even warm calls", "qty"),
    ]
    table = Table(
        name=table_name(study, g),
        section="compile cost",
        title=f"What compiling costs · {g.gpu.label} · {study.torch_label(g.build)} · mode {g.mode}",
        subtitle=f"Build kind: {study.kind(g.build)}. Setup: {g.setup.label}.",
        columns=columns,
        notes=[COST_NOTE],
    )
    seen: list[Measurement] = []
    flagged = False
    for task, model in study.models:
        for bs in study.batch_sizes:
            m = study.get(CellKey(g.build, g.gpu, g.setup, task, model, bs, g.mode))
            if m is None:
                continue
            seen.append(m)
            warm_mark = (
                PARTLY_WARM if m.ok and m.compile_warm_s is not None and partly_warm(m, "warm") else ""
            )
            mega_mark = (
                PARTLY_WARM
                if m.ok and m.compile_megacache_s is not None and partly_warm(m, "mega-cache")
                else ""
            )
            flagged = flagged or bool(warm_mark or mega_mark)
            values: list[object] = [
                study.model_label(task, model),
                str(bs),
                Qty(m, m.compile_s),
                Qty(m, m.compile_warm_s, mark=warm_mark),
                Qty(m, m.compile_megacache_s, mark=mega_mark),
                Qty(m, m.eager_first_result_s),
                Qty(m, m.first_result_s),
                breakeven(m),
                breakeven(m, warm=True),
            ]
            context = row_context(
                g.gpu,
                g.setup,
                task,
                model,
                **{"batch size": bs, "build": g.build, "mode": g.mode},
                **{
                    "cache missed (warm, mega-cache)": ",".join(
                        x for x, on in (("warm", warm_mark), ("mega-cache", mega_mark)) if on
                    )
                },
            )
            table.add(context, values)
    table.notes += [PARTLY_WARM_NOTE] if flagged else []
    table.notes += reasons(seen)
    return table
