"""Where the history lives: a DuckDB file (the default, `results/history.duckdb`) or Parquet files
at any fsspec URL (a folder, `file://`, `memory://`, `s3://bucket/prefix`, `hf://datasets/org/name`),
partitioned `rows/gpu=<gpu>/build=<build>/date=<YYYY-MM-DD>/<night>.parquet`, which DuckDB reads
in place. Both give readers one DuckDB connection with the view `history`: every column this
suite knows (`suite.history.schema`), NULL where a store predates one.

Writing merges a night's rows into what is stored, by each row's key and digest: an unchanged row
is not written again, so ingesting a run twice adds nothing; a row of a cell already stored is
replaced only by one the resume rule prefers (`suite.results.one_per_cell`: ok over failed, then
the later start). The DuckDB store writes every night of an ingest in one transaction; the
Parquet store replaces one night's file at a time, each whole (written aside, then moved).
"""

from __future__ import annotations

import io
import json
import os
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import quote

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from suite.errors import UsageError
from suite.history.cache import CACHE_FILE, CACHE_SCHEMA, CACHE_TABLE, ChangeCache
from suite.history.changes import Rule
from suite.history.schema import (
    FORMAT,
    SCHEMA_VERSION,
    column_names,
    columns,
    create_table_sql,
    migrations_from,
    missing_columns,
)
from suite.results import OK, slug

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


def _refuse_newer(where: str, version: int) -> None:
    if version > SCHEMA_VERSION:
        raise UsageError(
            where,
            f"a history of schema version {version}, made by a newer suite (this one reads up to "
            f"{SCHEMA_VERSION}): update the suite",
        )


# --- the DuckDB file ------------------------------------------------------------------------


