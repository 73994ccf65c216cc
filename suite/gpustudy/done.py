"""What a call finds done already in its run folders: a run step whose every cell has its row
(so it need not start), the rows by status, and the cost model's calibration against the cells
that finished here. Standard library only (it runs on the GPU machine).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from suite.gpustudy import calibrate
from suite.gpustudy.estimate import PlannedStep, Planner
from suite.results import read_rows


def _key(model: str, batch_size: object, mode: str, scenario: str) -> tuple[str, int, str, str]:
    return model, int(str(batch_size)), mode, scenario


def rows_in(folder: Path) -> list[dict[str, str]]:
    """The rows of a run folder's raw CSVs (an unreadable one left out)."""
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
    if p.step.verb not in ("run", "pair") or not p.cells or any(c.dynamic for c in p.cells):
        return False
    folder = work / (
        f"{p.step.run_id}-new" if p.step.verb == "pair" else p.step.run_id
    )  # a pair: its new side
    have = {
        _key(r["model"], r["batch_size"], r["mode"], r["scenario"])
        for r in rows_in(folder)
        if r.get("status") in ("ok", "oom") and not r.get("dynamic")
    }
    return all(_key(c.model.name, c.batch_size, c.mode, c.scenario) in have for c in p.cells)


def calibration(
    work: Path, planned: Sequence[PlannedStep], planner: Planner
) -> tuple[float, list[str]] | None:
    """(the ratio the steps not done yet are scaled by, the lines that say from what) over what
    the run folders here hold (earlier calls on this machine, a restored tarball): each step an
    earlier call ran to its end (its callN.json) against its estimate, each ok cell's parts
    against theirs (suite.gpustudy.calibrate); None when there is nothing."""
    by_id = {p.step.run_id: p for p in planned}
    pairs = calibrate.step_pairs(
        calibrate.reports_in([work]),
        lambda step: by_id[step.run_id].seconds if step.run_id in by_id else None,
    )
    for p in planned:
        if p.step.verb == "run":
            pairs += calibrate.cell_pairs(rows_in(work / p.step.run_id), p, planner)
    ratio = calibrate.scale(pairs)
    return None if ratio is None else (ratio, calibrate.summary(pairs))


def cell_counts(work: Path, ids: Sequence[str]) -> dict[str, int]:
    """The rows of the call's run folders (a repeat's repetitions included), by status."""

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
