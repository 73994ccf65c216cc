"""The mixed-resolution section: image sizes that change in one process, round-robin after each
was compiled (`mixed-resolution` rows, suite.measure.scenarios.mixed_resolution). Standard
library only."""

from __future__ import annotations

from suite.results.sections.base import NUMBER, Column, Section, counted, extra, extra_timed

SECTION = Section(
    name="mixed_resolution",
    title="Mixed resolutions",
    about="`mixed-resolution` rows ([mixed-resolution.md](mixed-resolution.md#columns)). Such a row's "
    "`recompiles` counts the graphs compiled after the first size's compile; its `dynamic` holds its "
    "setting (`static`, `auto`, `marked`), as a dynamic-batch row's does.",
    columns=(
        extra(
            "mixed_sizes",
            "the image sizes the process served in turn, back to the first "
            "(`224x224>160x160>288x288>224x224`)",
        ),
        extra_timed(
            "mixed_compile_s",
            "s",
            "compile seconds paid after the first size's compile (each size's first compiled call over "
            "an eager call there)",
            positive=False,
        ),
        counted(
            "mixed_cudagraph_records",
            "CUDA graphs recorded after the first size (reduce-overhead on a GPU; 0 elsewhere)",
        ),
        extra_timed("mixed_p50_ms", "ms", "compiled, every size round-robin after all were compiled: median"),
        extra_timed("mixed_p99_ms", "ms", "compiled, every size round-robin: p99"),
        extra_timed("mixed_eager_p50_ms", "ms", "eager, the same calls interleaved: median"),
        extra_timed("mixed_eager_p99_ms", "ms", "eager, the same calls interleaved: p99"),
        extra_timed(
            "fixed_p50_ms", "ms", "compiled at the first size alone, before any other size came: median"
        ),
        extra_timed("fixed_p99_ms", "ms", "compiled at the first size alone: p99"),
        Column(
            "mixed_max_abs_diff",
            NUMBER,
            contract=False,
            timing=True,
            nonfinite=True,
            doc="compiled vs eager at the other sizes: the largest max \\|diff\\| (`nan` if one turned NaN)",
        ),
        extra(
            "mixed_note",
            "per size: graphs compiled, their seconds, dynamo's guard failure (why it compiled again)",
        ),
    ),
)
