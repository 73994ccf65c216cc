"""What the two history stores share (suite.history.store opens one): the merge rule by row key
and digest, the view over every known column, the store's interface, its one-line problems."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from suite.errors import UsageError
from suite.history.cache import ChangeCache
from suite.history.changes import Rule
from suite.history.schema import (
    SCHEMA_VERSION,
    column_names,
    columns,
)
from suite.results import OK

if TYPE_CHECKING:  # a reader of the store needs none of the CSV reader's imports
    from suite.history.ingest import Night


DEFAULT_STORE = Path("results") / "history.duckdb"


META = "history_meta"


VIEW = "history"


MANIFEST = "_history.json"


@dataclass(frozen=True)
class NightResult:
    """What one ingest did to one night."""

    night: str  # its label
    added: int
    replaced: int
    unchanged: int

    @property
    def line(self) -> str:
        return (
            f"{self.night}: {self.added} row(s) added, {self.replaced} replaced, {self.unchanged} unchanged"
        )


def _rank(status: str, started_at: str, incoming: bool) -> tuple[bool, str, bool]:
    """The resume rule (suite.results.one_per_cell): ok beats failed, then the later start, then
    the row read last (the incoming one)."""
    return status == OK, started_at or "", incoming


def plan_merge(
    stored: dict[str, tuple[str, str, str]], incoming: pa.Table
) -> tuple[list[int], list[str], int]:
    """Which incoming rows to write (indices), which stored keys they replace, and how many are
    unchanged. `stored`: row_key -> (row_digest, status, started_at)."""
    write, replace, unchanged = [], [], 0
    keys = incoming.column("row_key").to_pylist()
    digests = incoming.column("row_digest").to_pylist()
    statuses = incoming.column("status").to_pylist()
    starts = incoming.column("started_at").to_pylist()
    for i, key in enumerate(keys):
        old = stored.get(key)
        if old is None:
            write.append(i)
        elif old[0] == digests[i]:
            unchanged += 1
        elif _rank(statuses[i], starts[i], True) > _rank(old[1], old[2], False):
            write.append(i)
            replace.append(key)
        else:
            unchanged += 1  # the stored row is the one the rule keeps
    return write, replace, unchanged


def view_sql(present: Sequence[str]) -> str:
    """The `history` view over `rows`: every current column, NULL where the store lacks one, and
    the columns a newer suite wrote, after them."""
    have = set(present)
    parts = [f'"{c.name}"' if c.name in have else f'NULL::{c.type} AS "{c.name}"' for c in columns()]
    parts += [f'"{name}"' for name in present if name not in set(column_names())]
    return f"CREATE OR REPLACE TEMP VIEW {VIEW} AS SELECT {', '.join(parts)} FROM rows"


class Store(ABC):
    """A history; `connect()` for reading (the view `history`), `ingest()` for writing."""

    url: str

    @abstractmethod
    def connect(self) -> duckdb.DuckDBPyConnection: ...

    @abstractmethod
    def ingest(self, nights: Sequence[Night]) -> list[NightResult]: ...

    @abstractmethod
    def version(self) -> int: ...

    @abstractmethod
    def _stored_changes(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]: ...

    @abstractmethod
    def _write_changes(self, entries: pa.Table) -> None: ...

    def change_cache(self, con: duckdb.DuckDBPyConnection, rule: Rule) -> ChangeCache:
        """The change points the store keeps (suite.history.cache), for `rule`; `con`: a
        connection of `connect()`."""
        return ChangeCache(rule, self._stored_changes(con))

    def keep_changes(self, cache: ChangeCache) -> bool:
        """Keep the change points `cache` found (one entry per series: those of the series they
        replace go); False where the store cannot be written now (another writer holds it, a
        read-only copy): the next reader finds them again."""
        entries = cache.table()
        if not entries.num_rows:
            return True
        try:
            self._write_changes(entries)
        except (UsageError, duckdb.Error, OSError, pa.ArrowException):
            return False
        return True

    @abstractmethod
    def migrate(self) -> int:
        """Bring the store to this suite's schema; the version it was at."""

    @abstractmethod
    def confirmation_records(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        """The confirmations kept (suite.history.confirm): change id -> its JSON; `con`: a
        connection of `connect()`."""

    @abstractmethod
    def keep_confirmation_record(self, change_id: str, text: str) -> None:
        """Keep a confirmation (one per change id: a later one replaces it); UsageError (one
        line) where the store cannot be written."""


CONFIRM_TABLE = "history_confirmations"


CONFIRM_FILE = "_confirmations.parquet"


CONFIRM_SCHEMA = pa.schema([("change_id", pa.string()), ("record", pa.string())])


def refuse_newer(where: str, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise UsageError(
            where,
            f"a history of schema version {version}, made by a newer suite (this one reads up to "
            f"{SCHEMA_VERSION}): update the suite",
        )


def by_run(nights: Sequence[Night]) -> list[list[Night]]:
    """The nights by run (`run_id`), each run's in their order, the runs in order of their first
    night (read_run gives nights in date order: a backfill is written night by night)."""
    runs: dict[str, list[Night]] = {}
    for night in nights:
        runs.setdefault(night.run_id, []).append(night)
    return list(runs.values())


def first_line(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def duck_problem(exc: BaseException) -> str:
    text = first_line(exc)
    if "lock" in text.lower():
        return "in use by another process (one writer at a time): wait for it, or use another --store"
    return f"cannot open ({text})"


def moved_night(stored: object) -> str:
    return (
        f"already stored as the night of {stored}: ingest it with `--date {stored}` (a night keeps one date)"
    )
