"""A runner whose worker is a shell stub answering at once (tests/run/test_runner.py, test_tidy.py):
the real sweep, lock, resume and tidy on the tiny matrix, without a model."""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from suite.run import runner
from suite.spec import expand, load_matrix
from support import TINY, stub_environment

# $3 = the cell's JSON, $4 = the result's path (suite.run.launch: python -m MODULE CELL RESULT DEVICE).
# A compiled cell's outputs "turned" $STUB_DIFF (NaN or Infinity): accuracy fail, speed-up 0.85.
STUB = """#!/bin/sh
mkdir -p "$TORCHINDUCTOR_CACHE_DIR" && : > "$TORCHINDUCTOR_CACHE_DIR/kernel"
case "$4" in
  *-default-*) extra=', "speedup": 0.85, "eager_median_ms": 0.85, "accuracy": "fail"'
               extra="$extra"', "max_abs_diff": '"$STUB_DIFF" ;;
  *) extra='' ;;
esac
printf '{"status": "ok", "error": "", "iterations": 5, "mean_ms": 1.0, "median_ms": 1.0' > "$4.part"
printf '%s}' "$extra" >> "$4.part"
mv "$4.part" "$4"
"""
ENVIRONMENT = stub_environment(gpu_name="stub", torch_version="0.0.0", cpu_name="stub")


def cells(tmp_path: Path, cache: str = "cold") -> list:
    """TinyViT at batch 1, eager and default."""
    text = TINY.read_text().replace("modes: [eager]", "modes: [eager, default]")
    text = text.replace("timeout_s: 120}", f"timeout_s: 120, compile_cache: {cache}}}")
    (tmp_path / "m.yaml").write_text(text)
    return [c for c in expand(load_matrix(tmp_path / "m.yaml"), "tiny", "stub") if c.model.name == "TinyViT"]


def run(tmp_path: Path, stub: Path, diff: str, **kwargs: object) -> tuple[runner.RunReport, str]:
    """The stub's sweep of `cells` (TinyViT eager and default by default), with `$STUB_DIFF` set."""
    err = io.StringIO()
    os.environ["STUB_DIFF"] = diff
    try:
        with contextlib.redirect_stderr(err):
            report = runner.run_cells(runner.Sweep(
                kwargs.pop("cells", None) or cells(tmp_path), ENVIRONMENT, tmp_path / "out", "r",
                python=str(stub), min_free_mb=0, **kwargs,
            ))  # fmt: skip
    finally:
        del os.environ["STUB_DIFF"]
    return report, err.getvalue()
