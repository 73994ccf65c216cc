"""The history's store (suite/history/store.py, ingest.py, schema.py) with the real DuckDB and
pyarrow: a committed run from before the newest columns ingested into a DuckDB file and into
Parquet (a local folder URL and fsspec's in-memory filesystem), twice, read with DuckDB's own API;
damaged and foreign CSVs refused in one line with nothing stored changed; the schema's version and
its migration."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest

from suite.cli import main
from suite.history.ingest import read_run
from suite.history.schema import SCHEMA_VERSION, create_table_sql
from suite.history.store import META, DuckDbStore, ParquetStore, open_store
from suite.results import COLUMNS

REPO = Path(__file__).resolve().parents[2]
OLD_RUN = REPO / "results" / "2026-11-21-cpu-amd-epyc-smoke"  # before the health and malloc columns
NEW_RUN = REPO / "results" / "2026-11-24-cpu-intel-xeon-trust" / "gate" / "aa" / "rep-1"


def count(con: duckdb.DuckDBPyConnection, sql: str) -> int:
    return con.execute(sql).fetchone()[0]


def test_a_run_from_before_the_newest_columns_ingests_once_into_a_duckdb_file(tmp_path: Path, capsys) -> None:
    store = tmp_path / "h.duckdb"
    assert main(["history", "ingest", str(OLD_RUN), "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert "2 night(s), 72 row(s) written" in err
    assert main(["history", "ingest", str(OLD_RUN), str(NEW_RUN), "--store", str(store)]) == 0
    err = capsys.readouterr().err
    assert "0 row(s) added, 0 replaced, 36 unchanged" in err  # the old run's two nights, again
    assert "3 night(s), 36 row(s) written" in err  # the new run's night alone
    con = duckdb.connect(str(store), read_only=True)  # DuckDB's own API, no suite code
    assert count(con, "SELECT count(*) FROM rows") == 108
    assert count(con, "SELECT count(DISTINCT night_id) FROM rows") == 3
    # the old CSV lacks `health` and `malloc`: empty there, kept where the new one has them
    assert count(con, "SELECT count(*) FROM rows WHERE run_id LIKE 'local-%' AND health IS NOT NULL") == 0
    assert count(con, "SELECT count(*) FROM rows WHERE run_id = 'rep-1' AND malloc = 'steady'") == 36
    assert con.execute("SELECT value FROM history_meta WHERE key = 'schema_version'").fetchone()[0] == str(
        SCHEMA_VERSION
    )
    got = con.execute(
        "SELECT build, build_kind, build_line, gpu, date FROM rows "
        "WHERE model = 'ViT' AND mode = 'eager' ORDER BY 1, 5"
    ).fetchall()
    assert [g[:4] for g in got] == [
        ("current", "release", "release 2.13", "cpu: AMD EPYC"),
        ("current", "release", "release 2.13", "cpu: Intel(R) Xeon(R) Processor"),
        ("stable", "stable", "stable", "cpu: AMD EPYC"),
    ]
    assert str(got[0][4]) == "2026-11-21"  # the night's earliest started_at, UTC
    assert set(COLUMNS) <= {r[0] for r in con.execute("DESCRIBE rows").fetchall()}


@pytest.mark.parametrize("kind", ["folder", "memory"])
def test_parquet_at_a_url_is_partitioned_and_queried_in_place(tmp_path: Path, kind: str) -> None:
    import fsspec

    url = (tmp_path / "pq").as_uri() if kind == "folder" else f"memory://history-{tmp_path.name}/store"
    store = open_store(url)
    assert isinstance(store, ParquetStore)
    nights = read_run([OLD_RUN]).nights
    assert [r.added for r in store.ingest(nights)] == [36, 36]
    assert [r.added for r in store.ingest(nights)] == [0, 0]
    fs, root = fsspec.core.url_to_fs(url)
    files = sorted(p[len(root) :] for p in fs.glob(f"{root}/rows/**/*.parquet"))
    assert [f.rsplit("/", 1)[0] for f in files] == [
        "/rows/gpu=cpu-amd-epyc/build=current/date=2026-11-21",
        "/rows/gpu=cpu-amd-epyc/build=stable/date=2026-11-21",
    ]
    assert json.loads(fs.cat_file(f"{root}/_history.json"))["schema_version"] == SCHEMA_VERSION
    con = duckdb.connect()
    if kind == "memory":
        con.register_filesystem(fs)
    glob = f"{tmp_path / 'pq'}/rows/**/*.parquet" if kind == "folder" else f"{url}/rows/**/*.parquet"
    # DuckDB alone, in place: the partition folders read as columns
    assert con.execute(f"SELECT count(*), count(DISTINCT build) FROM read_parquet('{glob}')").fetchone() == (
        72,
        2,
    )
    view = store.connect()
    assert count(view, "SELECT count(*) FROM history WHERE median_ms IS NOT NULL") == 70  # 2 failed rows


def test_a_damaged_csv_is_refused_in_one_line_and_nothing_stored_changes(tmp_path: Path, capsys) -> None:
    store = tmp_path / "h.duckdb"
    assert main(["history", "ingest", str(OLD_RUN), "--store", str(store)]) == 0
    before = store.read_bytes()
    bad = tmp_path / "bad"
    shutil.copytree(NEW_RUN / "raw", bad / "raw")
    csv = bad / "raw" / "current__cpu.csv"
    lines = csv.read_text().splitlines(keepends=True)
    fields = lines[5].split(",")
    assert fields[COLUMNS.index("median_ms")] and fields[COLUMNS.index("status")] == "ok"
    fields[COLUMNS.index("median_ms")] = "fast"
    lines[5] = ",".join(fields)
    csv.write_text("".join(lines))
    capsys.readouterr()
    # a good run first, then the damaged one: refused as a whole, the good one not stored either
    assert main(["history", "ingest", str(NEW_RUN), str(bad), "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "current__cpu.csv:6: field median_ms: 'fast' is not a number" in err[0], err
    assert err[0].endswith("nothing was stored")
    assert store.read_bytes() == before
    foreign = tmp_path / "foreign" / "raw" / "x.csv"
    foreign.parent.mkdir(parents=True)
    foreign.write_text("date,value\n2026-11-21,3\n")
    assert main(["history", "ingest", str(foreign.parent.parent), "--store", str(store)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "header lacks column(s)" in err[0], err
    assert store.read_bytes() == before
    torn = tmp_path / "torn"
    shutil.copytree(NEW_RUN / "raw", torn / "raw")
    text = (torn / "raw" / "current__cpu.csv").read_text()
    (torn / "raw" / "current__cpu.csv").write_text(text[: len(text) - 40])  # a writer killed mid-row
    assert main(["history", "ingest", str(torn), "--store", str(store)]) == 2
    assert "partial last row" in capsys.readouterr().err
    assert main(["history", "ingest", str(torn), "--store", str(store), "--allow-partial"]) == 0
    con = duckdb.connect(str(store), read_only=True)
    assert count(con, "SELECT count(*) FROM rows WHERE run_id = 'rep-1'") == 35


def test_not_a_history_and_a_newer_schema_are_refused(tmp_path: Path, capsys) -> None:
    other = tmp_path / "other.duckdb"
    duckdb.connect(str(other)).execute("CREATE TABLE t (x INTEGER)").close()
    assert main(["history", "report", "--store", str(other)]) == 2
    assert "not a history" in capsys.readouterr().err
    newer = tmp_path / "newer.duckdb"
    DuckDbStore(newer).ingest(read_run([OLD_RUN]).nights)
    duckdb.connect(str(newer)).execute(f"UPDATE {META} SET value = '99' WHERE key = 'schema_version'").close()
    assert main(["history", "report", "--store", str(newer)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "schema version 99, made by a newer suite" in err[0]
    junk = tmp_path / "junk.duckdb"
    junk.write_text("not a database")
    assert main(["history", "ingest", str(OLD_RUN), "--store", str(junk)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(junk) in err[0] and "Traceback" not in err[0], err


def test_a_version_1_store_is_migrated_and_its_torch_dates_filled(tmp_path: Path) -> None:
    """Version 1 had no torch_date: opening it moves it to this suite's version, in place."""
    path = tmp_path / "v1.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE {META} (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute(
        f"INSERT INTO {META} VALUES ('format', 'torch-compile-suite history'), ('schema_version', '1')"
    )
    con.execute(create_table_sql())
    con.execute('ALTER TABLE rows DROP COLUMN "torch_date"')
    con.execute(
        "INSERT INTO rows (night_id, run_id, build, device, gpu_name, torch_version, row_key, status) "
        "VALUES ('n1', 'r', 'nightly-current', 'cuda', 'H100', '2.15.0.dev20261203+cu130', 'k', 'ok')"
    )
    con.close()
    store = DuckDbStore(path)
    assert store.version() == 1
    view = store.connect()
    assert str(view.execute("SELECT torch_date FROM history").fetchone()[0]) == "2026-12-03"
    view.close()
    assert store.version() == SCHEMA_VERSION


