"""What several test files share: the tiny matrix and `suite run` on it, a stub environment,
and the end-to-end tests' checks of a measured row."""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from suite.measure.provenance import Environment

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"


def tiny_run_cmd(out: Path, run_id: str, *args: str) -> list[str]:
    """`python -m suite run` of the tiny matrix's `tiny` profile on the CPU."""
    return [sys.executable, "-m", "suite", "run", "--matrix", str(TINY), "--profile", "tiny",
            "--device", "cpu", "--out", str(out), "--run-id", run_id, *args]  # fmt: skip


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
