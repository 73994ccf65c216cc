"""The row's sections: each topic's columns defined once, in its own module beside this one (key
and settings, how the cell ended, latency, throughput, compiling, accuracy, memory, provenance
and the machine, health, sampling, schedule, compile phases, CUDA graphs, energy, device time,
pair, and one per scenario). `SECTIONS` lists them in the order docs/csv.md shows them; the
CSV's own column order is suite.results.layout's. A new section is a module here and a line
below; its columns are appended to layout's `ORDER`. Imported inside the containers: standard
library only.
"""

from __future__ import annotations

from suite.results.sections import (
    accuracy,
    aot,
    compiling,
    cudagraphs,
    devicetime,
    energy,
    health,
    key,
    latency,
    memory,
    mixed_resolution,
    outcome,
    pair,
    parity,
    phases,
    pipeline,
    provenance,
    sampling,
    schedule,
    serving,
    throughput,
)
from suite.results.sections.base import Column, Section

SECTIONS: tuple[Section, ...] = (
    key.SECTION,
    outcome.SECTION,
    latency.SECTION,
    throughput.SECTION,
    compiling.SECTION,
    accuracy.SECTION,
    memory.SECTION,
    provenance.SECTION,
    health.SECTION,
    sampling.SECTION,
    schedule.SECTION,
    phases.SECTION,
    cudagraphs.SECTION,
    energy.SECTION,
    devicetime.SECTION,
    pair.SECTION,
    # the scenarios'
    parity.SECTION,
    pipeline.SECTION,
    serving.SECTION,
    mixed_resolution.SECTION,
    aot.SECTION,
)
BY_SECTION: dict[str, Section] = {s.name: s for s in SECTIONS}
# every column by name, and the section it belongs to
COLUMN_OF: dict[str, Column] = {c.name: c for s in SECTIONS for c in s.columns}
SECTION_OF: dict[str, str] = {c.name: s.name for s in SECTIONS for c in s.columns}

__all__ = ["BY_SECTION", "COLUMN_OF", "SECTIONS", "SECTION_OF", "Column", "Section"]
