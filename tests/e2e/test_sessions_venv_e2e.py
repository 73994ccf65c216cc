"""`nox -s bench-local` for real: the stable build (torch 2.0.1, Python 3.10) and the
current one, each in its pinned virtualenv, then the merge with a stable-vs-other table.

Opt-in (SUITE_BENCH_LOCAL=1): the first run downloads torch 2.0.1 with its CUDA 11.7
libraries from PyPI (about 4.5 GB) and compiles on the CPU; later runs reuse
.nox/build-*/. Run it after changing matrix.yaml's builds, the lock files or the noxfile:

    SUITE_BENCH_LOCAL=1 .nox/tests/bin/python -m pytest tests/e2e/test_sessions_venv_e2e.py -v
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from suite.results import read_rows

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        os.environ.get("SUITE_BENCH_LOCAL") != "1",
        reason="opt-in: SUITE_BENCH_LOCAL=1 (downloads torch 2.0.1)",
    ),
]


def test_bench_local_runs_both_local_builds_and_merges(tmp_path: Path) -> None:
    out = tmp_path / "results"
    cmd = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), "-s", "bench-local", "--"]
    cmd += ["--models", "ViT", "--modes", "eager,default", "--run-id", "t", "--out", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=5400, check=False)
    assert proc.returncode == 0, proc.stderr[-4000:]
    raw = out / "t" / "raw"
    assert sorted(p.name for p in raw.glob("*.csv")) == ["current__cpu.csv", "stable__cpu.csv"]
    expect = {"stable": ("2.0.1", "3.10.", "4.31.0"), "current": ("2.13.0", "3.11.", "5.23.0")}
    for build, (torch, python, transformers) in expect.items():
        rows = read_rows(raw / f"{build}__cpu.csv").rows
        assert [(r["model"], r["mode"], r["status"]) for r in rows] == [
            ("ViT", "eager", "ok"),
            ("ViT", "default", "ok"),
        ]
        for row in rows:
            assert row["torch_version"].split("+")[0] == torch and row["torch_git"]
            assert row["python_version"].startswith(python)
            assert row["transformers_version"] == transformers
            assert float(row["median_ms"]) > 0
        assert float(rows[1]["speedup"]) > 0 and rows[1]["compile_s"]
    tables = out / "t" / "tables"
    (stable_vs,) = tables.glob("stable-vs-current__*.md")  # current is a release: named by its builds
    text = stable_vs.read_text()
    assert "| Image Classification/ViT | 1 |" in text
    assert "stable (torch 2.0.1" in (tables / "tables.md").read_text()
