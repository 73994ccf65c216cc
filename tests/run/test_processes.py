"""Processes per cell: the first process cold (its compile is compile_s), the others on
its caches (their compile apart, in warm_compile_s); the row's median, its interval and the paired
speed-up pooled over every process with a hierarchical bootstrap (processes, then calls), whose
interval widens with what moves between processes. Fake workers: no model, no child process."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from suite.results import KEY_COLUMNS
from suite.run import cell_path, launch, pooled, runner
from suite.run.launch import SAMPLES, RunPaths
from suite.spec.model import Cell, ModelSpec
from suite.spec.settings import Settings
from suite.stats import hierarchical_median_ci, hierarchical_ratio_ci, median, median_ci


def cell(processes: int, mode: str = "default", **settings: Any) -> Cell:
    model = ModelSpec(name="M", task="Image Classification", model_type="vit", config={})
    return Cell(
        build="b", model=model, batch_size=1, mode=mode, scenario="inference",
        settings=Settings(processes=processes, weights="random", **settings),
    )  # fmt: skip


class Workers:
    """Process p's calls: eager 10 + p ms, compiled 5 + p ms (a between-process shift), 4 each;
    the third process fails when `fail` says so."""

    def __init__(self, fail: bool = False) -> None:
        self.jobs: list[launch.WorkerJob] = []
        self.fail = fail

    def __call__(self, job: launch.WorkerJob) -> launch.WorkerResult:
        p = len(self.jobs)
        self.jobs.append(job)
        if self.fail and p == 2:
            return launch.WorkerResult([{"status": "timeout", "error": "killed"}], 1.0, "logs/x.log")
        eager = [10.0 + p + d for d in (-0.1, 0.0, 0.05, 0.1)]
        compiled = [5.0 + p + d for d in (-0.1, 0.0, 0.05, 0.1)]
        fields = {"status": "ok", "error": "", "compile_s": 30.0 if p == 0 else 3.0 + p,
                  "median_ms": median(compiled), "calls": 8, "timed_s": 0.1,
                  SAMPLES: {"eager": eager, "compiled": compiled}}  # fmt: skip
        return launch.WorkerResult([fields], 2.0, "logs/x.log")


def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, c: Cell, workers: Workers) -> dict[str, Any]:
    monkeypatch.setattr(launch, "run_worker", workers)
    result = cell_path.run_cell(launch.WorkerJob(c, "cpu", RunPaths.make(tmp_path, "r", "b", "cpu"), 0))
    assert result.wall_s == 2.0 * len(workers.jobs) - (1.0 if workers.fail else 0.0)  # every process
    return result.fields


def test_three_processes_pool_their_samples_and_keep_compile_s_cold(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    workers = Workers()
    fields = run(tmp_path, monkeypatch, cell(3), workers)
    first, *warm = workers.jobs
    assert first.cache is not None and all(j.cache == first.cache for j in warm)  # its caches
    assert all(j.log_path is not None for j in warm) and first.log_path is None  # one log per cell
    assert fields["compile_s"] == 30.0 and fields["warm_compile_s"] == 4.5  # never mixed
    assert fields["processes"] == 3 and fields["iterations"] == 12 and fields["calls"] == 24
    assert fields["median_ms"] == pytest.approx(6.025)
    assert fields["process_spread_pct"] == pytest.approx(100 * (7.025 / 5.025 - 1))
    # the interval covers the processes' shift, where one process's would not
    assert fields["ci95_low_ms"] <= 5.5 and fields["ci95_high_ms"] >= 6.5
    assert fields["speedup"] == pytest.approx(median([10.0, 11.0, 12.0]) / 6.0, rel=0.01)
    assert fields["speedup_ci95_low"] < fields["speedup"] < fields["speedup_ci95_high"]
    kept = fields[SAMPLES]
    assert [(k["process"], k["cold"]) for k in kept] == [(0, True), (1, False), (2, False)]
    row = {c: "x" for c in KEY_COLUMNS} | {"run_id": "r"}
    assert len(runner.process_samples(row, kept)) == 6  # 3 processes x 2 series, beside the CSV


def test_a_failed_warm_process_is_noted_and_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fields = run(tmp_path, monkeypatch, cell(3), Workers(fail=True))
    assert fields["processes"] == 2 and fields["status"] == "ok"
    assert fields["process_note"] == "process 3 of 3 ended timeout: killed"


def test_one_process_is_the_usual_worker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    workers = Workers()
    fields = run(tmp_path, monkeypatch, cell(1, mode="eager"), workers)
    assert len(workers.jobs) == 1 and workers.jobs[0].cache is None and "processes" not in fields


def test_the_hierarchical_interval_is_the_order_statistic_one_for_one_process() -> None:
    rng = random.Random(0)
    one = [rng.gauss(10, 1) for _ in range(101)]
    assert hierarchical_median_ci([one]) == median_ci(one)
    shifted = [[x + p for x in one] for p in range(3)]
    lo, hi = hierarchical_median_ci(shifted)
    assert hi - lo > 3 * (median_ci(one)[1] - median_ci(one)[0])  # the shift of 2 ms is in it
    assert hierarchical_ratio_ci(shifted, shifted) == (1.0, 1.0)  # paired within each process
    with pytest.raises(ValueError):
        hierarchical_ratio_ci([[1.0]], [[1.0, 2.0]])


def test_unpaired_series_keep_the_first_speed_up() -> None:
    kept = [{"series": {"compiled": [1.0, 2.0], "eager": [2.0, 3.0]}}, {"series": {"compiled": [1.0]}}]
    out = pooled.fields(kept, compiled=True, compile_s=1.0)
    assert out["processes"] == 2 and "speedup" not in out


def test_processes_is_a_validated_setting() -> None:
    assert replace(Settings(), processes=3).processes == 3
    with pytest.raises(ValueError, match=r"at most 32"):
        Settings(processes=0)


def test_the_cost_model_counts_each_further_process() -> None:
    from suite.spec.cost import estimate_seconds

    one, three = cell(1), cell(3)
    assert estimate_seconds(one) < estimate_seconds(three) < 3 * estimate_seconds(one)  # warm compiles


def test_coverage_counts_medians_inside_the_other_repetitions_intervals() -> None:
    from suite.run.coverage import Series, count, measure
    from suite.run.repeat import CellSpread

    medians = (10.0, 10.2, 11.0)
    intervals = ((9.9, 10.3), (10.1, 10.4), (10.8, 11.2))
    pairs = [(i, j) for i in range(3) for j in range(3) if i != j]
    tally = count(medians, lambda i, j: intervals[j], pairs)
    assert (tally.hits, tally.pairs) == (1, 6)  # 10.2 inside the 1st's; 10.0 and 11.0 in no other
    cell = CellSpread({"model": "M", "batch_size": "1", "mode": "eager"}, medians, (), (), (), intervals)
    (measured,), _ = measure([Series.medians(cell)])
    assert str(measured.ci) == "1 / 6 (16.7%)"
