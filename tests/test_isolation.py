"""Each cell in its own process: a cell that fails, in any way, gets its status row and the
sweep goes on. Faults are injected through SUITE_FAULT=<kind>:<model> (suite/measure/faults.py)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from support import REPO, tiny_run_cmd

from suite.results import COLUMNS, TIMING_COLUMNS, key_of, read_rows

# The --timeout of the hang case. It bounds every cell of the run, the good one too, from
# process start: TinyResNet's cold start (Python, torch, transformers) took 20 s on this
# 2-core machine under a load of 6, which made 15 s fail. The hanging cell sleeps, so the
# wait costs wall time but no CPU.
HANG_TIMEOUT_S = 60


def run_suite(
    out: Path, *args: str, fault: str = "", timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, SUITE_FAULT=fault, PYTHONPATH=str(REPO))
    cmd = tiny_run_cmd(out, "t", *args)
    return subprocess.run(
        cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=timeout, check=False
    )


def rows_of(out: Path) -> list[dict[str, str]]:
    """The run's rows: the CSV parses whole and holds no cell twice."""
    (csv_path,) = (out / "t" / "raw").glob("*.csv")
    result = read_rows(csv_path)
    assert result.repaired == 0 and result.skipped == 0
    keys = [key_of(r) for r in result.rows]
    assert len(keys) == len(set(keys)), f"duplicated cells: {keys}"
    return result.rows


@pytest.mark.parametrize(
    ("fault", "status", "reason"),
    [
        ("raise", "error", "RuntimeError: injected fault: exception in forward"),
        ("oom", "oom", "out of memory"),
        ("segfault", "error", "worker killed by SIGSEGV"),
        ("abort", "error", "worker killed by SIGABRT"),
        ("hang", "timeout", f"no result after {HANG_TIMEOUT_S} s"),
    ],
)
def test_a_failing_cell_gets_its_status_and_the_sweep_goes_on(
    tmp_path: Path, fault: str, status: str, reason: str
) -> None:
    extra = ["--timeout", str(HANG_TIMEOUT_S)] if fault == "hang" else []
    proc = run_suite(tmp_path, *extra, fault=f"{fault}:TinyViT")
    assert proc.returncode == 0, proc.stderr
    rows = {r["model"]: r for r in rows_of(tmp_path)}
    assert set(rows) == {"TinyViT", "TinyResNet"}
    bad, good = rows["TinyViT"], rows["TinyResNet"]
    assert bad["status"] == status and reason in bad["error"], bad["error"]
    assert "\n" not in bad["error"]
    assert all(bad[c] == "" for c in TIMING_COLUMNS), "timing columns must be empty on failure"
    assert bad["torch_version"] and bad["run_id"] == "t"  # provenance still filled
    assert good["status"] == "ok" and float(good["median_ms"]) > 0
    log = tmp_path / "t" / bad["log_file"]
    assert log.is_file()


def test_rows_have_every_column_and_are_flushed_per_cell(tmp_path: Path) -> None:
    proc = run_suite(tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(tmp_path)
    assert len(rows) == 2
    for r in rows:
        assert list(r) == list(COLUMNS)
        for col in (
            "run_id",
            "build",
            "device",
            "gpu_name",
            "task",
            "model",
            "model_id",
            "weights",
            "batch_size",
            "mode",
            "dtype",
            "scenario",
            "status",
            "iterations",
            "mean_ms",
            "median_ms",
            "p10_ms",
            "p90_ms",
            "std_ms",
            "min_ms",
            "ci95_low_ms",
            "ci95_high_ms",
            "peak_mem_mb",
            "params_m",
            "torch_version",
            "torch_git",
            "transformers_version",
            "python_version",
            "image",
            "suite_version",
            "started_at",
            "wall_s",
        ):
            assert r[col] != "", col
    # progress on the terminal: done/total, elapsed and ETA
    assert "[1/2]" in proc.stderr and "[2/2]" in proc.stderr and "ETA" in proc.stderr


def test_resume_skips_recorded_cells_and_reruns_failed_ones(tmp_path: Path) -> None:
    assert run_suite(tmp_path, fault="raise:TinyViT").returncode == 0
    first = {r["model"]: r for r in rows_of(tmp_path)}
    assert first["TinyViT"]["status"] == "error"
    proc = run_suite(tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = rows_of(tmp_path)
    assert sorted(r["model"] for r in rows) == ["TinyResNet", "TinyViT"]  # one row per cell
    again = {r["model"]: r for r in rows}
    assert again["TinyViT"]["status"] == "ok"
    assert again["TinyResNet"]["started_at"] == first["TinyResNet"]["started_at"]  # not re-run
    assert "already recorded" in proc.stderr
    (superseded,) = (tmp_path / "t" / "superseded").glob("*.csv")
    assert [r["status"] for r in read_rows(superseded).rows] == ["error"]
