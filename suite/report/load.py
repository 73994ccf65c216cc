"""Read raw CSVs from any number of runs into one typed table, and say what was set aside.

Host side only (pandas). The CSV contract itself (columns, statuses, torn last rows) is
checked by `suite.results.read_rows`; this module adds what the tables need on top:
typed numbers, required fields, one row per cell. Nothing is dropped silently: every
file or row set aside yields a one-line reason naming the file, line and field.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from suite.errors import UsageError
from suite.results import (
    ALWAYS,
    CELL_COLUMNS,
    NONFINITE_COLUMNS,
    NONFINITE_WORDS,
    OK,
    TABLE,
    TEXT,
    WHEN_OK,
    CsvFormatError,
    one_per_cell,
    read_rows,
)

# The rules of the contract's columns (suite.results.TABLE), and of the extras tables read: the
# measured ones (compile-cost figures) and those in a cell's key (`dynamic`); an older file may
# lack them (they are then empty). The other extras are not checked: no table reads one that a
# malformed value could corrupt.
MEASURED_EXTRAS: tuple[str, ...] = tuple(c.name for c in TABLE if not c.contract and (c.timing or c.key))
_CHECKED = [c for c in TABLE if c.contract or c.name in MEASURED_EXTRAS]
NUMERIC_COLUMNS: tuple[str, ...] = tuple(c.name for c in _CHECKED if c.kind != TEXT)
# Durations and ratios: a zero or negative value can only be a corrupt row.
POSITIVE_COLUMNS: tuple[str, ...] = tuple(c.name for c in _CHECKED if c.positive)
REQUIRED_TEXT: tuple[str, ...] = tuple(c.name for c in _CHECKED if c.required == ALWAYS and c.kind == TEXT)
REQUIRED_WHEN_OK: tuple[str, ...] = tuple(c.name for c in _CHECKED if c.required == WHEN_OK)
CHOICES: dict[str, tuple[str, ...]] = {c.name: c.choices for c in _CHECKED if c.choices}


@dataclass(frozen=True)
class Loaded:
    """The rows that can be used (one per cell), and an account of everything else."""

    frame: pd.DataFrame
    files: tuple[Path, ...]
    rows_read: int
    skipped: tuple[str, ...]  # one line per file or row set aside, naming where and why
    skipped_rows: int
    skipped_files: int
    superseded: tuple[str, ...]  # rows replaced by another row of the same cell
    # with load(..., raw=True): each used row's fields as written (stripped), by its `source`
    raw: dict[str, dict[str, str]] = field(default_factory=dict)

    def report(self) -> list[str]:
        """What was read and what was set aside, one line each (stderr and the index page)."""
        lines = [
            f"read {self.rows_read} row(s) from {len(self.files) - self.skipped_files} file(s)"
            + (f" ({self.skipped_files} more file(s) skipped)" if self.skipped_files else "")
            + "; "
            f"{len(self.frame)} cell(s) used, {self.skipped_rows} row(s) skipped, "
            f"{len(self.superseded)} row(s) superseded by another row of the same cell"
        ]
        lines += [f"skipped: {p}" for p in self.skipped]
        lines += [f"superseded: {p}" for p in self.superseded]
        return lines


def find_csvs(inputs: Sequence[Path]) -> list[Path]:
    """Raw CSVs of run folders (`RUN/raw/*.csv`) and CSV files given directly.

    Only `raw/` is read: the rows a resumed run set aside (`RUN/superseded/`) are not results.
    """
    if not inputs:
        raise UsageError("", "give at least one run folder or raw CSV")
    found: list[Path] = []
    for path in inputs:
        if path.is_file():
            found.append(path)
        elif path.is_dir():
            raw = path / "raw"
            files = sorted(raw.glob("*.csv"))
            if not files:
                raise UsageError(str(path), f"no raw CSVs (looked for {raw}/*.csv)")
            found.extend(files)
        else:
            raise UsageError(str(path), "no such file or folder")
    return list(dict.fromkeys(found))


def default_out(inputs: Sequence[Path]) -> Path | None:
    """The one run folder all inputs belong to (RUN or RUN/raw/x.csv), else None."""
    runs = set()
    for path in inputs:
        if path.is_dir():
            runs.add(path.resolve())
        elif path.parent.name == "raw":
            runs.add(path.parent.parent.resolve())
        else:
            return None
    return runs.pop() if len(runs) == 1 else None


@dataclass
class _Read:
    rows: list[dict[str, str]] = field(default_factory=list)
    seen: int = 0  # data rows met, usable or not
    skipped_files: int = 0
    problems: list[str] = field(default_factory=list)

    def skip_file(self, path: Path, why: str) -> None:
        self.skipped_files += 1
        self.problems.append(f"{path}: {why} (file skipped)")


def _read_files(files: Sequence[Path]) -> _Read:
    out = _Read()
    for path in files:
        try:
            result = read_rows(path)
        except CsvFormatError as exc:
            out.skip_file(path, str(exc).removeprefix(f"{path}: "))
            continue
        except UnicodeDecodeError:
            out.skip_file(path, "not UTF-8 text")
            continue
        except OSError as exc:
            out.skip_file(path, f"cannot read ({exc.strerror})")
            continue
        if not result.rows and not result.problems and not path.read_text(encoding="utf-8").strip():
            out.skip_file(path, "empty file, not even a header")
            continue
        out.seen += len(result.rows) + result.skipped + result.repaired
        out.problems.extend(result.problems)
        for row, line in zip(result.rows, result.lines, strict=True):
            out.rows.append({**{k: v.strip() for k, v in row.items()}, "source": f"{path}:{line}"})
    return out


def _row_problems(frame: pd.DataFrame) -> pd.Series:
    """The first problem of each row ("" if none): `row_problems` on the frame's columns."""
    problem = pd.Series("", index=frame.index, dtype=object)
    for i, text in row_problems(lambda col: frame[col].to_numpy(), len(frame)).items():
        problem.iloc[i] = text
    return problem


