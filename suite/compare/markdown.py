"""The regression report as Markdown: a verdict line, what the rule was, one section per kind
of change (suite.compare.rule), then the unmatched cells and the inputs' notes."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from suite.compare.comparison import CellChange, Comparison
from suite.compare.rule import (
    ACCURACY_REGRESSION,
    COMPILE_REGRESSION,
    FAILING_VERDICTS,
    FIXED,
    IMPROVEMENT,
    LESS_SPEEDUP,
    NEWLY_FAILING,
    NO_INTERVAL,
    NOT_COMPARABLE,
    REGRESSION,
    SETTINGS_DIFFER,
    SUSPECT,
    UNCHANGED,
    crowded_compile,
    speedup_change,
    speedup_split,
)
from suite.report.load import Loaded
from suite.report.measurement import Measurement
from suite.report.study import Gpu, Setup
from suite.results import FAILED_STATUSES, STATUS_WORDS
from suite.results.columns import SETTING_COLUMNS
from suite.run import pairrule

# One section per verdict, in the report's order, with its heading.
SECTIONS: tuple[tuple[str, str], ...] = (
    (REGRESSION, "Regressions (slower beyond the threshold and the noise, interval above 1)"),
    (
        LESS_SPEEDUP,
        "Less speed-up (compiled slower against its own eager calls: the paired speed-up fell beyond "
        "the threshold, interval above 1)",
    ),
    (COMPILE_REGRESSION, "Slower compile (beyond the compile threshold and floor)"),
    (
        SUSPECT,
        "Suspect: slower, but timed on an unhealthy machine in either run (not counted; run again on a "
        "quiet machine)",
    ),
    (
        NEWLY_FAILING,
        f"Newly failing (ok in base, {' / '.join(STATUS_WORDS[s] for s in FAILED_STATUSES)} in new)",
    ),
    (ACCURACY_REGRESSION, "Accuracy regressions (compiled output passed in base, fails in new)"),
    (IMPROVEMENT, "Improvements (faster beyond the threshold and the noise, interval below 1)"),
    (FIXED, "Fixed (failed in base, ok in new)"),
    (NO_INTERVAL, "Not judged: a median without a CI"),
    (
        SETTINGS_DIFFER,
        "Not comparable: the settings differ (base -> new; not judged, never a regression)",
    ),
    (NOT_COMPARABLE, "Not comparable (failed or skipped in both, or skipped in one)"),
    (UNCHANGED, "Unchanged (within the threshold or the noise, or the interval includes 1)"),
)


def _cell_label(columns: Sequence[str], key: tuple[str, ...]) -> list[str]:
    k = dict(zip(columns, key, strict=True))
    setup = Setup(k["dtype"], k["scenario"], k["weights"], k["variant"]).label
    where = Gpu(k["device"], k["gpu_name"]).label
    label = [f"{k['task']}/{k['model']}", k["batch_size"], k["mode"], where, setup]
    return [k["build"], *label] if "build" in k else label


def _label_header(columns: Sequence[str]) -> list[str]:
    head = ["Task/Model", "Batch Size", "Mode", "GPU", "Setup"]
    return ["Build", *head] if "build" in columns else head


def _median(m: Measurement) -> str:
    if not m.ok:
        return STATUS_WORDS[m.status]
    if m.median_ms is None:
        return "—"
    ci = f" [{m.ci_low_ms:.3f}, {m.ci_high_ms:.3f}]" if m.ci_low_ms and m.ci_high_ms else ""
    return f"{m.median_ms:.3f}{ci}"


def _ratio(c: CellChange) -> str:
    if c.ratio is None:
        return "—"
    interval = f" [{c.low:.3f}, {c.high:.3f}]" if c.low is not None and c.high is not None else ""
    if not c.paired:
        return f"{c.ratio:.3f}x{interval}"
    lost = pairrule.where(c.base.more.get("device_ms"), c.new.more.get("device_ms")) if c.ratio > 1 else ""
    return f"{c.ratio:.3f}x{interval} (paired{'; ' + lost if lost else ''})"


def _change(c: CellChange) -> str:
    return "—" if c.ratio is None else f"{(c.ratio - 1) * 100:+.1f}%"


def _speedups(c: CellChange) -> str:
    b, n = c.base.speedup, c.new.speedup
    if b is None or n is None or not (c.base.ok and c.new.ok):
        return "—"
    pair = speedup_change(c.base, c.new)
    interval = f" [{pair[1]:.3f}, {pair[2]:.3f}]" if pair else ""
    return f"{b:.2f}x -> {n:.2f}x ({b / n:.3f}{interval})"


def _moved(c: CellChange) -> str:
    """What moved (suite.report.moved): new / base speed-up = eager side x compiled side."""
    split = speedup_split(c.base, c.new)
    return "—" if split is None or not (c.base.ok and c.new.ok) else split.text()


def _compile(c: CellChange) -> str:
    b, n = c.base.compile_s, c.new.compile_s
    if b is None or n is None or not (c.base.ok and c.new.ok):
        return "—"
    text = f"{b:.1f} -> {n:.1f}" + (f" ({n / b - 1:+.0%})" if b > 0 else "")
    if crowded_compile(c.base, c.new):
        waves = " -> ".join(f"{m.compile_wave or 1:g}" for m in (c.base, c.new))
        text += f", not judged: compiled {waves} at once"
    return text


def _health(c: CellChange) -> str:
    if not (c.base.health or c.new.health):
        return "—"
    return f"{c.base.health or '—'} / {c.new.health or '—'}"


def _apart_table(cmp: Comparison, rows: list[CellChange]) -> list[str]:
    """The cells measured under other settings: what differs, and the figures, for reference."""
    header = [*_label_header(cmp.key_columns), "settings that differ (base -> new)"]
    header += ["base median (ms) [95% CI]", "new median (ms) [95% CI]", "compile s base -> new"]
    return _table(
        header,
        [
            [
                *_cell_label(cmp.key_columns, c.key),
                "; ".join(d.text() for d in c.settings),
                _median(c.base),
                _median(c.new),
                _compile(c),
            ]
            for c in rows
        ],
    )


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    return lines + ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]


def nothing_line(cmp: Comparison) -> str:
    """Why nothing was judged: no cell in both runs, or every one measured under other settings."""
    if not cmp.changes:
        return (
            f"NOTHING COMPARED: no cell in both runs ({len(cmp.only_base)} only in base, "
            f"{len(cmp.only_new)} only in new)"
        )
    differ = "; ".join(
        f"{name} {', '.join(pairs)} ({n} cell(s))" for name, (n, pairs) in cmp.differing_settings().items()
    )
    return (
        f"NOTHING COMPARED: all {len(cmp.changes)} cell(s) in both runs were measured under other "
        f"settings, none judged: {differ}"
    )


def verdict_line(cmp: Comparison) -> str:
    """One line: REGRESSED or OK, and the counts (NOTHING COMPARED where no cell was judged)."""
    if cmp.nothing_judged:
        return nothing_line(cmp)
    regressed = sum(cmp.count(v) for v in FAILING_VERDICTS)
    apart = len(cmp.not_comparable)
    return (
        f"{'REGRESSED' if cmp.failed else 'OK'}: {regressed} failing change(s) "
        f"({cmp.count(REGRESSION)} slower, {cmp.count(NEWLY_FAILING)} newly failing, "
        f"{cmp.count(ACCURACY_REGRESSION)} accuracy), {cmp.count(LESS_SPEEDUP)} less speed-up, "
        f"{cmp.count(COMPILE_REGRESSION)} slower compile; {cmp.count(SUSPECT)} suspect (unhealthy "
        f"machine, not counted); {cmp.count(IMPROVEMENT)} improvement(s), "
        f"{cmp.count(FIXED)} fixed, {cmp.count(UNCHANGED)} unchanged; {len(cmp.changes)} cell(s) matched"
        + (f" ({apart} not comparable: settings differ, not judged)" if apart else "")
        + f", {len(cmp.only_base)} only in base, {len(cmp.only_new)} only in new"
    )


def _like_text(cmp: Comparison) -> str:
    """Which settings must agree, which differ, which one run does not record."""
    text = (
        f"- Like with like: a matched cell is judged only where both rows were measured under the same "
        f"settings ({', '.join(SETTING_COLUMNS)}; a setting only one row records is not checked)."
    )
    differ = cmp.differing_settings()
    if differ:
        text += f" {len(cmp.not_comparable)} cell(s) differ and are listed as not comparable: " + "; ".join(
            f"{name} {', '.join(pairs)} ({n})" for name, (n, pairs) in differ.items()
        )
        text += "."
    if cmp.unrecorded:
        text += " Recorded by one run only (not checked): " + ", ".join(
            f"{name} ({n} cell(s))" for name, n in cmp.unrecorded
        )
        text += "."
    return text


def _interval_text(cmp: Comparison) -> str:
    sampled = cmp.sampled_cells
    text = "- Interval: [new CI low / base CI high, new CI high / base CI low] from each median's 95% CI"
    if not sampled:
        return (
            text
            + " (conservative; no cell was judged from samples: none kept by both runs, or --medians-only)."
        )
    return text + (
        f" (conservative), except for the {sampled} cell(s) whose samples both runs kept: there, the "
        "95% bootstrap interval of new / base from the per-call samples (processes, then calls, "
        "resampled in each run)."
    )


def _paired_text(cmp: Comparison) -> str:
    """Which cells the pair's rule judged (timed side by side, docs/pairs.md)."""
    if not cmp.paired_cells:
        return "- Rule: every cell judged as two separate runs (none was timed side by side)."
    return (
        f"- Rule: {cmp.paired_cells} cell(s) timed side by side (one pair session) are judged by the pair's "
        f"rule, {pairrule.RULE_NAME}: slower when the 95% interval of its paired latency, throughput or "
        "speed-up ratio lies below 0.95x, its compile slower above 1.15x (suspect where the row's health "
        "raised a flag: one compile each, no interval); no noise floor (the builds took turns in the same "
        "minutes). Their new / base is the paired latency, marked (paired). The other "
        f"{len(cmp.changes) - cmp.paired_cells} cell(s): the separate runs' rule below."
    )


