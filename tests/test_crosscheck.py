"""`python -m suite crosscheck`: the suite's loop and torch.utils.benchmark's, alternating in rounds
on a toy model (random weights, offline), and the ways it refuses to run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support.matrices import ANY_BUILD, HEAD, tiny_vit

from suite.measure import crosscheck
from suite.spec import Filters, expand, load_matrix

REPO = Path(__file__).resolve().parent.parent
TOY = f"""
{HEAD}{ANY_BUILD}models:
{tiny_vit("ToyViT", layers=1)}profiles:
  p:
    settings: {{weights: random, iterations: 20, warmup: 2, timeout_s: 300}}
    select: [{{models: all, batch_sizes: [1], modes: [eager]}}]
  compiled:
    settings: {{weights: random, iterations: 20, warmup: 2, timeout_s: 300}}
    select: [{{models: all, batch_sizes: [1], modes: [default]}}]
"""


def _crosscheck(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TOY, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "crosscheck", "--matrix", str(matrix), "--profile", "p",
           "--device", "cpu", "--out", str(tmp_path / "out"), "--run-id", "r", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)


def test_crosscheck_prints_both_medians_and_their_ratio(tmp_path: Path) -> None:
    proc = _crosscheck(tmp_path, "--rounds", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ToyViT ")]
    cols = [c.strip() for c in line.strip("|").split("|")]
    assert cols[:5] == ["ToyViT", "1", "eager", "eager", "3"]
    ours, theirs = float(cols[5]), float(cols[7])
    assert ours > 0 and theirs > 0
    ratio, spread = cols[8].split(" ", 1)
    low, high = (float(x) for x in spread.strip("()").split("-"))
    assert low <= float(ratio) <= high
    # the ratio is a median of the rounds' ratios, so it lies near the ratio of the medians
    assert float(ratio) == pytest.approx(ours / theirs, rel=max(0.01, high / low - 1))
    assert cols[9:11] == ["", ""]  # no CUDA events on a CPU
    assert cols[11] in ("yes", "NO")
    report = (tmp_path / "out" / "r" / "crosscheck.md").read_text()
    assert line in report and "1-minute load" in report
    figures = json.loads((tmp_path / "out" / "r" / "crosscheck.json").read_text())
    (item,) = figures["results"]
    assert item["rounds"] == 3 and item["vs_benchmark"]["ratio"] == pytest.approx(float(ratio), abs=1e-3)
    # the suite's median of each round, and the range the table shows: the median lies in it
    rounds = item["suite_rounds_ms"]
    assert len(rounds) == 3 and min(rounds) - 5e-3 <= ours <= max(rounds) + 5e-3
    assert cols[6] == f"{min(rounds):.2f}-{max(rounds):.2f} ({max(rounds) / min(rounds) - 1:.1%})"
    assert item["malloc"] in ("steady", "system")
    assert (tmp_path / "out" / "r" / "logs").is_dir()


def test_a_compiled_cell_checks_both_of_its_functions(tmp_path: Path) -> None:
    """A compiled cell's row holds two medians (compiled, and the eager one interleaved with
    it): both are checked, each against its own independent timing."""
    proc = _crosscheck(tmp_path, "--rounds", "2", "--profile", "compiled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    timed = [ln.split("|")[4].strip() for ln in proc.stdout.splitlines() if ln.startswith("| ToyViT ")]
    assert timed == ["eager", "default"]


def test_a_crosscheck_child_that_hangs_is_killed_at_the_cell_timeout(tmp_path: Path) -> None:
    """The child runs under the runner's launcher: the cell's timeout applies, and the report
    says so instead of waiting for ever."""
    proc = _crosscheck(tmp_path, "--rounds", "100000", "--timeout", "20")
    assert proc.returncode == 0, proc.stderr[-3000:]
    (line,) = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ToyViT ")]
    assert "timeout: no result after 20 s (worker killed)" in line


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
        out = crosscheck.crosscheck_rounds(cell, "cpu", rounds=2)
    finally:
        torch.set_num_threads(before)
    assert seen["num_threads"] == 2
    assert len(out["eager"]["benchmark"]) == len(out["eager"]["suite"]) == 2
    assert all(ms > 0 for ms in out["eager"]["benchmark"])
    assert out["eager"]["events"] == []  # no CUDA here


def test_rounds_alternate_the_order_of_the_two_halves(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Round 1: the suite's loop, then the independent timer; round 2 the other way round; so a
    drift of the machine's load hits both alike."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TOY, encoding="utf-8")
    monkeypatch.chdir(REPO)
    (cell,) = expand(load_matrix(matrix), "p", "any", Filters())
    order: list[str] = []
    real_interleaved = crosscheck.TimingLoop.interleaved

    def interleaved(self, fns, iterations):  # type: ignore[no-untyped-def]
        order.append("suite")
        return real_interleaved(self, fns, iterations)

    monkeypatch.setattr(crosscheck.TimingLoop, "interleaved", interleaved)
    monkeypatch.setattr(
        crosscheck, "_benchmark_ms", lambda fn, seconds, threads: order.append("timer") or 1.0
    )
    crosscheck.crosscheck_rounds(cell, "cpu", rounds=4)
    assert order == ["suite", "timer", "timer", "suite", "suite", "timer", "timer", "suite"]


def test_ratio_over_rounds() -> None:
    from suite.run.crosscheck import Ratio

    r = Ratio.of([10.0, 10.2, 9.9], [10.0, 10.0, 10.0])
    assert r is not None and (r.value, r.low, r.high) == pytest.approx((1.0, 0.99, 1.02))
    assert r.within(0.03) and not Ratio(1.031, 1.0, 1.1).within(0.03)
    assert Ratio.of([], []) is None and Ratio.of([1.0], []) is None
