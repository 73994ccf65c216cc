"""Each cell in its own process: a cell that fails, in any way, gets its status row and the
sweep goes on. Faults are injected through SUITE_FAULT=<kind>:<model> (suite/measure/faults.py).

One run serves the fault tests (`faulted`, module-scoped: the module is one xdist group): a
copy of the tiny ViT per fault, each failing its own way, and the tiny ResNet measured after
them; five runs of two cells each made the same rows with nine more child Pythons."""

from __future__ import annotations

import copy
import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from support import REPO, TINY, tiny_run_cmd

from suite.results import COLUMNS, TIMING_COLUMNS, key_of, read_rows

pytestmark = pytest.mark.xdist_group("isolation")

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


FAULTS = {  # kind -> (status, reason)
    "raise": ("error", "RuntimeError: injected fault: exception in forward"),
    "oom": ("oom", "out of memory"),
    "segfault": ("error", "worker killed by SIGSEGV"),
    "abort": ("error", "worker killed by SIGABRT"),
    "hang": ("timeout", f"no result after {HANG_TIMEOUT_S} s"),
}


def faulty(kind: str) -> str:
    """The tiny ViT's copy that fails by `kind`."""
    return f"Tiny{kind.capitalize()}ViT"


@dataclass(frozen=True)
class Faulted:
    out: Path  # the --out folder; the run is out / "t"
    matrix: Path
    proc: subprocess.CompletedProcess[str]


@pytest.fixture(scope="module")
def faulted(tmp_path_factory: pytest.TempPathFactory) -> Faulted:
    """One run: each fault's ViT, then the tiny ResNet, which nothing fails."""
    out = tmp_path_factory.mktemp("faulted")
    spec = yaml.safe_load(TINY.read_text())
    spec["defaults"]["image"]["path"] = str(REPO / spec["defaults"]["image"]["path"])
    vit, resnet = spec["models"]["TinyViT"], spec["models"]["TinyResNet"]
    spec["models"] = {**{faulty(kind): copy.deepcopy(vit) for kind in FAULTS}, "TinyResNet": resnet}
    spec["profiles"] = {"tiny": spec["profiles"]["tiny"]}
    matrix = out / "matrix.yaml"
    matrix.write_text(yaml.safe_dump(spec, sort_keys=False))
    fault = ",".join(f"{kind}:{faulty(kind)}" for kind in FAULTS)
    proc = run_suite(out, "--matrix", str(matrix), "--timeout", str(HANG_TIMEOUT_S), fault=fault)
    assert proc.returncode == 0, proc.stderr
    return Faulted(out, matrix, proc)


@pytest.mark.parametrize("fault", list(FAULTS))
def test_a_failing_cell_gets_its_status_and_the_sweep_goes_on(faulted: Faulted, fault: str) -> None:
    status, reason = FAULTS[fault]
    rows = {r["model"]: r for r in rows_of(faulted.out)}
    assert set(rows) == {*map(faulty, FAULTS), "TinyResNet"}
    bad, good = rows[faulty(fault)], rows["TinyResNet"]
    assert bad["status"] == status and reason in bad["error"], bad["error"]
    assert "\n" not in bad["error"]
    assert all(bad[c] == "" for c in TIMING_COLUMNS), "timing columns must be empty on failure"
    assert bad["torch_version"] and bad["run_id"] == "t"  # provenance still filled
    assert good["status"] == "ok" and float(good["median_ms"]) > 0
    log = faulted.out / "t" / bad["log_file"]
    assert log.is_file()


def test_rows_have_every_column_and_are_flushed_per_cell(faulted: Faulted) -> None:
    rows = rows_of(faulted.out)
    assert len(rows) == len(FAULTS) + 1
    assert all(list(r) == list(COLUMNS) for r in rows)
    for r in (r for r in rows if r["status"] == "ok"):
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
    stderr, total = faulted.proc.stderr, len(rows)
    assert all(f"[{i}/{total}]" in stderr for i in range(1, total + 1)) and "ETA" in stderr


def test_resume_skips_recorded_cells_and_reruns_failed_ones(faulted: Faulted, tmp_path: Path) -> None:
    """The faulted run resumed without a fault, for the raising ViT and the ResNet: the first
    runs again and its old row is superseded, the second is already recorded."""
    shutil.copytree(faulted.out / "t", tmp_path / "t")
    first = {r["model"]: r for r in rows_of(tmp_path)}
    raising = faulty("raise")
    assert first[raising]["status"] == "error"
    proc = run_suite(tmp_path, "--matrix", str(faulted.matrix), "--models", f"{raising},TinyResNet")
    assert proc.returncode == 0, proc.stderr
    again = {r["model"]: r for r in rows_of(tmp_path)}  # one row per cell
    assert again[raising]["status"] == "ok"
    assert again["TinyResNet"]["started_at"] == first["TinyResNet"]["started_at"]  # not re-run
    assert "already recorded" in proc.stderr
    (superseded,) = (tmp_path / "t" / "superseded").glob("*.csv")
    assert [r for r in read_rows(superseded).rows if r["model"] == raising] == [first[raising]]


def test_torn_row_is_repaired_on_resume_and_keep_failed_keeps_failed_cells(
    faulted: Faulted, tmp_path: Path
) -> None:
    shutil.copytree(faulted.out / "t", tmp_path / "t")
    before = {r["model"]: r for r in rows_of(tmp_path)}
    assert before["TinyResNet"]["status"] == "ok"
    assert all(before[faulty(kind)]["status"] != "ok" for kind in FAULTS)

    # The writer killed in the middle of the last row (TinyResNet's): half of it on disk.
    (path,) = (tmp_path / "t" / "raw").glob("*.csv")
    assert read_rows(path).rows[-1]["model"] == "TinyResNet"
    data = path.read_bytes()
    last_start = data.rstrip(b"\n").rfind(b"\n") + 1
    torn_at = last_start + (len(data) - last_start) // 2
    path.write_bytes(data[:torn_at])
    assert read_rows(path).repaired == 1 and len(read_rows(path).rows) == len(FAULTS)

    again = run_suite(tmp_path, "--matrix", str(faulted.matrix), "--keep-failed")
    assert again.returncode == 0, again.stderr
    assert f"{path}: cut a partial last row ({torn_at - last_start} bytes)" in again.stderr
    raising = faulty("raise")
    assert f"{raising} bs=1 eager inference: already recorded (error), skipped" in again.stderr
    after = {r["model"]: r for r in rows_of(tmp_path)}
    assert sorted(after) == sorted(before)
    assert all(after[faulty(kind)] == before[faulty(kind)] for kind in FAULTS)  # kept, not re-run
    assert after["TinyResNet"]["status"] == "ok"  # the torn cell ran again
    assert after["TinyResNet"]["started_at"] >= before["TinyResNet"]["started_at"]
    assert not (tmp_path / "t" / "superseded").exists()  # nothing was re-run, nothing moved
