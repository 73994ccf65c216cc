"""`python -m suite crosscheck`: the suite's medians beside torch.utils.benchmark's, for a cell of
the session's smoke run (random weights, offline), and the ways it refuses to run."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import SmokeRun, suite_cli

from suite.measure import crosscheck
from suite.results import read_rows
from suite.spec import Filters, expand, load_matrix

REPO = Path(__file__).resolve().parent.parent
TOY = """
version: 1
defaults: {image: {path: suite/assets/chelsea-640x480.jpg}}
builds: {any: {kind: release, python: "3.11", torch: "0.0.0"}}
models:
  ToyViT:
    task: Image Classification
    model_type: vit
    config: {hidden_size: 32, num_hidden_layers: 1, num_attention_heads: 2, intermediate_size: 64,
             image_size: 32, patch_size: 8, num_labels: 10}
    processor: {class: ViTImageProcessor, size: {height: 32, width: 32}}
profiles:
  p:
    settings: {weights: random, iterations: 20, warmup: 2, timeout_s: 300}
    select: [{models: all, batch_sizes: [1], modes: [eager]}]
"""


def _crosscheck(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TOY, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "crosscheck", "--matrix", str(matrix), "--profile", "p",
           "--device", "cpu", "--out", str(tmp_path / "out"), "--run-id", "r", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)


def test_crosscheck_prints_both_medians_and_their_ratio(smoke_run: SmokeRun, tmp_path: Path) -> None:
    """On a copy of the session's smoke run (tests/conftest.py), under its run id: the suite's
    row is resumed, not measured again, and only the independent timing runs."""
    out = tmp_path / "out"
    (csv_path,) = (smoke_run.copy_to(out) / "raw").glob("*.csv")
    (recorded,) = [r for r in read_rows(csv_path).rows if (r["model"], r["mode"]) == ("ViT", "eager")]
    proc = suite_cli("crosscheck", "--profile", "smoke", "--models", "ViT", "--modes", "eager",
                     "--device", "cpu", "--out", str(out), "--run-id", smoke_run.run_id)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ViT ")]
    cols = [c.strip() for c in line.strip("|").split("|")]
    assert cols[:3] == ["ViT", "1", "eager"]
    ours, theirs, ratio = (float(c) for c in cols[3:6])
    assert ours > 0 and theirs > 0
    assert ours == pytest.approx(float(recorded["median_ms"]), abs=5e-4)  # the recorded row
    # the ratio of the two medians, to the precision printed: every figure has 3 decimals (a
    # ratio far from 1, as under a loaded CPU, cannot match ours / theirs to 1%: 0.010 vs 0.0096)
    half = 5e-4
    assert (ours - half) / (theirs + half) - half <= ratio <= (ours + half) / (theirs - half) + half
    assert cols[6:] == ["", ""]  # no CUDA events on a CPU
    report = (out / smoke_run.run_id / "crosscheck.md").read_text()
    assert line in report and (out / smoke_run.run_id / "raw").is_dir()


def test_crosscheck_refuses_training_cells_in_one_line(tmp_path: Path) -> None:
    proc = _crosscheck(tmp_path, "--scenarios", "train")
    assert proc.returncode == 2
    assert re.fullmatch(r"suite crosscheck: error: --scenarios: .*inference cells only\n", proc.stderr)


def test_independent_timing_uses_the_workers_threads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """torch.utils.benchmark.Timer runs on one thread unless told; the worker uses torch's
    default. Different thread counts would make the cross-check compare threading, not timing."""
    import torch
    import torch.utils.benchmark as benchmark

    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TOY, encoding="utf-8")
    monkeypatch.chdir(REPO)
    (cell,) = expand(load_matrix(matrix), "p", "any", Filters())
    seen: dict[str, int] = {}
    real = benchmark.Timer

    class Recording(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: object, num_threads: int = 1, **kwargs: object) -> None:
            seen["num_threads"] = num_threads
            super().__init__(*args, num_threads=num_threads, **kwargs)

    monkeypatch.setattr(benchmark, "Timer", Recording)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        out = crosscheck.independent_timing(cell, "cpu")
    finally:
        torch.set_num_threads(before)
    assert seen["num_threads"] == 2
    assert out["torch_benchmark_median_ms"] > 0
