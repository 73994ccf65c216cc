"""What the tests share, in one place (`from support import ...`): `python -m suite`, `main` in
this process with its output captured (`call`, `call_output`), the tiny matrix and `suite run` on
it, the shared smoke run's scope, a stub environment and a stub worker, the end-to-end tests'
checks of a measured row. Beside it: `support.docker` (the fake docker and nvidia-smi,
noxfile.py as a module), `support.rows` (raw rows and run folders made by hand),
`support.runner` (the real sweep with a stub worker), `support.matrices` (the inline matrices and
their parts), `support.known_failures` (the cells known to fail, per torch build)."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import math
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from suite.measure.provenance import Environment

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"


def tiny_run_cmd(out: Path, run_id: str, *args: str) -> list[str]:
    """`python -m suite run` of the tiny matrix's `tiny` profile on the CPU."""
    return [sys.executable, "-m", "suite", "run", "--matrix", str(TINY), "--profile", "tiny",
            "--device", "cpu", "--out", str(out), "--run-id", run_id, *args]  # fmt: skip


def suite_cli(*args: str, timeout: float = 3600) -> subprocess.CompletedProcess[str]:
    """`python -m suite ARGS` from the repository, with no fault injected."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SUITE_FAULT", None)
    return subprocess.run(
        [sys.executable, "-m", "suite", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=timeout,
        check=False,
    )


# The scope of the tests' shared smoke run (tests/conftest.py), like SUITE_TRAIN_E2E's:
# SUITE_SMOKE_E2E=ci (the default) runs the smoke profile: every architecture eager, one of each
# task compiled (17 cells, in SMOKE_PASSES); SUITE_SMOKE_E2E=full runs smoke-compiled (25 cells,
# every architecture compiled: the compiled cells are most of the run's time, and in CI all 12
# took the run from about 6 to 14 minutes of its critical path).
SMOKE_SCOPE = os.environ.get("SUITE_SMOKE_E2E", "ci")
FULL_PROFILE = "smoke-compiled"
# (modes, models) of each pass of CI's scope; a later pass resumes the run folder. The compiled
# models' passes come first with their eager cells, so that under `ahead` each eager cell shares
# its compiled sibling's process; the last pass adds the other architectures' eager cells (the
# four already recorded are skipped). On a CPU, where no CUDA graph is captured,
# reduce-overhead compiles what default compiles.
SMOKE_PASSES: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = (
    (("eager", "default", "reduce-overhead"), ("ResNet",)),  # a CNN: the profile's reduce-overhead cell
    (("eager", "default"), ("ViT", "DETR", "Segformer")),  # a plain graph, a detector, a segmentation model
    (("eager",), ()),  # every architecture
)


def smoke_passes() -> list[list[str]]:
    """The `run` flags of each pass of the shared smoke run into one run folder (a later pass
    resumes it)."""
    if SMOKE_SCOPE == "full":
        return [["--profile", FULL_PROFILE]]
    if SMOKE_SCOPE != "ci":
        raise ValueError(f"SUITE_SMOKE_E2E={SMOKE_SCOPE!r}: use ci or full")
    passes = []
    for n, (modes, models) in enumerate(SMOKE_PASSES):
        flags = ["--modes", ",".join(modes)]
        if models:
            flags += ["--models", ",".join(models)]
        if n:  # a first pass's error rows stay where they are
            flags.append("--keep-failed")
        passes.append(flags)
    return passes


def smoke_cells(matrix: Path, build: str) -> list[Any]:
    """The cells the shared smoke run measures, in its order: the passes' expansions."""
    from suite.results import key_of
    from suite.spec import Filters, expand, load_matrix

    m = load_matrix(matrix)
    if SMOKE_SCOPE == "full":
        return expand(m, FULL_PROFILE, build)
    cells = {}  # a later pass skips what an earlier one recorded
    for modes, models in SMOKE_PASSES:
        for cell in expand(m, "smoke", build, Filters(modes=modes, models=models or None)):
            cells.setdefault(key_of(cell.key_fields("cpu")), cell)
    return list(cells.values())


def smoke_compiled(mode: str) -> int:
    """How many architectures the shared smoke run compiles in `mode`."""
    return sum(1 for cell in smoke_cells(REPO / "matrix.yaml", "current") if cell.mode == mode)


@dataclass(frozen=True)
class SmokeRun:
    """The smoke profile run on this CPU: `suite run --profile smoke --run-id e2e`."""

    out: Path  # the --out folder; the run's own is out / run_id
    run_id: str
    stderr: str  # what `suite run` printed (progress lines)

    @property
    def folder(self) -> Path:
        return self.out / self.run_id

    def copy_to(self, out: Path) -> Path:
        """A copy of the run under `out` (same run id), for a test that writes into it."""
        shutil.copytree(self.folder, out / self.run_id)
        return out / self.run_id


