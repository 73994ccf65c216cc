"""The parent side of `python -m suite crosscheck`: one child per cell
(suite.measure.crosscheck, started by the runner's launcher with the cell's timeout and the
lifeline), then for each timed function and each pair of like figures (latency against latency,
throughput against throughput: `PAIRS`) the ratio suite / independent timer over the rounds, with
its spread, against the target for the device.

The ratio of a pair is the median over rounds of (suite's median / the independent median) of
the same round; its spread is the lowest and highest round's ratio. Every round's figures of
every timer are kept (`crosscheck.json`).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from suite.run import launch
from suite.run.launch import RunPaths
from suite.spec.model import Cell
from suite.stats import median

CHILD = "suite.measure.crosscheck"
DEFAULT_ROUNDS = 60  # at most
# Rounds go on until they have taken this many seconds a timed function, at least MIN_ROUNDS:
# full-size ResNet-50 on a 2-core CPU (42 ms a call, about 30 calls a function a round) gets
# about 15 rounds, on an H200 (3.5 ms) the 60 rounds of DEFAULT_ROUNDS in a few seconds.
DEFAULT_BUDGET_S = 20.0
MIN_ROUNDS = 5


@dataclass(frozen=True)
class Budget:
    """How long a cell's rounds go on: until they have taken `seconds` a timed function, at least
    MIN_ROUNDS and at most `rounds` of them."""

    rounds: int = DEFAULT_ROUNDS
    seconds: float = DEFAULT_BUDGET_S

    def __post_init__(self) -> None:
        if self.rounds < 2 or not self.seconds > 0:
            raise ValueError(f"a cross-check needs at least 2 rounds and a positive budget, got {self}")

    def text(self) -> str:
        return f"{self.seconds:g} s a function ({min(MIN_ROUNDS, self.rounds)} to {self.rounds})"


# How far the suite's median may be from an independent timer's (docs/trust.md): an idle CPU, CUDA.
TARGETS: dict[str, float] = {"cpu": 0.03, "cuda": 0.02}
KEEP = ("status", "error", "timings", "malloc", "rounds_s", "stopped")  # the child's result fields
LATENCY, THROUGHPUT = "latency", "throughput"


@dataclass(frozen=True)
class Pair:
    """A figure of the suite's (its series in the child's result) and an independent timer's
    figure of the same kind."""

    figure: str  # LATENCY | THROUGHPUT
    suite: str
    other: str
    against: str  # the independent timer, in words


PAIRS: tuple[Pair, ...] = (
    Pair(LATENCY, "suite_latency", "events_latency", "CUDA events, the same calls"),
    Pair(LATENCY, "suite_latency", "benchmark_latency", "torch.utils.benchmark, single calls"),
    Pair(THROUGHPUT, "suite_throughput", "host_throughput", "host clock + synchronize, the same blocks"),
    Pair(THROUGHPUT, "suite_throughput", "benchmark_throughput", "torch.utils.benchmark, blocks of as many"),
)


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
    """One function of one cell (eager, or the cell's compiled mode): each timer's median in each
    round (`figures`, by series), or why it has none."""

    cell: Cell
    timed: str
    rounds: int = 0
    figures: dict[str, tuple[float, ...]] = field(default_factory=dict)
    error: str = ""
    malloc: str = ""  # the child's C allocator (suite.measure.allocator)
    seconds: float = 0.0  # the cell's rounds, both halves, every function
    stopped: str = ""  # why the rounds ended: "budget" or "rounds" (the maximum)

    def median_of(self, series: str) -> float | None:
        xs = self.figures.get(series) or ()
        return median(xs) if xs else None

    def drift(self, series: str = "suite_latency") -> str:
        """The suite's medians over the rounds, lowest-highest, and how far apart: how much the
        machine moved under both timers while the ratio was taken."""
        xs = self.figures.get(series) or ()
        if not xs:
            return ""
        lo, hi = min(xs), max(xs)
        return f"{lo:.2f}-{hi:.2f} ({hi / lo - 1:.1%})"

    @staticmethod
    def of(cell: Cell, timed: str, t: dict[str, list[float]], fields: dict[str, Any]) -> Timed:
        figures = {k: tuple(float(x) for x in v) for k, v in t.items() if v}
        return Timed(
            cell,
            timed,
            len(t.get("suite_latency") or ()),
            figures,
            malloc=str(fields.get("malloc") or ""),
            seconds=float(fields.get("rounds_s") or 0.0),
            stopped=str(fields.get("stopped") or ""),
        )

    def rounds_text(self) -> str:
        """How many rounds the cell took and why they stopped."""
        why = {"budget": "its time budget", "rounds": "the most rounds asked"}.get(self.stopped, "")
        return f"{self.rounds} rounds in {self.seconds:.0f} s" + (f" ({why})" if why else "")

    def ratio(self, pair: Pair) -> Ratio | None:
        return Ratio.of(self.figures.get(pair.suite) or (), self.figures.get(pair.other) or ())

    def ratios(self) -> list[tuple[Pair, Ratio]]:
        """Every pair this function has both figures of (no CUDA events on a CPU)."""
        out = []
        for pair in PAIRS:
            r = self.ratio(pair)
            if r is not None:
                out.append((pair, r))
        return out


def run(
    cells: Sequence[Cell], device_type: str, paths: RunPaths, budget: Budget, python: str = sys.executable
) -> list[Timed]:
    """Cross-check each cell in its own child process; one `Timed` per function timed."""
    out: list[Timed] = []
    for index, cell in enumerate(cells):
        print(
            f"[{index + 1}/{len(cells)}] {cell.label}: rounds for {budget.text()} ...",
            file=sys.stderr,
            flush=True,
        )
        argv = (str(budget.rounds), repr(budget.seconds), str(MIN_ROUNDS))
        job = launch.WorkerJob(cell, device_type, paths, index, python, module=CHILD, args=argv, keep=KEEP)
        result = launch.run_worker(job)
        fields, wall, log = result.fields, result.wall_s, result.log_file
        said = ""
        if fields["status"] != "ok":
            out.append(Timed(cell, cell.mode, error=f"{fields['status']}: {fields.get('error', '')} ({log})"))
        else:
            timed = [Timed.of(cell, name, t, fields) for name, t in fields["timings"].items()]
            out.extend(timed)
            said = f": {timed[0].rounds_text()}" if timed else ""
        print(
            f"[{index + 1}/{len(cells)}] {cell.label}: {fields['status']} in {wall:.0f} s{said}",
            file=sys.stderr,
        )
    return out


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}"


def render(results: Sequence[Timed], device_type: str, title: str, load: tuple[float, float]) -> list[str]:
    """The report: one line per function and pair of like figures, then how many ratios met the
    target."""
    target = TARGETS.get(device_type, TARGETS["cpu"])
    lines = [
        title,
        "",
        "| model | batch | mode | timed | figure | rounds | suite median ms | suite's rounds ms (apart) "
        f"| against | its median ms | suite / it (range) | within ±{target:.0%} |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    met = total = 0
    for t in results:
        c = t.cell
        head = f"| {c.model.name} | {c.batch_size} | {c.mode} | {t.timed} |"
        if t.error:
            lines.append(f"{head} | | {t.error[:160]} | | | | | |")
            continue
        for pair, r in t.ratios():
            ok = r.within(target)
            met, total = met + ok, total + 1
            ours = f"{_ms(t.median_of(pair.suite))} | {t.drift(pair.suite)}"
            lines.append(
                f"{head} {pair.figure} | {t.rounds} | {ours} | "
                f"{pair.against} | {_ms(t.median_of(pair.other))} | {r.text()} | {'yes' if ok else 'NO'} |"
            )
    mallocs = sorted({t.malloc for t in results if t.malloc})
    seen: set[str] = set()
    rounds = []
    for t in results:
        if not t.error and t.cell.label not in seen:
            seen.add(t.cell.label)
            rounds.append(f"{t.cell.label}: {t.rounds_text()}")
    lines += [
        "",
        "Rounds: " + ("; ".join(rounds) or "none") + ".",
        f"{met} of {total} ratio(s) within ±{target:.0%} (the target on {device_type}); 1-minute load "
        f"{load[0]:.2f} before, {load[1]:.2f} after, on {os.cpu_count()} core(s); the children's C "
        f"allocator: {', '.join(mallocs) or 'not reported'} (malloc setting).",
        "Like against like: latency (a synchronize around each call) against CUDA events around the "
        "suite's own calls and torch.utils.benchmark's single calls; throughput (blocks of back-to-back "
        "calls, one synchronize; CUDA events on a GPU) against the host clock around the suite's own "
        "blocks and torch.utils.benchmark's blocks of as many calls. Each round times the suite's loop "
        "and torch.utils.benchmark back to back in one process, in alternating order; a ratio is the "
        "median over rounds of suite / independent (medians against medians), the range its lowest "
        "and highest round. The suite's rounds: its lowest and highest median of a round, how far the "
        "machine moved under both timers.",
    ]
    return lines


def as_json(results: Sequence[Timed]) -> list[dict[str, Any]]:
    """The figures, for scripts: one object per timed function, every round's figure of every
    timer (`rounds_ms`) and each pair's ratio. `suite_ms`, `benchmark_ms`, `events_ms`,
    `vs_benchmark`, `vs_events` are the latency pairs' (the names earlier reports used)."""
    out = []
    for t in results:
        item: dict[str, Any] = {
            "model": t.cell.model.name,
            "batch_size": t.cell.batch_size,
            "mode": t.cell.mode,
            "timed": t.timed,
            "rounds": t.rounds,
            "rounds_ms": {k: list(v) for k, v in t.figures.items()},
            "suite_ms": t.median_of("suite_latency"),
            "suite_rounds_ms": list(t.figures.get("suite_latency") or ()),
            "benchmark_ms": t.median_of("benchmark_latency"),
            "events_ms": t.median_of("events_latency"),
            "suite_throughput_ms": t.median_of("suite_throughput"),
            "error": t.error,
            "malloc": t.malloc,
            "rounds_s": t.seconds,
            "stopped": t.stopped,
            "ratios": [
                {
                    "figure": p.figure,
                    "suite": p.suite,
                    "against": p.other,
                    "ratio": r.value,
                    "low": r.low,
                    "high": r.high,
                }
                for p, r in t.ratios()
            ],
        }
        for name, pair in (("vs_benchmark", PAIRS[1]), ("vs_events", PAIRS[0])):
            r = t.ratio(pair)
            item[name] = None if r is None else {"ratio": r.value, "low": r.low, "high": r.high}
        out.append(item)
    return out
