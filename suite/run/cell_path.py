"""The path every cell takes, from its processes to its rows: the cell's own worker (suite.run.launch)
and, for a compiled cell with the `compile_cost` setting, its warm and mega-cache processes after
it. What comes back is always the list of rows the cell owes (one, or one per batch size of a
`dynamic-batch` cell: suite.run.launch.rows_of).

What each process measures is suite.measure.compile_cost's. Here: which cache folders each gets
(the cell's process a fresh one; the warm process the same, as the first left it; the mega-cache
process fresh ones and the artifacts file the first saved), one log per cell (the extra
processes append to it), the figures carried into the cell's row, and a note saying why a figure
is empty (no such cache in the build, a process that failed). The row's `wall_s` is the time of
all of the cell's processes: the device time the cell cost. The extra processes are device time
too, which is why `compile_cost` is a setting (docs/compile-cost.md).
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import replace
from typing import Any

from suite.measure.compile_cost import COLUMN_OF_PHASE, LABEL_OF_PHASE, MEGACACHE, MEGACACHE_ENV, WARM
from suite.run import launch
from suite.run.launch import WorkerJob, WorkerResult
from suite.stats import breakeven_calls


def run_cell(job: WorkerJob) -> WorkerResult:
    """The rows of one cell (`job`: its own process), with the wall seconds of all its processes."""
    cell, paths = job.cell, job.paths
    if not cell.compile_cost:
        return launch.run_worker(job)
    scratch = paths.scratch / f"{launch.cell_stem(cell, job.index)}.{uuid.uuid4().hex[:12]}.compile-cost"
    cold, artifacts = scratch / "cold", scratch / "megacache.bin"
    scratch.mkdir(parents=True, exist_ok=True)  # the cell's process saves the artifacts here
    try:
        result = launch.run_worker(replace(job, cache=cold, extra_env={MEGACACHE_ENV: str(artifacts)}))
        fields = result.fields  # a compile-cost cell owes one row
        if fields["status"] != "ok":
            return result
        log_path = paths.run_dir / result.log_file
        notes = [str(fields.get("compile_note") or "")]
        warm = launch.run_worker(replace(job, phase=WARM, cache=cold, log_path=log_path))
        result.wall_s += warm.wall_s
        notes.append(_carry(fields, warm.fields, WARM))
        if artifacts.exists():  # the build saved a mega-cache: load it where nothing is cached
            mega = launch.run_worker(
                replace(
                    job,
                    phase=MEGACACHE,
                    cache=scratch / "fresh",
                    log_path=log_path,
                    extra_env={MEGACACHE_ENV: str(artifacts)},
                )
            )
            result.wall_s += mega.wall_s
            notes.append(_carry(fields, mega.fields, MEGACACHE))
        fields["breakeven_calls_warm"] = breakeven_calls(
            fields.get("compile_warm_s"), fields.get("eager_median_ms"), fields.get("median_ms")
        )
        fields["compile_note"] = "; ".join(n for n in notes if n)
        return result
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _carry(fields: dict[str, Any], phase_fields: dict[str, Any], phase: str) -> str:
    """Copy an extra process's figure into the cell's fields; its note, or why it has none."""
    column = COLUMN_OF_PHASE[phase]
    if phase_fields.get("status") == "ok" and phase_fields.get(column) is not None:
        fields[column] = phase_fields[column]
        # where its compile went (issue 29, suite.measure.phases), after the cell's own phase note
        parts = (fields.get("phase_note"), phase_fields.get("phase_note"))
        fields["phase_note"] = "; ".join(str(p) for p in parts if p)
        return str(phase_fields.get("compile_note") or "")
    status, error = phase_fields.get("status"), phase_fields.get("error")
    return f"{LABEL_OF_PHASE[phase]}: no figure, its process ended {status}: {error}"
