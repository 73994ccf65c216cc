"""The memory section: the peak of the measured calls and the model's size. Standard library
only."""

from __future__ import annotations

from suite.results.sections.base import NUMBER, Column, Section

SECTION = Section(
    name="memory",
    title="Memory",
    about="What the cell's model holds and its calls peak at ([measurement.md](measurement.md)).",
    columns=(
        Column("peak_mem_mb", NUMBER, "MB", doc="peak memory of the measured calls"),
        Column("params_m", NUMBER, "M", doc="parameters of the model built (millions)"),
    ),
)
