"""The history's fast paths give what the general ones give (cheap: the committed smoke runs and
a few short series): a clean run read without the merge's frame stores the same table; the
change points' PELT, called without ruptures' package, breaks where ruptures' own class does."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import numpy as np
import pytest

import suite.history.ingest as ingest
from suite.history.changes import Rule, candidates, noise_sigma

REPO = Path(__file__).resolve().parent.parent
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
