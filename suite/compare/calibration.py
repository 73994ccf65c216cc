"""The regression gate's false-positive and detection rates, measured (`python -m suite calibrate
--aa RUN RUN [RUN...] [--slowed RUN...]`, `nox -s gate`).

A/A: every ordered pair of runs of the same cells on the same build and machine is compared;
any failing verdict there is a false positive (per cell, and per comparison: the exit status
`compare` would give). Detection: each run made with `SUITE_FAULT=slow:<factor>` (compiled
calls slowed by a known factor, suite.measure.faults) is compared with each A/A run: its
compiled cells must be flagged; its eager cells, untouched, are more null cases. The rates are
given for several thresholds, each with and without the runs' noise floor (compare's default,
`--noise-z`), with the spread of the A/A ratios they are set against. As in `compare`, a cell whose
two runs both kept its samples is judged from them (`medians_only`: from the CIs alone).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from itertools import permutations
from pathlib import Path

from suite.compare.comparison import Comparison, Samples, compare
from suite.compare.rule import FAILING_VERDICTS, NOISE_Z, SUSPECT, Rule, speedup_change
from suite.compare.samples import Groups, groups_of
from suite.report.load import Loaded, load
from suite.report.samples import read_beside

THRESHOLDS = (0.02, 0.05, 0.10)
NOISE_ZS = (0.0, 3.0, NOISE_Z)  # without the noise floor or between-run noise, then two z


@dataclass
class Tally:
    """What one rule did to the A/A comparisons and to the slowed ones."""

    rule: Rule
    aa_comparisons: int = 0
    aa_failed: int = 0  # comparisons that would exit 1
    aa_cells: int = 0
    aa_flagged: int = 0
    aa_suspect: int = 0
    slowed_comparisons: int = 0
    slowed_failed: int = 0
    slowed_cells: int = 0  # compiled cells of slowed runs, ok in both
    detected: int = 0
    detected_by: Counter[str] = field(default_factory=Counter)
    untouched_cells: int = 0  # eager cells of slowed runs
    untouched_flagged: int = 0
    aa_floors: list[float] = field(default_factory=list)  # the noise floor of each comparison
    slowed_floors: list[float] = field(default_factory=list)
    judged_on_noise: int = 0  # cell-compares judged against the rows' between-run noise
    judged: int = 0
    apart: int = 0  # cell-compares not judged: the two rows' settings differ

    def floor_text(self) -> str:
        """The floors the comparisons measured: A/A (the drift alone), and against the slowed runs
        (where the slowed cells' change widens the spread too)."""
        if self.rule.noise_z <= 0:
            return "off"

        def span(floors: list[float]) -> str:
            seen = [f for f in floors if f > 0]
            return f"{min(seen):.1%}-{max(seen):.1%}" if seen else "none measured"

        if self.judged and self.judged_on_noise == self.judged:
            return f"{self.rule.noise_z:g} sd of the between-run noise (every cell)"
        text = f"{self.rule.noise_z:g} sd: A/A {span(self.aa_floors)}"
        text += f", slowed {span(self.slowed_floors)}" if self.slowed_comparisons else ""
        if self.judged_on_noise:
            text += f"; {self.judged_on_noise} of {self.judged} cell compares on the between-run noise"
        return text


def _mode(cmp: Comparison, key: tuple[str, ...]) -> str:
    return key[cmp.key_columns.index("mode")]


@dataclass(frozen=True)
class Pairs:
    """Each ordered pair of runs' kept samples, shared by every rule (one bootstrap per cell)."""

    groups: dict[int, Groups]
    made: dict[tuple[int, int], Samples] = field(default_factory=dict)

    def of(self, base: Loaded, new: Loaded) -> Samples | None:
        if id(base) not in self.groups or id(new) not in self.groups:
            return None
        return self.made.setdefault((id(base), id(new)), Samples(self.groups[id(base)], self.groups[id(new)]))


def tally(aa: Sequence[Loaded], slowed: Sequence[Loaded], rule: Rule, pairs: Pairs | None = None) -> Tally:
    t = Tally(rule)
    pairs = pairs or Pairs({})

    def judged(cmp: Comparison) -> Comparison:
        t.judged += len(cmp.judged)
        t.apart += len(cmp.not_comparable)
        t.judged_on_noise += cmp.rerun_cells
        return cmp

    for i, j in permutations(range(len(aa)), 2):
        cmp = judged(compare(aa[i], aa[j], rule.threshold, rule, pairs.of(aa[i], aa[j])))
        t.aa_floors.append(cmp.noise.bound(rule.noise_z))
        t.aa_comparisons += 1
        t.aa_failed += cmp.failed
        t.aa_cells += len(cmp.judged)
        t.aa_flagged += sum(c.verdict in FAILING_VERDICTS for c in cmp.changes)
        t.aa_suspect += cmp.count(SUSPECT)
    for base in aa:
        for new in slowed:
            cmp = judged(compare(base, new, rule.threshold, rule, pairs.of(base, new)))
            t.slowed_floors.append(cmp.noise.bound(rule.noise_z))
            t.slowed_comparisons += 1
            t.slowed_failed += cmp.failed
            for c in cmp.judged:
                if not (c.base.ok and c.new.ok):
                    continue
                if _mode(cmp, c.key) == "eager":
                    t.untouched_cells += 1
                    t.untouched_flagged += c.verdict in FAILING_VERDICTS
                else:
                    t.slowed_cells += 1
                    t.detected += c.verdict in FAILING_VERDICTS
                    t.detected_by[c.verdict] += 1
    return t


def _pct(n: int, d: int) -> str:
    return f"{n}/{d} ({n / d:.1%})" if d else "—"


def _quantiles(values: list[float]) -> str:
    if not values:
        return "—"
    s = sorted(values)

    def q(p: float) -> float:
        return s[min(len(s) - 1, round(p * (len(s) - 1)))]

    return f"{q(0.5):.3f} / {q(0.95):.3f} / {s[-1]:.3f} (n={len(s)})"


def spreads(aa: Sequence[Loaded]) -> list[str]:
    """How far apart A/A runs are: new/base medians (healthy cells, and all), base/new speed-ups,
    new/base compile times; the median, 95th percentile and maximum of each, as the ratio >= 1."""
    healthy: list[float] = []
    every: list[float] = []
    speed: list[float] = []
    comp: list[float] = []
    for i, j in permutations(range(len(aa)), 2):
        for c in compare(aa[i], aa[j], 0.0).changes:
            if c.ratio is not None:
                every.append(c.ratio)
                if not c.unhealthy:
                    healthy.append(c.ratio)
            pair = speedup_change(c.base, c.new)
            if pair is not None:
                speed.append(pair[0])
            if c.base.ok and c.new.ok and c.base.compile_s and c.new.compile_s:
                comp.append(c.new.compile_s / c.base.compile_s)
    return [
        "| A/A ratio | median / 95th percentile / max |",
        "|---|---|",
        f"| median new / base, cells healthy in both runs | {_quantiles(healthy)} |",
        f"| median new / base, every cell | {_quantiles(every)} |",
        f"| speed-up base / new (paired) | {_quantiles(speed)} |",
        f"| compile_s new / base | {_quantiles(comp)} |",
    ]


def render(
    tallies: Sequence[Tally], aa: Sequence[Path], slowed: Sequence[Path], spread: list[str], sampled: int = 0
) -> str:
    how = (
        f"{sampled} compare(s) judged medians from both runs' kept samples (a bootstrap of new / base)"
        if sampled
        else "medians judged from their CIs (no compare had both runs' samples, or --medians-only)"
    )
    lines = [
        "# Regression gate: measured false-positive and detection rates",
        "",
        f"- A/A runs: {', '.join(map(str, aa))} (every ordered pair compared)",
        f"- Slowed runs: {', '.join(map(str, slowed)) or 'none'} (each compared with each A/A run)",
        f"- Samples: {how}",
        *(
            [f"- Not comparable: {tallies[0].apart} cell compare(s) whose rows' settings differ, not judged"]
            if tallies and tallies[0].apart
            else []
        ),
        "",
        "| threshold | noise floor of the medians (range over the compares) | compile threshold "
        "| A/A cells flagged | A/A compares exiting 1 | A/A suspect "
        "| slowed compiled cells flagged | by verdict | slowed compares exiting 1 | untouched eager cells "
        "flagged |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for t in tallies:
        by = ", ".join(f"{v} {n}" for v, n in sorted(t.detected_by.items())) or "—"
        lines.append(
            f"| {t.rule.threshold:.0%} | {t.floor_text()} "
            f"| {t.rule.compile_threshold:.0%} + {t.rule.compile_floor_s:g} s "
            f"| {_pct(t.aa_flagged, t.aa_cells)} | {_pct(t.aa_failed, t.aa_comparisons)} "
            f"| {_pct(t.aa_suspect, t.aa_cells)} | {_pct(t.detected, t.slowed_cells)} | {by} "
            f"| {_pct(t.slowed_failed, t.slowed_comparisons)} "
            f"| {_pct(t.untouched_flagged, t.untouched_cells)} |"
        )
    lines += ["", "How far apart the A/A runs are (each ratio as measured):", "", *spread]
    return "\n".join(lines) + "\n"


def calibration(
    aa_runs: Sequence[Path],
    slowed_runs: Sequence[Path],
    run_noise_pct: float | None = None,
    speedup_noise_pct: float | None = None,
    medians_only: bool = False,
) -> str:
    """The report: every rule of THRESHOLDS x NOISE_ZS over the A/A and slowed runs, then how far
    apart the A/A runs are. `run_noise_pct`, `speedup_noise_pct`: the between-run noises for rows
    that carry none (compare --run-noise-pct, --speedup-noise-pct); `medians_only`: the kept
    samples left aside (compare --medians-only)."""
    aa = [load([p]) for p in aa_runs]
    slowed = [load([p]) for p in slowed_runs]
    pairs = Pairs({} if medians_only else {id(x): groups_of(read_beside(x.files)) for x in [*aa, *slowed]})
    base = replace(Rule(), run_noise_pct=run_noise_pct, speedup_noise_pct=speedup_noise_pct)
    tallies = [
        tally(aa, slowed, replace(base, threshold=th, noise_z=z), pairs)
        for z in NOISE_ZS
        for th in THRESHOLDS
    ]
    sampled = sum(bool(s.memo) and any(v is not None for v in s.memo.values()) for s in pairs.made.values())
    return render(tallies, aa_runs, slowed_runs, spreads(aa), sampled)
