"""The latency section: the row's function timed call by call (a synchronize around each), its
paired eager median and the speed-up, and what switching functions costs a call
(suite.measure.timing). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import INT, NUMBER, WHEN_OK, Column, Section, extra_timed, timed

# what a call right after the other function's costs, of the row's function and of the eager one
SWITCH: tuple[str, ...] = ("switch_penalty_pct", "eager_switch_penalty_pct")

SECTION = Section(
    name="latency",
    title="Latency",
    about="Latency of the cell's mode over the timed calls, a synchronize around each "
    "([measurement.md](measurement.md)); on a compiled row, the eager function timed interleaved "
    "with it in the same process and the paired speed-up. Throughput (back-to-back calls) is the "
    "next section.",
    columns=(
        Column(
            "iterations",
            INT,
            timing=True,
            doc="timed calls the row's figures come from (per function, all processes)",
        ),
        timed("mean_ms", required=WHEN_OK, doc="mean of the timed calls"),
        timed("median_ms", required=WHEN_OK, doc="median of the timed calls"),
        timed("p10_ms", doc="10th percentile"),
        timed("p90_ms", doc="90th percentile"),
        timed("std_ms", positive=False, doc="standard deviation"),
        timed("min_ms", doc="fastest call"),
        timed("ci95_low_ms", doc="95% CI of the median: low"),
        timed("ci95_high_ms", doc="95% CI of the median: high"),
        timed("eager_median_ms", doc="compiled rows: the interleaved eager function's median"),
        timed("speedup", unit="x", doc="compiled rows, paired: eager median / compiled median"),
        timed("speedup_ci95_low", unit="x", doc="95% CI of `speedup`: low"),
        timed("speedup_ci95_high", unit="x", doc="95% CI of `speedup`: high"),
        Column(
            "eager_ci95_low_ms",
            NUMBER,
            "ms",
            contract=False,
            positive=True,
            doc="95% CI of a compiled row's paired `eager_median_ms`: low",
        ),
        Column(
            "eager_ci95_high_ms",
            NUMBER,
            "ms",
            contract=False,
            positive=True,
            doc="95% CI of a compiled row's paired `eager_median_ms`: high",
        ),
        extra_timed(
            SWITCH[0],
            "%",
            "compiled rows: how much slower a call right after a call of the other function is (its "
            "switch calls' median / its latency median - 1, percent); the switch calls are kept out "
            "of every figure; empty on an eager row",
            positive=False,
        ),
        extra_timed(SWITCH[1], "%", "the same, of the eager function (compiled rows)", False),
    ),
)
