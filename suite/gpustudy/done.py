"""What a call finds done already in its run folders: a run step whose every cell has its row
(so it need not start), the rows by status, and the cost model's calibration against the cells
that finished here. Standard library only (it runs on the lent machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from suite.gpustudy.plan import PlannedStep
from suite.spec.cost import format_duration


def _key(model: str, batch_size: object, mode: str, scenario: str) -> tuple[str, int, str, str]:
    return model, int(str(batch_size)), mode, scenario


def _rows(folder: Path) -> list[dict[str, str]]:
    from suite.results import read_rows

    rows: list[dict[str, str]] = []
    for csv_path in sorted(folder.glob("raw/*.csv")):
        try:
            rows += read_rows(csv_path).rows
        except Exception:  # unreadable: the step's own resume says why, and runs it
            continue
    return rows


def finished(work: Path, p: PlannedStep) -> bool:
    """Whether every cell of a run step has its row (ok or oom: what a resume keeps), so that the
    step need not start at all (a step's start-up alone is 14-18 s of a call's 9 minutes)."""
    if p.step.verb != "run" or not p.cells or any(c.dynamic for c in p.cells):
        return False
    have = {
        _key(r["model"], r["batch_size"], r["mode"], r["scenario"])
        for r in _rows(work / p.step.run_id)
        if r.get("status") in ("ok", "oom") and not r.get("dynamic")
    }
    return all(_key(c.model.name, c.batch_size, c.mode, c.scenario) in have for c in p.cells)


def calibration(work: Path, planned: Sequence[PlannedStep]) -> tuple[float, str] | None:
    """(measured / estimated, a line saying from what) over every cell that ended ok in the run
    folders here (earlier calls on this machine, a restored tarball), each against the cost
    model's estimate of it; None when there is none."""
    estimates = {
        _key(c.model.name, c.batch_size, c.mode, c.scenario): s
        for p in planned
        for c, s in zip(p.cells, p.each, strict=False)
        if not c.dynamic
    }
    measured = estimated = 0.0
    count = 0
    for p in planned:
        if p.step.verb != "run":
            continue
        for row in _rows(work / p.step.run_id):
            est = estimates.get(_key(row["model"], row["batch_size"], row["mode"], row["scenario"]))
            if row.get("status") != "ok" or row.get("dynamic") or est is None or not row.get("wall_s"):
                continue
            measured, estimated, count = measured + float(row["wall_s"]), estimated + est, count + 1
    if not count:
        return None
    ratio = measured / estimated
    line = (
        f"the {count} cell(s) finished here took {ratio:.2f} x the cost model's estimate "
        f"({format_duration(measured)} for {format_duration(estimated)})"
    )
    return ratio, line


def cell_counts(work: Path, ids: Sequence[str]) -> dict[str, int]:
    """The rows of the call's run folders (a repeat's repetitions included), by status."""
    from suite.results import read_rows

    counts: dict[str, int] = {}
    for run_id in ids:
        for csv_path in [*(work / run_id).glob("raw/*.csv"), *(work / run_id).glob("rep-*/raw/*.csv")]:
            try:
                rows = read_rows(csv_path).rows
            except Exception:  # unreadable: the step's own resume says why
                counts["unreadable file"] = counts.get("unreadable file", 0) + 1
                continue
            for row in rows:
                counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts
