"""End to end on this CPU: a planted miscompile is caught, and only where it is.

`SUITE_FAULT=miscompile` (suite.measure.faults) turns on inductor's testing-only ReLU bug in the
worker processes: the code inductor generates computes relu(x) as x + 1, eager is untouched. The
tiny matrix's `planted` profile compiles two models: TinyResNet, whose graphs hold ReLUs, and
TinyViT, whose graphs hold none (GELU). The rule (suite.measure.accuracy_rule) must fail the
first and pass the second. That every compiled row passes without the fault is the smoke run's
check (tests/e2e/test_smoke_e2e.py: in CI four architectures compiled, all twelve under
SUITE_SMOKE_E2E=full)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from support import TINY

from suite.results import FAIL, PASS, read_rows

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("planted")]


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    out = tmp_path_factory.mktemp("planted")
    env = dict(os.environ, SUITE_FAULT="miscompile")
    cmd = [sys.executable, "-m", "suite", "run", "--matrix", str(TINY), "--profile", "planted",
           "--device", "cpu", "--out", str(out), "--run-id", "planted", "--min-free-mb", "0"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "1 ok cell(s) with ACCURACY FAIL (TinyResNet bs=1 default inference)" in proc.stderr
    (csv_path,) = (out / "planted" / "raw").glob("*.csv")
    got = read_rows(csv_path)
    assert got.repaired == 0 and got.skipped == 0
    return {r["model"]: r for r in got.rows}


def test_the_compiled_relus_fail_the_rule(rows) -> None:
    r = rows["TinyResNet"]
    assert (r["status"], r["accuracy"]) == ("ok", FAIL)
    assert float(r["accuracy_rmse"]) > 1000 * float(r["accuracy_rmse_eager"]), r["accuracy_note"]
    assert r["accuracy_reference"] == "float64 on cpu" and "beyond" in r["accuracy_note"]
    assert r["parity"] == FAIL, "the task's answer changed too (top-1 of its one image)"


def test_a_model_without_relu_still_passes(rows) -> None:
    r = rows["TinyViT"]
    assert (r["status"], r["accuracy"], r["parity"]) == ("ok", PASS, PASS), r["accuracy_note"]
    assert float(r["accuracy_spread"]) > 10 * float(r["tolerance"])
