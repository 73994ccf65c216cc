"""A run folder (or raw CSVs) into nights: strict, so a history never holds half a run.

The raw CSVs are read and checked by the merge's own reader (`suite.report.load`: the contract's
columns, statuses, numbers, one row per cell), but where the merge sets a bad row or file aside
and goes on, ingest refuses the whole input in one line naming the file, line and field: a row
that is not in the history must be missing for a reason the user saw. The one exception, with
`allow_partial`, is a torn last row (a runner killed mid-write, e.g. a shard at its time cap),
which is not a result. Each remaining row is typed by the contract's column table; columns this
suite does not know go, as they were, into the row's `extra` JSON (the rows' grid and their
typing: suite.history.rows).
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa

from suite.errors import UsageError
from suite.history.rows import CELL_AT, NIGHT_AT, Header, Rows, block, typed
from suite.history.schema import column_names
from suite.report.load import find_csvs, load, row_problems
from suite.report.study import build_kinds
from suite.results import CELL_COLUMNS, CsvFormatError, read_rows

PARTIAL = "partial last row"
_LINE = re.compile(r"(\d+)\.(\d+)")
_DEV_DATE = re.compile(r"\.dev(\d{8})")
_RUN_ID_DATE = re.compile(r"(20\d\d)-?(\d\d)-?(\d\d)")
_STATED_DATE = re.compile(r"^(\d{4}-?\d\d-?\d\d)$")


@dataclass(frozen=True)
class Night:
    """One run of one build on one GPU, and its rows as an Arrow table in the store's columns."""

    night_id: str
    run_id: str
    build: str
    device: str
    gpu_name: str
    gpu: str
    date: date
    build_kind: str
    build_line: str
    torch_version: str
    torch_git: str
    rows: pa.Table

    def __post_init__(self) -> None:
        if not (self.run_id and self.build and self.device):
            raise ValueError("a night needs its run id, build and device")

    @property
    def label(self) -> str:
        return f"{self.run_id} {self.build} on {self.gpu} ({self.date:%Y-%m-%d})"


@dataclass(frozen=True)
class RunRead:
    nights: tuple[Night, ...]
    notes: tuple[str, ...]  # what was accepted but is worth a line: superseded rows, a torn tail


def night_id(run_id: str, build: str, device: str, gpu_name: str) -> str:
    return hashlib.sha256("\0".join((run_id, build, device, gpu_name)).encode()).hexdigest()[:16]


def gpu_label(device: str, gpu_name: str) -> str:
    """The history's name of where a night ran: the GPU's own name, "cpu: <model>" on a CPU."""
    return gpu_name if device == "cuda" else f"{device}: {gpu_name}"


def build_line(kind: str, torch_version: str) -> str:
    """ "stable" for the stable build; else its kind and torch's major.minor ("nightly 2.15"): a
    nightly moving to the next line starts a new series on the pages."""
    if kind == "stable":
        return "stable"
    match = _LINE.match(torch_version or "")
    return f"{kind} {match.group(1)}.{match.group(2)}" if match else kind


def torch_date(torch_version: str, stated: str = "") -> date | None:
    """A nightly's date: as the run stated it (a column of NIGHTLY_DATE_COLUMNS: `20261203` or
    `2026-12-03`), else from its version (`2.15.0.dev20261203+cu130`); None for a release."""
    for text, pattern in ((stated.strip(), _STATED_DATE), (torch_version or "", _DEV_DATE)):
        match = pattern.search(text) if text else None
        if match:
            try:
                return datetime.strptime(match.group(1).replace("-", ""), "%Y%m%d").date()
            except ValueError:
                continue
    return None


def _night_date(started: Sequence[str], run_id: str, override: date | None, where: str) -> date:
    if override is not None:
        return override
    stamps = []
    for text in started:
        if text:
            try:
                stamp = datetime.fromisoformat(text.replace("Z", "+00:00"))
            except ValueError:
                raise UsageError(where, f"field started_at: {text!r} is not an ISO date and time") from None
            stamps.append(stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc))
    if stamps:
        return min(stamps).astimezone(timezone.utc).date()
    match = _RUN_ID_DATE.search(run_id)
    if match:
        try:
            return date(int(match.group(1)), int(match.group(2)), int(match.group(3)))
        except ValueError:
            pass
    raise UsageError(where, "no started_at in any row and no date in the run id: give the night's --date")


def _most_common(values: Sequence[str]) -> str:
    counts = Counter(v for v in values if v)
    return counts.most_common(1)[0][0] if counts else ""


def _read_clean(files: Sequence[Path]) -> Rows | None:
    """Every row of the files, when the merge's reader would take every one of them as it is:
    each file read cleanly, no row with a problem, no cell twice; else None (the merge's reader
    then gives its account: the problems, the rows superseded)."""
    blocks = []
    for path in files:
        try:
            result = read_rows(path, as_lists=True)
        except (CsvFormatError, UnicodeDecodeError, OSError):
            return None
        if result.problems or not result.values:
            return None
        values = [[v.strip() for v in row] for row in result.values]
        blocks.append(block(Header(result.header), [f"{path}:{line}" for line in result.lines], values))
    rows = Rows(blocks)
    if row_problems(rows.column, len(rows), rows.number):
        return None
    batch = rows.number("batch_size").astype(int)
    cells = rows.grid[:, CELL_AT].tolist()
    at = CELL_COLUMNS.index("batch_size")
    if len({(*c[:at], int(b), *c[at + 1 :]) for c, b in zip(cells, batch, strict=True)}) < len(rows):
        return None  # a cell twice: the merge's reader picks one and says so
    return rows


