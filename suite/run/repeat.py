"""Repeatability: the same cells run N times back to back (`python -m suite repeat --times N`),
each repetition a run of its own (<out>/<id>/rep-<i>/raw/*.csv, so any two can be compared
with `python -m suite compare`), and each cell's spread of medians over the repetitions:
max / min - 1. Parent side, standard library only.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.results import CELL_COLUMNS, OK, read_rows

# The spread of medians the suite aims for (docs/trust.md): full-size models on a CPU, on an H100.
TARGETS: dict[str, float] = {"cpu": 0.03, "cuda": 0.015}


def rep_id(i: int) -> str:
    return f"rep-{i}"


def spread(values: Sequence[float]) -> float | None:
    """max / min - 1 of positive values; None for fewer than two."""
    if len(values) < 2:
        return None
    return max(values) / min(values) - 1.0


@dataclass(frozen=True)
class CellSpread:
    """One cell over the repetitions: its medians (ms), speed-ups and health, each in run order."""

    key: dict[str, str]
    medians: tuple[float, ...]
    speedups: tuple[float, ...]
    health: tuple[str, ...]
    failed: tuple[str, ...]  # the statuses of the repetitions that did not end ok
    # each ok repetition's 95% CI of its median (ms), in the order of `medians`
    intervals: tuple[tuple[float, float], ...] = ()
    # and its rerun interval (suite.run.rerun), where every repetition's row has one
    reruns: tuple[tuple[float, float], ...] = ()
    # the paired speed-up's 95% CI and rerun interval, in the order of `speedups`
    speedup_intervals: tuple[tuple[float, float], ...] = ()
    speedup_reruns: tuple[tuple[float, float], ...] = ()

    @property
    def median_spread(self) -> float | None:
        return spread(self.medians)

    @property
    def speedup_spread(self) -> float | None:
        return spread(self.speedups)


def collect(run_dirs: Sequence[Path]) -> list[CellSpread]:
    """Each cell's figures over the repetitions' raw CSVs, in the first repetition's order."""
    per_cell: dict[tuple[str, ...], list[dict[str, str]]] = {}
    for run_dir in run_dirs:
        for csv in sorted((run_dir / "raw").glob("*.csv")):
            for row in read_rows(csv).rows:
                per_cell.setdefault(tuple(row.get(c, "") for c in CELL_COLUMNS), []).append(row)
    out = []
    for key, rows in per_cell.items():
        ok = [r for r in rows if r["status"] == OK]
        paired = [r for r in ok if r.get("speedup")]
        out.append(
            CellSpread(
                key=dict(zip(CELL_COLUMNS, key, strict=True)),
                medians=tuple(float(r["median_ms"]) for r in ok),
                speedups=tuple(float(r["speedup"]) for r in paired),
                health=tuple(r.get("health", "") or "—" for r in ok),
                failed=tuple(r["status"] for r in rows if r["status"] != OK),
                intervals=_intervals(ok),
                reruns=_intervals(ok, "rerun95"),
                speedup_intervals=_intervals(paired, "speedup_ci95", ""),
                speedup_reruns=_intervals(paired, "speedup_rerun95", ""),
            )
        )
    return out


def _intervals(
    rows: Sequence[dict[str, str]], prefix: str = "ci95", unit: str = "_ms"
) -> tuple[tuple[float, float], ...]:
    """Each row's 95% interval (`ci95`: its CI; `rerun95`: its rerun interval; `speedup_ci95`, ...
    with no unit); none at all when a row lacks one."""
    pairs = [(r.get(f"{prefix}_low{unit}") or "", r.get(f"{prefix}_high{unit}") or "") for r in rows]
    if not all(lo and hi for lo, hi in pairs):
        return ()
    return tuple((float(lo), float(hi)) for lo, hi in pairs)


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{value:.1%}"


def _list(values: Sequence[float]) -> str:
    return ", ".join(f"{v:.3f}" for v in values) or "—"


def render(cells: Sequence[CellSpread], device_type: str, title: str, load: tuple[float, float]) -> list[str]:
    """One line per cell: the medians of each repetition and their spread against the target."""
    target = TARGETS.get(device_type, TARGETS["cpu"])
    lines = [
        title,
        "",
        "| model | batch | mode | median ms per repetition | spread | speed-up per repetition | spread "
        f"| health per repetition | spread <= {target:.1%} |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    met = judged = 0
    for c in cells:
        k = c.key
        s = c.median_spread
        if s is not None:
            judged += 1
            met += s <= target
        verdict = "—" if s is None else ("yes" if s <= target else "NO")
        if c.failed:
            verdict += f" ({len(c.failed)} failed: {', '.join(c.failed)})"
        lines.append(
            f"| {k['model']} | {k['batch_size']} | {k['mode']} | "
            f"{_list(c.medians)} | {_pct(s)} | {_list(c.speedups)} | {_pct(c.speedup_spread)} | "
            f"{', '.join(c.health) or '—'} | {verdict} |"
        )
    lines += [
        "",
        f"{met} of {judged} cell(s) with a spread of medians within {target:.1%} (the target on "
        f"{device_type}); 1-minute load {load[0]:.2f} before, {load[1]:.2f} after, on {os.cpu_count()} "
        "core(s).",
        "spread = max / min - 1 over the repetitions; each repetition ran every cell once, in order, "
        "each cell in a fresh process.",
    ]
    return lines
