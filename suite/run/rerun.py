"""A row's rerun interval (docs/intervals.md): where another run's median of the same cell
on this machine should fall, 95% of the time. Its CI of the median covers the run's own sampling
error; the machine's between-run noise (`run_noise_pct`, measured by `nox -s coverage`) adds what
moves from one run to the next. Rows of a device type whose noise was not measured get none.
Standard library only (suite.stats)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from suite.spec.settings import Settings
from suite.stats import rerun_interval


def fields(row: Mapping[str, Any], settings: Settings, device_type: str) -> dict[str, Any]:
    """The rerun columns of an ok row: its median's where it has a CI and the median's noise is
    measured on `device_type`, its paired speed-up's likewise; {} otherwise."""
    if row.get("status") != "ok":
        return {}
    out: dict[str, Any] = {}
    for noise, (center, low, high), names in (
        (settings.run_noise, MEDIAN, ("run_noise_pct", "rerun95_low_ms", "rerun95_high_ms")),
        (
            settings.speedup_noise,
            SPEEDUP,
            ("speedup_noise_pct", "speedup_rerun95_low", "speedup_rerun95_high"),
        ),
    ):
        tau = noise.tau(device_type)
        figures = [row.get(c) for c in (center, low, high)]
        if tau is None or not all(isinstance(f, (int, float)) and f > 0 for f in figures):
            continue
        lo, hi = rerun_interval(*(float(f) for f in figures), tau)  # type: ignore[arg-type]
        out.update(zip(names, (getattr(noise, device_type), lo, hi), strict=True))
    return out


MEDIAN = ("median_ms", "ci95_low_ms", "ci95_high_ms")
SPEEDUP = ("speedup", "speedup_ci95_low", "speedup_ci95_high")
MEDIAN_COLUMNS = ("run_noise_pct", "rerun95_low_ms", "rerun95_high_ms")
SPEEDUP_COLUMNS = ("speedup_noise_pct", "speedup_rerun95_low", "speedup_rerun95_high")
