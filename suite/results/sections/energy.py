"""The energy section: energy per image of the eager and the compiled function, from the
device's counter (suite.measure.energy). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Column, Section, extra, extra_timed

SECTION = Section(
    name="energy",
    title="Energy",
    about="Energy per image, in blocks after the timed calls ([phases-energy.md](phases-energy.md)); "
    "empty where the device gives no counter, and `energy_note` says why.",
    columns=(
        Column(
            "energy_source",
            contract=False,
            setting=True,
            doc="`nvml` or `rapl` (zones): the counter the energy figures come from",
        ),
        extra_timed(
            "idle_power_w",
            "W",
            "the device's power before the cell's model is built, nothing running (not subtracted)",
        ),
        extra_timed(
            "eager_j_per_image", "J", "the eager function's energy per image, in blocks after the timed calls"
        ),
        extra_timed("compiled_j_per_image", "J", "the compiled function's, the same way"),
        extra_timed(
            "energy_ratio", "x", "`compiled_j_per_image` / `eager_j_per_image` (< 1: compiled uses less)"
        ),
        extra("energy_note", "what the counter covers, or why the energy figures are empty"),
    ),
)
