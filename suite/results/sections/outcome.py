"""The outcome section: how the cell ended, when it started, how long it took and where its log
is. Standard library only."""

from __future__ import annotations

from suite.results.sections.base import NUMBER, Column, Section, extra

SECTION = Section(
    name="outcome",
    title="How the cell ended",
    about="Every row has these, a failed one too ([failures.md](failures.md)).",
    columns=(
        Column(
            "status",
            doc="`ok`, `oom`, `error`, `timeout` or `skipped` (a reader refuses any other word); on "
            "anything but `ok` the measured columns are empty",
        ),
        Column("error", doc="one line: why the cell failed or was skipped"),
        Column("started_at", doc="when the cell started (UTC)"),
        Column("wall_s", NUMBER, "s", doc="the cell's wall time, process start and compile included"),
        extra("shard", '`"i/n"` when the run was sharded, else empty'),
        extra("log_file", "the cell's worker log, relative to the run folder"),
    ),
)
