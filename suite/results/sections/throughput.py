"""The throughput section: blocks of back-to-back calls with one synchronize, timed in the same
rounds as the latency calls (suite.measure.timing). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Section, counted, with_ci

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
        *with_ci(
            "throughput_ms",
            "ms",
            "back-to-back: the median over blocks of ms per call of the row's function; "
            "`median_ms` is latency (a synchronize around each call)",
        ),
        *with_ci(
            "eager_throughput_ms", "ms", "compiled rows: the eager function's `throughput_ms`, same rounds"
        ),
        *with_ci(
            "throughput_speedup",
            "x",
            "compiled rows: `eager_throughput_ms` / `throughput_ms`, paired over blocks (block i of "
            "each in the same round), with its bootstrap 95% CI; `speedup` is latency's",
        ),
        counted("throughput_blocks", "throughput blocks of the row's function"),
        counted("block_calls", "back-to-back calls per throughput block"),
    ),
)
