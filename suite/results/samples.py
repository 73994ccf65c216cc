"""The per-call samples beside a raw CSV: every timed call's milliseconds, grouped by process.

`raw/<build>__<device>.csv` gets `raw/<build>__<device>.samples.jsonl` beside it: one JSON
line per (row, process, series), appended and fsync'd as the cell's row is, so a statistic can
be recomputed (the row's median from its samples) and two runs pooled. JSON Lines because the
containers pin no columnar library (no pyarrow there); on the host `merge` reads these files and
writes them as one Parquet table (suite.report.samples). The CSV stays the contract: a run with
no samples file is still a whole run.

A line: {"key": {resume key column: value as the CSV writes it}, "run_id": ..., "process": 0,
"cold": true, "series": "compiled" | "eager", "ms": [...]}. `series`: the row's own function is
`compiled` on a compiled row and `eager` on an eager row; a compiled row's paired eager calls
are `eager` too (sample i of both was taken in the same round). Imported inside the containers:
standard library only.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.results.columns import KEY_COLUMNS
from suite.results.rows import format_value

SUFFIX = ".samples.jsonl"
SERIES: tuple[str, ...] = ("eager", "compiled")
MAX_LINE_BYTES = 64 * 1024 * 1024  # a line beyond this is not one the suite wrote


def samples_path(csv: Path) -> Path:
    """The samples file beside a raw CSV."""
    name = csv.name[: -len(".csv")] if csv.name.endswith(".csv") else csv.name
    return csv.with_name(name + SUFFIX)


def csv_of(samples: Path) -> Path:
    """The raw CSV a samples file belongs to."""
    return samples.with_name(samples.name[: -len(SUFFIX)] + ".csv")


class SamplesError(ValueError):
    """A samples line that does not follow the format: the file and line say where."""


@dataclass(frozen=True)
class ProcessSamples:
    """One process's timed calls of one series of one row (milliseconds, in call order)."""

    key: tuple[str, ...]  # the row's resume key (suite.results.key_of)
    run_id: str
    process: int  # 0: the cell's first (cold) process; 1..k-1 the warm ones
    cold: bool
    series: str
    ms: tuple[float, ...]

    def __post_init__(self) -> None:
        if len(self.key) != len(KEY_COLUMNS) or not all(isinstance(k, str) for k in self.key):
            raise SamplesError(f"key: needs {len(KEY_COLUMNS)} strings ({', '.join(KEY_COLUMNS)})")
        if isinstance(self.process, bool) or not isinstance(self.process, int) or self.process < 0:
            raise SamplesError(f"process: must be an integer >= 0, got {self.process!r}")
        if not isinstance(self.cold, bool):
            raise SamplesError(f"cold: must be true or false, got {self.cold!r}")
        if self.series not in SERIES:
            raise SamplesError(f"series: {self.series!r} is not one of: {', '.join(SERIES)}")
        if not self.ms:
            raise SamplesError("ms: no samples")
        for x in self.ms:
            if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x) or x <= 0:
                raise SamplesError(f"ms: every sample must be a finite number > 0, got {x!r}")

    def to_json(self) -> str:
        return json.dumps(
            {
                "key": dict(zip(KEY_COLUMNS, self.key, strict=True)),
                "run_id": self.run_id,
                "process": self.process,
                "cold": self.cold,
                "series": self.series,
                "ms": [round(float(x), 6) for x in self.ms],
            },
            separators=(",", ":"),
        )

    @staticmethod
    def from_json(line: str) -> ProcessSamples:
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise SamplesError(f"not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise SamplesError("not a JSON object")
        key = obj.get("key")
        if not isinstance(key, dict) or set(key) != set(KEY_COLUMNS):
            raise SamplesError(f"key: needs exactly {', '.join(KEY_COLUMNS)}")
        ms = obj.get("ms")
        if not isinstance(ms, list):
            raise SamplesError("ms: must be a list of numbers")
        return ProcessSamples(
            key=tuple(str(key[c]) for c in KEY_COLUMNS),
            run_id=str(obj.get("run_id", "")),
            process=obj.get("process"),  # type: ignore[arg-type]  # checked in __post_init__
            cold=obj.get("cold"),  # type: ignore[arg-type]
            series=str(obj.get("series")),
            ms=tuple(ms),
        )


def of_row(
    row: Mapping[str, object], process: int, cold: bool, series: Mapping[str, Sequence[float]]
) -> list[ProcessSamples]:
    """A row's samples from one process (`series`: name -> milliseconds), the empty ones left out."""
    key = tuple(format_value(row.get(c)) for c in KEY_COLUMNS)
    run_id = format_value(row.get("run_id"))
    return [
        ProcessSamples(key, run_id, process, cold, name, tuple(float(x) for x in ms))
        for name, ms in series.items()
        if ms
    ]


def append(path: Path, samples: Iterable[ProcessSamples]) -> None:
    """Append lines, flushed and fsync'd (a killed run loses at most the cell in flight)."""
    lines = "".join(s.to_json() + "\n" for s in samples)
    if not lines:
        return
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(lines)
        fh.flush()
        os.fsync(fh.fileno())


def read(path: Path) -> list[ProcessSamples]:
    """Every line of a samples file, strictly; a torn last line (a crash mid-write) is cut off.
    SamplesError names the file and the line of anything else that is wrong."""
    text = path.read_text(encoding="utf-8")
    lines = text.split("\n")
    torn = lines.pop() if lines else ""  # text after the last newline: a torn line, or ""
    del torn
    out = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        if len(line) > MAX_LINE_BYTES:
            raise SamplesError(f"{path}:{number}: line longer than {MAX_LINE_BYTES} bytes")
        try:
            out.append(ProcessSamples.from_json(line))
        except SamplesError as exc:
            raise SamplesError(f"{path}:{number}: {exc}") from None
    return out
