"""The CUDA graphs section: what recording CUDA graphs cost a compiled row, in seconds and
memory (suite.measure.cudagraphs). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Section, counted, extra, extra_timed

SECTION = Section(
    name="cudagraphs",
    title="CUDA graphs",
    about="Compiled rows of a mode that records CUDA graphs, on a GPU "
    "([phases-energy.md](phases-energy.md)); `cudagraph_note` says why a figure is empty.",
    columns=(
        counted("cudagraph_records", "CUDA graphs recorded (first call + warm-up)"),
        extra_timed("cudagraph_record_s", "s", "seconds recording them", positive=False),
        extra_timed(
            "cudagraph_pool_mb",
            "MB",
            "memory the CUDA graphs' private pools hold after the warm-up",
            positive=False,
        ),
        extra_timed(
            "cudagraph_extra_mb",
            "MB",
            "the compiled warm-up's reserved peak - the eager warm-up's, same process (the caching "
            "allocator's reserved peaks count a CUDA graph's private pool whole)",
            positive=False,
        ),
        extra("cudagraph_note", "why a CUDA-graph figure is empty"),
    ),
)
