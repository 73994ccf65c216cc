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


def test_run_starts_one_python_to_check_the_models_and_probe(tmp_path: Path, monkeypatch) -> None:
    """The model check's child also probes the environment (it has imported torch already), so
    `run` starts one Python before its first cell, not two, and probes what `env` would."""
    monkeypatch.setattr(preflight, "_checked", set())  # models checked by an earlier test
    monkeypatch.setattr(preflight, "_probed", {"cpu": "a probe an earlier run left, not to be taken"})
    started: list[list[str]] = []
    real = preflight.subprocess.run

    def recording(cmd, *args, **kwargs):
        started.append(cmd[1:3])
        return real(cmd, *args, **kwargs)

    probed = []

    def stop(matrix, requested, environment):
        probed.append(environment)
        raise UsageError("--build", "stopped by the test after the probe")

    monkeypatch.setattr(preflight.subprocess, "run", recording)
    monkeypatch.setattr(preflight, "resolve_build", stop)
    code, err = call(["run", *TINY_ARGS, "--device", "cpu", "--out", str(tmp_path), "--min-free-mb", "0"])
    assert code == 2 and "stopped by the test after the probe" in err, err
    assert started == [["-m", "suite.measure.config_check"]]
    (environment,) = probed
    assert environment.device_type == "cpu" and environment.torch_version and environment.cpu_name
    assert preflight._probed == {}  # taken, not left for another run in this process


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
