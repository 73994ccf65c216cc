"""The pair section: two builds timed side by side, in alternating rounds on one device
(docs/pairs.md, suite.run.pair): which pair and role, and on the new build's row the paired
ratios. Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Column, Section, counted, extra, extra_timed

# the paired figures, each a ratio base / new with its interval: (figure, of what)
FIGURES: tuple[tuple[str, str], ...] = (
    ("latency", "the row's function's latency (the median of each round's calls)"),
    ("throughput", "the row's function's throughput block"),
    ("eager_latency", "the eager function's latency, on a compiled row"),
    ("eager_throughput", "the eager function's throughput block, on a compiled row"),
    ("speedup", "the compiled speed-up, new / base (each build's eager / compiled of the same round)"),
)
ROLES: tuple[str, str] = ("base", "new")
COMPILE_TIME_RATIO = "pair_compile_time_ratio"


def ratio_names(figure: str) -> tuple[str, str, str]:
    """A paired figure's columns: the ratio, its 95% interval's low and high."""
    return f"pair_{figure}", f"pair_{figure}_ci95_low", f"pair_{figure}_ci95_high"


def _ratio(figure: str, what: str) -> tuple[Column, ...]:
    ratio, low, high = ratio_names(figure)
    doc = f"the new side: per round base / new of {what} (> 1: the new build is faster), median over rounds"
    return (
        extra_timed(ratio, "x", doc),
        extra_timed(low, "x", f"bootstrap 95% CI of `{ratio}`: low"),
        extra_timed(high, "x", f"bootstrap 95% CI of `{ratio}`: high"),
    )


SECTION = Section(
    name="pair",
    title="Two builds side by side",
    about="Rows timed side by side with another build's ([pairs.md](pairs.md)); empty on a failed row "
    "and in rows from before them.",
    columns=(
        extra("pair_id", "the pair session both builds' rows were timed in"),
        Column("pair_role", contract=False, choices=ROLES, doc="this row's side: `base` or `new`"),
        extra("pair_partner", "the other build of the pair"),
        counted("pair_rounds", "the new side: rounds each build timed, in turn"),
        *(column for figure, what in FIGURES for column in _ratio(figure, what)),
        extra_timed(COMPILE_TIME_RATIO, "x", "`compile_s` new / base (one compile each: no interval)"),
        Column(
            "timing_cpus",
            contract=False,
            setting=True,
            doc="the CPUs the worker was pinned to while it timed: both workers of a pair, or on a CPU "
            "the timed process of `--overlap` and `--pin-timing` (a setting: compare matches rows on it)",
        ),
    ),
    notes="A pair's rows say `stop_reason: pair` (the coordinator stopped both workers' rounds: "
    "[pairs.md](pairs.md#when-the-rounds-stop)).",
)
