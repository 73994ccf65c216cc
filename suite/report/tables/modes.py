"""Compile modes side by side (the guide's reduce-overhead tables next to default): per build,
GPU and setup that ran two or more compile modes. Each mode shows its own cell's paired eager
and compiled medians beside its speed-up: a mode's eager calls ran in its own process, so one
"no compile" column for all modes could not agree with every mode's %.
"""

from __future__ import annotations

from collections.abc import Sequence

from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cells import durations, legend, paired_gain
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context


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
    columns = [Column("Task/Model", "Task/Model", "text"), Column("Batch Size", "Batch Size", "text")]
    for m in modes:  # each mode's durations are its own cell's pair, so they and its % agree
        columns += [
            Column(f"{m}: no compile (ms)", f"{m} without torch.compile", "dur"),
            Column(f"{m}: compile (ms)", f"{m} with torch.compile", "dur"),
            Column(f"{m} speed-up", m, "gain"),
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
            eager = study.get(CellKey(build, gpu, setup, task, model, bs, EAGER))
            compiled = [study.get(CellKey(build, gpu, setup, task, model, bs, m)) for m in modes]
            if eager is None and all(c is None for c in compiled):
                continue
            values: list[object] = [study.model_label(task, model), str(bs)]
            for c in compiled:
                values += [*durations(eager, c), paired_gain(c)]
            table.add(row_context(gpu, setup, task, model, **{"batch size": bs, "build": build}), values)
    return table
