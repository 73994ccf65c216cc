"""The pipeline section: one request end to end, per stage, timed interleaved in the cell's
process (`pipeline` rows, suite.measure.scenarios.pipeline). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Column, Section, extra, extra_timed, with_ci

# the request's stages, in order, and what each times
STAGES: tuple[tuple[str, str], ...] = (
    ("pre", "preprocessing with the model's image processor"),
    ("pre_fast", "preprocessing with its fast variant"),
    ("forward", "the row's function (compiled in a compiled row) on the preprocessed batch"),
    ("post", "the task's post-processing"),
    ("e2e", "the whole request (pre, forward, post) with the row's function"),
)
FIGURES: tuple[str, ...] = ("median", "ci95_low", "ci95_high")


def stage_column(stage: str, figure: str) -> str:
    """`<stage>_<figure>_ms`: a stage's median or an end of its 95% CI."""
    return f"{stage}_{figure}_ms"


STAGE_COLUMNS: tuple[Column, ...] = tuple(
    extra_timed(stage_column(stage, figure), "ms", f"{what}: {figure.replace('_', ' ')}")
    for stage, what in STAGES
    for figure in FIGURES
)

SECTION = Section(
    name="pipeline",
    title="Pipeline: the request per stage",
    about="`pipeline` rows ([pipeline.md](pipeline.md)): one request per stage, timed interleaved in "
    "the cell's process; each stage has `<stage>_median_ms`, `<stage>_ci95_low_ms`, "
    "`<stage>_ci95_high_ms`.",
    columns=(
        Column(
            "pipeline_post",
            contract=False,
            setting=True,
            doc="the post-processing the post stage calls (`top-5`, `post_process_object_detection`, ...)",
        ),
        *STAGE_COLUMNS,
        extra("pre_fast_note", "why `pre_fast_*` is empty (the processor has no fast variant)"),
        extra_timed(
            "e2e_eager_median_ms", "ms", "compiled rows: the whole request with the eager forward: median"
        ),
        *with_ci("e2e_speedup", "x", "compiled rows, paired: eager request median / compiled request median"),
    ),
)
