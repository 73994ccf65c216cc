"""Run cells: one child process per cell, with a timeout; rows appended as each ends.

The parent never imports torch. Preflight (suite.run.preflight) has probed the environment
in a child; for each cell this starts a worker (suite.run.launch) and turns what came back
(or did not) into exactly one row: ok / oom / error / timeout / skipped. A failing cell
never stops the sweep. One runner per raw CSV (suite.run.lock); resume (suite.run.resume):
cells already recorded as ok or oom are not re-run. A worker dies with this process
(suite.measure.lifeline).
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.measure import health
from suite.measure.provenance import Environment
from suite.results import TIMING_COLUMNS, RowWriter, key_of
from suite.run import cell_path, preflight, resume, tidy
from suite.run.launch import RunPaths
from suite.run.lock import RunLock
from suite.run.preflight import DEFAULT_MIN_FREE_MB, _mb
from suite.run.progress import Progress, row_warnings
from suite.spec.model import Cell


@dataclass
class RunReport:
    csv: Path
    ran: int = 0
    resumed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    warned: dict[str, list[str]] = field(default_factory=dict)  # progress.row_warnings -> cells
    unhealthy: int = 0  # cells timed on an unhealthy machine (suite.measure.health)
    flags: dict[str, int] = field(default_factory=dict)  # health flag -> cells timed with it

    def health_note(self) -> str:
        """`; 3 cell(s) timed on an unhealthy machine (busy 3): ...` for the done line, or ""."""
        if not self.unhealthy:
            return ""
        flags = ", ".join(f"{f} {n}" for f, n in sorted(self.flags.items()))
        return f"; {self.unhealthy} cell(s) timed on an unhealthy machine ({flags}): see the health column"

    def warnings_note(self) -> str:
        """`; 2 ok cell(s) with ACCURACY FAIL (Mask2former bs=1 default inference, ...)` for the
        done line, or ""."""
        return "".join(
            f"; {len(cells)} ok cell(s) with {what} ({', '.join(cells)})"
            for what, cells in self.warned.items()
        )


def build_row(
    cell: Cell,
    env: Environment,
    run_id: str,
    fields: dict[str, Any],
    started_at: str,
    wall: float,
    log_file: str,
    shard: str,
) -> dict[str, Any]:
    """One CSV row: the cell's identity, the environment, and what the worker measured."""
    s = cell.settings
    row: dict[str, Any] = {
        "run_id": run_id,
        **cell.key_fields(env.device),
        "task": cell.model.task,
        **env.columns(),
        "started_at": started_at,
        "wall_s": round(wall, 3),
        "warmup": fields.get("warmup"),  # the calls that ran (suite.measure.timing), not the setting
        "tolerance": s.tolerance,
        "compile_cache": s.compile_cache,
        "variant": cell.variant,
        "shard": shard,
        "log_file": log_file,
        "host_load": round(os.getloadavg()[0], 2),
    }
    row.update(fields)
    if row["status"] != "ok":
        for col in TIMING_COLUMNS:
            row[col] = None
    row["health"] = health.verdict(row, env.cpu_count)  # ok, or why the figures are suspect
    return row


def run_cells(
    cells: Sequence[Cell],
    env: Environment,
    out: Path,
    run_id: str,
    shard: str = "",
    keep_failed: bool = False,
    python: str = sys.executable,
    min_free_mb: float = DEFAULT_MIN_FREE_MB,
    banner: str = "",
    keep_compile_cache: bool = False,
) -> RunReport:
    """Run every cell not already recorded; append one row per cell as it ends.

    Holds the run's lock throughout. `banner` is printed once the run's CSV is found fit
    to resume (a refused run prints its one error line only). Stops (UsageError, exit 2)
    when the disk fills up: the rows recorded so far are safe, and the same --run-id
    resumes. A run that ends leaves no lock, no scratch file and no compile cache, unless
    `keep_compile_cache` (suite.run.tidy)."""
    if not cells:
        raise UsageError("cells", "the selection is empty: nothing to run")
    build = cells[0].build
    paths = RunPaths.make(out, run_id, build, env.device, shard)
    report = RunReport(csv=paths.csv)
    resume_hint = f"the rows recorded so far are safe; run again with --run-id {run_id} to resume"
    for folder in (paths.csv.parent, paths.logs, paths.scratch):  # a damaged run folder: one line
        preflight.check_writable(folder, "--run-id", preflight.RUN_FOLDER_HINT)
    with RunLock(paths.csv):
        state = resume.prepare(paths.csv, keep_failed)
        if banner:
            print(banner, file=sys.stderr, flush=True)
        shutil.rmtree(paths.scratch, ignore_errors=True)  # files of a killed run's attempts
        tidy.explain_cache(paths, cells)
        progress = Progress.of(cells)
        try:
            writer = RowWriter(paths.csv)
        except OSError as exc:
            raise UsageError(str(paths.csv), f"cannot open for appending: {exc.strerror or exc}") from None
        with writer:
            for index, cell in enumerate(cells):
                keys = [key_of(k) for k in cell.row_keys(env.device)]
                if all(key in state.done for key in keys):
                    report.resumed += 1
                    progress.skip(cell, state.done[keys[0]])
                    continue
                free = preflight.free_mb(paths.run_dir)
                if free < min_free_mb:
                    raise UsageError(
                        "--out",
                        f"only {_mb(free)} MB left on the disk of {paths.run_dir} (minimum "
                        f"{_mb(min_free_mb)} MB): stopped before {cell.label}; {resume_hint}",
                    )
                progress.start(cell)
                started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
                try:
                    fields, wall, log_file = cell_path.run_cell(cell, env.device_type, paths, index, python)
                    rows = [
                        build_row(cell, env, run_id, one, started_at, wall, log_file, shard)
                        for one in cell_path.rows_of(cell, fields)
                    ]
                    rows = [r for r in rows if key_of(r) not in state.done]  # a resumed cell's kept rows
                    for row in rows:
                        writer.append(row)
                except OSError as exc:
                    raise UsageError(
                        "--out",
                        f"{cell.label}: {exc.strerror or exc} ({exc.filename or 'no file'}); {resume_hint}",
                    ) from None
                report.ran += 1
                for row in rows:
                    report.statuses[row["status"]] = report.statuses.get(row["status"], 0) + 1
                    for what in row_warnings(row):
                        report.warned.setdefault(what, []).append(cell.label)
                    flags = health.flags_of(row.get("health"))
                    report.unhealthy += bool(flags)
                    for flag in flags:
                        report.flags[flag] = report.flags.get(flag, 0) + 1
                progress.finish(cell, rows[0], wall)
        tidy.tidy(paths, keep_compile_cache)
    return report


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
