"""Rows for cells that did not run, so no cell of a run goes missing without a reason: a build
this machine cannot run (its driver or GPU, found before the image is built; its probe
failed) is `skipped`, the cells a dead container never reached are `error`.

Written on the host (nox, no torch) into the CSV the cells' container would have written,
under its lock, and only for cells that have no row there yet: a row a container wrote
always stands. A resumed run runs `skipped` and `error` cells again (suite.run.resume).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from suite.errors import UsageError
from suite.measure.provenance import Environment
from suite.results import CsvFormatError, RowWriter, key_of, one_line, read_rows
from suite.results.columns import ERROR, SKIPPED
from suite.run.launch import RunPaths, rows_of
from suite.run.lock import RunLock
from suite.run.runner import build_row
from suite.spec.model import Cell

STATUSES = (SKIPPED, ERROR)
IMAGE_UID = 1000  # the images' user (containers/Dockerfile), who appends to the CSV next


def recorded_keys(csv_path: Path) -> set[tuple[str, ...]]:
    """The keys of the rows a raw CSV holds (any status); a CSV that cannot be read is one line."""
    if not csv_path.exists():
        return set()
    try:
        return {key_of(row) for row in read_rows(csv_path).rows}
    except (OSError, UnicodeDecodeError, CsvFormatError) as exc:
        raise UsageError(str(csv_path), f"cannot read the rows already recorded: {exc}") from None


def record(
    cells: Sequence[Cell],
    env: Environment,
    out: Path,
    run_id: str,
    shard: str,
    status: str,
    reason: str,
) -> int:
    """Append a `status` row with `reason` for each cell of `cells` that has none yet; the
    number of rows written."""
    if status not in STATUSES:
        raise ValueError(f"status {status!r}: one of {STATUSES}")
    if not reason.strip():
        raise ValueError("a row for a cell that did not run needs its reason")
    if not cells:
        return 0
    paths = RunPaths.make(out, run_id, cells[0].build, env.device, shard)
    paths.csv.parent.mkdir(parents=True, exist_ok=True)
    now = datetime.now(timezone.utc).isoformat(timespec="seconds")
    written = 0
    with RunLock(paths.csv):
        present = recorded_keys(paths.csv)
        with RowWriter(paths.csv) as writer:
            for cell in cells:
                fields = {"status": status, "error": one_line(reason)}
                for one in rows_of(cell, fields):
                    row = build_row(cell, env, run_id, one, now, 0.0, "", shard)
                    if key_of(row) in present:
                        continue
                    writer.append(row)
                    present.add(key_of(row))
                    written += 1
    if os.getuid() == 0 and paths.csv.exists():  # nox as root: its containers run as IMAGE_UID
        for path in (paths.csv, paths.csv.parent):
            os.chown(path, IMAGE_UID, IMAGE_UID)
    return written
