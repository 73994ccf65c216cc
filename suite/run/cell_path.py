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
from suite.run import launch, pooled, rerun
from suite.run.launch import SAMPLES, WorkerJob, WorkerResult
from suite.stats import breakeven_calls, median


def run_cell(job: WorkerJob) -> WorkerResult:
    """The rows of one cell (`job`: its own process), with the wall seconds of all its processes;
    an ok row gets its rerun interval (suite.run.rerun) from its figures, however many processes."""
    result = _run_cell(job)
    for row in result.rows:
        row.update(rerun.fields(row, job.cell.settings, job.device_type))
    return result


def _run_cell(job: WorkerJob) -> WorkerResult:
    cell, paths = job.cell, job.paths
    k = 1 if cell.batch_sizes else cell.settings.processes  # a dynamic-batch cell: one process
    if not cell.compile_cost and k == 1:
        return launch.run_worker(job)
    scratch = paths.scratch / f"{launch.cell_stem(cell, job.index)}.{uuid.uuid4().hex[:12]}.compile-cost"
    cold, artifacts = scratch / "cold", scratch / "megacache.bin"
    # the cell's processes share one set of cache folders: fresh for the first (its compile is
    # compile_s), as it left them for the others; `compile_cache: run` keeps the run's
    cache = cold if cell.settings.compile_cache == "cold" else None
    scratch.mkdir(parents=True, exist_ok=True)  # the cell's process saves the artifacts here
    try:
        env = {MEGACACHE_ENV: str(artifacts)} if cell.compile_cost else {}
        result = launch.run_worker(replace(job, cache=cache, extra_env={**job.extra_env, **env}))
        fields = result.fields  # a compile-cost or several-process cell owes one row
        if fields["status"] != "ok":
            return result
        log_path = paths.run_dir / result.log_file
        if k > 1:
            _warm_processes(replace(job, cache=cache, log_path=log_path), result, k)
        if not cell.compile_cost:
            return result
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


def _warm_processes(job: WorkerJob, result: WorkerResult, k: int) -> None:
    """Time the cell again in k - 1 more processes on the first's caches, and pool: the row's
    figures become those of every process's samples (suite.run.pooled), its `compile_s` stays the
    first (cold) process's, and the others' compile goes to `warm_compile_s` alone."""
    fields = result.fields
    kept: list[dict[str, Any]] = [{"process": 0, "cold": True, "series": fields.pop(SAMPLES, None) or {}}]
    warm_compiles: list[float] = []
    failed: list[str] = []
    extra = {"calls": fields.get("calls") or 0, "timed_s": fields.get("timed_s") or 0.0}
    for p in range(1, k):
        more = launch.run_worker(job)
        result.wall_s += more.wall_s
        got = more.fields
        if got.get("status") != "ok" or not got.get(SAMPLES):
            failed.append(
                f"process {p + 1} of {k} ended {got.get('status')}: {got.get('error') or 'no samples'}"
            )
            continue
        kept.append({"process": p, "cold": False, "series": got[SAMPLES]})
        if got.get("compile_s") is not None:
            warm_compiles.append(float(got["compile_s"]))
        extra["calls"] += got.get("calls") or 0
        extra["timed_s"] += got.get("timed_s") or 0.0
    fields.update(pooled.fields(kept, compiled=job.cell.mode != "eager", compile_s=fields.get("compile_s")))
    fields["calls"], fields["timed_s"] = extra["calls"] or None, round(extra["timed_s"], 3) or None
    fields["warm_compile_s"] = median(warm_compiles) if warm_compiles else None
    if failed:
        fields["process_note"] = "; ".join(failed)
    fields[SAMPLES] = kept


def _carry(fields: dict[str, Any], phase_fields: dict[str, Any], phase: str) -> str:
    """Copy an extra process's figure into the cell's fields; its note, or why it has none."""
    column = COLUMN_OF_PHASE[phase]
    if phase_fields.get("status") == "ok" and phase_fields.get(column) is not None:
        fields[column] = phase_fields[column]
        # where its compile went (suite.measure.phases), after the cell's own phase note
        parts = (fields.get("phase_note"), phase_fields.get("phase_note"))
        fields["phase_note"] = "; ".join(str(p) for p in parts if p)
        return str(phase_fields.get("compile_note") or "")
    status, error = phase_fields.get("status"), phase_fields.get("error")
    return f"{LABEL_OF_PHASE[phase]}: no figure, its process ended {status}: {error}"
