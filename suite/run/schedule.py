"""The `ahead` schedule: compile ahead in a pool of processes, then time each model's cells in one
process, alone on the device.

`serial` (suite.run.cell_path) starts one process per cell that builds the model, compiles it
cold and times it. `ahead` splits that work where it can without moving a figure:

1. **Compile ahead.** Each compiled cell's graphs are compiled in a process of its own, on fresh
   compile caches (the `cold` phase of suite.measure.compile_cost): the row's `compile_s`, its
   phases and its first results are that process's, measured as the serial path measures them.
   Up to `pool_size` of these run at once, before any timing starts: they would share the cores
   (and, on a GPU, the device: their first compiled calls run kernels) with a timing process.
2. **Time alone.** The cells of one model and build (its batch sizes and modes) share one timing
   process where their settings allow (`group_key`: the same allocator setting and compile cache
   policy; cells with several processes, the compile-cost processes or several batch sizes keep
   their own path). It runs on the caches the group's compile processes filled, so its compile is
   warm (`warm_compile_s`), and nothing else runs on the device while it times. Eager and compiled
   cells alternate (`timing_order`). A cell that crashes or hangs the process costs that cell
   only: the cells after it run again in a fresh process.

Every row says which way it was measured (`schedule`).
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from suite.measure import allocator
from suite.measure.compile_cost import COLD, COLD_COLUMNS, SPAWN_ENV
from suite.measure.lifeline import PARENT_ENV
from suite.results import one_line
from suite.run import cell_path, launch, rerun
from suite.run.environ import child_env
from suite.run.launch import RunPaths, WorkerJob, WorkerResult
from suite.spec.cost import compile_process_seconds, estimate_schedule, format_duration
from suite.spec.model import Cell
from suite.spec.schedule import (
    AHEAD,
    SERIAL,
    Indexed,
    compiled_ahead,
    groups_of,
    pool_size,
    shareable,
)
from suite.stats import breakeven_calls

POLL_S = 0.25  # how often the runner looks for a shared process's next result

Emit = Callable[[int, Cell, WorkerResult], None]


@dataclass
class PoolState:
    """The compile pool as its progress line shows it: counts, and an ETA for the rest of the run
    (the compiles left over the pool's width, then the timing: suite.spec.cost's estimates scaled
    by how the compiles done so far compared with theirs)."""

    total: int
    pool: int
    estimate_left: float  # seconds of the compiles not yet done (suite.spec.cost)
    timing_estimate: float  # seconds of the timing that follows
    done: int = 0
    running: int = 0
    failed: int = 0
    wall_done: float = 0.0
    estimate_done: float = 0.0
    started: float = field(default_factory=time.monotonic)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ended(self, estimate: float, wall: float) -> None:
        self.done += 1
        self.estimate_left -= estimate
        self.estimate_done += estimate
        self.wall_done += wall

    def line(self, last: str) -> str:
        queued = self.total - self.done - self.running
        failed = f", {self.failed} failed" if self.failed else ""
        scale = self.wall_done / self.estimate_done if self.estimate_done else 1.0
        eta = (max(0.0, self.estimate_left) / self.pool + self.timing_estimate) * scale
        return (
            f"compile pool: {self.done}/{self.total} compiled ({self.running} running, {queued} queued"
            f"{failed}) | elapsed {format_duration(time.monotonic() - self.started)} | ETA "
            f"{format_duration(eta)} (then timing) | last: {last}"
        )


@dataclass(frozen=True)
class Ahead:
    """One sweep's `ahead` schedule: where its files go, how its children run, and what to do with
    each cell's result (`emit`, called on the runner's thread, in timing order)."""

    paths: RunPaths
    device_type: str
    python: str
    emit: Emit
    cores: int | None = None
    stream: Any = field(default_factory=lambda: sys.stderr)


def run_ahead(ahead: Ahead, cells: Sequence[Indexed]) -> None:
    """Compile every compiled-ahead cell in the pool, then time the groups in turn."""
    groups = groups_of(cells)
    todo = [ic for g in groups for ic in g if compiled_ahead(ic[1])]
    caches = {id(g): _group_cache(ahead.paths, g) for g in groups}
    group_of = {ic[0]: g for g in groups for ic in g}
    device = ahead.device_type if ahead.device_type in ("cuda", "cpu") else "cuda"
    plan = estimate_schedule([c for _, c in cells], device, AHEAD, ahead.cores)
    estimates = {index: compile_process_seconds(cell, device) for index, cell in todo}
    state = PoolState(len(todo), pool_size(ahead.cores), sum(estimates.values()), plan.timing_s)
    if todo:
        print(
            state.line(f"starting {min(pool_size(ahead.cores), len(todo))} at once"),
            file=ahead.stream,
            flush=True,
        )
    try:
        jobs = {
            index: partial(
                _compile_one, ahead, (index, cell), caches[id(group_of[index])], state, estimates[index]
            )
            for index, cell in sorted(todo, key=lambda ic: -estimates[ic[0]])  # longest first
        }
        cold = run_pool(jobs, pool_size(ahead.cores))
        for group in groups:
            if shareable(group[0][1]):
                _time_group(ahead, group, caches[id(group)], cold)
            else:
                index, cell = group[0]
                result = cell_path.run_cell(
                    WorkerJob(cell, ahead.device_type, ahead.paths, index, ahead.python)
                )
                ahead.emit(index, cell, tagged(result, SERIAL))
    finally:
        for cache in caches.values():
            if cache != ahead.paths.compile_cache:  # the run's own (`compile_cache: run`) stays
                shutil.rmtree(cache, ignore_errors=True)


def run_pool(jobs: dict[int, Callable[[], WorkerResult]], width: int) -> dict[int, WorkerResult]:
    """Run `jobs` at most `width` at once, in their order; their results once all have ended (a
    job's exception is raised here). Daemon threads: an interrupted runner exits at once, and the
    compile processes die with it (suite.measure.lifeline), where a thread pool would wait for them
    at exit."""
    todo: queue.Queue[int] = queue.Queue()
    for key in jobs:
        todo.put(key)
    results: dict[int, Future[WorkerResult]] = {key: Future() for key in jobs}

    def work() -> None:
        while True:
            try:
                key = todo.get_nowait()
            except queue.Empty:
                return
            try:
                results[key].set_result(jobs[key]())
            except BaseException as exc:  # handed to the runner's thread
                results[key].set_exception(exc)

    for n in range(min(width, len(jobs))):
        threading.Thread(target=work, name=f"compile-{n}", daemon=True).start()
    return {key: future.result() for key, future in results.items()}


def _group_cache(paths: RunPaths, group: list[Indexed]) -> Path:
    """The compile caches a group's timing process runs on: the run's (`compile_cache: run`, as in
    `serial`), else the group's own, filled by its cells' compile processes."""
    if group[0][1].settings.compile_cache != "cold":
        return paths.compile_cache
    return paths.scratch / f"group-{group[0][0]:03d}.{uuid.uuid4().hex[:8]}"


def _compile_one(
    ahead: Ahead, ic: Indexed, group_cache: Path, state: PoolState, estimate: float
) -> WorkerResult:
    """One cell's cold compile on fresh caches; what it filled is added to its group's caches."""
    index, cell = ic
    fresh = group_cache.with_name(group_cache.name + f".cold-{index:03d}")
    with state.lock:
        state.running += 1
    log = launch._log_path(ahead.paths, f"{launch.cell_stem(cell, index)}.compile")  # beside its timing's
    log.parent.mkdir(parents=True, exist_ok=True)
    job = WorkerJob(cell, ahead.device_type, ahead.paths, index, ahead.python, COLD, fresh, log)
    try:
        result = launch.run_worker(job)
        ok = result.fields.get("status") == "ok"
        if ok:
            with state.lock:  # the caches' files are named by their contents: merging them is safe
                for sub in ("inductor", "triton"):
                    if (fresh / sub).is_dir():
                        shutil.copytree(fresh / sub, group_cache / sub, dirs_exist_ok=True, symlinks=True)
    finally:
        shutil.rmtree(fresh, ignore_errors=True)
    with state.lock:
        state.running -= 1
        state.ended(estimate, result.wall_s)
        state.failed += not ok
        compile_s = result.fields.get("compile_s") or 0.0
        last = f"{cell.label} " + (f"cold {compile_s:.1f} s" if ok else f"{result.fields.get('status')}")
        print(state.line(last), file=ahead.stream, flush=True)
    return result


def _time_group(ahead: Ahead, group: list[Indexed], cache: Path, cold: dict[int, WorkerResult]) -> None:
    """The group's cells timed in one process (again in a fresh one after a crash or a hang)."""
    figures = {index: cold[index] for index, _ in group if index in cold}
    pending = list(group)
    while pending:
        first = pending[0][1]
        names = ", ".join(sorted({c.mode for _, c in pending}))
        print(
            f"timing {first.model.name}: {len(pending)} cell(s) ({names}) in one process",
            file=ahead.stream,
            flush=True,
        )
        served = _shared_process(ahead, pending, cache, figures)
        pending = pending[served:]


def _shared_process(ahead: Ahead, cells: list[Indexed], cache: Path, figures: dict[int, WorkerResult]) -> int:
    """Start one timing process for `cells`; emit each cell's result as it appears. Returns how many
    cells it served (all, or up to and including the one it crashed or hung in)."""
    paths = ahead.paths
    paths.logs.mkdir(parents=True, exist_ok=True)
    attempt = f"{launch.cell_stem(cells[0][1], cells[0][0])}.{uuid.uuid4().hex[:12]}"
    results = paths.scratch / f"{attempt}.results"
    results.mkdir(parents=True, exist_ok=True)
    cells_file = paths.scratch / f"{attempt}.cells.json"
    cells_file.write_text(json.dumps([c.to_json() for _, c in cells]))
    log_path = launch._log_path(paths, launch.cell_stem(cells[0][1], cells[0][0]))  # its first cell's
    log_rel = str(log_path.relative_to(paths.run_dir))
    first = cells[0][1]
    extra = {PARENT_ENV: str(os.getpid()), **launch.cache_env(cache)}
    extra.update(allocator.child_env(first.settings.malloc, os.environ))
    cmd = [
        ahead.python,
        "-m",
        launch.WORKER_MODULE,
        "--cells",
        str(cells_file),
        str(results),
        ahead.device_type,
    ]
    served = 0
    try:
        with open(log_path, "wb") as log:
            extra[SPAWN_ENV] = repr(time.time())
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=child_env(extra),
                start_new_session=True,
            )
            pump = threading.Thread(target=launch._pump, args=(proc.stdout, log), daemon=True)
            pump.start()
            try:
                served = _watch(ahead, proc, cells, results, (log_path, log_rel), figures)
            finally:
                launch._kill_group(proc)
                pump.join(timeout=10)
    finally:
        shutil.rmtree(results, ignore_errors=True)
        cells_file.unlink(missing_ok=True)
    return served


