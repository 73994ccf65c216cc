"""A cell's figures from several processes' samples (docs/intervals.md): the pooled
median and its 95% interval from a hierarchical bootstrap (processes, then calls within each), so
that what moves between processes is inside the interval; the paired speed-up likewise (eager and
compiled calls stay paired within their process). Standard library only (suite.stats)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from suite.stats import (
    breakeven_calls,
    hierarchical_median_ci,
    hierarchical_ratio_ci,
    mean,
    median,
    percentile,
    stdev,
)


def _groups(kept: Sequence[Mapping[str, Any]], series: str) -> list[list[float]]:
    return [list(p["series"][series]) for p in kept if p["series"].get(series)]


def fields(kept: Sequence[Mapping[str, Any]], compiled: bool, compile_s: float | None) -> dict[str, Any]:
    """The row's latency (and, compiled, speed-up) columns over every process in `kept` (each
    {"process", "cold", "series": {"eager": ms, "compiled": ms}}), `processes` and the spread of
    the process medians."""
    own = _groups(kept, "compiled" if compiled else "eager")
    if not own:
        return {}
    flat = [x for g in own for x in g]
    lo, hi = hierarchical_median_ci(own)
    medians = [median(g) for g in own]
    out: dict[str, Any] = {
        "iterations": len(flat),
        "mean_ms": mean(flat),
        "median_ms": median(flat),
        "p10_ms": percentile(flat, 10),
        "p90_ms": percentile(flat, 90),
        "std_ms": stdev(flat),
        "min_ms": min(flat),
        "ci95_low_ms": lo,
        "ci95_high_ms": hi,
        "processes": len(own),
        "process_spread_pct": 100.0 * (max(medians) / min(medians) - 1),
    }
    if not compiled:
        return out
    eager = _groups(kept, "eager")
    if len(eager) != len(own) or any(len(a) != len(b) for a, b in zip(eager, own, strict=True)):
        return out  # unpaired: the first process's speed-up stays
    eager_flat = [x for g in eager for x in g]
    e_lo, e_hi = hierarchical_median_ci(eager)
    s_lo, s_hi = hierarchical_ratio_ci(eager, own)
    eager_median = median(eager_flat)
    out.update(
        eager_median_ms=eager_median,
        eager_ci95_low_ms=e_lo,
        eager_ci95_high_ms=e_hi,
        speedup=eager_median / out["median_ms"],
        speedup_ci95_low=s_lo,
        speedup_ci95_high=s_hi,
        breakeven_calls=breakeven_calls(compile_s, eager_median, out["median_ms"]),
    )
    return out