def test_a_version_1_parquet_store_reads_as_this_version_and_migrate_rewrites_it(tmp_path: Path) -> None:
    url = str(tmp_path / "pq")
    store = ParquetStore(url)
    store.ingest(read_run([NEW_RUN]).nights)
    (file,) = (tmp_path / "pq").rglob("*.parquet")
    import pyarrow.parquet as pq

    pq.write_table(pq.read_table(file).drop(["torch_date"]), file)  # as version 1 wrote it
    manifest = tmp_path / "pq" / "_history.json"
    manifest.write_text(json.dumps({"format": "torch-compile-suite history", "schema_version": 1}))
    con = store.connect()
    assert count(con, "SELECT count(*) FROM history WHERE torch_date IS NULL") == 36  # a release: no date
    assert store.migrate() == 1
    assert json.loads(manifest.read_text())["schema_version"] == SCHEMA_VERSION
    assert "torch_date" in pq.read_table(file).column_names


@pytest.mark.parametrize(
    ("url", "package"), [("s3://bench/history", "s3fs"), ("gs://bench/history", "gcsfs")]
)
def test_a_bucket_url_without_its_fsspec_package_is_one_line(url: str, package: str, capsys) -> None:
    """The S3 (and GCS) path as far as no network allows: the URL goes to fsspec, which names the
    package it needs; with it installed, the same ParquetStore code runs over the bucket."""
    pytest.importorskip("fsspec")
    try:
        __import__(package)
    except ImportError:
        pass
    else:
        pytest.skip(f"{package} is installed here")
    assert main(["history", "report", "--store", url]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert (
        len(err) == 1 and err[0].startswith(f"suite history: error: --store: {url}: ") and package in err[0]
    )
