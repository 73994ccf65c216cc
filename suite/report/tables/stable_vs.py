"""Stable vs the other builds (the guide's nightly tables, and a release against the stable
one alike; each table is named by its two builds): for a stable build and each other build,
durations without and with compile side by side, each build's speed-up, and the other build
against the stable one (from separate processes, with a conservative interval).
"""

from __future__ import annotations

from suite.report.study import EAGER, Gpu, Setup, Study
from suite.report.tables.cells import Ms, cross_gain, legend, paired_gain
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context


def cross_note(base: str, new: str) -> str:
    return (
        f"`{new} vs {base}`: {base}'s median / {new}'s median (> 1x: {new} is faster), from separate "
        "processes; its interval runs from the lowest to the highest ratio the two medians' 95% CIs allow."
    )


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
        # named by the two builds (stable-vs-nightly, stable-vs-current), not by the guide's
        # nightly table: the other build may be a release
        name=group_stem(study, f"{s}-vs-{b}", gpu_stem(gpu), mode, setup=setup),
        section="stable vs nightly",
        title=f"{gpu.label} · {study.torch_label(s)} vs {study.torch_label(b)} · mode {mode}",
        subtitle=f"Build kinds: {s}: {study.kind(s)}, {b}: {study.kind(b)}. Setup: {setup.label}.",
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
            table.add(row_context(gpu, setup, task, model, **{"batch size": bs, "mode": mode}), values)
    return table
