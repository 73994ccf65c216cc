"""The `health` column: which of a row's machine-health figures make its timings suspect (the
flags, and the thresholds that raise them). A rule on the CSV's columns, shared by the runner
that writes the column, the report that marks its figures (§) and compare that sets them
aside; the figures themselves are taken in the worker (suite.measure.health). Standard
library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from suite.results.sections.health import FIGURE_NAMES

# The reasons that slow the clock below what was asked for (the others are settings).
SLOWDOWNS: frozenset[str] = frozenset(
    {"sw_power", "hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}
)

# The flags of the `health` column, each with the rule that raises it (docs/csv.md, "Machine health").
THROTTLED, CLOCK_VARIED, SHARED_GPU, STEAL, BUSY = "throttled", "clock-varied", "shared-gpu", "steal", "busy"
HOST_VARIED = "host-varied"
HEALTHY = "ok"
CLOCK_VARIATION = 0.02  # (max - min) / max of the SM clock while timed
STEAL_PCT = 2.0  # % of CPU time taken by the hypervisor while timed
WAIT_PCT = 10.0  # % of the time some runnable task waited for a CPU (PSI), while timed
LOAD_PER_CORE = 1.5  # without PSI: the 1-minute load as the cell ended, per core
# host-varied: the host probe's spread while timed (host_speed_moved_pct) beyond the row's own
# between-run noise (run_noise_pct: what its rerun interval allows for), or beyond this where the
# device type has none: a launch-bound figure moves with the host CPU's speed (docs/trust.md)
HOST_VARIATION_PCT = 10.0

# the figures the verdict reads (the health section's, suite.results.sections.health)
COLUMNS: tuple[str, ...] = FIGURE_NAMES


def _num(value: object) -> float | None:
    if value in (None, ""):
        return None
    try:
        return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def verdict(row: Mapping[str, Any], cores: int) -> str:
    """`ok`, or the comma-joined flags that make the row's figures suspect; empty when the row
    has no health figures at all (a failed cell, or a CSV from before these columns)."""
    if all(row.get(c) in (None, "") for c in COLUMNS):
        return ""
    flags = []
    throttle = str(row.get("gpu_throttle") or "")
    if any(r in SLOWDOWNS for r in throttle.split(",")):
        flags.append(THROTTLED)
    lo, hi = _num(row.get("gpu_sm_clock_mhz_min")), _num(row.get("gpu_sm_clock_mhz_max"))
    if lo is not None and hi and (hi - lo) / hi > CLOCK_VARIATION:
        flags.append(CLOCK_VARIED)
    others = _num(row.get("gpu_other_processes"))
    if others:
        flags.append(SHARED_GPU)
    steal = _num(row.get("cpu_steal_pct"))
    if steal is not None and steal >= STEAL_PCT:
        flags.append(STEAL)
    wait = _num(row.get("cpu_wait_pct"))
    load = _num(row.get("host_load"))
    if wait is not None:
        if wait >= WAIT_PCT:
            flags.append(BUSY)
    elif load is not None and cores > 0 and load > LOAD_PER_CORE * cores:
        flags.append(BUSY)
    if host_varied(row):
        flags.append(HOST_VARIED)
    return ",".join(flags) or HEALTHY


def host_varied(row: Mapping[str, Any]) -> bool:
    """Whether the host CPU's speed moved more, while the row was timed, than the row's noise."""
    moved = _num(row.get("host_speed_moved_pct"))
    noise = _num(row.get("run_noise_pct"))
    return moved is not None and moved > (noise if noise is not None else HOST_VARIATION_PCT)


def flags_of(value: object) -> list[str]:
    """The flags of a `health` value (none for `ok`, empty, or missing: None, or pandas' NaN)."""
    text = value if isinstance(value, str) else ""
    return [f for f in text.split(",") if f and f != HEALTHY]
