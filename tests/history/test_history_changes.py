"""Change points with known answers (suite/history/changes.py, series.py, pageview.py): nights of
real rows moved by this suite's own A/A noise (its committed repeat runs), with steps planted at
known nights; a failed night; a nightly that moves from 2.14 to 2.15; cells left alone (A/A).
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import suite.history
from suite.benchmarks.synth import Build, History, Step, fake_sha, template_rows
from suite.cli import main
from suite.history.calibrate import TRUST, aa_rates, noise_pool, step_rates
from suite.history.changes import Rule, detect, hodges_lehmann
from suite.history.ingest import read_run
from suite.history.store import open_store
from suite.results.series_key import CHANGE_COLUMNS, POINT_COLUMNS

REPO = Path(__file__).resolve().parents[2]
START = date(2026, 12, 1)
NIGHTS = 26
GAP, LINE_CHANGE, STEP = 8, 12, 16  # a failed night, the nightly's move to 2.15, a regression


def day(night: int) -> pd.Timestamp:
    return pd.Timestamp(START + timedelta(days=night))


@pytest.fixture(scope="module")
def pool() -> dict[str, np.ndarray]:
    return noise_pool([REPO / TRUST / "gate" / "aa"]).deviations  # 3 A/A runs of the smoke cells


@pytest.fixture(scope="module")
def store(pool: dict[str, np.ndarray], tmp_path_factory: pytest.TempPathFactory) -> Path:
    """26 nights of six real cells (ViT, ResNet, DETR; eager and default) on an H100's name: the
    compiled ViT 10% slower from the failed night on, DETR from the nightly's line change on, ResNet
    from night 16; the eager cells untouched."""
    template = template_rows(
        REPO / TRUST / "gate" / "aa" / "rep-1" / "raw" / "current__cpu.csv",
        models=("ViT", "ResNet", "DETR"),
        modes=("eager", "default"),
    )
    nightly = Build("nightly-current", "2.14.0.dev{date}+cu130", (LINE_CHANGE, "2.15.0.dev{date}+cu130"))
    history = History(
        template,
        [nightly],
        [("cuda", "NVIDIA H100 80GB HBM3")],
        START,
        NIGHTS,
        pool,
        steps=[
            Step(GAP, 1.10, models=("ViT",), modes=("default",)),
            Step(LINE_CHANGE, 1.10, models=("DETR",), modes=("default",)),
            Step(STEP, 1.10, models=("ResNet",), modes=("default",)),
        ],
        failed_nights=[GAP],
        seed=3,
    )
    root = tmp_path_factory.mktemp("history")
    runs = history.write(root / "runs")
    open_store(root / "h.duckdb").ingest(read_run(runs).nights)
    return root / "h.duckdb"


def test_the_planted_steps_are_found_at_their_nights_and_nothing_else(store: Path) -> None:
    view = suite.history.view(store)
    assert list(view.points.columns[: len(POINT_COLUMNS)]) == list(POINT_COLUMNS)
    assert list(view.changes.columns[: len(CHANGE_COLUMNS)]) == list(CHANGE_COLUMNS)
    found = {
        (r.model.split(" (")[0], r.mode, r.metric): (r.last_good_date, r.first_bad_date, r.direction)
        for r in view.changes.itertuples()
    }
    # a compiled call 10% slower: its median rises, its paired speed-up falls; eager cells: A/A
    assert found == {
        ("ViT", "default", "median_ms"): (day(GAP - 1), day(GAP + 1), "slower"),  # across the gap
        ("ViT", "default", "speedup"): (day(GAP - 1), day(GAP + 1), "smaller"),
        ("DETR", "default", "median_ms"): (day(LINE_CHANGE - 1), day(LINE_CHANGE), "slower"),
        ("DETR", "default", "speedup"): (day(LINE_CHANGE - 1), day(LINE_CHANGE), "smaller"),
        ("ResNet", "default", "median_ms"): (day(STEP - 1), day(STEP), "slower"),
        ("ResNet", "default", "speedup"): (day(STEP - 1), day(STEP), "smaller"),
    }
    for r in view.changes.itertuples():
        assert 5 < abs(r.change_pct) < 16 and r.change_ci_low_pct <= r.change_pct <= r.change_ci_high_pct
        assert (r.change_ci_low_pct > 0) == (r.change_pct > 0)  # the CI excludes 0
        good = f"2.1{4 if r.last_good_date < day(LINE_CHANGE) else 5}.0.dev{r.last_good_date:%Y%m%d}+cu130"
        assert r.last_good_git == fake_sha(good) and r.first_bad_git == fake_sha(
            f"2.1{4 if r.first_bad_date < day(LINE_CHANGE) else 5}.0.dev{r.first_bad_date:%Y%m%d}+cu130"
        )
        assert (
            r.commit_range_url
            == f"https://github.com/pytorch/pytorch/compare/{r.last_good_git}...{r.first_bad_git}"
        )
        assert r.confirm_command == (
            f'nox -s bisect -- --cell "{r.model.split(" (")[0]},1,default" '
            f"--good {r.last_good_date:%Y-%m-%d} --bad {r.first_bad_date:%Y-%m-%d} --build nightly-current"
        )
    detr = view.changes[view.changes["model"].str.startswith("DETR")].iloc[0]
    assert (detr["build_line"], detr["last_good_build_line"]) == ("nightly 2.15", "nightly 2.14")


def test_points_keep_the_gap_and_both_build_lines(store: Path) -> None:
    points = suite.history.view(store, model="ResNet (smoke, random weights)", mode="eager").points
    assert len(points) == NIGHTS - 1 and day(GAP) not in set(points["date"])
    assert points.groupby("build_line").size().to_dict() == {
        "nightly 2.14": LINE_CHANGE - 1,
        "nightly 2.15": 14,
    }
    assert points["speedup"].isna().all() and points["compile_s"].isna().all()  # eager: no pair, no compile
    assert (points["median_ci_low_ms"] <= points["median_ms"]).all()


def test_report_shows_the_changes_and_the_trends(store: Path, capsys) -> None:
    assert main(["history", "report", "--store", str(store), "--model", "ResNet"]) == 0
    out = capsys.readouterr().out
    assert f"| {day(STEP - 1):%Y-%m-%d} | {day(STEP):%Y-%m-%d} |" in out
    assert "2 confirmed change point(s)" in out and "## Trends" in out
    assert main(["history", "report", "--store", str(store), "--batch-size", "x"]) == 2


def test_a_change_needs_its_new_level_held_to_be_confirmed(pool: dict[str, np.ndarray]) -> None:
    rng = np.random.default_rng(7)
    values = np.exp(rng.choice(pool["speedup"], size=40))
    values[-4:] /= 1.10  # four nights on a new level: found, pending; five: confirmed
    (shift,) = detect(values)
    assert shift.at == 36 and not shift.confirmed(Rule())
    values = np.concatenate([values, np.exp(rng.choice(pool["speedup"], size=1)) / 1.10])
    (shift,) = detect(values)
    assert shift.at == 36 and shift.confirmed(Rule())
    assert detect(values[:7]) == []  # too few nights to judge


def test_hodges_lehmann_is_the_median_pairwise_shift_with_an_order_statistic_interval() -> None:
    before, after = np.array([0.0, 1.0, 2.0]), np.array([10.0, 11.0, 12.0, 13.0])
    shift, low, high = hodges_lehmann(before, after, 0.95)
    assert shift == 10.5 and low == 8.0 and high == 13.0  # 12 differences, 8 to 13; n too small: the range


def test_the_rates_on_a_few_real_noise_histories(pool: dict[str, np.ndarray]) -> None:
    """A small sample of what `history calibrate` measures (docs/history.md has the full figures)."""
    rule = Rule()
    assert aa_rates(pool["median_ms"], 60, 20, rule).alarms <= 1  # about 1 in 300 (docs/history.md)
    found = step_rates(pool["speedup"], 30, 30, -0.10, 10, rule)
    assert found.near == 10