def _paired_section(cmp: Comparison) -> list[str]:
    """Each paired cell's verdict by the pair's rule beside the separate runs' rule on the same
    two rows, with the paired interval's half-width: how the two rules differ on one set of data."""
    paired = [c for c in cmp.changes if c.paired]
    if not paired:
        return []
    flagged = sum(c.verdict in FAILING_VERDICTS for c in paired)
    apart = sum(c.separate in FAILING_VERDICTS for c in paired)
    header = [*_label_header(cmp.key_columns), "paired latency base / new [95% CI]", "half-width"]
    header += ["paired speed-up new / base [95% CI]", "the pair's verdict", "the separate runs' verdict"]
    rows = []
    for c in paired:
        assert c.new.pair is not None
        lat, speed = c.new.pair.ratios.get("latency"), c.new.pair.ratios.get("speedup")
        half = f"{(lat.high - lat.low) / 2 / lat.value:.1%}" if lat else "—"
        rows.append([
            *_cell_label(cmp.key_columns, c.key), lat.text() if lat else "—", half,
            speed.text() if speed else "—", c.verdict, c.separate or "—",
        ])  # fmt: skip
    return [
        "",
        f"## Paired cells, both rules: {flagged} of {len(paired)} failing by the pair's rule, {apart} by "
        "the separate runs' rule on the same rows",
        "",
        *_table(header, rows),
    ]


