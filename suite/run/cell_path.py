"""The path every cell takes, from its processes to its rows: the cell's own worker (suite.run.launch)
and, for a compiled cell with the `compile_cost` setting, its warm and mega-cache processes after
it; then the rows the cell owes (one, or one per batch size of a `dynamic-batch` cell).

What each process measures is suite.measure.compile_cost's. Here: which cache folders each gets
(the cell's process a fresh one; the warm process the same, as the first left it; the mega-cache
process fresh ones and the artifacts file the first saved), one log per cell (the extra
processes append to it), the figures carried into the cell's row, and a note saying why a figure
is empty (no such cache in the build, a process that failed). The row's `wall_s` is the time of
all of the cell's processes: the device time the cell cost. The extra processes are device time
too, which is why `compile_cost` is a setting (README, "What compiling costs").
"""

from __future__ import annotations

import shutil
import sys
import uuid
from typing import Any

from suite.measure.compile_cost import COLUMN_OF_PHASE, LABEL_OF_PHASE, MEGACACHE, MEGACACHE_ENV, WARM
from suite.measure.stats import breakeven_calls
from suite.run import launch
from suite.run.launch import ROWS, RunPaths
from suite.spec.model import Cell


def run_cell(
    cell: Cell, device_type: str, paths: RunPaths, index: int, python: str = sys.executable
) -> tuple[dict[str, Any], float, str]:
    """(fields, wall seconds of all its processes, log path) of one cell."""
    if not cell.compile_cost:
        return launch.run_worker(cell, device_type, paths, index, python)
    scratch = paths.scratch / f"{launch.cell_stem(cell, index)}.{uuid.uuid4().hex[:12]}.compile-cost"
    cold, artifacts = scratch / "cold", scratch / "megacache.bin"
    scratch.mkdir(parents=True, exist_ok=True)  # the cell's process saves the artifacts here
    try:
        fields, wall, log = launch.run_worker(
            cell, device_type, paths, index, python, cache=cold, extra_env={MEGACACHE_ENV: str(artifacts)}
        )
        if fields["status"] != "ok":
            return fields, wall, log
        log_path = paths.run_dir / log
        notes = [str(fields.get("compile_note") or "")]
        warm, seconds, _ = launch.run_worker(
            cell, device_type, paths, index, python, phase=WARM, cache=cold, log_path=log_path
        )
        wall += seconds
        notes.append(_carry(fields, warm, WARM))
        if artifacts.exists():  # the build saved a mega-cache: load it where nothing is cached
            mega, seconds, _ = launch.run_worker(
                cell,
                device_type,
                paths,
                index,
                python,
                phase=MEGACACHE,
                cache=scratch / "fresh",
                log_path=log_path,
                extra_env={MEGACACHE_ENV: str(artifacts)},
            )
            wall += seconds
            notes.append(_carry(fields, mega, MEGACACHE))
        fields["breakeven_calls_warm"] = breakeven_calls(
            fields.get("compile_warm_s"), fields.get("eager_median_ms"), fields.get("median_ms")
        )
        fields["compile_note"] = "; ".join(n for n in notes if n)
        return fields, wall, log
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


def rows_of(cell: Cell, fields: dict[str, Any]) -> list[dict[str, Any]]:
    """The fields of every row the cell owes (Cell.row_keys), in its order: a several-row cell's
    rows as its worker returned them, and for any it did not return, the cell's failure (or an
    error saying it is missing): a failure still gives every expected row a status."""
    if not cell.batch_sizes:
        return [fields]
    rows = fields.pop(ROWS, None) or []
    shared = {k: v for k, v in fields.items() if k not in ("status", "error")}
    by_size = {row.get("batch_size"): row for row in rows}
    out = []
    for size in cell.batch_sizes:
        row = by_size.get(size)
        if row is None:
            missing = f"the worker returned no row for batch size {size}"
            failed = fields["status"] != "ok"
            row = {
                "status": fields["status"] if failed else "error",
                "error": fields["error"] if failed else missing,
            }
        out.append({**shared, **row, "batch_size": size})
    return out