def _watch(
    ahead: Ahead,
    proc: subprocess.Popen[bytes],
    cells: list[Indexed],
    results: Path,
    log: tuple[Path, str],
    figures: dict[int, WorkerResult],
) -> int:
    """Each cell's result as it appears; the cell the process died or hung in gets its failure."""
    served, since = 0, time.monotonic()
    while served < len(cells):
        index, cell = cells[served]
        path = results / f"{served}.json"
        exited = proc.poll()  # read before the result: a result written before exit is not missed
        failure: dict[str, Any] | None = None
        if not path.exists():
            waited = time.monotonic() - since
            if exited is not None:
                tail = launch.last_log_line(log[0])
                reason = launch.describe_exit(exited) + (f"; last log line: {tail}" if tail else "")
                failure = {"status": "error", "error": one_line(reason)}
            elif waited > cell.settings.timeout_s:
                failure = {
                    "status": "timeout",
                    "error": f"no result after {cell.settings.timeout_s:g} s (its shared process killed)",
                }
            else:
                time.sleep(POLL_S)
                continue
        fields = failure or launch._result_fields(path)
        now = time.monotonic()
        result = WorkerResult(launch.rows_of(cell, fields), now - since, log[1])
        since = now
        finished = finish_rows(_with_cold(result, figures.get(index)), cell, ahead.device_type)
        ahead.emit(index, cell, tagged(finished, AHEAD))
        served += 1
        if failure:
            break
    return served