def _noise_text(cmp: Comparison) -> str:
    text = _floor_text(cmp)
    if cmp.rerun_cells:
        text += (
            f" {cmp.rerun_cells} of {len(cmp.changes)} cell(s) carry the machine's between-run noise "
            f"(`run_noise_pct`): their medians are judged against {cmp.rule.noise_z:g} standard deviations "
            "of new / base where nothing changed (both runs' noise and both CIs) instead of the floor, "
            "and their interval is that ratio's 95% one."
        )
    if cmp.speedup_noise_cells:
        text += (
            f" {cmp.speedup_noise_cells} compiled cell(s) carry the between-run noise of their paired "
            f"speed-up (`speedup_noise_pct`): a fall in it must also clear {cmp.rule.noise_z:g} standard "
            "deviations of that noise and of both CIs."
        )
    return text


def _floor_text(cmp: Comparison) -> str:
    noise, z = cmp.noise, cmp.rule.noise_z
    if z <= 0:
        return "no noise floor (--noise-z 0): medians are judged against the threshold alone."
    if noise.sigma is None:
        return (
            f"no noise floor: {noise.cells} cell(s) ok and healthy in both runs, too few to measure the "
            "runs' drift on (medians are judged against the threshold alone)."
        )
    return (
        f"the runs' noise floor {noise.bound(z):.1%}: {z:g} x the robust spread ({noise.sigma:.2%}) of "
        f"log(new / base) over the {noise.cells} cells ok and healthy in both, the drift between the "
        "runs where nothing changed."
    )


