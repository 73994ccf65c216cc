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

REPO = Path(__file__).resolve().parents[2]
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


def load_matrix_text():  # type: ignore[no-untyped-def]
    import tempfile

    folder = Path(tempfile.mkdtemp())
    (folder / "matrix.yaml").write_text(TOY, encoding="utf-8")
    return load_matrix(folder / "matrix.yaml")


def _crosscheck(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(TOY, encoding="utf-8")
    env = dict(os.environ, PYTHONPATH=str(REPO), HF_HUB_OFFLINE="1")
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "crosscheck", "--matrix", str(matrix), "--profile", "p",
           "--device", "cpu", "--out", str(tmp_path / "out"), "--run-id", "r", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)


def test_crosscheck_prints_both_medians_and_their_ratio(tmp_path: Path) -> None:
    """Like against like on a CPU: the suite's latency against torch.utils.benchmark's single
    calls, its throughput against the benchmark's blocks of as many calls; every round's figures
    kept."""
    proc = _crosscheck(tmp_path, "--rounds", "3")
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("| ToyViT ")]
    assert [ln.split("|")[5].strip() for ln in lines] == ["latency", "throughput"]  # no CUDA events here
    report = (tmp_path / "out" / "r" / "crosscheck.md").read_text()
    figures = json.loads((tmp_path / "out" / "r" / "crosscheck.json").read_text())
    (item,) = figures["results"]
    assert item["rounds"] == 3 and item["malloc"] in ("steady", "system")
    for line, pair in zip(lines, item["ratios"], strict=True):
        cols = [c.strip() for c in line.strip("|").split("|")]
        assert cols[:6] == ["ToyViT", "1", "eager", "eager", pair["figure"], "3"]
        assert cols[8].startswith("torch.utils.benchmark")
        ours, theirs = float(cols[6]), float(cols[9])
        assert ours > 0 and theirs > 0
        ratio, spread = cols[10].split(" ", 1)
        low, high = (float(x) for x in spread.strip("()").split("-"))
        assert low <= float(ratio) <= high and pair["ratio"] == pytest.approx(float(ratio), abs=1e-3)
        # the ratio is a median of the rounds' ratios, so it lies near the ratio of the medians
        assert float(ratio) == pytest.approx(ours / theirs, rel=max(0.01, high / low - 1))
        # every round's figure of both timers is kept; the median lies in the rounds' range
        rounds, others = item["rounds_ms"][pair["suite"]], item["rounds_ms"][pair["against"]]
        assert len(rounds) == len(others) == 3 and min(rounds) - 5e-3 <= ours <= max(rounds) + 5e-3
        assert cols[7] == f"{min(rounds):.2f}-{max(rounds):.2f} ({max(rounds) / min(rounds) - 1:.1%})"
        assert cols[11] in ("yes", "NO") and line in report
    assert "1-minute load" in report and "Like against like" in report
    assert re.search(
        r"Rounds: ToyViT bs=1 eager inference: 3 rounds in \d+ s \(the most rounds asked\)", report
    )
    assert item["stopped"] == "rounds" and item["rounds_s"] > 0
    assert item["vs_benchmark"]["ratio"] == item["ratios"][0]["ratio"] and item["vs_events"] is None
    assert (tmp_path / "out" / "r" / "logs").is_dir()


def test_a_compiled_cell_checks_both_of_its_functions(tmp_path: Path) -> None:
    """A compiled cell's row holds two medians (compiled, and the eager one interleaved with
    it): both are checked, each against its own independent timing."""
    proc = _crosscheck(tmp_path, "--rounds", "2", "--profile", "compiled")
    assert proc.returncode == 0, proc.stderr[-3000:]
    timed = [ln.split("|")[4].strip() for ln in proc.stdout.splitlines() if ln.startswith("| ToyViT ")]
    assert timed == ["eager", "eager", "default", "default"]  # latency, throughput each


