"""The history as Parquet files at any fsspec URL, partitioned
`rows/gpu=<gpu>/build=<build>/date=<YYYY-MM-DD>/<night>.parquet`, which DuckDB reads in place;
one night's file replaced at a time, each whole (written aside, then moved)."""

from __future__ import annotations

import io
import json
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING
from urllib.parse import quote

import duckdb
import fsspec
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from suite.errors import UsageError
from suite.history.cache import CACHE_FILE, CACHE_SCHEMA
from suite.history.schema import (
    FORMAT,
    SCHEMA_VERSION,
    create_table_sql,
    migrations_from,
)
from suite.history.storebase import (
    CONFIRM_FILE,
    CONFIRM_SCHEMA,
    MANIFEST,
    NightResult,
    Store,
    first_line,
    moved_night,
    plan_merge,
    refuse_newer,
    view_sql,
)
from suite.results import slug

if TYPE_CHECKING:  # a reader of the store needs none of the CSV reader's imports
    from suite.history.ingest import Night


def _fs(url: str) -> tuple[fsspec.AbstractFileSystem, str]:
    try:
        fs, root = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        raise UsageError("--store", f"{url}: {first_line(exc)} (pip install it into this Python)") from None
    except (ValueError, OSError) as exc:
        raise UsageError("--store", f"{url}: {first_line(exc)}") from None
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
            raise UsageError(self.url, f"{MANIFEST}: unreadable ({first_line(exc)})") from None
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
            raise UsageError(self.url, f"cannot write {path} ({first_line(exc)})") from None

    def _files(self) -> list[str]:
        try:
            return sorted(self.fs.glob(self._path("rows", "**", "*.parquet")))
        except OSError as exc:
            raise UsageError(self.url, f"cannot list its files ({first_line(exc)})") from None

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
            raise UsageError(path, f"not a readable Parquet file ({first_line(exc)})") from None

    def migrate(self) -> int:
        data = self._manifest()
        before = int(data["schema_version"]) if data else SCHEMA_VERSION  # type: ignore[call-overload]
        refuse_newer(self.url, before)
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
        refuse_newer(self.url, version)
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
            raise UsageError(self.url, f"cannot read its Parquet files ({first_line(exc)})") from None
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
                raise UsageError(night.label, moved_night(elsewhere[0].split("/date=")[1].split("/")[0]))
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
