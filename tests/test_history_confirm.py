"""History by nightly (suite/history/series.py, confirm.py, issues.py; `history confirm`): a
synthetic nightly history whose nights install the nightly of the day before, with a step planted on
one nightly. The nights stand on the x axis by their nightly's date; the change point names that
nightly as the first bad one, the one before as the last good, and the commit range between them;
an issue is opened only once the two nightlies, measured again, agree with the change."""

from __future__ import annotations

import csv
import json
import os
import sys
from datetime import date, timedelta
from pathlib import Path

import pandas as pd
import pytest
from support.history import REPO

import suite.history
from suite.cli import main
from suite.errors import UsageError
from suite.history.calibrate import TRUST, noise_pool
from suite.history.confirm import AGREES, AWAITING, DISAGREES, NOT_RUN, change_id, confirm
from suite.history.ingest import read_run, torch_date
from suite.history.store import open_store
from suite.history.synth import Build, History, Step, fake_sha, template_rows
from suite.results import COLUMNS

START, NIGHTS, STEP = date(2026, 12, 1), 18, 10
GPU = "NVIDIA H100 80GB HBM3"


def nightly_of(night: int) -> date:
    """The nightly night `night` installs: the day before it ran."""
    return START + timedelta(days=night - 1)


def version(night: int) -> str:
    return f"2.15.0.dev{nightly_of(night):%Y%m%d}+cu130"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[Path], Path]:
    """18 nights of stable and a nightly (each night the nightly of the day before), the nightly's
    compiled ResNet 10% slower from night 10 on: from the nightly of 2026-12-10."""
    template = template_rows(
        REPO / TRUST / "gate" / "aa" / "rep-1" / "raw" / "current__cpu.csv",
        models=("ResNet", "ViT"),
        modes=("eager", "default"),
    )
    h = History(
        template,
        [Build("stable", "2.0.1+cu118"), Build("nightly-current", "2.15.0.dev{date}+cu130", lag=1)],
        [("cuda", GPU)],
        START,
        NIGHTS,
        noise_pool([REPO / TRUST / "gate" / "aa"]).deviations,
        steps=[Step(STEP, 1.10, models=("ResNet",), modes=("default",), builds=("nightly-current",))],
        seed=5,
    )
    root = tmp_path_factory.mktemp("confirm")
    runs = h.write(root / "runs")
    open_store(root / "h.duckdb").ingest(read_run(runs).nights)
    return runs, root / "h.duckdb"


def resnet_changes(store: Path) -> pd.DataFrame:
    changes = suite.history.view(store).changes
    return changes[changes["model"].str.startswith("ResNet")]


def test_nights_stand_on_their_nightly_and_the_step_names_its_nightly_and_commits(
    history: tuple[list[Path], Path],
) -> None:
    _, store = history
    pts = suite.history.view(store).points
    nightly = pts[pts["build"] == "nightly-current"]
    assert (nightly["date"] == nightly["run_date"] - pd.Timedelta(days=1)).all()
    assert (nightly["date"] == nightly["nightly_date"]).all()
    stable = pts[pts["build"] == "stable"]
    assert (stable["date"] == stable["run_date"]).all() and stable["nightly_date"].isna().all()
    changes = resnet_changes(store)
    assert set(changes["metric"]) == {"median_ms", "speedup"}
    for r in changes.itertuples():
        assert (r.last_good_date, r.first_bad_date) == (pd.Timestamp(nightly_of(STEP - 1)), pd.Timestamp(nightly_of(STEP)))
        assert (r.last_good_run_date, r.first_bad_run_date) == (pd.Timestamp(START + timedelta(days=STEP - 1)), pd.Timestamp(START + timedelta(days=STEP)))
        good, bad = fake_sha(version(STEP - 1)), fake_sha(version(STEP))
        assert r.commit_range_url == f"https://github.com/pytorch/pytorch/compare/{good}...{bad}"
        assert "--good 2026-12-09 --bad 2026-12-10" in r.confirm_command
    # nothing else moved (A/A)
    assert len(suite.history.view(store).changes) == len(changes)


def measured_again(base: Path, dst: Path, night: int, factor: float) -> Path:
    """A run folder as the cell measured again tonight with the nightly of `night` would leave it,
    on a quiet machine (CIs of 1%): `base`'s rows, the compiled calls `factor` times as long."""
    src = next((base / "raw").glob("nightly-current__*.csv"))
    rows = list(csv.DictReader(open(src, encoding="utf-8")))
    for row in rows:
        row.update(torch_version=version(night), torch_git=fake_sha(version(night)), run_id=dst.name)
        row["started_at"] = "2026-12-20T01:00:00+00:00"
        if row["status"] == "ok" and row["mode"] != "eager":
            median, speedup = float(row["median_ms"]) * factor, float(row["speedup"]) / factor
            row.update(median_ms=median, ci95_low_ms=median * 0.99, ci95_high_ms=median * 1.01)
            row.update(speedup=speedup, speedup_ci95_low=speedup * 0.99, speedup_ci95_high=speedup * 1.01)
    (dst / "raw").mkdir(parents=True)
    with open(dst / "raw" / "nightly-current__cuda.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, COLUMNS, extrasaction="ignore", lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
    return dst


def test_a_confirmation_that_agrees_files_the_issue_with_both_measurements(
    history: tuple[list[Path], Path], tmp_path: Path
) -> None:
    runs, store = history
    changes = resnet_changes(store)
    change = changes.iloc[0].to_dict()
    # measured again: the good nightly's and the bad nightly's runs (as they ran), back to back
    measured: list[date] = []

    def measure(day: date) -> Path:
        measured.append(day)
        night = (day - START).days + 1
        factor = 1.10 if night >= STEP else 1.0
        return measured_again(runs[STEP - 1], tmp_path / f"again-{day:%Y%m%d}", night, factor)

    conf = confirm(change, measure)
    assert measured == [nightly_of(STEP - 1), nightly_of(STEP)]
    assert conf.judged == "bad" and conf.change_id == change_id(change)
    assert conf.outcome("median_ms", 10.0) == AGREES and conf.outcome("median_ms", -10.0) == DISAGREES
    assert conf.good is not None and conf.bad is not None and conf.bad.median_ms > conf.good.median_ms
    # the same through the verb, then issues: exactly one, carrying both measurements
    lines = _verb(["--list", "--store", str(store)], capture=True)
    listed = [json.loads(line) for line in lines]
    assert [(x["change"], x["good"], x["bad"], x["cell"]) for x in listed] == [
        (change["change_id"] if "change_id" in change else change_id(change), "2026-12-09", "2026-12-10",
         "ResNet,1,default")
    ]


def _verb(args: list[str], capture: bool = False) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["history", "confirm", *args]) == 0
    return out.getvalue().splitlines() if capture else []
