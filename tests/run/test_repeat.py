"""`python -m suite repeat --times N`: the same cells N times, each repetition its own run, and
each cell's spread of medians (max / min - 1)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import REPO, TINY

from suite.results import RowWriter
from suite.run import repeat


def _row(model: str, median: float, status: str = "ok", **more: object) -> dict[str, object]:
    return {
        "build": "any", "device": "cpu", "gpu_name": "CPU", "task": "Image Classification", "model": model,
        "weights": "random", "batch_size": 1, "mode": more.pop("mode", "eager"), "dtype": "float32",
        "scenario": "inference", "variant": "", "status": status,
        "median_ms": median if status == "ok" else None, **more,
    }  # fmt: skip


def _write(folder: Path, rows: list[dict[str, object]]) -> Path:
    with RowWriter(folder / "raw" / "any__cpu.csv") as w:
        for r in rows:
            w.append(r)
    return folder


def test_spread_is_max_over_min_less_one() -> None:
    assert repeat.spread([10.0, 10.3, 10.1]) == pytest.approx(0.03)
    assert repeat.spread([5.0]) is None


def test_cells_are_matched_across_repetitions(tmp_path: Path) -> None:
    reps = [
        _write(
            tmp_path / "rep-1", [_row("A", 10.0), _row("B", 2.0, mode="default", speedup=1.5, health="ok")]
        ),
        _write(
            tmp_path / "rep-2", [_row("A", 10.5), _row("B", 2.2, mode="default", speedup=1.2, health="busy")]
        ),
        _write(
            tmp_path / "rep-3", [_row("A", 0, status="timeout", error="x"), _row("B", 2.1, mode="default")]
        ),
    ]
    a, b = repeat.collect(reps)
    assert (a.key["model"], a.medians, a.failed) == ("A", (10.0, 10.5), ("timeout",))
    assert a.median_spread == pytest.approx(0.05)
    assert b.speedups == (1.5, 1.2) and b.speedup_spread == pytest.approx(0.25)
    assert b.health == ("ok", "busy", "—")
    lines = repeat.render([a, b], "cpu", "title", (1.0, 2.0))
    assert "| A | 1 | eager | 10.000, 10.500 | 5.0% | — | — | —, — | NO (1 failed: timeout) |" in lines
    assert (
        "| B | 1 | default | 2.000, 2.200, 2.100 | 10.0% | 1.500, 1.200 | 25.0% | ok, busy, — | NO |" in lines
    )
    assert any(
        line.startswith("0 of 2 cell(s) with a spread of medians within 3.0% (the target on cpu)")
        for line in lines
    )


@pytest.mark.slow
def test_repeat_runs_the_cells_n_times_and_prints_the_spreads(tmp_path: Path) -> None:
    """One model of the tiny matrix: a second is one more Python a repetition, on the same path."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "repeat", "--times", "2", "--matrix", str(TINY),
           "--profile", "tiny", "--device", "cpu", "--out", str(tmp_path), "--run-id", "rr",
           "--models", "TinyResNet"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    for i in (1, 2):
        assert len(list((tmp_path / "rr" / f"rep-{i}" / "raw").glob("*.csv"))) == 1
    spread, coverage = proc.stdout.split("Coverage of the median with 1 process(es) per cell")
    lines = [ln for ln in spread.splitlines() if ln.startswith(("| TinyViT ", "| TinyResNet "))]
    assert len(lines) == 1
    # and the coverage of their intervals, with the machine's between-run noise it measured
    assert len([ln for ln in coverage.splitlines() if ln.startswith(("| TinyViT ", "| TinyResNet "))]) == 1
    assert "`run_noise_pct: {cpu: " in coverage
    for line in lines:
        cols = [c.strip() for c in line.strip("|").split("|")]
        medians = [float(m) for m in cols[3].split(", ")]
        assert len(medians) == 2
        # the spread is of the unrounded medians, the medians printed to 3 decimals (each within
        # 0.0005 of its value) and the spread to 1 (within 0.05 points): it lies in what the
        # printed medians allow, however small they are
        hi, lo, half = max(medians), min(medians), 0.0005
        allowed = (100 * ((hi - half) / (lo + half) - 1) - 0.05, 100 * ((hi + half) / (lo - half) - 1) + 0.05)
        assert allowed[0] <= float(cols[4].rstrip("%")) <= allowed[1], (line, allowed)
    assert (tmp_path / "rr" / "repeat.md").read_text().startswith("Repeatability on ")
    assert "repetition 2: 1 ok" in proc.stderr


def test_times_must_be_at_least_two(capsys: pytest.CaptureFixture[str]) -> None:
    from suite.cli import main

    assert main(["repeat", "--times", "1"]) == 2
    assert capsys.readouterr().err.strip() == (
        "suite repeat: error: --times: must be >= 2 (a spread needs two), got 1"
    )


def test_coverage_error_names_its_verb(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The verb an error line names comes from the parser's own verbs, `coverage` included."""
    from suite.cli import main

    assert main(["coverage", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"suite coverage: error: {tmp_path}: no rep-<i> folders: not a repeat's run folder"
    )
