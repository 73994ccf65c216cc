"""The cost model against what ran, like with like (suite.gpustudy.estimate): each step's wall
against its estimate (the step re-read from its command as printed, estimated by this commit's
model), and each cell's parts against theirs: a compiled cell's compile phase (`compile_ahead_s`:
its process before the gate) and its timing (the rest of its `wall_s`), a cell that followed
another in its process its timing, a `serial` row its whole process. So a step of 8 compiles at
once is compared with a wave's estimate, not with 8 compiles one after the other.

`call` prints it before its steps and scales the steps not done yet by the steps' ratio;
`plan --against` prints it for the calls' files of a finished study; `finish` puts it in the
README. Standard library only (it runs on the GPU machine).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.gpustudy.estimate import PlannedStep, Planner
from suite.gpustudy.plan import Step
from suite.spec.cost import CellPhases, estimate_seconds, format_duration, sweep_phases
from suite.spec.model import Cell, Matrix
from suite.spec.schedule import SERIAL, compiled_ahead

WITHIN = 0.20  # a step's estimate counts as right within ±20% of its wall
COMPILE, TIMING, CELL, STEP = "compile", "timing", "cell", "step"
KINDS = (STEP, COMPILE, TIMING, CELL)
NAMES = {
    STEP: "steps (each its wall)",
    COMPILE: "compile phases (a process before its gate)",
    TIMING: "timing phases (a cell after its gate)",
    CELL: "cells measured whole",
}


@dataclass(frozen=True)
class Pair:
    """One thing measured against its estimate: a step's wall, or a cell's phase."""

    kind: str
    what: str
    measured: float
    estimated: float

    @property
    def ratio(self) -> float:
        return self.measured / self.estimated if self.estimated > 0 else float("inf")

    def within(self) -> bool:
        return abs(self.measured - self.estimated) <= WITHIN * self.measured


def _key(cell: Cell) -> tuple[str, int, str, str]:
    return cell.model.name, cell.batch_size, cell.mode, cell.scenario


def _num(value: object) -> float | None:
    try:
        return None if value in (None, "") else float(str(value))
    except ValueError:
        return None


# a cell's progress line under `ahead`: "[3/8] <label>: ok (...) in 6.8 s (+ 32.0 s compiling ahead)"
_AHEAD_LINE = re.compile(r"^\[\s*\d+/\d+\] (.+?): \w+ .* in [\d.]+ s \(\+ ([\d.]+) s compiling ahead\)")


def ahead_in_logs(texts: Iterable[str]) -> dict[str, float]:
    """{cell label: its compile phase's seconds} from the calls' logs: what rows written before
    `compile_ahead_s` existed say only in their progress lines."""
    found: dict[str, float] = {}
    for text in texts:
        for line in text.splitlines():
            m = _AHEAD_LINE.match(line)
            if m:
                found[m.group(1)] = float(m.group(2))
    return found


def cell_pairs(
    rows: Iterable[dict[str, str]], p: PlannedStep, planner: Planner, logged: dict[str, float] | None = None
) -> list[Pair]:
    """A run step's ok rows against their cells' phases as the schedule the row says ran them
    (`logged`: compile phases the calls' logs say, for rows without `compile_ahead_s`)."""
    phases = {_key(ph.cell): ph for ph in sweep_phases(p.cells, planner.machine(p.step))}
    out: list[Pair] = []
    for row in rows:
        if row.get("status") != "ok" or row.get("dynamic"):
            continue
        ph = phases.get((row["model"], int(row["batch_size"]), row["mode"], row["scenario"]))
        wall = _num(row.get("wall_s"))
        if ph is None or wall is None:
            continue
        if _num(row.get("compile_ahead_s")) is None and (logged or {}).get(ph.cell.label) is not None:
            row = {**row, "compile_ahead_s": str((logged or {})[ph.cell.label])}
        out += _row_pairs(row, ph, wall, planner, p.step)
    return out


def _row_pairs(row: dict[str, str], ph: CellPhases, wall: float, planner: Planner, step: Step) -> list[Pair]:
    label = ph.cell.label
    if row.get("schedule", SERIAL) in ("", SERIAL):
        m = planner.machine(step)
        return [Pair(CELL, label, wall, estimate_seconds(ph.cell, m.device_type, m.energy, m.times))]
    ahead = _num(row.get("compile_ahead_s"))
    if ahead is not None and compiled_ahead(ph.cell):
        return [Pair(COMPILE, label, ahead, ph.compile_s), Pair(TIMING, label, wall - ahead, ph.timing_s)]
    kind = TIMING if not ph.compile_s else CELL
    return [Pair(kind, label, wall, ph.compile_s + ph.timing_s)]


def step_pairs(reports: Iterable[dict[str, Any]], estimate_of: Callable[[Step], float | None]) -> list[Pair]:
    """Every step a call's report (callN.json) says ran to its end, its wall against the estimate
    `estimate_of` gives the step its command shows (None: not estimated)."""
    out: list[Pair] = []
    for report in reports:
        for s in report.get("steps", []):
            if s.get("status") != "done" or not s.get("command"):
                continue
            step = Step.from_argv(shlex.split(s["command"]), s.get("what", ""))
            estimated = estimate_of(step)
            if estimated is not None:
                name = f"call {report.get('call', '?')}: {step.run_id}"
                out.append(Pair(STEP, name, float(s.get("wall_s") or 0.0), estimated))
    return out


def steps_run(reports: Iterable[dict[str, Any]]) -> dict[str, Step]:
    """Each run id's step, as the calls' reports show its command (the first seen)."""
    steps: dict[str, Step] = {}
    for report in reports:
        for s in report.get("steps", []):
            if s.get("command"):
                step = Step.from_argv(shlex.split(s["command"]), s.get("what", ""))
                steps.setdefault(step.run_id, step)
    return steps


def estimated_by(matrix: Matrix, variant: str, planner: Planner) -> Callable[[Step], float | None]:
    """This commit's estimate of any step (its cells expanded from the matrix)."""
    from suite.gpustudy.estimate import plan_step

    return lambda step: plan_step(matrix, step, variant, planner).seconds


def reports_in(folders: Iterable[Path]) -> list[dict[str, Any]]:
    """Every callN.json under the folders (a call's files as they came back), by start."""
    found = []
    for folder in folders:
        for path in sorted(folder.rglob("call*.json")) if folder.is_dir() else [folder]:
            try:
                report = json.loads(path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                continue
            if isinstance(report, dict) and "steps" in report:
                found.append(report)
    unique = {(r.get("call"), r.get("started_at")): r for r in found}
    return sorted(unique.values(), key=lambda r: str(r.get("started_at", "")))


def ratio_of(pairs: Sequence[Pair], kind: str) -> tuple[int, float, float]:
    """(how many, measured seconds, estimated seconds) of one kind."""
    chosen = [x for x in pairs if x.kind == kind]
    return len(chosen), sum(x.measured for x in chosen), sum(x.estimated for x in chosen)


def summary(pairs: Sequence[Pair]) -> list[str]:
    """One line per kind: how many, their measured against their estimated seconds; the steps'
    line says how many were within ±20%."""
    lines = []
    for kind in KINDS:
        n, measured, estimated = ratio_of(pairs, kind)
        if not n:
            continue
        line = (
            f"{NAMES[kind]}: {n} took {measured / estimated:.2f} x their estimates "
            f"({format_duration(measured)} for {format_duration(estimated)})"
        )
        if kind == STEP:
            inside = sum(x.within() for x in pairs if x.kind == STEP)
            line += f", {inside} of {n} within ±{WITHIN:.0%}"
        lines.append(line)
    return lines


def scale(pairs: Sequence[Pair]) -> float | None:
    """The ratio the steps not done yet are scaled by: the steps' where steps ended, else the
    cells' parts together; None where nothing was measured."""
    for kinds in ((STEP,), (COMPILE, TIMING, CELL)):
        chosen = [x for x in pairs if x.kind in kinds]
        estimated = sum(x.estimated for x in chosen)
        if chosen and estimated > 0:
            return sum(x.measured for x in chosen) / estimated
    return None


def table(pairs: Sequence[Pair]) -> list[str]:
    """Each step against its estimate, as Markdown."""
    lines = [f"| step | estimate | wall | wall / estimate | within ±{WITHIN:.0%} |", "|---|---|---|---|---|"]
    for x in pairs:
        if x.kind == STEP:
            lines.append(
                f"| {x.what} | {format_duration(x.estimated)} | {format_duration(x.measured)} | "
                f"{x.ratio:.2f} | {'yes' if x.within() else 'NO'} |"
            )
    return lines
