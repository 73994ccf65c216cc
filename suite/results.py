"""The CSV contract: column order, statuses, and a crash-safe appender/reader.

One row per cell. Rows are appended and flushed (and fsync'd) as each cell ends, so a
killed sweep loses at most the cell in flight. This module is imported inside the
containers: standard library only.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from suite.redact import redact

# The contract (DESIGN.md): these columns, in this order, first.
CONTRACT_COLUMNS: tuple[str, ...] = (
    "run_id",
    "build",
    "device",
    "gpu_name",
    "task",
    "model",
    "model_id",
    "weights",
    "batch_size",
    "mode",
    "dtype",
    "scenario",
    "status",
    "error",
    "iterations",
    "mean_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "std_ms",
    "min_ms",
    "ci95_low_ms",
    "ci95_high_ms",
    "eager_median_ms",
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "compile_s",
    "graph_breaks",
    "recompiles",
    "max_abs_diff",
    "accuracy",
    "peak_mem_mb",
    "params_m",
    "torch_version",
    "torch_git",
    "cuda_version",
    "cudnn_version",
    "triton_version",
    "transformers_version",
    "python_version",
    "driver_version",
    "image",
    "suite_version",
    "started_at",
    "wall_s",
)

# Extra columns the suite adds after the contract (allowed: "more may follow").
EXTRA_COLUMNS: tuple[str, ...] = (
    # warm-up calls that ran (untimed) before the timed ones: an eager cell's eager function's, a
    # compiled cell's compiled function's after its compiling first call; empty unless ok (README)
    "warmup",
    "tolerance",  # accuracy tolerance used for the pass/fail check
    "compile_cache",  # cold (fresh inductor/triton cache per cell) or run (shared)
    "variant",  # "smoke" for a shrunk model; a custom config's base model
    "input_source",  # which image fed the model (URL or file name)
    "cpu_name",  # host CPU model (latency on CPU, launch overhead on GPU)
    "torch_threads",  # torch.get_num_threads() in the worker
    "host_load",  # 1-minute load average as the cell ended (worker included): contention
    "shard",  # "i/n" when the run was sharded, else empty
    "log_file",  # the cell's worker log, relative to the run folder
)

COLUMNS: tuple[str, ...] = CONTRACT_COLUMNS + EXTRA_COLUMNS

STATUSES: tuple[str, ...] = ("ok", "oom", "error", "timeout", "skipped")
# Statuses a resumed run keeps (does not re-run) by default.
DONE_STATUSES: frozenset[str] = frozenset({"ok", "oom"})

# Measurement columns: empty on any status but "ok".
TIMING_COLUMNS: tuple[str, ...] = (
    "iterations",
    "mean_ms",
    "median_ms",
    "p10_ms",
    "p90_ms",
    "std_ms",
    "min_ms",
    "ci95_low_ms",
    "ci95_high_ms",
    "eager_median_ms",
    "speedup",
    "speedup_ci95_low",
    "speedup_ci95_high",
    "compile_s",
    "graph_breaks",
    "recompiles",
    "max_abs_diff",
    "accuracy",
)

# The columns that identify a cell inside one <build>__<device> file (resume key).
KEY_COLUMNS: tuple[str, ...] = (
    "build",
    "device",
    "model",
    "model_id",
    "weights",
    "batch_size",
    "mode",
    "dtype",
    "scenario",
)

_SLUG_RE = re.compile(r"[^a-z0-9.]+")


def slug(text: str) -> str:
    """A file-name-safe lower-case token ("NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3")."""
    return _SLUG_RE.sub("-", text.lower()).strip("-") or "unknown"


def raw_csv_name(build: str, device: str, shard: str = "") -> str:
    """`<build>__<device>.csv`, plus `__shard-i-of-n` for a sharded run."""
    name = f"{slug(build)}__{slug(device)}"
    if shard:
        i, n = shard.split("/")
        name += f"__shard-{i}-of-{n}"
    return name + ".csv"


def format_value(value: object) -> str:
    """Plain text for a CSV cell: empty for None/NaN, short floats, one-line strings."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ""
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return one_line(str(value))


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a reason never breaks the row; cap its length. Secrets are
    redacted first (suite.redact), so a cut can never leave half a token behind."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def key_of(row: Mapping[str, object]) -> tuple[str, ...]:
    """The resume key of a row (or of a cell's row-to-be), as strings."""
    return tuple(format_value(row.get(col)) for col in KEY_COLUMNS)


@dataclass
class ReadResult:
    """Rows read from a raw CSV, plus what had to be set aside and why."""

    rows: list[dict[str, str]]
    lines: list[int] = field(default_factory=list)  # line number of each row, for messages
    repaired: int = 0  # partial trailing rows cut off (crash mid-write)
    skipped: int = 0  # malformed rows not returned
    problems: tuple[str, ...] = ()


class CsvFormatError(ValueError):
    """A raw CSV that does not follow the contract (header or rows)."""


def read_rows(path: Path) -> ReadResult:
    """Read a raw CSV written by `RowWriter`, tolerating one torn final line."""
    text = path.read_text(encoding="utf-8")
    if not text.strip():
        return ReadResult(rows=[])
    lines = text.splitlines(keepends=True)
    try:
        header = next(csv.reader([lines[0]]))
    except csv.Error as exc:  # a NUL byte (Python 3.10), a field over the size limit
        raise CsvFormatError(f"{path}:1: unreadable header ({exc})") from None
    missing = [c for c in CONTRACT_COLUMNS if c not in header]
    if missing:
        raise CsvFormatError(f"{path}: header lacks column(s) {', '.join(missing)}")
    rows: list[dict[str, str]] = []
    row_lines: list[int] = []
    problems: list[str] = []
    repaired = skipped = 0
    for lineno, line in enumerate(lines[1:], start=2):
        is_last = lineno == len(lines)
        if is_last and not line.endswith("\n"):
            repaired += 1
            problems.append(f"{path}:{lineno}: partial last row (writer killed mid-write)")
            continue
        try:
            values = next(csv.reader([line]), [])
        except csv.Error as exc:
            skipped += 1
            problems.append(f"{path}:{lineno}: unreadable row ({exc})")
            continue
        if not values:
            continue
        if len(values) != len(header):
            skipped += 1
            problems.append(f"{path}:{lineno}: {len(values)} fields, header has {len(header)}")
            continue
        row = dict(zip(header, values, strict=False))
        if row["status"] not in STATUSES:
            skipped += 1
            problems.append(f"{path}:{lineno}: unknown status {row['status']!r}")
            continue
        rows.append(row)
        row_lines.append(lineno)
    return ReadResult(
        rows=rows, lines=row_lines, repaired=repaired, skipped=skipped, problems=tuple(problems)
    )


def _encode(row: Mapping[str, object], columns: Iterable[str]) -> str:
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerow([format_value(row.get(c)) for c in columns])
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