def test_a_crosscheck_child_that_hangs_is_killed_at_the_cell_timeout(tmp_path: Path) -> None:
    """The child runs under the runner's launcher: the cell's timeout applies, and the report
    says so instead of waiting for ever."""
    proc = _crosscheck(tmp_path, "--rounds", "100000", "--budget-s", "3000", "--timeout", "20")
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
        out, _, stopped = crosscheck.crosscheck_rounds(cell, "cpu", crosscheck.Rounds(2))
    finally:
        torch.set_num_threads(before)
    assert seen["num_threads"] == 2 and stopped == "rounds"
    figures = out["eager"]
    assert len(figures["benchmark_latency"]) == len(figures["suite_latency"]) == 2
    assert len(figures["benchmark_throughput"]) == len(figures["suite_throughput"]) == 2
    assert all(ms > 0 for ms in figures["benchmark_latency"] + figures["benchmark_throughput"])
    assert figures["events_latency"] == figures["host_throughput"] == []  # no CUDA here


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
    real_until = crosscheck.TimingLoop.until

    def until(self, fns, rule):  # type: ignore[no-untyped-def]
        order.append("suite")
        return real_until(self, fns, rule)

    monkeypatch.setattr(crosscheck.TimingLoop, "until", until)
    monkeypatch.setattr(
        crosscheck, "benchmark_figures", lambda fn, threads, calls, block: order.append("timer") or (1.0, 1.0)
    )
    crosscheck.crosscheck_rounds(cell, "cpu", crosscheck.Rounds(4))
    assert order == ["suite", "timer", "timer", "suite", "suite", "timer", "timer", "suite"]


def test_rounds_follow_the_models_speed() -> None:
    """Rounds end once they have taken the budget a timed function (after the least), or at the
    most asked: a slow model gets fewer, a fast one up to the most."""
    rounds = crosscheck.Rounds(most=60, seconds=20.0, least=5)
    assert rounds.stop(4, 500.0, 2) == ""  # the least first, however slow
    assert rounds.stop(5, 39.0, 2) == "" and rounds.stop(5, 40.0, 2) == "budget"  # 20 s x 2 functions
    assert rounds.stop(60, 1.0, 1) == "rounds"
    assert crosscheck.Rounds(3).stop(2, 1e9, 1) == "" and crosscheck.Rounds(3).stop(3, 0.0, 1) == "rounds"


def test_ratio_over_rounds() -> None:
    from suite.run.crosscheck import Ratio

    r = Ratio.of([10.0, 10.2, 9.9], [10.0, 10.0, 10.0])
    assert r is not None and (r.value, r.low, r.high) == pytest.approx((1.0, 0.99, 1.02))
    assert r.within(0.03) and not Ratio(1.031, 1.0, 1.1).within(0.03)
    assert Ratio.of([], []) is None and Ratio.of([1.0], []) is None


def test_the_witness_times_the_suites_own_calls_and_blocks() -> None:
    """On CUDA the events sit inside each of the suite's latency calls (not its switch calls) and
    the host clock around each of its blocks: the same calls, the same blocks (fake events)."""
    from suite.measure.timing import FIXED, StopRule, TimingLoop

    class FakeEvents:
        def __init__(self) -> None:
            self.n = 0

        def start(self) -> None:
            self.n += 1

        def stop(self) -> None:
            pass

        def ms(self) -> float:
            return float(self.n)

    witness = crosscheck.InsideWitness(2, FakeEvents())  # type: ignore[arg-type]
    loop = TimingLoop(lambda: None, 0, probe=lambda: 1.0, witness=witness)
    timed = loop.until([lambda: None, lambda: None], StopRule(FIXED, 10, 10))
    assert [len(x) for x in witness.latency] == [len(s) for s in timed.samples] == [10, 10]
    assert [len(x) for x in witness.blocks] == [len(b) for b in timed.blocks] == [2, 2]
    # the witness's latency windows skip the switch calls: its counts jump where one ran
    assert witness.latency[0][:5] == [2.0, 3.0, 4.0, 5.0, 6.0]


def test_a_cuda_crosschecks_four_like_pairs() -> None:
    """A CUDA result has all four pairs; the JSON keeps the old latency names."""
    from suite.run.crosscheck import PAIRS, Timed, as_json, render

    cell = expand(load_matrix_text(), "p", "any", Filters())[0]
    rounds = {p.suite: [1.0, 1.02] for p in PAIRS} | {p.other: [1.0, 1.0] for p in PAIRS}
    t = Timed.of(cell, "eager", rounds, {"rounds_s": 12.5, "stopped": "budget"})
    assert [p.figure for p, _ in t.ratios()] == ["latency", "latency", "throughput", "throughput"]
    lines = render([t], "cuda", "title", (0.1, 0.2))
    assert "4 of 4 ratio(s) within ±2% (the target on cuda)" in "\n".join(lines)
    assert f"Rounds: {cell.label}: 2 rounds in 12 s (its time budget)." in lines
    (item,) = as_json([t])
    assert item["vs_events"]["ratio"] == pytest.approx(1.01) and len(item["ratios"]) == 4