class DuckDbStore(Store):
    def __init__(self, path: Path) -> None:
        self.path = path
        self.url = str(path)

    @contextmanager
    def _open(self, write: bool) -> Iterator[duckdb.DuckDBPyConnection]:
        con = self._connect(write)
        try:
            yield con
        finally:
            con.close()

    def _connect(self, write: bool) -> duckdb.DuckDBPyConnection:
        if not write and not self.path.exists():
            raise UsageError(
                str(self.path), "no history here yet: `python -m suite history ingest RUN_DIR` makes one"
            )
        if write:
            try:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise UsageError(str(self.path), f"cannot create its folder ({exc.strerror})") from None
        try:
            con = duckdb.connect(str(self.path), read_only=not write)
        except duckdb.IOException as exc:
            raise UsageError(str(self.path), _duck_problem(exc)) from None
        except duckdb.Error as exc:
            raise UsageError(str(self.path), f"not a DuckDB history ({_first(exc)})") from None
        if write:  # a writer on one thread: an ingest's few hundred rows gain nothing from two
            con.execute("SET threads = 1")
        return con

    def _meta(self, con: duckdb.DuckDBPyConnection) -> int | None:
        tables = {r[0] for r in con.execute("SELECT table_name FROM information_schema.tables").fetchall()}
        if not tables:
            return None
        if META not in tables or "rows" not in tables:
            raise UsageError(self.url, f"a DuckDB database, but not a history (no {META} and rows tables)")
        found = con.execute(f"SELECT value FROM {META} WHERE key = 'schema_version'").fetchone()
        if found is None or not str(found[0]).isdigit():
            raise UsageError(self.url, f"{META}: no schema_version")
        return int(found[0])

    def version(self) -> int:
        with self._open(write=False) as con:
            return self._meta(con) or 0

    def _prepare(self, con: duckdb.DuckDBPyConnection) -> None:
        """Create, migrate and add the columns this suite writes: inside the caller's transaction."""
        version = self._meta(con)
        if version is None:
            con.execute(f"CREATE TABLE {META} (key VARCHAR PRIMARY KEY, value VARCHAR)")
            con.execute(f"INSERT INTO {META} VALUES ('format', ?), ('schema_version', ?)", [FORMAT, "0"])
            con.execute(create_table_sql())
            version = SCHEMA_VERSION
        _refuse_newer(self.url, version)
        for migration in migrations_from(version):
            for statement in migration.sql:
                con.execute(statement)
        present = {r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE rows)").fetchall()}
        for col in missing_columns(present):
            con.execute(f'ALTER TABLE rows ADD COLUMN "{col.name}" {col.type}')
        con.execute(f"UPDATE {META} SET value = ? WHERE key = 'schema_version'", [str(SCHEMA_VERSION)])

    def migrate(self) -> int:
        """Bring the store to this suite's schema; the version it was at."""
        with self._open(write=True) as con:
            before = self._meta(con) or SCHEMA_VERSION
            con.begin()
            try:
                self._prepare(con)
                con.commit()
            except BaseException:
                con.rollback()
                raise
        return before

    def connect(self) -> duckdb.DuckDBPyConnection:
        con = self._connect(write=False)  # one open where the store is at this suite's version
        try:
            version = self._meta(con) or 0
        except BaseException:
            con.close()
            raise
        if version < SCHEMA_VERSION:
            con.close()
            self.migrate()
            try:
                con = duckdb.connect(str(self.path), read_only=True)
            except duckdb.Error as exc:
                raise UsageError(self.url, _duck_problem(exc)) from None
            version = self._meta(con) or 0
        _refuse_newer(self.url, version)
        present = [r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE rows)").fetchall()]
        con.execute(view_sql(present))
        return con

    def _stored_changes(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        try:
            return dict(con.execute(f"SELECT digest, shifts FROM {CACHE_TABLE}").fetchall())
        except duckdb.CatalogException:  # none kept yet
            return {}

    def _write_changes(self, entries: pa.Table) -> None:
        with self._open(write=True) as con:
            con.begin()
            try:
                columns = ", ".join(f"{f.name} VARCHAR" for f in CACHE_SCHEMA)
                con.execute(f"CREATE TABLE IF NOT EXISTS {CACHE_TABLE} ({columns})")
                con.register("fresh_changes", entries)
                con.execute(f"DELETE FROM {CACHE_TABLE} WHERE series IN (SELECT series FROM fresh_changes)")
                con.execute(f"INSERT INTO {CACHE_TABLE} SELECT series, digest, shifts FROM fresh_changes")
                con.unregister("fresh_changes")
                con.commit()
            except BaseException:
                con.rollback()
                raise

    def confirmation_records(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        try:
            return dict(con.execute(f"SELECT change_id, record FROM {CONFIRM_TABLE}").fetchall())
        except duckdb.CatalogException:  # none kept yet
            return {}

    def keep_confirmation_record(self, change_id: str, text: str) -> None:
        if not self.path.exists():
            raise UsageError(self.url, "no history here yet: nothing to confirm")
        with self._open(write=True) as con:
            if self._meta(con) is None:
                raise UsageError(self.url, "no history here yet: nothing to confirm")
            con.begin()
            try:
                con.execute(f"CREATE TABLE IF NOT EXISTS {CONFIRM_TABLE} (change_id VARCHAR, record VARCHAR)")
                con.execute(f"DELETE FROM {CONFIRM_TABLE} WHERE change_id = ?", [change_id])
                con.execute(f"INSERT INTO {CONFIRM_TABLE} VALUES (?, ?)", [change_id, text])
                con.commit()
            except BaseException:
                con.rollback()
                raise

    def ingest(self, nights: Sequence[Night]) -> list[NightResult]:
        """Each run's nights in a transaction of their own, run by run in date order, over one
        connection; every night's date checked against the store first (a night keeps one date),
        so that a refusal changes nothing."""
        with self._open(write=True) as con:
            con.begin()
            try:
                self._prepare(con)
                # every night stored, and its date: one scan (a night's stored rows are read
                # only where it is stored, to merge with; a new night's are none)
                dates = dict(
                    con.execute("SELECT night_id, any_value(date) FROM rows GROUP BY night_id").fetchall()
                )
                for night in nights:
                    if night.night_id in dates and dates[night.night_id] != night.date:
                        raise UsageError(night.label, _moved(dates[night.night_id]))
                results = []
                for i, run in enumerate(by_run(nights)):
                    if i:
                        con.begin()
                    results += self._write_nights(con, run, dates)
                    con.commit()
                    dates.update((n.night_id, n.date) for n in run)
                if not nights:
                    con.commit()
            except BaseException:
                with suppress(duckdb.TransactionException):  # between two runs none is open: the last stands
                    con.rollback()
                raise
        return results

    def _write_nights(
        self, con: duckdb.DuckDBPyConnection, nights: Sequence[Night], dates: Mapping[str, object]
    ) -> list[NightResult]:
        """Some nights in one read of what is stored of them and one insert."""
        ids = [n.night_id for n in nights if n.night_id in dates]
        stored: dict[str, dict[str, tuple[str, str, str]]] = {}
        if ids:  # a semi-join on the ids: a fraction of list_contains' cost on a year of rows
            for nid, k, d, s, t in con.execute(
                "SELECT night_id, row_key, row_digest, status, started_at FROM rows "
                "WHERE night_id IN (SELECT unnest(?))",
                [ids],
            ).fetchall():
                stored.setdefault(nid, {})[k] = (d, s, t)
        results, parts, replaced = [], [], []
        for night in nights:
            write, replace, unchanged = plan_merge(stored.get(night.night_id, {}), night.rows)
            replaced += [(night.night_id, key) for key in replace]
            if write:
                parts.append(night.rows if len(write) == night.rows.num_rows else night.rows.take(write))
            results.append(NightResult(night.label, len(write) - len(replace), len(replace), unchanged))
        if replaced:
            gone = pa.table({"night_id": [n for n, _ in replaced], "row_key": [k for _, k in replaced]})
            con.register("replaced_rows", gone)
            con.execute(
                "DELETE FROM rows USING replaced_rows r "
                "WHERE rows.night_id = r.night_id AND rows.row_key = r.row_key"
            )
            con.unregister("replaced_rows")
        if parts:
            con.register("incoming_rows", pa.concat_tables(parts))
            con.execute("INSERT INTO rows BY NAME SELECT * FROM incoming_rows")
            con.unregister("incoming_rows")
        return results


def by_run(nights: Sequence[Night]) -> list[list[Night]]:
    """The nights by run (`run_id`), each run's in their order, the runs in order of their first
    night (read_run gives nights in date order: a backfill is written night by night)."""
    runs: dict[str, list[Night]] = {}
    for night in nights:
        runs.setdefault(night.run_id, []).append(night)
    return list(runs.values())


def _first(exc: BaseException) -> str:
    return str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__


def _duck_problem(exc: BaseException) -> str:
    text = _first(exc)
    if "lock" in text.lower():
        return "in use by another process (one writer at a time): wait for it, or use another --store"
    return f"cannot open ({text})"


def _moved(stored: object) -> str:
    return (
        f"already stored as the night of {stored}: ingest it with `--date {stored}` (a night keeps one date)"
    )


# --- Parquet files at an fsspec URL ------------------------------------------------------------


def _fs(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise UsageError("--store", f"{url}: {_first(exc)} (pip install it into this Python)") from None
    except (ValueError, OSError) as exc:
        raise UsageError("--store", f"{url}: {_first(exc)}") from None
    return fs, root.rstrip("/")


def _local(fs: fsspec.AbstractFileSystem) -> bool:
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    return "file" in protocols or "local" in protocols


class ParquetStore(Store):
    def __init__(self, url: str) -> None:
        self.url = url
        self.fs, self.root = _fs(url)

    def _path(self, *parts: str) -> str:
        return "/".join((self.root, *parts))

    def _duck_path(self, path: str) -> str:
        """How DuckDB names a path of this filesystem (a registered fsspec one: with its protocol)."""
        if _local(self.fs):
            return path
        protocol = self.fs.protocol if isinstance(self.fs.protocol, str) else self.fs.protocol[0]
        return f"{protocol}://{path.lstrip('/')}" if protocol == "memory" else f"{protocol}://{path}"

    def _manifest(self) -> dict[str, object] | None:
        path = self._path(MANIFEST)
        try:
            if not self.fs.exists(path):
                if self.fs.exists(self.root) and self.fs.ls(self.root):
                    raise UsageError(self.url, f"not empty and holds no {MANIFEST}: not a history")
                return None
            data = json.loads(self.fs.cat_file(path))
        except (OSError, ValueError) as exc:
            raise UsageError(self.url, f"{MANIFEST}: unreadable ({_first(exc)})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise UsageError(self.url, f"{MANIFEST}: not a history's (format is not {FORMAT!r})")
        if not isinstance(data.get("schema_version"), int):
            raise UsageError(self.url, f"{MANIFEST}: no schema_version")
        return data

    def version(self) -> int:
        data = self._manifest()
        return int(data["schema_version"]) if data else 0  # type: ignore[call-overload]

    def _write_manifest(self) -> None:
        text = json.dumps({"format": FORMAT, "schema_version": SCHEMA_VERSION}, indent=1) + "\n"
        self._put(self._path(MANIFEST), text.encode())

    def _put(self, path: str, data: bytes) -> None:
        """Write a file whole: aside first, then moved into place (a reader never sees half)."""
        folder, name = path.rsplit("/", 1)
        aside = f"{folder}/.{name}.{os.getpid()}.tmp"
        try:
            self.fs.makedirs(folder, exist_ok=True)
            self.fs.pipe_file(aside, data)
            self.fs.mv(aside, path)
        except OSError as exc:
            raise UsageError(self.url, f"cannot write {path} ({_first(exc)})") from None

    def _files(self) -> list[str]:
        try:
            return sorted(self.fs.glob(self._path("rows", "**", "*.parquet")))
        except OSError as exc:
            raise UsageError(self.url, f"cannot list its files ({_first(exc)})") from None

    def _night_path(self, night: Night) -> str:
        return self._path(
            "rows",
            f"gpu={quote(slug(night.gpu), safe='')}",
            f"build={quote(night.build, safe='')}",
            f"date={night.date:%Y-%m-%d}",
            f"{night.night_id}.parquet",
        )

    def _read(self, path: str) -> pa.Table:
        try:
            with self.fs.open(path, "rb") as fh:
                return pq.read_table(fh)
        except (OSError, pa.ArrowException) as exc:
            raise UsageError(path, f"not a readable Parquet file ({_first(exc)})") from None

    def migrate(self) -> int:
        data = self._manifest()
        before = int(data["schema_version"]) if data else SCHEMA_VERSION  # type: ignore[call-overload]
        _refuse_newer(self.url, before)
        steps = migrations_from(before)
        if steps:
            for path in self._files():
                con = duckdb.connect()
                con.register("stored_rows", self._read(path))
                con.execute("CREATE TABLE rows AS SELECT * FROM stored_rows")
                for migration in steps:
                    for statement in migration.sql:
                        con.execute(statement)
                self._put(path, _parquet_bytes(con.sql("SELECT * FROM rows").to_arrow_table()))
                con.close()
        if steps or data is None:
            self._write_manifest()
        return before

    def connect(self) -> duckdb.DuckDBPyConnection:
        data = self._manifest()
        if data is None:
            raise UsageError(
                self.url, "no history here yet: `python -m suite history ingest RUN_DIR` makes one"
            )
        version = int(data["schema_version"])  # type: ignore[call-overload]
        _refuse_newer(self.url, version)
        con = duckdb.connect()
        if not _local(self.fs):
            con.register_filesystem(self.fs)
        files = self._files()
        if not files:
            con.execute(create_table_sql())
        else:
            source = self._duck_path(self._path("rows", "**", "*.parquet"))
            read = f"read_parquet('{source}', hive_partitioning = false, union_by_name = true)"
            if version < SCHEMA_VERSION:  # an older store read as this suite reads it (not written)
                con.execute(f"CREATE TEMP TABLE rows AS SELECT * FROM {read}")
                for migration in migrations_from(version):
                    for statement in migration.sql:
                        con.execute(statement)
            else:
                con.execute(f"CREATE TEMP VIEW rows AS SELECT * FROM {read}")
        try:
            present = [r[0] for r in con.execute("SELECT column_name FROM (DESCRIBE rows)").fetchall()]
        except duckdb.Error as exc:
            raise UsageError(self.url, f"cannot read its Parquet files ({_first(exc)})") from None
        con.execute(view_sql(present))
        return con

    def _stored_changes(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        path = self._path(CACHE_FILE)
        try:
            if not self.fs.exists(path):
                return {}
            table = self._read(path)
        except (UsageError, OSError):
            return {}
        if not set(CACHE_SCHEMA.names) <= set(table.column_names):
            return {}
        return dict(zip(table.column("digest").to_pylist(), table.column("shifts").to_pylist(), strict=True))

    def _write_changes(self, entries: pa.Table) -> None:
        path = self._path(CACHE_FILE)
        kept = self._read(path) if self.fs.exists(path) else None
        if kept is not None and set(CACHE_SCHEMA.names) <= set(kept.column_names):
            kept = kept.select(CACHE_SCHEMA.names).cast(CACHE_SCHEMA)
            kept = kept.filter(pc.invert(pc.is_in(kept.column("series"), entries.column("series"))))
            entries = pa.concat_tables([kept, entries])
        buf = io.BytesIO()
        pq.write_table(entries, buf)
        self._put(path, buf.getvalue())

    def confirmation_records(self, con: duckdb.DuckDBPyConnection) -> dict[str, str]:
        return self._confirmations()

    def _confirmations(self) -> dict[str, str]:
        path = self._path(CONFIRM_FILE)
        if not self.fs.exists(path):
            return {}
        table = self._read(path)
        if not set(CONFIRM_SCHEMA.names) <= set(table.column_names):
            raise UsageError(path, f"not a history's confirmations (no {', '.join(CONFIRM_SCHEMA.names)})")
        ids, records = table.column("change_id").to_pylist(), table.column("record").to_pylist()
        return dict(zip(ids, records, strict=True))

    def keep_confirmation_record(self, change_id: str, text: str) -> None:
        if self._manifest() is None:
            raise UsageError(self.url, "no history here yet: nothing to confirm")
        kept = self._confirmations()
        kept[change_id] = text
        table = pa.table({"change_id": list(kept), "record": list(kept.values())}, schema=CONFIRM_SCHEMA)
        buf = io.BytesIO()
        pq.write_table(table, buf)
        self._put(self._path(CONFIRM_FILE), buf.getvalue())

    def ingest(self, nights: Sequence[Night]) -> list[NightResult]:
        self.migrate()
        results = []
        for night in nights:
            path = self._night_path(night)
            elsewhere = [
                p
                for p in self.fs.glob(
                    self._path(*path[len(self.root) + 1 :].split("/")[:3], "*", "*.parquet")
                )
                if p.endswith(f"/{night.night_id}.parquet") and p != path
            ]
            if elsewhere:
                raise UsageError(night.label, _moved(elsewhere[0].split("/date=")[1].split("/")[0]))
            stored_table = self._read(path) if self.fs.exists(path) else None
            stored = {}
            if stored_table is not None:
                for k, d, s, t in zip(
                    *(
                        stored_table.column(c).to_pylist()
                        for c in ("row_key", "row_digest", "status", "started_at")
                    ),
                    strict=True,
                ):
                    stored[k] = (d, s, t)
            write, replace, unchanged = plan_merge(stored, night.rows)
            if write:
                incoming = night.rows.take(write)
                if stored_table is not None:
                    keep = pc.invert(pc.is_in(stored_table.column("row_key"), pa.array(replace, pa.string())))
                    incoming = pa.concat_tables(
                        [stored_table.filter(keep), incoming], promote_options="default"
                    )
                self._put(path, _parquet_bytes(incoming))
            results.append(NightResult(night.label, len(write) - len(replace), len(replace), unchanged))
        return results


def _parquet_bytes(table: pa.Table) -> bytes:
    buf = io.BytesIO()
    meta = {b"suite_history_schema_version": str(SCHEMA_VERSION).encode()}
    pq.write_table(table.replace_schema_metadata({**(table.schema.metadata or {}), **meta}), buf)
    return buf.getvalue()


def open_store(store: str | Path | None) -> Store:
    """`None`: the DuckDB file `results/history.duckdb`; a path ending in `.duckdb` (or an
    existing file): a DuckDB file; anything else: Parquet files at that folder or URL."""
    if store is None or str(store) == "":
        return DuckDbStore(DEFAULT_STORE)
    text = str(store)
    if "://" not in text and (text.endswith(".duckdb") or Path(text).is_file()):
        return DuckDbStore(Path(text))
    return ParquetStore(text)
