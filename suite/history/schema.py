"""The history's one table, `rows`: a raw CSV row of one night, typed, with the night's identity.

A night is one run of one build on one GPU (`run_id`, `build`, `device`, `gpu_name`). Both stores
(DuckDB file, Parquet at a URL) hold the same columns:

- the night's own (`NIGHT_COLUMNS`): its id, date, build kind and line, the GPU's label, where
  it came from, and each row's key and digest (what makes a second ingest of a run add nothing);
- every column of the CSV contract (`suite.results.TABLE`), typed by its kind;
- `extra`: a JSON object of the columns a CSV had that this suite does not know (nothing lost).

`SCHEMA_VERSION` counts structural changes; `MIGRATIONS` take a store from each version to the
next, as SQL on the table `rows` (the DuckDB store runs it in place, in one transaction; the
Parquet store runs it on each night's file). A CSV column added to `suite.results.TABLE` is not a
version: a store gains it as an empty column the next time it is written (`missing_columns`).
"""

from __future__ import annotations

from dataclasses import dataclass

from suite.results import INT, NUMBER, TABLE

SCHEMA_VERSION = 2
FORMAT = "torch-compile-suite history"

VARCHAR, BIGINT, DOUBLE, DATE, TIMESTAMP = "VARCHAR", "BIGINT", "DOUBLE", "DATE", "TIMESTAMP"


@dataclass(frozen=True)
class StoreColumn:
    name: str
    type: str

    def __post_init__(self) -> None:
        if self.type not in (VARCHAR, BIGINT, DOUBLE, DATE, TIMESTAMP):
            raise ValueError(f"column {self.name}: unknown type {self.type}")


NIGHT_COLUMNS: tuple[StoreColumn, ...] = (
    StoreColumn("night_id", VARCHAR),  # digest of run_id, build, device, gpu_name
    StoreColumn("date", DATE),  # the night's date (UTC): its earliest started_at, or --date
    StoreColumn("build_kind", VARCHAR),  # stable | nightly | release (matrix.yaml, else the name)
    StoreColumn("build_line", VARCHAR),  # "stable", "nightly 2.15", "release 2.13"
    StoreColumn("gpu", VARCHAR),  # the GPU's name, or "cpu: <model>" on a CPU run
    StoreColumn("run_dir", VARCHAR),  # the run folder ingested (as given)
    StoreColumn("run_page", VARCHAR),  # a link to the night's run page, if one was given
    StoreColumn("ingested_at", TIMESTAMP),
    StoreColumn("row_key", VARCHAR),  # the cell, within the night
    StoreColumn("row_digest", VARCHAR),  # the row's values: an unchanged row is not written again
    # version 2: the torch nightly's date (from `2.15.0.dev20261203+cu130`), NULL for a release
    StoreColumn("torch_date", DATE),
)
EXTRA = StoreColumn("extra", VARCHAR)
_KIND_TYPES = {INT: BIGINT, NUMBER: DOUBLE}


def csv_columns() -> tuple[StoreColumn, ...]:
    """The CSV contract's columns as this suite knows them, typed."""
    return tuple(StoreColumn(c.name, _KIND_TYPES.get(c.kind, VARCHAR)) for c in TABLE)


def columns() -> tuple[StoreColumn, ...]:
    """Every column of `rows`, in order."""
    return (*NIGHT_COLUMNS, *csv_columns(), EXTRA)


def column_names() -> tuple[str, ...]:
    return tuple(c.name for c in columns())


def missing_columns(present: set[str]) -> list[StoreColumn]:
    """The columns this suite writes that a store made by an older one lacks."""
    return [c for c in columns() if c.name not in present]


def create_table_sql(name: str = "rows") -> str:
    return f"CREATE TABLE {name} (" + ", ".join(f'"{c.name}" {c.type}' for c in columns()) + ")"


# The torch nightly's date in its version string, as DuckDB SQL on a `torch_version` column.
TORCH_DATE_SQL = (
    "TRY_STRPTIME(NULLIF(REGEXP_EXTRACT(torch_version, '\\.dev(\\d{8})', 1), ''), '%Y%m%d')::DATE"
)


@dataclass(frozen=True)
class Migration:
    """From `version - 1` to `version`: SQL statements on the table `rows`."""

    version: int
    what: str
    sql: tuple[str, ...]


MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        2,
        "torch_date: the nightly's date, parsed from torch_version, for bisect and the change points",
        (
            'ALTER TABLE rows ADD COLUMN IF NOT EXISTS "torch_date" DATE',
            f"UPDATE rows SET torch_date = {TORCH_DATE_SQL}",
        ),
    ),
)


def migrations_from(version: int) -> list[Migration]:
    """The migrations a store at `version` needs, in order."""
    return [m for m in MIGRATIONS if m.version > version]
