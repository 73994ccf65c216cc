"""Stable vs the other builds (the guide's nightly tables, and a release against the stable
one alike; each table is named by its two builds): for a stable build and each other build,
durations without and with compile side by side, each build's speed-up, and the other build
against the stable one (from separate processes, with a conservative interval).
"""

from __future__ import annotations

from suite.report.measurement import Measurement
from suite.report.moved import Side, SpeedupSplit
from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cells import DOUBLE_DAGGER, Dur, Gain, cross_gain, durations, legend, paired_gain
from suite.report.tables.table import Column, Table, gpu_stem, group_stem, row_context
from suite.results import STATUS_WORDS
from suite.run import pairrule
from suite.spec.vocab import is_base_of


def cross_note(base: str, new: str) -> str:
    return (
        f"`{new} vs {base}`: {base}'s duration / {new}'s duration, the two shown (> 1x: {new} is faster), "
        "from separate processes; its interval runs from the lowest to the highest ratio the two medians' "
        "95% CIs allow."
    )


def moved_note(base: str, new: str) -> str:
    return (
        f"What moved: speed-up {new} / {base} = eager side x compiled side, exactly, for the durations "
        f"shown. eager side = {new}'s no-compile duration / {base}'s (< 1x: eager got faster, which lowers "
        f"the speed-up); compiled side = {base}'s compile duration / {new}'s (> 1x: compiled got faster, "
        "which raises it). Each side's interval: the widest the two medians' 95% CIs allow (separate "
        "processes; the machine's drift between runs is not in it); the speed-up's: from the two paired "
        "speed-ups' CIs. moved: the sides whose interval excludes 1x."
    )


def pair_note(base: str, new: str) -> str:
    return (
        f"Where the two builds were timed side by side (a pair, docs/pairs.md), `{new} vs {base}` is the "
        "paired ratio instead: per round of the same minutes, base / new, its median over rounds with a "
        f"bootstrap 95% interval; `{new} vs {base}: rule` then gives the pair's verdict (slower: an interval "
        "below 0.95x, or compile above 1.15x). `separate`: the ratio of two medians timed apart."
    )


def paired_vs(
    base: str, compiled: Measurement | None, eager: Measurement | None = None
) -> tuple[Gain | None, Gain | None, str] | None:
    """A compiled row timed side by side with `base`: its paired compiled and eager ratios and the
    pair's verdict (suite.run.pairrule); a cell with no compiled row, its eager row's paired ratio
    (no compiled one); None where it was not timed side by side."""
    eager_only = compiled is None and eager is not None
    row = eager if eager_only else compiled
    pair = row.pair if row is not None and row.ok else None
    if pair is None or pair.partner != base or "latency" not in pair.ratios:
        return None
    gains = {k: Gain(r.value, r.low, r.high) for k, r in pair.ratios.items()}
    verdict = f"paired: {pairrule.judge(pair).verdict}"
    if eager_only:  # an eager row's own latency ratio is its eager one
        return None, gains["latency"], verdict
    return gains["latency"], gains.get("eager_latency"), verdict


def split_cells(
    base: Measurement | None, new: Measurement | None, base_durs: tuple[Dur, Dur], new_durs: tuple[Dur, Dur]
) -> list[object]:
    """The speed-up's change, its eager and compiled sides, and which moved (or failure words)."""
    for m in (base, new):
        if m is not None and not m.ok:
            word = STATUS_WORDS[m.status]
            return [word, word, word, word]
    sides = [Side(d.ms, d.low, d.high) if d.ms is not None else Side(None) for d in (*base_durs, *new_durs)]
    speedups = [
        Side(m.speedup, m.speedup_low, m.speedup_high) if m is not None and m.speedup else None
        for m in (base, new)
    ]
    if any(DOUBLE_DAGGER in d.marks for d in (base_durs[0], new_durs[0])):  # not the paired pair:
        speedups = [None, None]  # the paired speed-ups are not the ratio of these durations
    split = SpeedupSplit.of(*sides, *speedups)
    if split is None:
        return [None, None, None, None]
    return [split.change, split.eager, split.compiled, split.moved()]


