"""Where the history lives: a DuckDB file (the default, `results/history.duckdb`) or Parquet files
at any fsspec URL (a folder, `file://`, `memory://`, `s3://bucket/prefix`, `hf://datasets/org/name`),
partitioned `rows/gpu=<gpu>/build=<build>/date=<YYYY-MM-DD>/<night>.parquet`, which DuckDB reads
in place. Both give readers one DuckDB connection with the view `history`: every column this
suite knows (`suite.history.schema`), NULL where a store predates one.

Writing merges a night's rows into what is stored, by each row's key and digest: an unchanged row
is not written again, so ingesting a run twice adds nothing; a row of a cell already stored is
replaced only by one the resume rule prefers (`suite.results.one_per_cell`: ok over failed, then
the later start). The DuckDB store writes every night of an ingest in one transaction; the
Parquet store replaces one night's file at a time, each whole (written aside, then moved). The two
stores: suite.history.duckstore and suite.history.parquetstore; what they share:
suite.history.storebase; this module opens one.
"""

from __future__ import annotations

from pathlib import Path

from suite.history.duckstore import DuckDbStore
from suite.history.parquetstore import ParquetStore
from suite.history.storebase import DEFAULT_STORE, META, VIEW, NightResult, Store, by_run

__all__ = [
    "DEFAULT_STORE",
    "META",
    "VIEW",
    "DuckDbStore",
    "NightResult",
    "ParquetStore",
    "Store",
    "by_run",
    "open_store",
]


def open_store(store: str | Path | None) -> Store:
    """`None`: the DuckDB file `results/history.duckdb`; a path ending in `.duckdb` (or an
    existing file): a DuckDB file; anything else: Parquet files at that folder or URL."""
    if store is None or str(store) == "":
        return DuckDbStore(DEFAULT_STORE)
    text = str(store)
    if "://" not in text and (text.endswith(".duckdb") or Path(text).is_file()):
        return DuckDbStore(Path(text))
    return ParquetStore(text)
