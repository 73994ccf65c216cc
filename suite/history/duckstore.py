"""The history as one DuckDB file (the default, `results/history.duckdb`): every night of an
ingest written in one transaction; readers get the view `history` over its table."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import pyarrow as pa

from suite.errors import UsageError
from suite.history.cache import CACHE_SCHEMA, CACHE_TABLE
from suite.history.schema import (
    FORMAT,
    SCHEMA_VERSION,
    create_table_sql,
    migrations_from,
    missing_columns,
)
from suite.history.storebase import (
    CONFIRM_TABLE,
    META,
    NightResult,
    Store,
    by_run,
    duck_problem,
    first_line,
    moved_night,
    plan_merge,
    refuse_newer,
    view_sql,
)

if TYPE_CHECKING:  # a reader of the store needs none of the CSV reader's imports
    from suite.history.ingest import Night


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
            raise UsageError(str(self.path), duck_problem(exc)) from None
        except duckdb.Error as exc:
            raise UsageError(str(self.path), f"not a DuckDB history ({first_line(exc)})") from None
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
        refuse_newer(self.url, version)
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
                raise UsageError(self.url, duck_problem(exc)) from None
            version = self._meta(con) or 0
        refuse_newer(self.url, version)
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
                        raise UsageError(night.label, moved_night(dates[night.night_id]))
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
