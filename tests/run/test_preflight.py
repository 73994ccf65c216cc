"""Checked before any cell runs, each with one line and exit 2: results that cannot be
written, a (nearly) full disk, `--device cuda` without a GPU. A disk that fills up during
the sweep stops it cleanly, and the same run id resumes it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support import call, stub_environment

from suite.errors import UsageError
from suite.results import read_rows
from suite.run import preflight, runner
from suite.spec import expand, load_matrix
from suite.spec.request import Request

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"
TINY_ARGS = ["--matrix", str(TINY), "--profile", "tiny", "--run-id", "p"]


@pytest.fixture
def no_probe(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if the run got as far as probing the environment (a child process)."""
    probed: list[str] = []
    monkeypatch.setattr(preflight, "probe", lambda device, python=None: probed.append(device))
    return probed


@pytest.mark.parametrize("case", ["a file", "under a file", "a folder that takes no file"])
def test_unwritable_results_folder(tmp_path: Path, no_probe: list[str], case: str) -> None:
    (tmp_path / "f").write_text("x")
    out = {
        "a file": tmp_path / "f",
        "under a file": tmp_path / "f" / "results",
        "a folder that takes no file": Path("/proc/1"),  # also for root, who ignores modes
    }[case]
    code, err = call(["run", *TINY_ARGS, "--device", "cpu", "--out", str(out)])
    assert code == 2 and not no_probe
    (line,) = err.strip().splitlines()
    assert line.startswith(f"suite run: error: --out: cannot write results to {out}: "), line


def test_full_disk_before_the_run(tmp_path: Path, no_probe: list[str]) -> None:
    free = preflight.free_mb(tmp_path)
    need = free * 10 + 10**6  # more than this disk has
    code, err = call(
        ["run", *TINY_ARGS, "--device", "cpu", "--out", str(tmp_path), "--min-free-mb", f"{need:.0f}"]
    )
    assert code == 2 and not no_probe
    (line,) = err.strip().splitlines()
    # (the free space itself moves while other processes write)
    assert re.match(
        rf"suite run: error: --out: only \d+ MB free on the disk of {re.escape(str(tmp_path))}, "
        rf"below the minimum of {need:.0f} MB: free some space \(or lower --min-free-mb\)$",
        line,
    ), line
    assert not (tmp_path / "p").exists()


def test_missing_gpu_when_cuda_was_asked_for(tmp_path: Path) -> None:
    """The real probe, on this CPU-only machine (a GPU here would make the check moot)."""
    code, err = call(["run", *TINY_ARGS, "--device", "cuda", "--out", str(tmp_path), "--min-free-mb", "0"])
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith("suite run: error: --device: cuda was asked for, but torch sees no CUDA GPU"), line
    assert not (tmp_path / "p").exists()  # nothing written
    code, err = call(["env", "--device", "cuda"])
    assert code == 2 and err.startswith("suite env: error: --device: cuda was asked for"), err


def test_run_starts_one_python_to_probe_and_check_the_models(tmp_path: Path, monkeypatch) -> None:
    """The model check's child probes the environment first (it imports torch anyway), so `run`
    starts one Python before its first cell, not two, and probes what `env` would; the cells are
    expanded once, for the profile and build the probe implies, and their models then checked
    by the same child."""
    monkeypatch.setenv("SUITE_CACHE_DIR", str(tmp_path / "cache"))  # no clean check remembered
    started: list[list[str]] = []
    real_popen, real_run = preflight.subprocess.Popen, preflight.subprocess.run

    def popen(cmd, *args, **kwargs):
        started.append(cmd[1:])
        return real_popen(cmd, *args, **kwargs)

    def run(cmd, *args, **kwargs):
        started.append(cmd[1:])
        return real_run(cmd, *args, **kwargs)

    expanded: list[tuple[str, str]] = []
    real_cells = Request.cells

    def cells(request, profile, build):
        expanded.append((profile, build))
        return real_cells(request, profile, build)

    checked: list[str] = []
    real_problems = preflight.Child.problems

    def problems(child, models):
        checked.append(child.device)
        return real_problems(child, models)

    monkeypatch.setattr(preflight.subprocess, "Popen", popen)
    monkeypatch.setattr(preflight.subprocess, "run", run)
    monkeypatch.setattr(Request, "cells", cells)
    monkeypatch.setattr(preflight.Child, "problems", problems)
    request = Request(load_matrix(TINY), profile="tiny", device="cpu", out=tmp_path)
    prepared = preflight.prepare(request, min_free_mb=None)
    assert started == [["-m", "suite.measure.config_check", "--probe", "cpu"]]
    assert expanded == [("tiny", prepared.build)] and checked == ["cpu"]
    environment = prepared.environment
    assert environment.device_type == "cpu" and environment.torch_version and environment.cpu_name


def test_disk_filling_up_mid_sweep_stops_cleanly_and_resumes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-cell check, with the worker a stand-in (tests/run/test_kill_resume.py has it)."""
    stub = tmp_path / "stub"
    stub.write_text('#!/bin/sh\nprintf \'{"status": "ok", "error": "", "median_ms": 1.0}\' > "$4"\n')
    stub.chmod(0o755)
    cells = expand(load_matrix(TINY), "tiny", "b")
    environment = stub_environment()
    space = iter([5000.0, 10.0])  # enough for the first cell, then full
    monkeypatch.setattr(preflight, "free_mb", lambda path: next(space))
    with pytest.raises(UsageError) as info:
        runner.run_cells(runner.Sweep(cells, environment, tmp_path, "d", python=str(stub), min_free_mb=100))
    message = str(info.value)
    assert message.startswith(f"--out: only 10 MB left on the disk of {tmp_path / 'd'} (minimum 100 MB)")
    assert "stopped before TinyResNet" in message and "--run-id d to resume" in message
    (csv_path,) = (tmp_path / "d" / "raw").glob("*.csv")
    first = read_rows(csv_path)
    assert [r["model"] for r in first.rows] == ["TinyViT"] and first.repaired == 0

    monkeypatch.setattr(preflight, "free_mb", lambda path: 5000.0)  # space freed
    report = runner.run_cells(
        runner.Sweep(cells, environment, tmp_path, "d", python=str(stub), min_free_mb=100)
    )
    assert (report.ran, report.resumed) == (1, 1)
    assert [r["model"] for r in read_rows(csv_path).rows] == ["TinyViT", "TinyResNet"]