def stable_vs_others(study: Study) -> list[Table]:
    """For each build B and each base S it is compared with (`spec.model.is_base_of`: the
    stable build against every other, the release against the nightlies): `S no compile |
    S compile | B no compile | B compile`, per GPU, setup and compile mode, rows by model and
    batch size (the guide's nightly tables), with both builds' speed-ups and B against S."""
    pairs = [(s, b) for s in study.builds for b in study.builds if is_base_of(study.kind(s), study.kind(b))]
    tables = []
    for s, b in pairs:
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
        Column(f"{s} no compile (ms)", f"{s} without torch.compile", "dur"),
        Column(f"{s} compile (ms)", f"{s} with torch.compile", "dur"),
        Column(f"{b} no compile (ms)", f"{b} without torch.compile", "dur"),
        Column(f"{b} compile (ms)", f"{b} with torch.compile", "dur"),
        Column(f"{s} speed-up", f"{s}", "gain"),
        Column(f"{b} speed-up", f"{b}", "gain"),
        Column(f"{b} vs {s}, no compile", f"{b} vs {s} without torch.compile", "gain"),
        Column(f"{b} vs {s}, compile", f"{b} vs {s} with torch.compile", "gain"),
        Column(f"{b} vs {s}: rule", f"{b} vs {s}: rule", "word"),
        # what moved (suite.report.moved): the speed-up's change = eager side x compiled side
        Column(f"speed-up {b} / {s}", f"speed-up {b} / {s}", "factor"),
        Column(f"eager side ({b} / {s} eager)", "eager side", "factor"),
        Column(f"compiled side ({s} / {b} compiled)", "compiled side", "factor"),
        Column("moved", "moved", "word"),
    ]
    table = Table(
        # named by the two builds (stable-vs-nightly, stable-vs-current), not by the guide's
        # nightly table: the other build may be a release
        name=group_stem(study, f"{s}-vs-{b}", gpu_stem(gpu), mode, setup=setup),
        section="stable vs nightly",
        title=f"{gpu.label} · {study.torch_label(s)} vs {study.torch_label(b)} · mode {mode}",
        subtitle=f"Build kinds: {s}: {study.kind(s)}, {b}: {study.kind(b)}. Setup: {setup.label}.",
        columns=columns,
        notes=[legend(setup.scenario), cross_note(s, b), pair_note(s, b), moved_note(s, b)],
    )
    for task, model in study.models:
        for bs in study.batch_sizes:
            cells = {
                (build, m): study.get(CellKey(build, gpu, setup, task, model, bs, m))
                for build in (s, b)
                for m in (EAGER, mode)
            }
            if all(v is None for v in cells.values()):
                continue
            s_eager, s_compiled = durations(cells[s, EAGER], cells[s, mode])
            b_eager, b_compiled = durations(cells[b, EAGER], cells[b, mode])
            paired = paired_vs(s, cells[b, mode], cells[b, EAGER])
            vs: list[object] = [cross_gain(s_eager, b_eager), cross_gain(s_compiled, b_compiled), "separate"]
            if paired is not None:
                vs = [paired[1] or vs[0], paired[0], paired[2]]
            values: list[object] = [
                study.model_label(task, model),
                str(bs),
                s_eager,
                s_compiled,
                b_eager,
                b_compiled,
                paired_gain(cells[s, mode]),
                paired_gain(cells[b, mode]),
                *vs,
                *split_cells(cells[s, mode], cells[b, mode], (s_eager, s_compiled), (b_eager, b_compiled)),
            ]
            table.add(row_context(gpu, setup, task, model, **{"batch size": bs, "mode": mode}), values)
    return table
