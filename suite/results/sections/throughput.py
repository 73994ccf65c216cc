"""The throughput section: blocks of back-to-back calls with one synchronize, timed in the same
rounds as the latency calls (suite.measure.timing). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import INT, Column, Section, extra_timed

_MS_ENDS = ("_ms", "_ci95_low_ms", "_ci95_high_ms")
# the figures (the counts of blocks and calls apart)
FIGURES: tuple[str, ...] = (
    *(f"{stem}{end}" for stem in ("throughput", "eager_throughput") for end in _MS_ENDS),
    *(f"throughput_speedup{end}" for end in ("", "_ci95_low", "_ci95_high")),
)

SECTION = Section(
    name="throughput",
    title="Throughput",
    about="Blocks of `block_calls` back-to-back calls with one synchronize, in ms per call (CUDA "
    "events on a GPU, the host clock on a CPU), timed in the same rounds as the latency calls "
    "([measurement.md](measurement.md)). Empty on a failed row and in rows from before them; the "
    "`dynamic-batch` and `pipeline` scenarios fill none of them.",
    columns=(
        extra_timed(
            "throughput_ms",
            "ms",
            "back-to-back: the median over blocks of ms per call of the row's function; "
            "`median_ms` is latency (a synchronize around each call)",
        ),
        extra_timed("throughput_ci95_low_ms", "ms", "95% CI of `throughput_ms`: low"),
        extra_timed("throughput_ci95_high_ms", "ms", "95% CI of `throughput_ms`: high"),
        extra_timed(
            "eager_throughput_ms", "ms", "compiled rows: the eager function's `throughput_ms`, same rounds"
        ),
        extra_timed("eager_throughput_ci95_low_ms", "ms", "95% CI of `eager_throughput_ms`: low"),
        extra_timed("eager_throughput_ci95_high_ms", "ms", "95% CI of `eager_throughput_ms`: high"),
        extra_timed(
            "throughput_speedup",
            "x",
            "compiled rows: `eager_throughput_ms` / `throughput_ms`, paired over blocks (block i of "
            "each in the same round); `speedup` is latency's",
        ),
        extra_timed("throughput_speedup_ci95_low", "x", "bootstrap 95% CI of `throughput_speedup`: low"),
        extra_timed("throughput_speedup_ci95_high", "x", "bootstrap 95% CI of `throughput_speedup`: high"),
        Column(
            "throughput_blocks",
            INT,
            contract=False,
            timing=True,
            doc="throughput blocks of the row's function",
        ),
        Column(
            "block_calls", INT, contract=False, timing=True, doc="back-to-back calls per throughput block"
        ),
    ),
)
