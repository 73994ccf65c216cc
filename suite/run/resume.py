"""Resume a run from its raw CSV: which cells are done, and a file fit to append to.

Runs under the run's lock (suite.lock), before any cell. In order:
1. a partial last row (the writer was killed mid-row) is cut off, and the user told;
2. the file is checked: the contract header of this suite version, every row complete
   with a known status. Anything else stops the run (exit 2, naming file and line)
   before a cell runs: rewriting a file we do not understand could lose results;
3. a cell recorded more than once counts with one row, chosen as the merge chooses
   (suite.results.one_per_cell: an ok row, else the latest), and the user is told;
4. rows of cells that will run again (error, timeout, skipped) and the extra rows of
   step 3 move to `<run>/superseded/<name>.csv`, so the raw file keeps one row per cell
   (`keep_failed` moves nothing: failed cells stay recorded, extra rows stay too).
   The superseded file is appended first and the raw file then replaced atomically; a
   kill in between leaves the rows in both, and the next resume does not copy them twice.
"""

from __future__ import annotations

import csv
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import UsageError
from suite.results import (
    COLUMNS,
    DONE_STATUSES,
    KEY_COLUMNS,
    CsvFormatError,
    ReadResult,
    RowWriter,
    cut_torn_tail,
    key_of,
    one_per_cell,
    read_rows,
)


@dataclass
class Resume:
    """What a resumed run starts from."""

    done: dict[tuple[str, ...], str] = field(default_factory=dict)  # key -> status of kept rows
    cut_bytes: int = 0  # size of the partial last row cut off
    moved: int = 0  # failed rows moved to superseded/ (their cells run again)
    duplicates: int = 0  # extra rows of a cell recorded twice, moved to superseded/


def superseded_path(csv_path: Path) -> Path:
    return csv_path.parent.parent / "superseded" / csv_path.name


def _check_regular(path: Path) -> None:
    """A folder, a pipe or a device where a CSV belongs is one line: a pipe would hang the
    reader, and neither can be repaired or rewritten."""
    if path.is_dir():
        kind = "a folder"
    elif path.exists() and not path.is_file():
        kind = "not a regular file (a pipe or a device)"
    else:
        return
    raise UsageError(str(path), f"{kind} where a CSV of rows belongs; move it away or use another --run-id")


def _rows_of(path: Path) -> ReadResult:
    """Every row of a raw CSV, or a UsageError naming the file (and line) if any is unusable."""
    _check_regular(path)
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            header = next(csv.reader([fh.readline()]), [])
        result = read_rows(path)
    except UnicodeDecodeError:
        raise UsageError(str(path), "not UTF-8 text; move it away or use another --run-id") from None
    except CsvFormatError as exc:  # its message starts with the file
        raise UsageError("", f"{exc}; move it away or use another --run-id") from None
    except csv.Error as exc:
        raise UsageError(str(path), f"unreadable ({exc}); move it away or use another --run-id") from None
    except OSError as exc:
        raise UsageError(str(path), f"cannot read: {exc.strerror or exc}") from None
    if path.stat().st_size and tuple(header) != COLUMNS:
        raise UsageError(
            str(path), "its header differs from this suite version's columns; use another --run-id"
        )
    if result.problems:
        more = f" (and {len(result.problems) - 1} more)" if len(result.problems) > 1 else ""
        raise UsageError(
            "",
            f"{result.problems[0]}{more}; nothing was run: fix or remove the row, or use another --run-id",
        )
    return result


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def prepare(csv_path: Path, keep_failed: bool = False) -> Resume:
    """Repair, check and trim the raw CSV of a run about to (re)start; see the module doc."""
    resume = Resume()
    if not csv_path.exists():
        return resume
    _check_regular(csv_path)
    try:
        resume.cut_bytes = cut_torn_tail(csv_path)
    except OSError as exc:
        raise UsageError(str(csv_path), f"cannot repair: {exc.strerror or exc}") from None
    if resume.cut_bytes:
        print(
            f"{csv_path}: cut a partial last row ({resume.cut_bytes} bytes) left by an interrupted "
            "run; its cell runs again",
            file=sys.stderr,
        )
    read = _rows_of(csv_path)
    kept, dropped = one_per_cell(read.rows, KEY_COLUMNS)
    duplicates = [] if keep_failed else [i for i, _ in dropped]
    rerun = [] if keep_failed else [i for i in kept if read.rows[i]["status"] not in DONE_STATUSES]
    rows = [read.rows[i] for i in kept if i not in rerun]
    if duplicates or rerun:
        target = _set_aside(csv_path, [read.rows[i] for i in duplicates + rerun], rows)
        resume.moved, resume.duplicates = len(rerun), len(duplicates)
    if dropped:
        extra = sorted(read.lines[i] for i, _ in dropped)
        shown = ", ".join(map(str, extra[:5])) + (", ..." if len(extra) > 5 else "")
        print(
            f"{csv_path}: {len(dropped)} more row(s) of a cell already recorded (line(s) {shown}); "
            "one row per cell counts, chosen as the merge does (an ok row, else the latest); "
            + (
                f"the others moved to {superseded_path(csv_path)}"
                if duplicates
                else "--keep-failed leaves the others in the file"
            ),
            file=sys.stderr,
        )
    if rerun:
        print(
            f"{csv_path}: {len(rerun)} failed cell(s) will run again (their old rows moved to {target}; "
            "--keep-failed keeps them)",
            file=sys.stderr,
        )
    resume.done = {key_of(row): row["status"] for row in rows}
    return resume


def _set_aside(csv_path: Path, moved: list[dict[str, str]], kept: list[dict[str, str]]) -> Path:
    """Move rows from the raw CSV to superseded/ (see the module doc); the superseded file."""
    target = superseded_path(csv_path)
    already = _rows_of(target).rows if target.exists() else []
    try:
        with RowWriter(target) as writer:
            for row in moved:
                if row not in already:
                    writer.append(row)
        tmp = csv_path.with_name(csv_path.name + ".rewrite")
        tmp.unlink(missing_ok=True)
        with RowWriter(tmp) as writer:
            for row in kept:
                writer.append(row)
        tmp.replace(csv_path)
        _fsync_dir(csv_path.parent)
    except OSError as exc:
        why = f"{exc.strerror or exc}" + (f" ({exc.filename})" if exc.filename else "")
        raise UsageError(str(csv_path), f"cannot rewrite for the resume: {why}") from None
    return target
