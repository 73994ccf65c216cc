"""The schedule section: how the row's process was started and when its compile ran beside
others' (suite.run.schedule). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import INT, NUMBER, Column, Section, extra

SECTION = Section(
    name="schedule",
    title="What ran where",
    about="How the row was measured ([measurement.md](measurement.md#what-runs-where)).",
    columns=(
        Column(
            "schedule",
            contract=False,
            choices=("serial", "ahead", "overlap"),
            doc="`serial` (the cell's own process compiled and timed it), `ahead` (a compiled cell's "
            "own process compiled it beside others, then timed it alone; an eager cell was measured "
            "after its model's compiled cell, in that process) or `overlap` (as `ahead`, its process "
            "pinned to its own cores while the next wave compiled on the others: `--overlap`)",
        ),
        extra(
            "compile_wave",
            "processes compiling at once when the row's `compile_s` was measured: 1 alone (every "
            "`serial` row, and `ahead` on a machine of 2 or 3 cores), else its wave's size (`ahead` "
            "starts one compile per 2 cores, or `--compile-pool`); empty on a row without `compile_s`",
            INT,
        ),
        Column(
            "process_start",
            contract=False,
            choices=("spawn", "fork"),
            doc="`spawn` (a fresh `python -m suite.measure.worker`: every `serial` row, the cells "
            "`ahead` does not share, and any process a zygote refused) or `fork` (`ahead`: forked from "
            "the run's zygote, which had imported torch and transformers once and never touched CUDA; "
            "its time to first result counts the zygote's start-up)",
        ),
        extra(
            "compile_ahead_s",
            "of `wall_s`, the seconds the row's process spent before its gate under `ahead` or "
            "`overlap` (start, model, the compile, the compiled warm-up, the accuracy check): the rest "
            "of `wall_s` is its timing; on a compiled cell's row only, empty otherwise "
            "([gpu-study.md](gpu-study.md#the-cost-model-and-the-calibration) compares each part with "
            "its estimate)",
            NUMBER,
            "s",
        ),
    ),
)