def _read_input(path: Path, allow_partial: bool) -> tuple[Rows, list[str]]:
    """A run folder's (or CSV file's) rows as written, each with its file:line, once checked by
    the merge's reader; what was accepted but is worth a line."""
    files = find_csvs([path])
    clean = _read_clean(files)
    if clean is not None:
        return clean, []
    try:
        loaded = load(files, raw=True)
    except UsageError as exc:
        raise UsageError("", f"{str(exc).replace('to merge', 'to ingest')}; nothing was stored") from None
    problems = [p for p in loaded.skipped if not (allow_partial and PARTIAL in p)]
    if problems:
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        raise UsageError("", f"{problems[0]}{more}; nothing was stored")
    notes = [p for p in loaded.skipped if PARTIAL in p] + [f"superseded: {s}" for s in loaded.superseded]
    headers: dict[tuple[str, ...], Header] = {}
    runs: list[tuple[Header, list[str], list[list[str]]]] = []  # rows in order, by runs of one header
    for source in loaded.frame["source"]:
        raw = {k: v for k, v in loaded.raw[source].items() if k != "source"}
        names = tuple(raw)
        header = headers.get(names) or headers.setdefault(names, Header(names))
        if not runs or runs[-1][0] is not header:
            runs.append((header, [], []))
        runs[-1][1].append(source)
        runs[-1][2].append(list(raw.values()))
    if not runs:
        raise UsageError(str(path), "no rows to ingest; nothing was stored")
    return Rows([block(*run) for run in runs]), notes


@dataclass
class _Group:
    """One night's rows as read, from one or more inputs: typed parts and what the night is
    told by (its rows' start times, torch version and commit, where they came from)."""

    parts: list[pa.Table] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    started: list[str] = field(default_factory=list)
    versions: list[str] = field(default_factory=list)
    gits: list[str] = field(default_factory=list)
    nightlies: list[str] = field(default_factory=list)
    run_dir: str = ""


def read_run(
    inputs: Sequence[Path],
    matrix: Path | None = None,
    matrix_explicit: bool = False,
    night_date: date | None = None,
    run_page: str = "",
    allow_partial: bool = False,
    now: datetime | None = None,
) -> RunRead:
    """Every night in the inputs (run folders or raw CSVs); UsageError (one line, exit 2) if any
    file or row is not a clean result, before anything is stored. Each input is read, checked
    and typed in turn (a backfill of many run folders holds their Arrow tables, not their text)."""
    stamp = (now or datetime.now(timezone.utc)).astimezone(timezone.utc).replace(tzinfo=None)
    notes: list[str] = []
    groups: dict[tuple[str, ...], _Group] = {}  # (run_id, build, device, gpu_name): a night
    for path in inputs:  # each its own run: one row per cell within it, as the merge reads a run
        rows, said = _read_input(path, allow_partial)
        notes += said
        run_dir = str(path) if path.is_dir() else ""
        mine: dict[tuple[str, ...], list[int]] = {}  # this input's rows by night, in their order
        for i, key in enumerate(rows.grid[:, NIGHT_AT].tolist()):
            mine.setdefault(tuple(key), []).append(i)
        table = typed(rows, np.array([i for at in mine.values() for i in at], dtype=np.intp))
        stated = rows.stated_nightly()
        start = 0
        for key, at in mine.items():
            group = groups.setdefault(key, _Group())
            group.parts.append(table.slice(start, len(at)))
            group.sources += [rows.sources[i] for i in at]
            group.started += rows.column("started_at")[at].tolist()
            group.versions += rows.column("torch_version")[at].tolist()
            group.gits += rows.column("torch_git")[at].tolist()
            group.nightlies += stated[at].tolist()
            group.run_dir = run_dir
            start += len(at)
    kinds, _ = build_kinds(sorted({key[1] for key in groups}), matrix, matrix_explicit)
    nights = []
    for (run_id, build, device, gpu_name), group in groups.items():
        n = len(group.sources)
        if not run_id:
            raise UsageError(group.sources[0], "field run_id: empty; a night needs its run id")
        day = _night_date(group.started, run_id, night_date, group.sources[0].rsplit(":", 1)[0])
        version = _most_common(group.versions)
        kind = kinds.get(build, "release")
        gpu = gpu_label(device, gpu_name)
        nid = night_id(run_id, build, device, gpu_name)
        night_values = {
            "night_id": pa.array([nid] * n, pa.string()),
            "date": pa.array([day] * n, pa.date32()),
            "build_kind": pa.array([kind] * n, pa.string()),
            "build_line": pa.array([build_line(kind, version)] * n, pa.string()),
            "gpu": pa.array([gpu] * n, pa.string()),
            "run_dir": pa.array([group.run_dir] * n, pa.string()),
            "run_page": pa.array([run_page] * n, pa.string()),
            "ingested_at": pa.array([stamp] * n, pa.timestamp("us")),
            "torch_date": pa.array([torch_date(version, _most_common(group.nightlies))] * n, pa.date32()),
        }
        part = group.parts[0] if len(group.parts) == 1 else pa.concat_tables(group.parts).combine_chunks()
        data = {c: night_values[c] if c in night_values else part.column(c) for c in column_names()}
        nights.append(
            Night(
                night_id=nid,
                run_id=run_id,
                build=build,
                device=device,
                gpu_name=gpu_name,
                gpu=gpu,
                date=day,
                build_kind=kind,
                build_line=build_line(kind, version),
                torch_version=version,
                torch_git=_most_common(group.gits),
                rows=pa.table(data),
            )
        )
    nights.sort(key=lambda n: (n.date, n.gpu, n.build))
    return RunRead(nights=tuple(nights), notes=tuple(notes))
