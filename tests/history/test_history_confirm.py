"""History by nightly (suite/history/series.py, confirm.py, suite/automation/issues.py;
`history confirm`): a synthetic nightly history whose nights install the nightly of the day
before, with a step planted on one nightly. The nights stand on the x axis by their nightly's
date; the change point names that nightly as the first bad one, the one before as the last good,
and the commit range between them; an issue is opened only once the two nightlies, measured
again, agree with the change."""

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
from suite.benchmarks.synth import Build, History, Step, fake_sha, template_rows
from suite.cli import main
from suite.errors import UsageError
from suite.history.calibrate import TRUST, noise_pool
from suite.history.confirm import AGREES, AWAITING, DISAGREES, NOT_RUN, change_id, confirm
from suite.history.ingest import read_run, torch_date
from suite.history.store import open_store
from suite.report.pages.history_page import history_data
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
    view = suite.history.view(store)
    pts = view.points
    nightly = pts[pts["build"] == "nightly-current"]
    assert (nightly["date"] == nightly["run_date"] - pd.Timedelta(days=1)).all()
    assert (nightly["date"] == nightly["nightly_date"]).all()
    stable = pts[pts["build"] == "stable"]
    assert (stable["date"] == stable["run_date"]).all() and stable["nightly_date"].isna().all()
    changes = view.changes[view.changes["model"].str.startswith("ResNet")]
    assert set(changes["metric"]) == {"median_ms", "speedup"}
    for r in changes.itertuples():
        assert (r.last_good_date, r.first_bad_date) == (
            pd.Timestamp(nightly_of(STEP - 1)),
            pd.Timestamp(nightly_of(STEP)),
        )
        assert (r.last_good_run_date, r.first_bad_run_date) == (
            pd.Timestamp(START + timedelta(days=STEP - 1)),
            pd.Timestamp(START + timedelta(days=STEP)),
        )
        good, bad = fake_sha(version(STEP - 1)), fake_sha(version(STEP))
        assert r.commit_range_url == f"https://github.com/pytorch/pytorch/compare/{good}...{bad}"
        assert "--good 2026-12-09 --bad 2026-12-10" in r.confirm_command
    # nothing else moved (A/A)
    assert len(view.changes) == len(changes)
    # the page: each nightly night at its nightly's date (and when it ran); the change awaiting
    data = history_data(view)
    for n in data["nights"]:
        ran = date.fromisoformat(n["date"]) + timedelta(days=1)
        assert n["ran"] == (ran.isoformat() if n["build"] == "nightly-current" else "")
    assert {(c["last_good"], c["first_bad"], c["measured"]) for c in data["changes"]} == {
        ("2026-12-09", "2026-12-10", AWAITING)
    }
    assert {c["url"] for c in data["changes"]} == {changes["commit_range_url"].iloc[0]}


def test_the_report_names_the_first_bad_nightly_its_commits_and_that_it_awaits(
    history: tuple[list[Path], Path], tmp_path: Path
) -> None:
    _, store = history
    out = tmp_path / "report.md"
    assert main(["history", "report", "--store", str(store), "--changes-only", "-o", str(out)]) == 0
    rows = [line for line in out.read_text().splitlines() if line.startswith("| NVIDIA") and "ResNet" in line]
    url = f"compare/{fake_sha(version(STEP - 1))}...{fake_sha(version(STEP))}"
    assert len(rows) == 2 and all(
        "| 2026-12-09 | 2026-12-10 |" in r and url in r and "awaiting (`nox -s confirm`)" in r for r in rows
    )


