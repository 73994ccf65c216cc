"""Progress on the terminal: one line when a cell starts, one when it ends, with an ETA."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, TextIO

from suite.results import DEGENERATE, FAIL, NONDETERMINISTIC, OK, format_cell
from suite.spec.cost import ahead_timing_seconds, compile_process_seconds, estimate_seconds, format_duration
from suite.spec.model import Cell
from suite.spec.schedule import SERIAL, compiled_ahead, pool_size

ACCURACY_FAIL = "ACCURACY FAIL"
UNJUDGED = (DEGENERATE, NONDETERMINISTIC)  # a compiled row the accuracy rule could not judge


def row_warnings(row: Mapping[str, Any]) -> dict[str, str]:
    """What makes an ok row's figures other than they look, as {what: detail}: shown in the
    cell's progress line and counted in the run's `done:` summary (by what). The accuracy
    check's failure is one; another reason to doubt a figure is added here, once."""
    warnings: dict[str, str] = {}
    if row.get("status") == OK and row.get("accuracy") == FAIL:
        diff = format_cell("max_abs_diff", row.get("max_abs_diff")) or "?"
        warnings[ACCURACY_FAIL] = f"compiled output differs from eager, max |diff| {diff}"
    if row.get("status") == OK and row.get("accuracy") in UNJUDGED:  # docs/accuracy.md
        warnings[f"ACCURACY {str(row['accuracy']).upper()}"] = str(row.get("accuracy_note") or "")
    return warnings


def timing_seconds(cell: Cell, pool: int = 1) -> float:
    """A cell's part of the `ahead` schedule (suite.spec.cost.ahead_timing_seconds), and of a
    compiled-ahead cell's compile the share one of a wave's `pool` processes takes."""
    share = compile_process_seconds(cell) / pool if compiled_ahead(cell) else 0.0
    return ahead_timing_seconds(cell) + share


@dataclass
class Progress:
    """One line when a cell starts and one when it ends: done/total, elapsed, ETA.

    The ETA is the cost model's estimate for the cells left, scaled by how this machine's
    walls compared with the estimates of the cells done so far: a compiled cell can take
    ten times an eager one, so an average per cell would swing with the order of the plan.
    """

    total: int
    estimate_left: float  # suite.spec.cost seconds of the cells not yet done
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    wall_done: float = 0.0  # measured seconds of the cells run so far
    estimate_done: float = 0.0  # their estimated seconds

    cost: Callable[[Cell], float] = estimate_seconds
    pool: int = 1  # `ahead`: processes compiling at once (a compile's wall counts 1/pool of it)

    @staticmethod
    def of(
        cells: Sequence[Cell], schedule: str = SERIAL, cores: int | None = None, pool: int | None = None
    ) -> Progress:
        """`schedule` ahead: a cell's estimate is its timing's and its share of a wave's compile
        (suite.run.schedule: a wave of pool_size(cores, pool) processes compile at once)."""
        if schedule == SERIAL:
            return Progress(total=len(cells), estimate_left=sum(estimate_seconds(c) for c in cells))
        pool = pool_size(cores, pool)
        cost = partial(timing_seconds, pool=pool)
        return Progress(total=len(cells), estimate_left=sum(cost(c) for c in cells), cost=cost, pool=pool)

    def start(self, cell: Cell) -> None:
        print(
            f"[{self.done + 1:>{len(str(self.total))}}/{self.total}] {cell.label} ...",
            file=self.stream,
            flush=True,
        )

    def finish(self, cell: Cell, row: dict[str, Any], wall: float, ahead_s: float = 0.0) -> None:
        """`wall`: the cell's seconds; `ahead_s` of them its compile before its gate, beside the
        wave's others (the ETA counts 1/pool of it, as the estimate does)."""
        self.done += 1
        estimate = self.cost(cell)
        wall -= ahead_s
        self.estimate_left -= estimate
        self.estimate_done += estimate
        self.wall_done += wall + ahead_s / self.pool
        elapsed = time.monotonic() - self.started
        eta = self.estimate_left * self.wall_done / self.estimate_done
        status = row["status"]
        if status == "ok":
            detail = f"median {float(row['median_ms']):.2f} ms"
            if row.get("speedup") not in (None, ""):
                detail += f", speed-up x{float(row['speedup']):.2f}"
            detail += "".join(f"; {what}: {why}" for what, why in row_warnings(row).items())
            if row.get("health") not in (None, "", "ok"):  # the figures are suspect: say why
                detail += f"; machine {row['health']}"
        else:
            detail = str(row.get("error", ""))[:120]
        width = len(str(self.total))
        print(
            f"[{self.done:>{width}}/{self.total}] {cell.label}: {status} ({detail}) in {wall:.1f} s"
            + (f" (+ {ahead_s:.1f} s compiling ahead)" if ahead_s else "")
            + f" | elapsed {format_duration(elapsed)} | ETA {format_duration(eta)}",
            file=self.stream,
            flush=True,
        )

    def skip(self, cell: Cell, status: str) -> None:
        self.done += 1
        self.estimate_left -= self.cost(cell)
        width = len(str(self.total))
        print(
            f"[{self.done:>{width}}/{self.total}] {cell.label}: already recorded ({status}), skipped",
            file=self.stream,
            flush=True,
        )
