"""The merge the screenshot and the benchmark make of a run: `python -m suite merge RUN -o OUT
--no-plots`, called as a function (the report side does not import the command line)."""

from __future__ import annotations

from pathlib import Path

from suite.report.publish import MergeResult, run_merge
from suite.report.reference import REFERENCE_DIR

MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"


def merge(run: Path, out: Path) -> MergeResult:
    """Tables and the run page of `run` into `out` (no plots: the pages link them, none shows one)."""
    return run_merge([run], out, MATRIX, matrix_explicit=False, reference_dir=REFERENCE_DIR, plots=False)
