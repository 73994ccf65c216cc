"""The raw CSV file: a crash-safe appender and a reader that tolerates a torn last line.

One row per cell. Rows are appended and flushed (and fsync'd) as each cell ends, so a killed
sweep loses at most the cell in flight. The columns and statuses come from
`suite.results.columns`. Imported inside the containers: standard library only.
"""

from __future__ import annotations

import csv
import errno
import io
import os
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from suite.results.columns import COLUMNS, CONTRACT_COLUMNS, STATUSES
from suite.results.rows import format_cell


@dataclass
class ReadResult:
    """Rows read from a raw CSV, plus what had to be set aside and why."""

    rows: list[dict[str, str]]
    lines: list[int] = field(default_factory=list)  # line number of each row, for messages
    repaired: int = 0  # partial trailing rows cut off (crash mid-write)
    skipped: int = 0  # malformed rows not returned
    problems: tuple[str, ...] = ()
    # with read_rows(..., as_lists=True): the header, and each row's values in its order (`rows`
    # is then empty)
    header: list[str] = field(default_factory=list)
    values: list[list[str]] = field(default_factory=list)


class CsvFormatError(ValueError):
    """A raw CSV that does not follow the contract (header or rows)."""


def _read_regular(path: Path) -> str:
    """A file's text; a folder, a pipe or a device in a raw CSV's place is an OSError, never
    read (reading a pipe nobody writes would wait forever)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    with open(fd, encoding="utf-8") as fh:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file (a pipe or a device)", str(path))
        return fh.read()


def _header(path: Path, line: str) -> list[str]:
    """The header's columns; one that is unreadable or lacks a contract column is refused."""
    try:
        header = next(csv.reader([line]))
    except csv.Error as exc:  # a NUL byte (Python 3.10), a field over the size limit
        raise CsvFormatError(f"{path}:1: unreadable header ({exc})") from None
    missing = [c for c in CONTRACT_COLUMNS if c not in header]
    if missing:
        raise CsvFormatError(f"{path}: header lacks column(s) {', '.join(missing)}")
    return header


def _parse_row(line: str, width: int, status_at: int) -> tuple[list[str], str]:
    """A row's values ([] for a blank line), or why it is set aside."""
    if "\x00" in line:  # the writer never writes one; Python 3.10's csv refuses it, 3.11's not
        return [], "unreadable row (a NUL byte)"
    try:
        values = next(csv.reader([line]), [])
    except csv.Error as exc:
        return [], f"unreadable row ({exc})"
    if values and len(values) != width:
        return [], f"{len(values)} fields, header has {width}"
    if values and values[status_at] not in STATUSES:
        return [], f"unknown status {values[status_at]!r}"
    return values, ""


def read_rows(path: Path, as_lists: bool = False) -> ReadResult:
    """Read a raw CSV written by `RowWriter`, tolerating one torn final line. `as_lists`: each
    row as its list of values (`values`, in the `header`'s order), not a dict."""
    text = _read_regular(path)
    if not text.strip():
        return ReadResult(rows=[])
    lines = text.splitlines(keepends=True)
    if len(lines) == 1 and not lines[0].endswith("\n"):  # killed before its header was whole
        return ReadResult(
            rows=[], repaired=1, problems=(f"{path}:1: partial first line (writer killed mid-write)",)
        )
    header = _header(path, lines[0])
    rows: list[dict[str, str]] = []
    lists: list[list[str]] = []
    status_at = max(i for i, name in enumerate(header) if name == "status")  # as a dict keeps it
    row_lines: list[int] = []
    problems: list[str] = []
    repaired = skipped = 0
    for lineno, line in enumerate(lines[1:], start=2):
        is_last = lineno == len(lines)
        if is_last and not line.endswith("\n"):
            repaired += 1
            problems.append(f"{path}:{lineno}: partial last row (writer killed mid-write)")
            continue
        values, problem = _parse_row(line, len(header), status_at)
        if problem:
            skipped += 1
            problems.append(f"{path}:{lineno}: {problem}")
            continue
        if not values:
            continue
        if as_lists:
            lists.append(values)
        else:
            rows.append(dict(zip(header, values, strict=False)))
        row_lines.append(lineno)
    return ReadResult(
        rows=rows,
        lines=row_lines,
        repaired=repaired,
        skipped=skipped,
        problems=tuple(problems),
        header=header if as_lists else [],
        values=lists,
    )


def _encode(row: Mapping[str, object], columns: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([format_cell(c, row.get(c)) for c in columns])
    return buf.getvalue()


def cut_torn_tail(path: Path) -> int:
    """Cut a last line without its newline (a writer killed mid-row); the bytes cut.

    Every row is written with its newline in one write, so anything after the last
    newline is a fragment of the row in flight, never a finished result."""
    if not path.exists():
        return 0
    with open(path, "r+b") as fh:
        size = fh.seek(0, os.SEEK_END)
        if size == 0:
            return 0
        # read back from the end until a newline: the file may be large
        pos, tail = size, b""
        while pos > 0 and b"\n" not in tail:
            step = min(pos, 1 << 16)
            pos -= step
            fh.seek(pos)
            tail = fh.read(step) + tail
        if tail.endswith(b"\n"):
            return 0
        keep = pos + tail.rfind(b"\n") + 1
        fh.truncate(keep)
        fh.flush()
        os.fsync(fh.fileno())
        return size - keep


class RowWriter:
    """Appends rows to one raw CSV; each row is written whole, flushed and fsync'd.

    A torn last line left by a killed writer is cut off on open (and reported), so
    the file always parses and the next row never glues onto a fragment.
    """

    def __init__(self, path: Path, columns: tuple[str, ...] = COLUMNS) -> None:
        self.path = path
        self.columns = columns
        path.parent.mkdir(parents=True, exist_ok=True)
        self.repaired_bytes = cut_torn_tail(path)
        new = not path.exists() or path.stat().st_size == 0
        self._fh = open(path, "a", encoding="utf-8", newline="")  # noqa: SIM115 (closed in close())
        if new:
            self._write(_encode({c: c for c in columns}, columns))
        else:
            header = next(csv.reader([path.read_text(encoding="utf-8").split("\n", 1)[0]]))
            if tuple(header) != columns:
                self._fh.close()
                raise CsvFormatError(
                    f"{path}: existing header differs from this suite version's columns; use a new --run-id"
                )

    def _write(self, line: str) -> None:
        self._fh.write(line)
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: Mapping[str, object]) -> None:
        unknown = set(row) - set(self.columns)
        if unknown:
            raise KeyError(f"row has columns outside the contract: {sorted(unknown)}")
        status = row.get("status")
        if status not in STATUSES:
            raise ValueError(f"status {status!r} is not one of {STATUSES}")
        self._write(_encode(row, self.columns))

    def close(self) -> None:
        self._fh.close()

    def __enter__(self) -> RowWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
