"""Failures show where the user looks: a compiled output that failed the accuracy
check in the cell's progress line and in the run's `done:` summary; NaN or infinite outputs
as `nan` / `inf` in the CSV (read back by merge, compare and resume), with the reason in the
worker's log; `plan --device cuda` on a machine without a GPU says so; a CPU row does not
carry the CUDA of the torch wheel as if it had run.

The runner here is the real one; its worker is a shell stub that answers at once with the
fields a real worker would (tests/run/test_kill_resume.py does the same).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
import torch
from support import TINY, call, call_output
from support.runner import ENVIRONMENT, cells, run

from suite.compare.comparison import compare as compare_runs
from suite.measure import provenance
from suite.measure.accuracy import compare
from suite.report.load import load
from suite.results import KEY_COLUMNS, RowWriter, read_rows
from suite.run import launch, resume, runner


@pytest.mark.parametrize(("diff", "written"), [("NaN", "nan"), ("Infinity", "inf")])
def test_an_accuracy_failure_shows_in_the_progress_line_and_the_done_summary(
    tmp_path: Path, stub: Path, diff: str, written: str
) -> None:
    report, err = run(tmp_path, stub, diff)
    (line,) = [x for x in err.splitlines() if "TinyViT bs=1 default inference: ok" in x]
    warning = f"ACCURACY FAIL: compiled output differs from eager, max |diff| {written}"
    assert f"ok (median 1.00 ms, speed-up x0.85; {warning})" in line
    (eager,) = [x for x in err.splitlines() if "TinyViT bs=1 eager inference: ok" in x]
    assert "ACCURACY" not in eager
    assert report.warnings_note() == "; 1 ok cell(s) with ACCURACY FAIL (TinyViT bs=1 default inference)"

    rows = {r["mode"]: r for r in read_rows(report.csv).rows}
    assert rows["default"]["max_abs_diff"] == written and rows["default"]["accuracy"] == "fail"
    assert rows["eager"]["max_abs_diff"] == ""

    # every reader takes the row: merge's loader, compare, resume
    loaded = load([tmp_path / "out" / "r"])
    assert len(loaded.frame) == 2 and loaded.skipped == ()
    assert len(compare_runs(loaded, loaded, 0.05).changes) == 2
    done = resume.prepare(report.csv).done
    assert len(done) == 2 and set(done.values()) == {"ok"}


def test_the_done_line_says_it(tmp_path: Path, stub: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`suite run` itself: its last line counts the cells that failed the accuracy check."""
    monkeypatch.setattr("suite.run.preflight.probe", lambda device, child=None: ENVIRONMENT)
    worker = launch.run_worker
    monkeypatch.setattr(launch, "run_worker", lambda job: worker(replace(job, python=str(stub))))
    monkeypatch.setenv("STUB_DIFF", "NaN")
    text = TINY.read_text().replace("modes: [eager]", "modes: [default]")
    (tmp_path / "m.yaml").write_text(text)
    # --schedule serial: the stub is a one-cell worker
    code, err = call(["run", "--matrix", str(tmp_path / "m.yaml"), "--profile", "tiny", "--models", "TinyViT",
                      "--out", str(tmp_path / "out"), "--run-id", "d", "--min-free-mb", "0",
                      "--schedule", "serial"])  # fmt: skip
    assert code == 0, err
    done = err.strip().splitlines()[-1]
    assert done.startswith(
        "done: 1 ok; 1 ok cell(s) with ACCURACY FAIL (TinyViT bs=1 default inference); 0 already"
    )


def test_the_accuracy_check_reports_nan_and_inf_and_says_why_in_the_log(
    capsys: pytest.CaptureFixture[str],
) -> None:
    eager = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([[0.5, 0.5]])]
    nan = [torch.tensor([1.0, 2.0, 3.0]), torch.tensor([[float("nan"), 0.5]])]
    diff, passed = compare(eager, nan, 1e-3)
    assert diff != diff and not passed  # NaN
    assert (
        "accuracy: output 2 of 2 (1, 2): compiled has 1 NaN, 0 inf; eager has 0 NaN, 0 inf"
        in capsys.readouterr().out
    )
    assert compare(eager, [eager[0], torch.tensor([[float("inf"), 0.5]])], 1e-3) == (float("inf"), False)
    assert "compiled has 0 NaN, 1 inf" in capsys.readouterr().out
    # a NaN anywhere wins over a finite difference elsewhere, whatever the order
    assert compare([eager[1], eager[0]], [nan[1], eager[0] + 1], 1e-3)[0] != compare(eager, eager, 1e-3)[0]
    # the same non-finite values on both sides are no difference; an eager infinity does not
    # widen the tolerance to infinity
    both = [torch.tensor([float("nan"), float("-inf"), 100.0])]
    diff, passed = compare(both, [torch.tensor([float("nan"), float("-inf"), 100.05])], 1e-3)
    assert passed and diff == pytest.approx(0.05, rel=1e-3)
    assert not compare(both, [torch.tensor([float("nan"), float("-inf"), 101.0])], 1e-3)[1]
    capsys.readouterr()
    assert compare(eager, eager[:1], 1e-3) == (float("inf"), False)
    assert "differ in number or shape" in capsys.readouterr().out


def test_only_max_abs_diff_writes_nan_and_inf(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    with RowWriter(path) as writer:
        key = dict.fromkeys(KEY_COLUMNS, "x")
        writer.append({**key, "status": "ok", "max_abs_diff": float("nan"), "median_ms": float("nan")})
        writer.append({**key, "status": "ok", "max_abs_diff": float("inf"), "speedup": float("inf")})
    first, second = read_rows(path).rows
    assert (first["max_abs_diff"], first["median_ms"]) == ("nan", "")
    assert (second["max_abs_diff"], second["speedup"]) == ("inf", "")


def test_plan_for_cuda_on_a_machine_without_a_gpu_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no nvidia-smi
    code, out, err = call_output(["plan", "--profile", "quick", "--device", "cuda"])
    assert code == 0
    (line,) = err.splitlines()
    assert line.startswith(
        "suite plan: warning: --device cuda: this machine has no NVIDIA GPU (nvidia-smi not found)"
    )
    assert "`suite run --device cuda` would stop here" in line
    assert "40 cell(s)" in out  # the plan itself is still there
    smi = tmp_path / "nvidia-smi"
    smi.write_text("#!/bin/sh\necho 'GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-0)'\n")
    smi.chmod(0o755)
    assert call(["plan", "--profile", "quick", "--device", "cuda"]) == (0, "")


def test_a_cpu_run_records_no_cuda_but_the_wheel_s(tmp_path: Path) -> None:
    env = provenance.collect("cpu")
    assert (env.cuda_version, env.cudnn_version) == ("", "")
    assert env.torch_cuda_build == (torch.version.cuda or "")
    row = runner.build_row(cells(tmp_path)[0], env, "r", {"status": "ok"}, "t", 1.0, "log", "")
    assert row["cuda_version"] == "" and row["torch_cuda_build"] == env.torch_cuda_build
