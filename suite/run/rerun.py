"""A row's rerun interval (issue 27, docs/intervals.md): where another run's median of the same cell
on this machine should fall, 95% of the time. Its CI of the median covers the run's own sampling
error; the machine's between-run noise (`run_noise_pct`, measured by `nox -s coverage`) adds what
moves from one run to the next. Rows of a device type whose noise was not measured get none.
Standard library only (suite.stats)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from suite.spec.model import RunNoise
from suite.stats import rerun_interval


def fields(row: Mapping[str, Any], noise: RunNoise, device_type: str) -> dict[str, Any]:
    """The rerun columns of an ok row with a median and its CI; {} otherwise."""
    tau = noise.tau(device_type)
    figures = [row.get(c) for c in ("median_ms", "ci95_low_ms", "ci95_high_ms")]
    if (
        tau is None
        or row.get("status") != "ok"
        or any(not isinstance(f, (int, float)) or f <= 0 for f in figures)
    ):
        return {}
    median, low, high = (float(f) for f in figures)  # type: ignore[arg-type]
    lo, hi = rerun_interval(median, low, high, tau)
    return {"run_noise_pct": getattr(noise, device_type), "rerun95_low_ms": lo, "rerun95_high_ms": hi}