def row_problems(
    column: Callable[[str], np.ndarray], n: int, parsed: Callable[[str], np.ndarray] | None = None
) -> dict[int, str]:
    """The first problem of each row that has one (its position: the message), checked column by
    column in this order: required text, numbers (then > 0), the batch size, required on ok
    rows, choices; `column(name)`: that column's values as written (stripped), n of them;
    `parsed(name)`: a number column as `parse_numbers` gives it, where the caller has parsed it
    already (else every number column is parsed here, in one call). Each check is one
    vectorized mask (a night of the full profile on six builds and GPUs is read in
    milliseconds, suite.history ingests a year of them); the messages are made for the flagged
    rows alone."""
    checks: list[tuple[np.ndarray, Callable[[int], str]]] = []
    for col in REQUIRED_TEXT:
        checks.append((column(col) == "", lambda i, c=col: f"field {c}: empty"))
    if parsed is None:
        raw = np.empty((n, len(NUMERIC_COLUMNS)), dtype=object)
        for j, col in enumerate(NUMERIC_COLUMNS):
            raw[:, j] = column(col)
        number = parse_numbers(raw)
        parsed = {col: number[:, j] for j, col in enumerate(NUMERIC_COLUMNS)}.__getitem__
    for col in NUMERIC_COLUMNS:
        text, value = column(col), parsed(col)
        bad = (text != "") & ~np.isfinite(value)
        if col in NONFINITE_COLUMNS:  # measured so (suite.results.format_cell): `nan`, `inf`
            bad &= ~np.isin(text, NONFINITE_WORDS)
        checks.append((bad, lambda i, c=col, t=text: f"field {c}: {t[i]!r} is not a number"))
        if col in POSITIVE_COLUMNS:
            with np.errstate(invalid="ignore"):
                low = (text != "") & (value <= 0)
            checks.append((low, lambda i, c=col, t=text: f"field {c}: {t[i]} is not > 0"))
    batch = parsed("batch_size")
    with np.errstate(invalid="ignore"):
        bad_batch = np.isnan(batch) | (batch < 1) | (batch != np.round(batch))
    checks.append((bad_batch, lambda i: "field batch_size: not a positive integer"))
    ok = column("status") == OK
    for col in REQUIRED_WHEN_OK:
        checks.append((ok & (column(col) == ""), lambda i, c=col: f"field {c}: empty on an ok row"))
    for col, choices in CHOICES.items():
        values = column(col)
        checks.append(
            (
                ~np.isin(values, ("", *choices)),
                lambda i, c=col, v=values, ch=choices: f"field {c}: {v[i]!r} is not one of {ch} or empty",
            )
        )
    if not checks or n == 0:
        return {}
    flagged = np.vstack([mask.astype(bool) for mask, _ in checks])
    rows = np.flatnonzero(flagged.any(axis=0))
    first = flagged[:, rows].argmax(axis=0)
    return {int(i): checks[k][1](i) for i, k in zip(rows, first, strict=True)}


def _typed(frame: pd.DataFrame) -> pd.DataFrame:
    """The number columns as floats (parsed in one call), the batch size as an int."""
    numbers = parse_numbers(frame[list(NUMERIC_COLUMNS)].to_numpy(dtype=object))
    typed = pd.DataFrame(numbers, columns=list(NUMERIC_COLUMNS), index=frame.index)
    out = pd.concat([frame.drop(columns=list(NUMERIC_COLUMNS)), typed], axis=1)[list(frame.columns)]
    out["batch_size"] = out["batch_size"].astype(int)
    return out