def _with_cold(result: WorkerResult, cold: WorkerResult | None) -> WorkerResult:
    """A timed cell's row with its compile process's figures: `compile_s`, its phases and first
    results are the cold process's; the timing process's own (warm) compile is `warm_compile_s`;
    the row's wall time counts both processes."""
    fields = result.fields
    if cold is None:
        return result
    result.wall_s += cold.wall_s
    result.ahead_s = cold.wall_s
    got = cold.fields
    if fields.get("status") != "ok":
        return result
    if got.get("status") != "ok":
        fields["compile_note"] = _join(
            fields.get("compile_note"),
            f"compile ahead ended {got.get('status')} ({got.get('error')}): "
            "compile_s is its timing process's",
        )
        return result
    fields["warm_compile_s"] = fields.get("compile_s")
    for column in COLD_COLUMNS:
        fields[column] = got.get(column)
    fields["compile_note"] = _join(fields.get("compile_note"), got.get("compile_note"))
    fields["breakeven_calls"] = breakeven_calls(
        fields.get("compile_s"), fields.get("eager_median_ms"), fields.get("median_ms")
    )
    return result


def tagged(result: WorkerResult, schedule: str) -> WorkerResult:
    """Every row of the result says how it was measured, and gets its rerun interval."""
    for row in result.rows:
        row["schedule"] = schedule
    return result


def finish_rows(result: WorkerResult, cell: Cell, device_type: str) -> WorkerResult:
    """The rerun interval of each ok row (suite.run.rerun), as suite.run.cell_path gives it."""
    for row in result.rows:
        row.update(rerun.fields(row, cell.settings, device_type))
    return result


def _join(*notes: object) -> str:
    return "; ".join(str(n) for n in notes if n)
