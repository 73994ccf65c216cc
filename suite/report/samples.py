"""The per-call samples on the host: the JSON Lines files beside raw CSVs
(suite.results.samples) read into one long table (a row per timed call), written as Parquet by
`merge` (`tables/samples.parquet`), a row's median recomputed from them, and runs pooled.

Columns of the table: the resume key's columns (suite.results.KEY_COLUMNS, as the CSV writes
them), `run_id`, `process` (0: the cold one), `cold`, `series` (eager | compiled), `call` (its
index within the process) and `ms`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from suite.errors import UsageError
from suite.results import KEY_COLUMNS, format_value
from suite.results import samples as samples_file
from suite.stats import median, median_ci

CALL_COLUMNS: tuple[str, ...] = (*KEY_COLUMNS, "run_id", "process", "cold", "series", "call", "ms")
PARQUET = "samples.parquet"


def read_beside(csvs: Sequence[Path]) -> pd.DataFrame:
    """Every call in the samples files beside `csvs` (a CSV without one contributes nothing).
    A malformed file: UsageError naming the file and the line."""
    records: list[tuple[object, ...]] = []
    for csv in csvs:
        path = samples_file.samples_path(csv)
        if not path.is_file():
            continue
        try:
            lines = samples_file.read(path)
        except samples_file.SamplesError as exc:
            raise UsageError(str(path), str(exc).removeprefix(f"{path}:").strip()) from None
        for one in lines:
            head = (*one.key, one.run_id, one.process, one.cold, one.series)
            records += [(*head, i, ms) for i, ms in enumerate(one.ms)]
    frame = pd.DataFrame.from_records(records, columns=list(CALL_COLUMNS))
    return frame.astype({"process": "int64", "cold": "bool", "call": "int64", "ms": "float64"})


def write_parquet(frame: pd.DataFrame, path: Path) -> Path:
    """The calls as one Parquet file (pyarrow)."""
    frame.to_parquet(path, engine="pyarrow", index=False)
    return path


def read_parquet(path: Path) -> pd.DataFrame:
    return pd.read_parquet(path, engine="pyarrow")


def row_series(row: dict[str, object]) -> str:
    """The series a CSV row's `median_ms` is of: the compiled function's on a compiled row."""
    return "eager" if row.get("mode") == "eager" else "compiled"


@dataclass(frozen=True)
class Recomputed:
    """A row's median recomputed from its samples (all processes pooled), beside the CSV's."""

    key: tuple[str, ...]
    run_id: str
    calls: int
    median_ms: float
    ci95_low_ms: float
    ci95_high_ms: float
    csv_median_ms: float | None

    def __post_init__(self) -> None:
        if self.calls < 1:
            raise ValueError("a recomputed median needs at least one call")

    @property
    def agrees(self) -> bool:
        """The CSV's median is the samples' (to the CSV's 6 significant digits)."""
        if self.csv_median_ms is None:
            return False
        return abs(self.median_ms - self.csv_median_ms) <= 1e-5 * max(abs(self.csv_median_ms), 1e-9)


def recompute(frame: pd.DataFrame, rows: pd.DataFrame) -> list[Recomputed]:
    """Each CSV row's median (its own series, every process pooled) recomputed from the calls."""
    out: list[Recomputed] = []
    if frame.empty or rows.empty:
        return out
    groups = {
        key: grp["ms"].to_list()
        for key, grp in frame.groupby([*KEY_COLUMNS, "run_id", "series"], sort=False, dropna=False)
    }
    for row in rows.to_dict("records"):
        key = tuple(format_value(row.get(c)) for c in KEY_COLUMNS)
        run_id = format_value(row.get("run_id"))
        ms = groups.get((*key, run_id, row_series(row)))
        if not ms:
            continue
        lo, hi = median_ci(ms)
        csv_median = row.get("median_ms")
        number = (
            float(csv_median) if isinstance(csv_median, (int, float)) and csv_median == csv_median else None
        )
        out.append(Recomputed(key, run_id, len(ms), median(ms), lo, hi, number))
    return out


def pooled(frames: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """Two (or more) runs' calls as one table: each run's processes stay apart (a process is
    named by its run and number), so a statistic over processes sees them all."""
    if not frames:
        raise ValueError("pooled needs at least one table of calls")
    return pd.concat(list(frames), ignore_index=True)


def report_line(found: Sequence[Recomputed]) -> str:
    """One line for merge: how many rows' medians were recomputed, and whether they agree."""
    if not found:
        return "samples: none beside the raw CSVs (a run from before samples were kept, or nothing ok)"
    bad = [r for r in found if not r.agrees]
    calls = sum(r.calls for r in found)
    verdict = "all agree with the CSV" if not bad else f"{len(bad)} differ from the CSV"
    return f"samples: {len(found)} row(s)' medians recomputed from {calls} call(s): {verdict}"
