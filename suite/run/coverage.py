"""Coverage of a repeat's intervals (issue 27, docs/intervals.md): over ordered pairs of
repetitions (i, j), i != j, how often repetition i's median lies inside repetition j's 95%
interval; a 95% interval for where a rerun's median falls should hold 90-97% of the time.

Three intervals are counted: the row's CI of the median (`ci95_*`: what the run knows about its
own median, which a rerun's median need not fall in), the rerun interval the rows carry
(`rerun95_*`, with the `run_noise_pct` the run was given), and the rerun interval with the
between-run noise estimated from the other repetitions alone: for the pair (i, j) from every
repetition but i and j, so that neither the median tested nor the interval's own run chose it.
With `hold_out` the last repetitions are kept apart: the noise comes from the others only and the
held-out medians are tested against the others' intervals and theirs against the held-out's.
The noise this repeat measures is printed as the `run_noise_pct` to set for the machine.
Parent side, standard library only."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from suite.run.repeat import CellSpread
from suite.stats import between_run_variance, rerun_interval

Interval = tuple[float, float]


@dataclass(frozen=True)
class Tally:
    hits: int = 0
    pairs: int = 0

    def __add__(self, other: Tally) -> Tally:
        return Tally(self.hits + other.hits, self.pairs + other.pairs)

    def __str__(self) -> str:
        return f"{self.hits} / {self.pairs} ({self.hits / self.pairs:.1%})" if self.pairs else "—"


def count(
    medians: Sequence[float],
    interval: Callable[[int, int], Interval | None],
    pairs: Sequence[tuple[int, int]],
) -> Tally:
    """How many of `pairs` (i, j) have median i inside interval(i, j) (that of repetition j)."""
    hits = total = 0
    for i, j in pairs:
        bounds = interval(i, j)
        if bounds is None:
            continue
        total += 1
        hits += bounds[0] <= medians[i] <= bounds[1]
    return Tally(hits, total)


def tau2(cells: Sequence[CellSpread], skip: frozenset[int] = frozenset()) -> float | None:
    """The between-run variance (log scale) of the cells' medians: each cell's method-of-moments
    estimate over its repetitions not in `skip`, averaged over the cells; None without two."""
    per_cell = []
    for c in cells:
        runs = [
            (m, lo, hi)
            for r, (m, (lo, hi)) in enumerate(zip(c.medians, c.intervals, strict=True))
            if r not in skip
        ]
        if len(runs) >= 2:
            per_cell.append(between_run_variance(runs))
    return sum(per_cell) / len(per_cell) if per_cell else None


def pct(t2: float | None) -> str:
    return "—" if t2 is None else f"{100 * math.expm1(math.sqrt(t2)):.1f}%"


@dataclass(frozen=True)
class CellCoverage:
    cell: CellSpread
    ci: Tally
    rows: Tally  # the rows' own rerun intervals
    held_pairs: Tally  # noise from the repetitions other than the pair
    held_out: Tally  # the held-out repetitions against the others, both ways


def measure(cells: Sequence[CellSpread], hold_out: int = 0) -> tuple[list[CellCoverage], float | None]:
    """Each cell's tallies, and the between-run variance from the repetitions not held out."""
    usable = [c for c in cells if c.intervals and len(c.medians) == len(c.intervals) >= 2]
    n = min((len(c.medians) for c in usable), default=0)
    held = frozenset(range(n - hold_out, n)) if 0 < hold_out < n - 1 else frozenset()
    t2_fit = tau2(usable, held)
    noise_without: dict[frozenset[int], float | None] = {}

    def noise(skip: frozenset[int]) -> float | None:
        if skip not in noise_without:
            noise_without[skip] = tau2(usable, skip)
        return noise_without[skip]

    return [_cell(c, n, held, t2_fit, noise) for c in usable], t2_fit


def _cell(
    c: CellSpread,
    n: int,
    held: frozenset[int],
    t2_fit: float | None,
    noise: Callable[[frozenset[int]], float | None],
) -> CellCoverage:
    m, ci = c.medians[:n], c.intervals[:n]
    fitted = [r for r in range(n) if r not in held]
    within = [(i, j) for i in fitted for j in fitted if i != j]
    across = [(i, j) for i in range(n) for j in range(n) if i != j and (i in held) != (j in held)]

    def rerun(j: int, t2: float | None) -> Interval | None:
        return None if t2 is None else rerun_interval(m[j], ci[j][0], ci[j][1], math.sqrt(t2))

    return CellCoverage(
        cell=c,
        ci=count(m, lambda i, j: ci[j], within),
        rows=count(m, lambda i, j: c.reruns[j] if c.reruns else None, within),
        held_pairs=count(m, lambda i, j: rerun(j, noise(held | {i, j})), within),
        held_out=count(m, lambda i, j: rerun(j, t2_fit), across),
    )


def render(cells: Sequence[CellSpread], processes: int, device_type: str, hold_out: int = 0) -> list[str]:
    """The coverage table of a repeat and the machine's between-run noise it measured."""
    measured, t2 = measure(cells, hold_out)
    lines = [
        f"Coverage with {processes} process(es) per cell: how often a repetition's median lies inside "
        "another repetition's 95% interval (target 90-97%)",
        "",
        "| model | batch | mode | CI of the median | rerun interval, rows' own | rerun interval, noise "
        "from the other repetitions | held-out repetitions | between-run noise |",
        "|---|---|---|---|---|---|---|---|",
    ]
    total = [Tally()] * 4
    for cc in measured:
        k = cc.cell.key
        tallies = (cc.ci, cc.rows, cc.held_pairs, cc.held_out)
        total = [a + b for a, b in zip(total, tallies, strict=True)]
        lines.append(
            f"| {k['model']} | {k['batch_size']} | {k['mode']} | "
            + " | ".join(str(t) for t in tallies)
            + f" | {pct(tau2([cc.cell]))} |"
        )
    fitted = "every repetition" if not hold_out else f"all but the last {hold_out}"
    lines += [
        f"| all | | | {' | '.join(str(t) for t in total)} | {pct(t2)} |",
        "",
        f"Between-run noise of a median on this machine, from {fitted} ({processes} process(es) per "
        f"cell): {pct(t2)}; to use it: `run_noise_pct: {{{device_type}: {pct(t2).rstrip('%')}}}` in "
        "matrix.yaml's defaults (docs/intervals.md).",
    ]
    return lines