def measured_again(base: Path, dst: Path, night: int, factor: float) -> Path:
    """A run folder as the cell measured again tonight with the nightly of `night` would leave it,
    on a quiet machine (CIs of 1%): `base`'s rows, the compiled calls `factor` times as long."""
    src = next((base / "raw").glob("nightly-current__*.csv"))
    with open(src, encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
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


FAKE_GH = """#!{python}
import json, os, sys
stdin = sys.stdin.read() if "-" in sys.argv else None
with open(os.environ["FAKE_GH_LOG"], "a") as fh:
    fh.write(json.dumps({{"args": sys.argv[1:], "stdin": stdin}}) + "\\n")
print("[]" if sys.argv[1:3] == ["issue", "list"] else "")
"""


def issues_created(log: Path) -> list[dict[str, object]]:
    """What the fake gh was asked to create (nothing, where it was never called)."""
    logged = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
    return [e for e in logged if e["args"][:2] == ["issue", "create"]]


def _verb(args: list[str], capsys: pytest.CaptureFixture[str]) -> list[str]:
    capsys.readouterr()
    assert main(["history", "confirm", *args]) == 0
    return capsys.readouterr().out.splitlines()


@pytest.mark.parametrize("factor", [1.10, 1.0])
def test_an_issue_only_when_the_confirmation_agrees(
    history: tuple[list[Path], Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    factor: float,
) -> None:
    """Measured again 10% slower: agrees, one issue with both measurements; measured again the
    same: disagrees, no issue (and the verdict's --issues files none either)."""
    runs, shared = history
    store = tmp_path / "h.duckdb"
    store.write_bytes(shared.read_bytes())
    (tmp_path / "bin").mkdir()
    gh = tmp_path / "bin" / "gh"
    gh.write_text(FAKE_GH.format(python=sys.executable))
    gh.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_GH_LOG", str(tmp_path / "gh.log"))
    # before any confirmation: the verdict names the change as awaiting one, and files nothing
    summary = tmp_path / "summary.md"
    assert (
        main(["history", "verdict", str(runs[-1]), "--store", str(store), "-o", str(summary), "--issues"])
        == 0
    )
    told = summary.read_text()
    assert "Awaiting a confirmation" in told and "2026-12-09 → 2026-12-10" in told
    assert "### Trends of the 8 series this run measured" in told  # the nightly's at its nightly's date
    listed = [json.loads(line) for line in _verb(["--list", "--store", str(store)], capsys)]
    assert [(x["good"], x["bad"], x["cell"], x["build"], x["gpu"]) for x in listed] == [
        ("2026-12-09", "2026-12-10", "ResNet,1,default", "nightly-current", GPU)
    ]
    good = measured_again(runs[STEP - 1], tmp_path / "good", STEP - 1, 1.0)
    bad = measured_again(runs[STEP - 1], tmp_path / "bad", STEP, factor)
    args = [
        "--store",
        str(store),
        "--change",
        listed[0]["change"],
        "--good-run",
        str(good),
        "--bad-run",
        str(bad),
    ]
    out = _verb([*args, "--issues"], capsys)
    kept = json.loads(out[-1])
    assert kept["judged"] == ("bad" if factor > 1 else "good")
    assert (kept["good"]["torch_version"], kept["bad"]["torch_version"]) == (version(STEP - 1), version(STEP))
    assert _verb(["--list", "--store", str(store)], capsys) == []  # told: no longer awaiting
    created = issues_created(tmp_path / "gh.log")
    report = tmp_path / "report.md"
    assert main(["history", "report", "--store", str(store), "--changes-only", "-o", str(report)]) == 0
    if factor > 1:
        assert len(created) == 1
        body = created[0]["stdin"]
        assert "Measured again, back to back on one machine" in body
        assert f"| last good 2026-12-09 | {version(STEP - 1)} |" in body
        assert f"| first bad 2026-12-10 | {version(STEP)} |" in body
        assert f"compare/{fake_sha(version(STEP - 1))}...{fake_sha(version(STEP))}" in body
        assert " agrees |" in report.read_text()
        gh.write_text("#!/bin/sh\necho 'HTTP 401: Bad credentials' >&2\nexit 1\n")
        assert main(["history", "confirm", *args, "--issues", "--repo", "me/bench"]) == 2
    else:
        assert created == []
        assert "disagrees: not confirmed" in report.read_text()
        assert (
            main(["history", "verdict", str(runs[-1]), "--store", str(store), "-o", str(summary), "--issues"])
            == 0
        )
        assert "Not confirmed (measured again: disagrees; no issue)" in summary.read_text()
        assert issues_created(tmp_path / "gh.log") == []


def test_a_confirmation_of_the_wrong_nightly_or_gpu_is_refused(
    history: tuple[list[Path], Path], tmp_path: Path
) -> None:
    runs, store = history
    change = resnet_changes(store).iloc[0].to_dict()
    from suite.history.confirm import judge_pair

    good = measured_again(runs[STEP - 1], tmp_path / "good", STEP - 1, 1.0)
    wrong = measured_again(runs[STEP - 1], tmp_path / "wrong", STEP + 2, 1.1)
    with pytest.raises(UsageError, match="not the first bad nightly of 2026-12-10"):
        judge_pair(change, good, wrong)
    assert judge_pair(change, good, None).judged == NOT_RUN
    other = dict(change, gpu="NVIDIA A100-SXM4-80GB")
    with pytest.raises(UsageError, match="not on the change's GPU"):
        judge_pair(other, good, good)


def test_a_stated_nightly_date_wins_over_the_version(
    history: tuple[list[Path], Path], tmp_path: Path
) -> None:
    """A run that states the nightly it resolved (a `torch_nightly_date` column, which this suite's
    contract may not list yet: kept in `extra`) stands at that date."""
    runs, _ = history
    src = next((runs[3] / "raw").glob("nightly-current__*.csv"))
    lines = src.read_text().splitlines()
    (tmp_path / "raw").mkdir()
    stated = [lines[0] + ",torch_nightly_date", *(line + ",20261130" for line in lines[1:])]
    (tmp_path / "raw" / src.name).write_text("\n".join(stated) + "\n")
    (night,) = read_run([tmp_path]).nights
    assert night.torch_version == version(3) and set(night.rows.column("torch_date").to_pylist()) == {
        date(2026, 11, 30)
    }
    assert torch_date("2.15.0.dev20261203+cu130") == date(2026, 12, 3)
    assert torch_date("2.15.0.dev20261203+cu130", "20261204") == date(2026, 12, 4)
    assert torch_date("2.15.0.dev20261203+cu130", "2026-12-05") == date(2026, 12, 5)
    assert torch_date("2.13.0+cu130") is None and torch_date("2.13.0+cu130", "junk") is None


def test_the_confirm_workflow_follows_each_night_is_never_dropped_and_files_only_through_confirm() -> None:
    """It starts when a bench-nightly run ends, in a concurrency group of its own: GitHub keeps
    one pending run per group and cancels it for the next one queued, so sharing the benchmark's
    group could cancel a pending night (the Saturday run) or be cancelled by it."""
    import yaml

    workflows = REPO / ".github" / "workflows"
    wf = yaml.safe_load((workflows / "history-confirm.yml").read_text())
    nightly = yaml.safe_load((workflows / "bench-nightly.yml").read_text())
    assert set(wf[True]) == {"workflow_run", "workflow_dispatch"}  # never for a pull request
    assert wf[True]["workflow_run"] == {"workflows": [nightly["name"]], "types": ["completed"]}
    assert wf["concurrency"]["group"] != nightly["concurrency"]["group"]
    assert wf["concurrency"]["cancel-in-progress"] is False
    (job,) = wf["jobs"].values()
    (step,) = [s for s in job["steps"] if "nox -s confirm" in s.get("run", "")]
    assert '--gpu "$gpu" --device cuda "${issues[@]}"' in step["run"] and "--query-gpu=name" in step["run"]
    assert job["permissions"]["issues"] == "write"


@pytest.mark.parametrize("kind", ["duckdb", "parquet"])
def test_both_stores_keep_one_confirmation_per_change(
    history: tuple[list[Path], Path], tmp_path: Path, kind: str
) -> None:
    runs, _ = history
    where = tmp_path / ("h.duckdb" if kind == "duckdb" else "h")
    store = open_store(where)
    with pytest.raises(UsageError, match="no history here yet"):
        store.keep_confirmation_record("c1", "{}")
    assert not where.exists()  # nothing made by a refusal
    store.ingest(read_run(runs[:1]).nights)
    store.keep_confirmation_record("c1", '{"a": 1}')
    store.keep_confirmation_record("c2", '{"b": 2}')
    store.keep_confirmation_record("c1", '{"a": 3}')  # a later one replaces it
    con = store.connect()
    try:
        assert store.confirmation_records(con) == {"c1": '{"a": 3}', "c2": '{"b": 2}'}
        assert len(con.execute("SELECT * FROM history").fetchall()) == 8  # the rows untouched
    finally:
        con.close()
