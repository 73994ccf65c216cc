"""A history at scale (docs/history.md, "At scale"): a backfill of many runs in one `history ingest`
(each run's nights a transaction of their own, over one connection; idempotent; a damaged run
or a moved night refused in one line with nothing stored changed; an interrupted backfill keeps
the runs written whole and completes when run again); the change points kept in the store per
series (suite/history/cache.py): read back where the series has not changed, searched again
where it has (a new night, a changed value, another rule), the answer the rule's own either
way; a store that cannot be written now still answers."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest
from support.history import nightly_history

import suite.history.cache as cache_module
from suite.cli import main
from suite.history.cache import CACHE_FILE, CACHE_TABLE, ChangeCache
from suite.history.changes import Rule
from suite.history.ingest import read_run
from suite.history.series import all_changes, find_changes, points
from suite.history.store import DuckDbStore, open_store

REPO = Path(__file__).resolve().parents[2]
NIGHTS = 20
BUILDS = ("stable", "nightly-current")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """20 nights of six real cells (ViT, ResNet, DETR; eager and default) for stable and a nightly
    on one GPU's name, the nightly's compiled ResNet 10% slower from night 9 on: a run folder a
    night, a CSV per build."""
    history = nightly_history(NIGHTS, 9, seed=7)
    return history.write(tmp_path_factory.mktemp("backfill") / "runs")


def stored(path: Path) -> pd.DataFrame:
    """Every stored row as written, in the table's order, but when it was ingested."""
    con = duckdb.connect(str(path), read_only=True)
    try:
        return con.sql("SELECT * EXCLUDE (ingested_at) FROM rows ORDER BY rowid").df()
    finally:
        con.close()


def ingest(store: Path, *inputs: Path, extra: tuple[str, ...] = ()) -> int:
    return main(["history", "ingest", "--store", str(store), *extra, *map(str, inputs)])


# --- a backfill: many runs in one call ----------------------------------------------------------