def parse_numbers(raw: np.ndarray) -> np.ndarray:
    """pandas' number parsing (`to_numeric`, NaN where not a number) of a 2-D block of strings;
    an empty string is NaN without being parsed (most of a row's columns are empty)."""
    flat = raw.ravel(order="F")
    given = flat != ""
    number = np.full(flat.shape, np.nan)
    if given.any():  # an object array, not a Series: no string dtype made on the way
        number[given] = np.asarray(pd.to_numeric(flat[given], errors="coerce"), dtype=float)
    return number.reshape(raw.shape, order="F")


# One row per cell and allocator: a cell run under `steady` and under `system` keeps both rows (the
# report's setups differ in it, suite.report.study.Setup; the both-allocator table, report.tables.allocators).
DEDUPE_COLUMNS: tuple[str, ...] = (*CELL_COLUMNS, "malloc")


def _dedupe(frame: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """One row per cell (and allocator), by the rule resume applies too (suite.results.one_per_cell)."""
    if not frame.duplicated(subset=list(DEDUPE_COLUMNS)).any():
        return frame.reset_index(drop=True), []  # no cell twice: nothing to choose
    # the columns the rule and the notes read (a whole row each would cost more than the rest)
    records = frame[list(dict.fromkeys([*DEDUPE_COLUMNS, "status", "started_at", "source"]))].to_dict(
        "records"
    )
    kept, dropped = one_per_cell(records, DEDUPE_COLUMNS)
    notes = []
    for i, winner in dropped:
        row = records[i]
        notes.append(
            f"{row['source']}: {row['model']} bs={row['batch_size']} {row['mode']} on {row['build']} "
            f"({row['status']}), replaced by {records[winner]['source']}"
        )
    return frame.iloc[kept].reset_index(drop=True), notes


def _night_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's torch nightly: its `nightly_date`, else the date in a `.devYYYYMMDD` torch
    version (rows written before the column); "" for a release."""
    dated = frame["nightly_date"].astype(str) if "nightly_date" in frame else pd.Series("", frame.index)
    dev = frame["torch_version"].astype(str).str.extract(r"\.dev(\d{8})", expand=False).fillna("")
    return dated.where(dated != "", dev)


def mixed_nights(frame: pd.DataFrame) -> str:
    """One line when one run's rows of one build carry two torch nightlies (a re-run that
    resolved another night: its rows cannot be one night's tables), else ""."""
    nights = _night_of(frame)
    run = frame["run_id"] if "run_id" in frame else pd.Series("", frame.index)
    dated = frame.assign(_night=nights, run_id=run)[nights != ""]
    for (run, build), rows in dated.groupby(["run_id", "build"], sort=True):
        found = sorted(set(rows["_night"]))
        if len(found) > 1:
            return (
                f"run {run}, build {build}: rows of {len(found)} torch nightlies ({', '.join(found)}); "
                "a run measures one night: re-run it with its own night (manifest.json), or give "
                "the other night a new run id"
            )
    return ""


def load(inputs: Sequence[Path], raw: bool = False) -> Loaded:
    """Everything usable from the inputs; UsageError (exit 2) when nothing is. `raw`: keep each
    used row's fields as written too (the history stores them as they were, suite.history)."""
    files = find_csvs(inputs)
    read = _read_files(files)
    rows, seen, problems = read.rows, read.seen, read.problems
    skipped_rows = seen - len(rows)
    frame = pd.DataFrame(rows, dtype=object).fillna("") if rows else pd.DataFrame()
    if rows:
        for col in (*DEDUPE_COLUMNS, *MEASURED_EXTRAS):  # extras an older file may lack
            if col not in frame.columns:
                frame[col] = ""
        problem = _row_problems(frame)
        bad = problem != ""
        problems.extend(
            f"{src}: {text}" for src, text in zip(frame["source"][bad], problem[bad], strict=True)
        )
        skipped_rows += int(bad.sum())
        frame = frame[~bad]
    if frame.empty:
        total = len(problems)
        detail = (
            f"{problems[0]}" + (f" (and {total - 1} more problem(s))" if total > 1 else "")
            if problems
            else ""
        )
        raise UsageError(
            "",
            f"nothing usable to merge in {len(files)} file(s), {seen} row(s)"
            + (f": {detail}" if detail else ""),
        )
    mixed = mixed_nights(frame)
    if mixed:
        raise UsageError("", mixed)
    frame, superseded = _dedupe(_typed(frame))
    used = set(frame["source"]) if raw else set()
    return Loaded(
        frame=frame,
        files=tuple(files),
        rows_read=seen,
        skipped=tuple(problems),
        skipped_rows=skipped_rows,
        skipped_files=read.skipped_files,
        superseded=tuple(superseded),
        raw={r["source"]: r for r in rows if r["source"] in used},
    )