def examples(count: int) -> int:
    """Hypothesis examples for a test written for `count` under Hypothesis' own default of 100,
    scaled by the profile tests/conftest.py loaded (`ci` 25: a quarter; `thorough` 1000: ten
    times as many)."""
    from hypothesis import settings

    return max(1, count * settings.default.max_examples // 100)


def stub_environment(**fields: Any) -> Environment:
    """A CPU environment whose provenance fields are empty, but for those given."""
    base: dict[str, Any] = {f: "" for f in Environment.__dataclass_fields__}
    return Environment(
        **base | {"device": "cpu", "device_type": "cpu", "gpu_count": 0, "cpu_count": 1} | fields
    )


def known(row: Mapping[str, str], table: Mapping[tuple[str, str, str], Any]) -> Any:
    """The entry of `table`, keyed (torch version prefix, model, mode), that fits the row."""
    for (torch_prefix, model, mode), value in table.items():
        if row["torch_version"].startswith(torch_prefix) and (row["model"], row["mode"]) == (model, mode):
            return value
    return None


def num(row: Mapping[str, str], col: str) -> float:
    value = float(row[col])
    assert math.isfinite(value), f"{row['model']} {row['mode']}: {col}={row[col]}"
    return value


def check_latency(row: Mapping[str, str], label: str) -> None:
    """The latency statistics of an ok row are ordered and finite."""
    lo, p10, med, p90 = num(row, "min_ms"), num(row, "p10_ms"), num(row, "median_ms"), num(row, "p90_ms")
    assert 0 < lo <= p10 <= med <= p90, label
    assert num(row, "ci95_low_ms") <= med <= num(row, "ci95_high_ms"), label
    assert num(row, "mean_ms") > 0 and num(row, "std_ms") >= 0, label
    assert num(row, "peak_mem_mb") > 0 and num(row, "params_m") > 0, label


def check_speedup(row: Mapping[str, str], label: str) -> None:
    """A compiled ok row: its speed-up is the ratio of the medians, inside its CI; it compiled
    once, and did not recompile while timed."""
    s = num(row, "speedup")
    assert num(row, "speedup_ci95_low") <= s <= num(row, "speedup_ci95_high"), label
    assert s == pytest.approx(num(row, "eager_median_ms") / num(row, "median_ms"), rel=1e-3), label
    assert num(row, "compile_s") > 0, label
    assert int(row["graph_breaks"]) >= 0, label
    assert int(row["recompiles"]) == 0, f"{label}: recompiled while being timed"


# Stands in for `python -m suite.measure.worker CELL RESULT DEVICE` ($3 = CELL, $4 = RESULT), for
# tests of the runner that need no torch (tests/run/test_kill_resume.py, test_shard_simulation.py).
# TinyViT at batch 2 always fails without a result (an error row, re-run on each resume);
# an ok result names the runner that started the stub ($PPID), so a result handed to
# the wrong run would show. For the orphan test: STUB_WAIT_FOR holds the result back until
# that file exists, STUB_MARK is written after the result; STUB_SLOW_FAIL (a cell pattern)
# touches STUB_STARTED, waits for STUB_FAIL_AFTER, then fails without a result. A compiled cell's
# result has a speed-up, as the real worker's does (merged tables and plots need one).
STUB_WORKER = """#!/bin/sh
wait_for() { n=0; while [ ! -e "$1" ] && [ $n -lt 400 ]; do sleep 0.05; n=$((n+1)); done; }
case "$4" in
  ${STUB_SLOW_FAIL:-none}) : > "$STUB_STARTED"; wait_for "$STUB_FAIL_AFTER"; exit 1 ;;
esac
if [ -n "$STUB_WAIT_FOR" ]; then echo "stub: waiting"; wait_for "$STUB_WAIT_FOR"; fi
sleep "${STUB_SLEEP:-0.1}"
case "$4" in
  *tinyvit-bs2-*) echo "stub: failing on purpose"; exit 1 ;;
esac
printf '{"status": "ok", "error": "", "iterations": 5, "mean_ms": 1.0, "median_ms": 1.0, ' > "$4.part"
case "$4" in
  *-eager-*) ;;
  *) printf '"eager_median_ms": 2.0, "speedup": 2.0, ' >> "$4.part"
     printf '"speedup_ci95_low": 1.9, "speedup_ci95_high": 2.1, ' >> "$4.part" ;;
esac
printf '"input_source": "%s"}' "$PPID" >> "$4.part" && mv "$4.part" "$4"
[ -z "$STUB_MARK" ] || echo "$PPID" > "$STUB_MARK"
"""

# The environment a stub-worker run records (no probe child: nothing imports torch).
STUB_ENVIRONMENT = stub_environment(gpu_name="stub", torch_version="0.0.0", python_version="3", image="host",
                                   suite_version="0", cpu_name="stub")  # fmt: skip


def write_stub_worker(path: Path, text: str = STUB_WORKER) -> Path:
    """A stub worker (STUB_WORKER unless `text`) as an executable file at `path`: what
    runner.run_cells(python=...) starts."""
    path.write_text(text)
    path.chmod(0o755)
    return path


def nightly_script() -> ModuleType:
    """.github/scripts/nightly.py (the workflow's helper) as a module, loaded once."""
    if "nightly" in sys.modules:
        return sys.modules["nightly"]
    spec = importlib.util.spec_from_file_location("nightly", REPO / ".github" / "scripts" / "nightly.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["nightly"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def call_output(argv: list[str]) -> tuple[int, str, str]:
    """`suite.cli.main(argv)` in this process: its exit status, stdout and stderr."""
    from suite.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def call(argv: list[str]) -> tuple[int, str]:
    """`suite.cli.main(argv)` in this process: its exit status and stderr (stdout dropped)."""
    code, _, err = call_output(argv)
    return code, err