def test_a_backfill_stores_what_night_by_night_calls_store_and_twice_adds_nothing(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    one_by_one = tmp_path / "nightly.duckdb"
    for run in runs:
        assert ingest(one_by_one, run) == 0
    backfill = tmp_path / "backfill.duckdb"
    capsys.readouterr()
    assert ingest(backfill, *runs) == 0
    err = capsys.readouterr().err
    assert f"{2 * NIGHTS} night(s), {2 * NIGHTS * 6} row(s) written" in err
    pd.testing.assert_frame_equal(stored(backfill), stored(one_by_one))
    con = duckdb.connect(str(backfill), read_only=True)
    stamps = con.execute("SELECT DISTINCT ingested_at FROM rows").fetchall()
    con.close()
    assert ingest(backfill, *runs) == 0  # again: every row unchanged, nothing written
    err = capsys.readouterr().err
    assert err.count("0 row(s) added, 0 replaced, 6 unchanged") == 2 * NIGHTS
    assert f"{2 * NIGHTS} night(s), 0 row(s) written" in err
    con = duckdb.connect(str(backfill), read_only=True)
    assert con.execute("SELECT DISTINCT ingested_at FROM rows").fetchall() == stamps
    con.close()


def test_each_run_of_a_backfill_is_a_transaction_and_an_interrupted_one_completes(
    runs: list[Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = DuckDbStore(tmp_path / "h.duckdb")
    written = DuckDbStore._write_nights
    calls = []

    def killed_on_the_third_run(self, con, nights, dates):  # type: ignore[no-untyped-def]
        calls.append([n.run_id for n in nights])
        results = written(self, con, nights, dates)
        if len(calls) == 3:  # its rows inserted, not committed: a kill mid-run
            raise KeyboardInterrupt
        return results

    monkeypatch.setattr(DuckDbStore, "_write_nights", killed_on_the_third_run)
    with pytest.raises(KeyboardInterrupt):
        store.ingest(read_run(runs).nights)
    assert all(len(set(run)) == 1 and len(run) == 2 for run in calls)  # a run, both its builds
    con = duckdb.connect(str(store.path), read_only=True)
    kept = con.execute("SELECT run_id, count(*) FROM rows GROUP BY run_id ORDER BY run_id").fetchall()
    con.close()
    assert kept == [(runs[0].name, 12), (runs[1].name, 12)]  # two runs whole, the third not at all
    monkeypatch.undo()
    results = store.ingest(read_run(runs).nights)  # run again: the rest
    assert [r.added for r in results] == [0] * 4 + [6] * (2 * NIGHTS - 4)
    reference = tmp_path / "reference.duckdb"
    assert ingest(reference, *runs) == 0
    pd.testing.assert_frame_equal(stored(store.path), stored(reference))


def test_a_backfill_with_a_damaged_run_or_a_moved_night_stores_nothing(
    runs: list[Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = tmp_path / "h.duckdb"
    assert ingest(store, runs[0]) == 0
    before = store.read_bytes()
    damaged = tmp_path / "damaged"
    shutil.copytree(runs[5], damaged)
    csv = next((damaged / "raw").glob("nightly-current*.csv"))
    lines = csv.read_text().splitlines(keepends=True)
    lines[3] = lines[3].replace(",ok,", ",fine,", 1)  # not a status
    csv.write_text("".join(lines))
    capsys.readouterr()
    assert ingest(store, *runs[1:5], damaged, *runs[6:]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{csv}:4" in err[0] and err[0].endswith("nothing was stored"), err
    assert store.read_bytes() == before
    # runs 1-3 are new, run 0 is stored as the night of its own date: given another, refused
    assert ingest(store, *runs[1:4], runs[0], extra=("--date", "2027-01-01")) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "already stored as the night of 2026-12-01" in err[0], err
    assert store.read_bytes() == before


# --- the change points kept in the store --------------------------------------------------------


@pytest.fixture
def searched(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The series whose change points are searched (not read from the store), in order."""
    names: list[str] = []
    detect = cache_module.detect

    def counted(values: np.ndarray, rule: Rule) -> object:
        names.append(current[0])
        return detect(values, rule)

    current = [""]
    original = ChangeCache.detect

    def named(self: ChangeCache, series: str, values: np.ndarray) -> object:
        current[0] = series
        return original(self, series, values)

    monkeypatch.setattr(cache_module, "detect", counted)
    monkeypatch.setattr(ChangeCache, "detect", named)
    return names


def report(store: Path | str, out: Path) -> str:
    assert main(["history", "report", "--store", str(store), "-o", str(out)]) == 0
    return out.read_text()


def kept(store: Path) -> list[tuple[str, str]]:
    con = duckdb.connect(str(store), read_only=True)
    try:
        return con.execute(f"SELECT series, digest FROM {CACHE_TABLE} ORDER BY series").fetchall()
    finally:
        con.close()


def uncached(store: Path | str) -> pd.DataFrame:
    con = open_store(store).connect()
    try:
        return all_changes(points(con), Rule())
    finally:
        con.close()


def cached(store: Path | str) -> tuple[pd.DataFrame, ChangeCache]:
    history = open_store(store)
    con = history.connect()
    try:
        cache = history.change_cache(con, Rule())
        return all_changes(points(con), Rule(), cache), cache
    finally:
        con.close()


def test_change_points_are_kept_per_series_and_searched_again_only_where_it_changed(
    runs: list[Path], tmp_path: Path, searched: list[str]
) -> None:
    store = tmp_path / "h.duckdb"
    last = runs[-1] / "raw" / "nightly-current__cuda.csv"
    assert (
        ingest(store, *runs[:-1], last.with_name("stable__cuda.csv")) == 0
    )  # the nightly's last night held back
    first = report(store, tmp_path / "1.md")
    series = len(searched)
    assert series == 2 * (
        6 + 3 + 3
    )  # each build: six cells' medians, three compiled ones' speed-up, compile time
    assert "| 2026-12-09 | 2026-12-10 |" in first  # the nightly's ResNet step, found
    entries = kept(store)
    assert len(entries) == series and len({s for s, _ in entries}) == series  # one entry per series
    searched.clear()
    assert report(store, tmp_path / "2.md") == first and searched == []  # all read back
    changes, cache = cached(store)
    assert cache.hits == series and not cache.fresh
    pd.testing.assert_frame_equal(changes, uncached(store))  # the rule's own answer

    # the nightly's last night: its series gained a night, stable's did not
    assert ingest(store, last) == 0
    third = report(store, tmp_path / "3.md")
    assert len(searched) == 6 + 3 + 3 and all("\x1fnightly-current\x1f" in s for s in searched)
    after = kept(store)
    assert len(after) == series  # replaced, not added
    assert {s for s, _ in after} == {s for s, _ in entries}
    assert sum(a != b for a, b in zip(after, entries, strict=True)) == 6 + 3 + 3
    pd.testing.assert_frame_equal(cached(store)[0], uncached(store))

    # one stored figure changed (as a re-ingest of a better row would): that series alone
    con = duckdb.connect(str(store))
    con.execute(
        "UPDATE rows SET median_ms = median_ms * 1.5 WHERE build = 'stable' AND model = 'ViT' "
        "AND mode = 'eager' AND date = DATE '2026-12-20'"
    )
    con.close()
    searched.clear()
    fourth = report(store, tmp_path / "4.md")
    assert len(searched) == 1 and searched[0].startswith("NVIDIA H100 80GB HBM3\x1fstable\x1fViT")
    assert searched[0].endswith("\x1fmedian_ms")
    assert fourth != third  # its last night, as the trends show it
    pd.testing.assert_frame_equal(cached(store)[0], uncached(store))


def test_another_rule_reads_nothing_kept_by_this_one(runs: list[Path], tmp_path: Path) -> None:
    values = np.linspace(1.0, 2.0, 12)
    assert ChangeCache(Rule()).digest(values) != ChangeCache(Rule(penalty=6.0)).digest(values)
    assert ChangeCache(Rule()).digest(values) != ChangeCache(Rule()).digest(values[:-1])
    store = tmp_path / "h.duckdb"
    assert ingest(store, *runs) == 0
    report(store, tmp_path / "1.md")
    history = open_store(store)
    con = history.connect()
    pts = points(con)
    other = ChangeCache(Rule(penalty=6.0), history.change_cache(con, Rule()).stored)
    con.close()
    find_changes(pts, Rule(penalty=6.0), other)
    assert other.hits == 0 and len(other.fresh) == len(kept(store))
    with pytest.raises(ValueError, match="another rule"):
        find_changes(pts, Rule(), other)


def test_a_store_that_cannot_be_written_now_still_answers(
    runs: list[Path], tmp_path: Path, searched: list[str]
) -> None:
    store = tmp_path / "h.duckdb"
    assert ingest(store, *runs) == 0
    reader = subprocess.Popen(  # another process reads the store: it cannot be written meanwhile
        [sys.executable, "-c", f"import duckdb, sys; c = duckdb.connect({str(store)!r}, read_only=True); "
         "print('open', flush=True); sys.stdin.read()"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert reader.stdout is not None and reader.stdout.readline().strip() == "open"
        before = store.read_bytes()
        first = report(store, tmp_path / "1.md")
        assert searched and store.read_bytes() == before  # answered; nothing kept
    finally:
        reader.communicate("")
    searched.clear()
    assert report(store, tmp_path / "2.md") == first and searched  # searched again, and kept now
    searched.clear()
    assert report(store, tmp_path / "3.md") == first and searched == []


def test_a_parquet_store_keeps_them_beside_its_rows(
    runs: list[Path], tmp_path: Path, searched: list[str]
) -> None:
    url = (tmp_path / "pq").as_uri()
    assert ingest(url, *runs) == 0  # type: ignore[arg-type]
    first = report(url, tmp_path / "1.md")
    assert searched and (tmp_path / "pq" / CACHE_FILE).is_file()
    searched.clear()
    assert report(url, tmp_path / "2.md") == first and searched == []
    con = open_store(url).connect()
    assert con.execute("SELECT count(*) FROM history").fetchone() == (2 * NIGHTS * 6,)  # rows alone
    con.close()
    pd.testing.assert_frame_equal(cached(url)[0], uncached(url))
