"""The parent side of `python -m suite crosscheck`: one child per cell
(suite.measure.crosscheck, started by the runner's launcher with the cell's timeout and the
lifeline), then each timed function's ratio suite / independent timer over the rounds, with
its spread, against the target for the device.

The ratio of a function is the median over rounds of (suite's median / the independent median)
of the same round; its spread is the lowest and highest round's ratio.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from suite.run import launch
from suite.run.launch import RunPaths
from suite.spec.model import Cell
from suite.stats import median

CHILD = "suite.measure.crosscheck"
DEFAULT_ROUNDS = 5
# How far the suite's median may be from an independent timer's (issue 13): an idle CPU, CUDA.
TARGETS: dict[str, float] = {"cpu": 0.03, "cuda": 0.02}
KEEP = ("status", "error", "timings", "malloc")  # the child's result fields


@dataclass(frozen=True)
class Ratio:
    """suite / independent: the median over rounds, and the lowest and highest round."""

    value: float
    low: float
    high: float

    @staticmethod
    def of(suite: Sequence[float], other: Sequence[float]) -> Ratio | None:
        if not suite or len(suite) != len(other):
            return None
        ratios = [s / o for s, o in zip(suite, other, strict=True)]
        return Ratio(median(ratios), min(ratios), max(ratios))

    def within(self, target: float) -> bool:
        return abs(self.value - 1.0) <= target

    def text(self) -> str:
        return f"{self.value:.3f} ({self.low:.3f}-{self.high:.3f})"


@dataclass(frozen=True)
class Timed:
    """One function of one cell (eager, or the cell's compiled mode), or why it has no figures."""

    cell: Cell
    timed: str
    rounds: int = 0
    suite_ms: float | None = None
    benchmark_ms: float | None = None
    events_ms: float | None = None
    vs_benchmark: Ratio | None = None
    vs_events: Ratio | None = None
    error: str = ""
    malloc: str = ""  # the child's C allocator (suite.measure.allocator)
    suite_rounds_ms: tuple[float, ...] = ()  # the suite's median in each round: the machine's drift

    def drift(self) -> str:
        """The suite's medians over the rounds, lowest-highest, and how far apart: how much the
        machine moved under both timers while the ratio was taken."""
        if not self.suite_rounds_ms:
            return ""
        lo, hi = min(self.suite_rounds_ms), max(self.suite_rounds_ms)
        return f"{lo:.2f}-{hi:.2f} ({hi / lo - 1:.1%})"

    @staticmethod
    def of(cell: Cell, timed: str, t: dict[str, list[float]], malloc: str = "") -> Timed:
        def mid(xs: list[float]) -> float | None:
            return median(xs) if xs else None

        return Timed(
            cell,
            timed,
            rounds=len(t["suite"]),
            suite_ms=mid(t["suite"]),
            benchmark_ms=mid(t["benchmark"]),
            events_ms=mid(t["events"]),
            vs_benchmark=Ratio.of(t["suite"], t["benchmark"]),
            vs_events=Ratio.of(t["suite"], t["events"]),
            malloc=malloc,
            suite_rounds_ms=tuple(t["suite"]),
        )

    def ratios(self) -> list[Ratio]:
        return [r for r in (self.vs_benchmark, self.vs_events) if r is not None]


def run(
    cells: Sequence[Cell], device_type: str, paths: RunPaths, rounds: int, python: str = sys.executable
) -> list[Timed]:
    """Cross-check each cell in its own child process; one `Timed` per function timed."""
    out: list[Timed] = []
    for index, cell in enumerate(cells):
        print(f"[{index + 1}/{len(cells)}] {cell.label}: {rounds} rounds ...", file=sys.stderr, flush=True)
        job = launch.WorkerJob(
            cell, device_type, paths, index, python, module=CHILD, args=(str(rounds),), keep=KEEP
        )
        result = launch.run_worker(job)
        fields, wall, log = result.fields, result.wall_s, result.log_file
        if fields["status"] != "ok":
            out.append(Timed(cell, cell.mode, error=f"{fields['status']}: {fields.get('error', '')} ({log})"))
        else:
            timings: dict[str, Any] = fields["timings"]
            malloc = str(fields.get("malloc") or "")
            out.extend(Timed.of(cell, name, t, malloc) for name, t in timings.items())
        print(f"[{index + 1}/{len(cells)}] {cell.label}: {fields['status']} in {wall:.0f} s", file=sys.stderr)
    return out


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def render(results: Sequence[Timed], device_type: str, title: str, load: tuple[float, float]) -> list[str]:
    """The report: one line per timed function, then how many ratios met the target."""
    target = TARGETS.get(device_type, TARGETS["cpu"])
    lines = [
        title,
        "",
        "| model | batch | mode | timed | rounds | suite median ms | suite's rounds ms (apart) "
        "| torch.utils.benchmark ms | suite / benchmark (range) | CUDA events ms | suite / events (range) "
        f"| within ±{target:.0%} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = total = 0
    for t in results:
        c = t.cell
        head = f"| {c.model.name} | {c.batch_size} | {c.mode} | {t.timed} |"
        if t.error:
            lines.append(f"{head} | {t.error[:160]} | | | | | | |")
            continue
        ratios = t.ratios()
        ok = all(r.within(target) for r in ratios)
        met, total = met + sum(r.within(target) for r in ratios), total + len(ratios)
        bench = t.vs_benchmark.text() if t.vs_benchmark else ""
        events = t.vs_events.text() if t.vs_events else ""
        lines.append(
            f"{head} {t.rounds} | {_ms(t.suite_ms)} | {t.drift()} | {_ms(t.benchmark_ms)} | {bench} | "
            f"{_ms(t.events_ms)} | {events} | {'yes' if ok else 'NO'} |"
        )
    mallocs = sorted({t.malloc for t in results if t.malloc})
    lines += [
        "",
        f"{met} of {total} ratio(s) within ±{target:.0%} (the target on {device_type}); 1-minute load "
        f"{load[0]:.2f} before, {load[1]:.2f} after, on {os.cpu_count()} core(s); the children's C "
        f"allocator: {', '.join(mallocs) or 'not reported'} (malloc setting).",
        "Each round times the suite's loop and the independent timers back to back in one process, "
        "in alternating order; a ratio is the median over rounds of suite / independent, "
        "the range its lowest and highest round. The suite's rounds: its lowest and highest median "
        "of a round, how far the machine moved under both timers.",
    ]
    return lines


def as_json(results: Sequence[Timed]) -> list[dict[str, Any]]:
    """The figures, for scripts: one object per timed function."""
    out = []
    for t in results:
        item: dict[str, Any] = {
            "model": t.cell.model.name,
            "batch_size": t.cell.batch_size,
            "mode": t.cell.mode,
            "timed": t.timed,
            "rounds": t.rounds,
            "suite_ms": t.suite_ms,
            "suite_rounds_ms": list(t.suite_rounds_ms),
            "benchmark_ms": t.benchmark_ms,
            "events_ms": t.events_ms,
            "error": t.error,
            "malloc": t.malloc,
        }
        for name, r in (("vs_benchmark", t.vs_benchmark), ("vs_events", t.vs_events)):
            item[name] = None if r is None else {"ratio": r.value, "low": r.low, "high": r.high}
        out.append(item)
    return out
