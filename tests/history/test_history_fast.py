"""The history's fast paths give what the general ones give (cheap: the committed smoke runs and
a few short series): a clean run read without the merge's frame stores the same table; the
change points' PELT, called without ruptures' package, breaks where ruptures' own class does; the
points, sorted by their ranks, come in DuckDB's ORDER BY order; numbers parsed without their
empty fields parse as pandas parses them."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

import suite.history.ingest as ingest
from suite.history.changes import Rule, candidates, noise_sigma

REPO = Path(__file__).resolve().parents[2]
RUNS = (
    REPO / "results" / "2026-11-21-cpu-amd-epyc-smoke",  # before the health and malloc columns
    REPO / "results" / "2026-11-24-cpu-intel-xeon-trust" / "gate" / "aa" / "rep-1",
)
NOW = datetime(2026, 12, 1)


@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_a_clean_run_reads_as_the_merge_reader_reads_it(run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fast = ingest.read_run([run], now=NOW)
    assert ingest._read_clean(ingest.find_csvs([run])) is not None  # the fast path was taken
    monkeypatch.setattr(ingest, "_read_clean", lambda files: None)
    slow = ingest.read_run([run], now=NOW)
    assert fast.notes == slow.notes
    assert [n.night_id for n in fast.nights] == [n.night_id for n in slow.nights]
    for a, b in zip(fast.nights, slow.nights, strict=True):
        assert a.rows.equals(b.rows) and a.date == b.date and a.torch_version == b.torch_version


def test_the_pelt_breaks_where_ruptures_kernelcpd_does() -> None:
    ruptures = pytest.importorskip("ruptures")
    rng = np.random.default_rng(0)
    rule, found = Rule(), 0
    for n in (8, 30, 120):
        for step in (0.0, 0.05):
            x = rng.normal(0, 0.02, n)
            x[n // 2 :] += step
            sigma = noise_sigma(x, rule.sigma_floor)
            z = np.clip((x - np.median(x)) / sigma, -rule.clip_z, rule.clip_z).reshape(-1, 1)
            algo = ruptures.KernelCPD(kernel="linear", min_size=rule.min_segment, jump=1).fit(z)
            breaks = candidates(x, rule)
            assert breaks == algo.predict(pen=rule.penalty * np.log(n))[:-1]
            found += len(breaks)
    assert found  # the steps were broken at


def test_the_points_order_is_duckdbs_order_by() -> None:
    """series.sort_order: the rows as `ORDER BY` puts them (text by its bytes, NULLs last), ties
    kept in the table's order."""
    import duckdb

    from suite.history.series import sort_order

    rng = np.random.default_rng(1)
    words = np.array(["", "a", "B", "b", "é", "Z", "ä", "a b", "ab", None], dtype=object)
    n = 400
    con = duckdb.connect()
    con.execute("CREATE TABLE t (i INTEGER, s VARCHAR, u VARCHAR, k BIGINT, d TIMESTAMP)")
    con.executemany(
        "INSERT INTO t VALUES (?, ?, ?, ?, ?)",
        [
            (i, words[rng.integers(len(words))], words[rng.integers(len(words))],
             None if rng.random() < 0.1 else int(rng.integers(-3, 4)),
             None if rng.random() < 0.1 else datetime(2026, 12, 1 + int(rng.integers(0, 5))))
            for i in range(n)
        ],
    )  # fmt: skip
    keys = ("s", "k", "d", "u")
    table = con.sql("SELECT * FROM t ORDER BY i").to_arrow_table()
    ordered = table.take(sort_order(table, keys)).column("i").to_pylist()
    # DuckDB's own order, ties broken by the table's order (which ORDER BY leaves open)
    assert ordered == [r[0] for r in con.execute(f"SELECT i FROM t ORDER BY {', '.join(keys)}, i").fetchall()]


def test_numbers_parsed_without_their_empty_fields_parse_as_pandas_parses_them() -> None:
    """suite.report.load.parse_numbers skips the empty fields; what it parses, pandas parses."""
    import pandas as pd

    from suite.report.load import parse_numbers

    texts = ["", "1", "-2.5", "1e3", "007", "nan", "inf", "-inf", "x", " 5", "1_000", "0x10", "3.0", "9" * 20]
    raw = np.array(texts * 3, dtype=object).reshape(-1, 3)
    whole = pd.to_numeric(pd.Series(raw.ravel(order="F")), errors="coerce").to_numpy(float)
    assert np.array_equal(parse_numbers(raw), whole.reshape(raw.shape, order="F"), equal_nan=True)
    assert np.isnan(parse_numbers(np.full((2, 2), "", dtype=object))).all()