def render(
    cmp: Comparison, base_inputs: Sequence[Path], new_inputs: Sequence[Path], base: Loaded, new: Loaded
) -> str:
    """The report: a verdict line, then one section per kind of change, then unmatched cells."""
    t, r, m = cmp.threshold, cmp.rule, cmp.median_bound
    unhealthy = sum(c.unhealthy for c in cmp.changes)
    lines = [
        "# Regression report",
        "",
        f"- Base: {', '.join(map(str, base_inputs))} (builds: {', '.join(base.frame['build'].unique())})",
        f"- New: {', '.join(map(str, new_inputs))} (builds: {', '.join(new.frame['build'].unique())})",
        f"- Cells matched on: {', '.join(cmp.key_columns)}"
        + ("" if "build" in cmp.key_columns else " (each run has one build, so builds may differ)"),
        f"- Threshold {t:.1%}; {_noise_text(cmp)}",
        f"- A regression is a new/base ratio of medians above {1 + m:.3f} (the higher of the two) whose "
        f"interval lies above 1; an improvement, below {max(0.0, 1 - m):.3f} with the interval below 1.",
        _like_text(cmp),
        _interval_text(cmp),
        _paired_text(cmp),
        f"- Less speed-up: base speed-up / new speed-up above {1 + t:.3f} with its interval above 1 (the "
        "speed-ups are paired within each run, so the machine's drift cancels: judged on any machine).",
        "- What moved: the speed-up's change split into its eager side (new eager / base eager median: "
        "< 1x, eager got faster, the speed-up falls) and its compiled side (base compiled / new compiled: "
        "> 1x, compiled got faster), each with the interval the medians' CIs allow; their product is the "
        "change (docs/phases-energy.md).",
        f"- Slower compile: compile_s up by more than {r.compile_threshold:.0%} and {r.compile_floor_s:g} s "
        "(not judged between compiles that ran beside different numbers of others: `compile_wave`).",
        f"- Health: {unhealthy} matched cell(s) timed on an unhealthy machine in either run (busy, steal, "
        "throttled, clock-varied, shared-gpu): slower medians or compiles there are 'suspect', not "
        "regressions.",
        "",
        f"**{verdict_line(cmp)}**",
    ]
    header = [*_label_header(cmp.key_columns), "base median (ms) [95% CI]", "new median (ms) [95% CI]"]
    header += ["new / base [interval]", "change", "speed-up base -> new (ratio [interval])"]
    header += ["what moved: new / base speed-up = eager side · compiled side", "compile s base -> new"]
    header += ["health base / new"]
    for verdict, title in SECTIONS:
        rows = [c for c in cmp.changes if c.verdict == verdict]
        if not rows:
            continue
        if verdict == SETTINGS_DIFFER:
            lines += ["", f"## {title}: {len(rows)}", "", *_apart_table(cmp, rows)]
            continue
        lines += ["", f"## {title}: {len(rows)}", ""]
        lines += _table(
            header,
            [
                [
                    *_cell_label(cmp.key_columns, c.key),
                    _median(c.base),
                    _median(c.new),
                    _ratio(c),
                    _change(c),
                    _speedups(c),
                    _moved(c),
                    _compile(c),
                    _health(c),
                ]
                for c in rows
            ],
        )
    lines += _paired_section(cmp)
    for title, keys in (("Only in base", cmp.only_base), ("Only in new", cmp.only_new)):
        if keys:
            lines += ["", f"## {title}: {len(keys)}", ""]
            lines += _table(_label_header(cmp.key_columns), [_cell_label(cmp.key_columns, k) for k in keys])
    for name, loaded in (("base", base), ("new", new)):
        if loaded.skipped or loaded.superseded:
            lines += ["", f"## Input notes ({name})", "", *(f"- {line}" for line in loaded.report())]
    return "\n".join(lines) + "\n"
