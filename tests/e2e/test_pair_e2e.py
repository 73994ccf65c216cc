"""A pair end to end on the CPU (`suite pair`, the tiny ViT's eager and compiled cell): two real
runners whose workers take turns, the new side's compiled calls made 3x slower on purpose. The
rows carry the pair; the slow-down is caught by the pair's rule, and compare judges the cells by it."""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

from support import REPO, TINY

from suite.results import KEY_COLUMNS, read_rows
from suite.results.samples import read, samples_path


def _matrix(tmp_path: Path) -> Path:
    """The tiny matrix with its build pinned to the torch these tests run (a pair names its builds)."""
    torch = version("torch").split("+")[0]
    text = TINY.read_text().replace('torch: "0.0.0"', f'torch: "{torch}"')
    (tmp_path / "m.yaml").write_text(text)
    return tmp_path / "m.yaml"


def test_a_pair_takes_turns_and_catches_a_planted_slow_down(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SUITE_FAULT", None)
    matrix = _matrix(tmp_path)
    cmd = [sys.executable, "-m", "suite", "pair", "--matrix", str(matrix), "--profile", "pair",
           "--base", "any", "--new", "any", "--device", "cpu", "--out", str(tmp_path), "--run-id", "p",
           "--new-env", "SUITE_FAULT=slow:3:TinyViT"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=900, check=False)
    assert proc.returncode == 1, proc.stderr + proc.stdout  # 1: a cell slower by the pair's rule
    base = {r["mode"]: r for r in read_rows(tmp_path / "p" / "raw" / "any__cpu.csv").rows}
    new = {r["mode"]: r for r in read_rows(tmp_path / "p-new" / "raw" / "any__cpu.csv").rows}
    assert set(base) == set(new) == {"eager", "default"}
    for rows, role in ((base, "base"), (new, "new")):
        for r in rows.values():
            assert r["status"] == "ok" and r["stop_reason"] == "pair", r
            assert r["pair_role"] == role and r["pair_partner"] == "any" and r["timing_cpus"], r
            assert r["process_start"] == "fork", r  # each cell's process forked from its runner's zygote
    assert base["default"]["pair_id"] == new["default"]["pair_id"]
    slowed = new["default"]
    rounds = int(slowed["pair_rounds"])
    assert rounds >= 10
    assert float(slowed["pair_latency_ci95_high"]) < 0.95  # 3x slower: base / new near 0.33
    assert float(slowed["pair_speedup_ci95_high"]) < 0.95
    assert 0.8 < float(slowed["pair_eager_latency"]) < 1.25  # its eager calls were not slowed
    assert not base["default"]["pair_latency"]  # the ratios are the new side's
    # both builds timed the same rounds: as many calls of each function, round by round
    mode = KEY_COLUMNS.index("mode")
    counts = [
        {
            s.series: len(s.ms)
            for s in read(samples_path(folder / "raw" / "any__cpu.csv"))
            if s.key[mode] == "default"
        }
        for folder in (tmp_path / "p", tmp_path / "p-new")
    ]
    assert counts[0] == counts[1] == {"eager": 5 * rounds, "compiled": 5 * rounds}
    assert "| TinyViT bs=1 default | " in proc.stdout and "| slower |" in proc.stdout
    report = tmp_path / "r.md"
    compare = [
        sys.executable,
        "-m",
        "suite",
        "compare",
        str(tmp_path / "p"),
        str(tmp_path / "p-new"),
        "-o",
        str(report),
    ]
    assert subprocess.run(compare, env=env, cwd=REPO, timeout=300, check=False).returncode == 1
    assert "(paired)" in report.read_text()
