"""Coverage of a repeat's intervals (docs/intervals.md): over ordered pairs of
repetitions (i, j), i != j, how often repetition i's figure lies inside repetition j's 95%
interval; a 95% interval for where a rerun's figure falls should hold 90-97% of the time. Two
figures: each cell's median, and each compiled cell's paired speed-up.

Three intervals are counted: the row's CI (`ci95_*`: what the run knows about its own figure,
which a rerun's need not fall in), the rerun interval the rows carry (`rerun95_*`, with the noise
the run was given), and the rerun interval with the between-run noise estimated from the other
repetitions alone: for the pair (i, j) from every repetition but i and j, so that neither the
figure tested nor the interval's own run chose it. With `hold_out` the last repetitions are kept
apart: the noise comes from the others only, and the held-out figures are tested against the
others' intervals and theirs against the held-out's. The noise this repeat measured is printed
as the setting to give the machine. Parent side, standard library only."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from suite.run.repeat import CellSpread
from suite.stats import between_run_variance, rerun_interval

Interval = tuple[float, float]


@dataclass(frozen=True)
class Series:
    """One figure of one cell over the repetitions: its values, CIs and rerun intervals (if any)."""

    key: dict[str, str]
    values: tuple[float, ...]
    intervals: tuple[Interval, ...]
    reruns: tuple[Interval, ...] = ()

    @staticmethod
    def medians(c: CellSpread) -> Series:
        return Series(c.key, c.medians, c.intervals, c.reruns)

    @staticmethod
    def speedups(c: CellSpread) -> Series:
        return Series(c.key, c.speedups, c.speedup_intervals, c.speedup_reruns)


@dataclass(frozen=True)
class Tally:
    hits: int = 0
    pairs: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.hits + other.hits, self.pairs + other.pairs)

    def __str__(self) -> str:
        return f"{self.hits} / {self.pairs} ({self.hits / self.pairs:.1%})" if self.pairs else "—"


def count(
    values: Sequence[float], interval: Callable[[int, int], Interval | None], pairs: Sequence[tuple[int, int]]
) -> Tally:
    """How many of `pairs` (i, j) have value i inside interval(i, j) (that of repetition j)."""
    hits = total = 0
    for i, j in pairs:
        bounds = interval(i, j)
        if bounds is None:
            continue
        total += 1
        hits += bounds[0] <= values[i] <= bounds[1]
    return Tally(hits, total)


def tau2(series: Sequence[Series], skip: frozenset[int] = frozenset()) -> float | None:
    """The between-run variance (log scale) of a figure: each cell's method-of-moments estimate over
    its repetitions not in `skip`, averaged over the cells; None without two."""
    per_cell = []
    for s in series:
        runs = [
            (v, *ci) for r, (v, ci) in enumerate(zip(s.values, s.intervals, strict=True)) if r not in skip
        ]
        if len(runs) >= 2:
            per_cell.append(between_run_variance(runs))
    return sum(per_cell) / len(per_cell) if per_cell else None


def pct(t2: float | None) -> str:
    return "—" if t2 is None else f"{100 * math.expm1(math.sqrt(t2)):.1f}%"


@dataclass(frozen=True)
class Coverage:
    series: Series
    ci: Tally
    rows: Tally  # the rows' own rerun intervals
    held_pairs: Tally  # noise from the repetitions other than the pair
    held_out: Tally  # the held-out repetitions against the others, both ways


def measure(series: Sequence[Series], hold_out: int = 0) -> tuple[list[Coverage], float | None]:
    """Each series' tallies, and the between-run variance from the repetitions not held out."""
    usable = [s for s in series if s.intervals and len(s.values) == len(s.intervals) >= 2]
    n = min((len(s.values) for s in usable), default=0)
    held = frozenset(range(n - hold_out, n)) if 0 < hold_out < n - 1 else frozenset()
    t2_fit = tau2(usable, held)
    noise_without: dict[frozenset[int], float | None] = {}

    def noise(skip: frozenset[int]) -> float | None:
        if skip not in noise_without:
            noise_without[skip] = tau2(usable, skip)
        return noise_without[skip]

    return [_one(s, n, held, t2_fit, noise) for s in usable], t2_fit


def _one(
    s: Series,
    n: int,
    held: frozenset[int],
    t2_fit: float | None,
    noise: Callable[[frozenset[int]], float | None],
) -> Coverage:
    v, ci = s.values[:n], s.intervals[:n]
    fitted = [r for r in range(n) if r not in held]
    within = [(i, j) for i in fitted for j in fitted if i != j]
    across = [(i, j) for i in range(n) for j in range(n) if i != j and (i in held) != (j in held)]

    def rerun(j: int, t2: float | None) -> Interval | None:
        return None if t2 is None else rerun_interval(v[j], ci[j][0], ci[j][1], math.sqrt(t2))

    return Coverage(
        series=s,
        ci=count(v, lambda i, j: ci[j], within),
        rows=count(v, lambda i, j: s.reruns[j] if len(s.reruns) == len(s.values) else None, within),
        held_pairs=count(v, lambda i, j: rerun(j, noise(held | {i, j})), within),
        held_out=count(v, lambda i, j: rerun(j, t2_fit), across),
    )


FIGURES: tuple[tuple[str, Callable[[CellSpread], Series], str], ...] = (
    ("median", Series.medians, "run_noise_pct"),
    ("paired speed-up", Series.speedups, "speedup_noise_pct"),
)


def render(cells: Sequence[CellSpread], processes: int, device_type: str, hold_out: int = 0) -> list[str]:
    """The coverage tables of a repeat (medians, paired speed-ups) and the noise each measured."""
    lines: list[str] = []
    fitted = "every repetition" if not hold_out else f"all but the last {hold_out}"
    for figure, of, setting in FIGURES:
        measured, t2 = measure([of(c) for c in cells], hold_out)
        if not measured:
            continue
        lines += [
            f"Coverage of the {figure} with {processes} process(es) per cell: how often a repetition's "
            f"{figure} lies inside another repetition's 95% interval (target 90-97%)",
            "",
            "| model | batch | mode | CI | rerun interval, rows' own | rerun interval, noise from the "
            "other repetitions | held-out repetitions | between-run noise |",
            "|---|---|---|---|---|---|---|---|",
        ]
        total = [Tally()] * 4
        for cov in measured:
            k = cov.series.key
            tallies = (cov.ci, cov.rows, cov.held_pairs, cov.held_out)
            total = [a + b for a, b in zip(total, tallies, strict=True)]
            cells_text = " | ".join([*(str(t) for t in tallies), pct(tau2([cov.series]))])
            lines.append(f"| {k['model']} | {k['batch_size']} | {k['mode']} | {cells_text} |")
        lines += [
            f"| all | | | {' | '.join(str(t) for t in total)} | {pct(t2)} |",
            "",
            f"Between-run noise of the {figure} on this machine, from {fitted} ({processes} process(es) "
            f"per cell): {pct(t2)}; to use it: `{setting}: {{{device_type}: {pct(t2).rstrip('%')}}}` in "
            "matrix.yaml's defaults (docs/intervals.md).",
            "",
        ]
    return lines[:-1]
