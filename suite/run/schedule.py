"""The `ahead` schedule: compile in waves of processes at once, then time each process alone.

`serial` (suite.run.cell_path) starts one process per cell that builds the model, compiles it
cold and times it. `ahead` runs the same processes, but lets several compile at once:

1. **Compile ahead.** Each compiled cell's process (fresh, on fresh compile caches, as in
   `serial`) starts in a wave of up to `pool_size` processes (one per 2 cores, so that compiles
   do not share cores, or `--compile-pool`). It builds the model, warms eager up, compiles,
   warms the compiled function up and checks its accuracy, then waits at its gate
   (suite.measure.gate), holding what it compiled. Nothing is timed while any of the wave
   compiles: a compile would share the cores (and, on a GPU, the device) with the timing.
2. **Time alone.** Once every process of the wave waits, the runner lets them through one at a
   time: each times its cell (the same calls, the same loop as `serial`), and then the eager cells
   of its model that follow it in the same process (suite.spec.schedule.processes_of), each
   waiting at its gate again, while the others wait, idle. Then the next wave.
   A crash or hang costs the cell it hits: the cells after it run again in a fresh process.

No compile is done twice and the compiled cell's figures are its own process's, as in `serial`;
what the schedule saves is start-up (an eager cell shares its model's process) and, where
cores are free, the compiles' wall time. Every row says which way it was measured (`schedule`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from suite.measure.gate import GATE_ENV, READY, open_gate
from suite.run import cell_path, launch, rerun
from suite.run.launch import Attempt, RunPaths, Started, WorkerJob, WorkerResult
from suite.run.zygotes import Zygotes
from suite.spec.cost import compile_process_seconds, estimate_schedule, format_duration
from suite.spec.model import Cell
from suite.spec.schedule import (
    AHEAD,
    OVERLAP,
    SERIAL,
    Indexed,
    compiled_ahead,
    groups_of,
    processes_of,
    shareable,
    timing_cpus,
    waves,
)
from suite.system.cpus import available, pin

POLL_S = 0.1  # how often the runner looks at its processes (their results, their gates)
EXIT_WAIT_S = 60.0  # how long a process that gave its last result may take to exit

Emit = Callable[[int, Cell, WorkerResult], None]


@dataclass
class PoolState:
    """The waves as their progress line shows them: processes compiled, waiting, and an ETA for
    the rest of the run (suite.spec.cost's estimate, scaled by how the compiles done so far
    compared with theirs)."""

    total: int
    pool: int
    estimate_left: float  # seconds of the compile phases not yet done (suite.spec.cost)
    timing_estimate: float  # seconds of the timing
    done: int = 0
    wall_done: float = 0.0
    estimate_done: float = 0.0
    started: float = field(default_factory=time.monotonic)

    def ended(self, estimate: float, wall: float) -> None:
        self.done += 1
        self.estimate_left -= estimate
        self.estimate_done += estimate
        self.wall_done += wall

    def line(self, last: str) -> str:
        scale = self.wall_done / self.estimate_done if self.estimate_done else 1.0
        eta = (max(0.0, self.estimate_left) / self.pool + self.timing_estimate) * scale
        return (
            f"compile pool: {self.done}/{self.total} compiled | elapsed "
            f"{format_duration(time.monotonic() - self.started)} | ETA {format_duration(eta)} | {last}"
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
    pool: int | None = None  # processes compiling at once (None: pool_size of the cores)
    stream: Any = field(default_factory=lambda: sys.stderr)
    fork: bool = False  # the shared processes forked from a zygote (suite.run.zygotes), where it can
    overlap: bool = False  # the next wave compiles while this one is timed (suite.system.cpus)
    pin_timing: bool = False  # each timed process pinned to the timing's CPUs, as `overlap` pins it

    @property
    def pins(self) -> bool:
        """Whether the timed process is pinned to the timing's CPUs (timing_cpus)."""
        return self.overlap or self.pin_timing


RUNNING, WAITING, DONE = "running", "waiting", "done"


@dataclass(eq=False)
class Held:
    """One process of a wave: its cells, the worker as started (suite.run.launch), where its
    results go, and where it stands (the cell it is on, the gate it waits at, the seconds it was
    active for the cell: waits at its gate excluded)."""

    cells: list[Indexed]
    worker: Started
    results: Path
    served: int = 0
    gate: int = 0
    since: float = field(default_factory=time.monotonic)
    waiting_since: float | None = None
    waited: float = 0.0
    compile_s: float = 0.0  # active seconds until it first waited (its compile phase)
    wave: int = 1  # processes of its wave, compiling at once with it
    state: str = RUNNING
    leftover: list[Indexed] = field(default_factory=list)

    @property
    def proc(self) -> launch.Process:
        return self.worker.proc

    @property
    def log_path(self) -> Path:
        return self.worker.attempt.log_path

    @property
    def start(self) -> str:
        """How the process started: forked from a zygote, or spawned fresh."""
        return self.worker.start


def run_ahead(ahead: Ahead, cells: Sequence[Indexed]) -> None:
    """The shareable cells in waves of processes (compile at once, then time one at a time; with
    `overlap`, the next wave compiling meanwhile), then every other cell on its own path, as in
    `serial`."""
    groups = groups_of(cells)
    device = ahead.device_type if ahead.device_type in ("cuda", "cpu") else "cuda"
    jobs = [proc for g in groups if shareable(g[0][1]) for proc in processes_of(g)]
    plan = estimate_schedule(
        [c for _, c in cells], device, AHEAD, ahead.cores, ahead.pool, fork=ahead.fork, overlap=ahead.overlap
    )
    estimate = {id(j): _compile_estimate(j, device) for j in jobs}
    state = PoolState(len(jobs), plan.pool, sum(estimate.values()), plan.timing_s)
    pending = waves(jobs, plan.pool, key=lambda j: estimate[id(j)])
    zygotes = Zygotes(ahead.python, ahead.paths.logs, lambda line: _say(ahead, line)) if ahead.fork else None
    sweep = _Waves(ahead, state, estimate, zygotes)
    try:
        current = sweep.start(pending.pop(0)) if pending else []
        while current:
            sweep.compiled(current)
            following = sweep.start(pending.pop(0)) if pending and ahead.overlap else []
            again = sweep.time(current, following)
            for job in again:  # after a crash: the cells left, in a fresh process
                estimate[id(job)] = _compile_estimate(job, device)
                state.total += 1
                pending.append([job])
            current = following or (sweep.start(pending.pop(0)) if pending else [])
    finally:
        sweep.end_all()
        if zygotes is not None:
            zygotes.close()
    for group in groups:
        if not shareable(group[0][1]):
            index, cell = group[0]
            result = cell_path.run_cell(WorkerJob(cell, ahead.device_type, ahead.paths, index, ahead.python))
            ahead.emit(index, cell, tagged(result, SERIAL))


def _say(ahead: Ahead, line: str) -> None:
    print(line, file=ahead.stream, flush=True)


def _compile_estimate(job: list[Indexed], device: str) -> float:
    first = job[0][1]
    return compile_process_seconds(first, device) if compiled_ahead(first) else 0.0


@dataclass
class _Waves:
    """The waves of one sweep as they run: each started, watched until every process waits at
    its gate (or has ended), then timed one process after the other. With `overlap` the next
    wave is started before this one is timed, on the compiles' CPUs, and watched meanwhile, and
    the process let through is pinned to the timing's CPUs (suite.spec.schedule.timing_cpus)."""

    ahead: Ahead
    state: PoolState
    estimate: dict[int, float]
    zygotes: Zygotes | None
    live: list[Held] = field(default_factory=list)
    jobs: dict[int, list[Indexed]] = field(default_factory=dict)  # id(held) -> its job
    compiling: list[Held] = field(default_factory=list)

    def cpus(self) -> tuple[frozenset[int], frozenset[int]]:
        return timing_cpus(available())

    def start(self, wave: list[list[Indexed]]) -> list[Held]:
        ahead = self.ahead
        _say(ahead, self.state.line(f"next: a wave of {len(wave)} process(es) at once"))
        held = [_start(ahead, job, self.zygotes) for job in wave]
        for h, job in zip(held, wave, strict=True):
            h.wave = len(held)
            self.jobs[id(h)] = job
            if ahead.overlap:
                pin(h.proc.pid, self.cpus()[1])
        self.live += held
        self.compiling += held
        return held

    def watch(self) -> None:
        """Poll the processes still compiling: each one that reached its gate (or ended) has its
        compile phase's seconds, and a progress line says so."""
        for h in list(self.compiling):
            if _poll(self.ahead, h) == RUNNING:
                continue
            self.compiling.remove(h)
            h.compile_s = time.monotonic() - h.since - h.waited
            job = self.jobs[id(h)]
            self.state.ended(self.estimate[id(job)], h.compile_s)
            did = "ready to time" if h.state == WAITING else "ended"
            _say(self.ahead, self.state.line(f"last: {job[0][1].label} {did}"))

    def compiled(self, wave: list[Held]) -> None:
        """Wait until every process of `wave` waits at its gate or has ended."""
        while any(h in self.compiling for h in wave):
            self.watch()
            if any(h in self.compiling for h in wave):
                time.sleep(POLL_S)

    def time(self, wave: list[Held], following: list[Held]) -> list[list[Indexed]]:
        """Let the wave's processes time one after the other (each waits for the one before it
        to exit, unless a wave compiles beside it anyway); the cells a crash or hang left."""
        try:
            for h in wave:
                own = sorted(self.cpus()[0]) if self.ahead.pins else None
                if own is not None:
                    pin(h.proc.pid, own)
                while _poll(self.ahead, h) != DONE:
                    self.watch()
                    if h.state == WAITING:
                        named = [o.proc.pid for o in (*wave, *following) if o is not h and o.state != DONE]
                        _let_through(self.ahead, h, named, own)
                    else:
                        time.sleep(POLL_S)
                if not self.ahead.overlap:
                    _settle(h)
        finally:
            for h in wave:
                self.end(h)
        return [h.leftover for h in wave if h.leftover]

    def end(self, h: Held) -> None:
        if h in self.live:
            self.live.remove(h)
            _end(h)

    def end_all(self) -> None:
        for h in list(self.live):
            self.end(h)


def _start(ahead: Ahead, cells: list[Indexed], zygotes: Zygotes | None = None) -> Held:
    """One process for `cells`, started as every worker is (suite.run.launch.start_worker) with
    its first cell's settings (its compile caches, its allocator, its log); forked from a zygote
    where `zygotes` can, else spawned."""
    index, first = cells[0]
    job = WorkerJob(first, ahead.device_type, ahead.paths, index, ahead.python)
    attempt = Attempt.of(job)
    results = attempt.file(".results")
    results.mkdir(parents=True, exist_ok=True)
    cells_file = attempt.file(".cells.json")
    cells_file.write_text(json.dumps([c.to_json() for _, c in cells]))
    names = ", ".join(sorted({c.mode for _, c in cells}))
    print(f"{first.model.name}: {len(cells)} cell(s) ({names}) in one process", file=ahead.stream, flush=True)
    argv = ["--cells", str(cells_file), str(results), ahead.device_type]
    fork = zygotes.spawn if zygotes is not None else None
    worker = launch.start_worker(replace(job, extra_env={GATE_ENV: str(results)}), attempt, argv, fork)
    return Held(cells, worker, results)


def _settle(h: Held) -> None:
    """Let a process that has given its last result exit before the next times: its teardown
    (freeing the model, the CUDA context) would run beside that timing."""
    try:
        h.proc.wait(timeout=EXIT_WAIT_S)
    except subprocess.TimeoutExpired:
        launch.kill_group(h.proc)


def _end(h: Held) -> None:
    h.worker.end()
    shutil.rmtree(h.results, ignore_errors=True)
    h.worker.attempt.file(".cells.json").unlink(missing_ok=True)


def _let_through(ahead: Ahead, h: Held, idle: list[int], cpus: list[int] | None = None) -> None:
    """Open the process's gate: it times while the others wait (their ids go with the go, and
    the CPUs it was pinned to, if it was)."""
    assert h.waiting_since is not None
    h.waited += time.monotonic() - h.waiting_since
    h.waiting_since = None
    h.state = RUNNING
    open_gate(h.results, h.gate, idle, cpus)
    h.gate += 1
    cell = h.cells[h.served][1]
    print(f"timing {cell.label} (alone; {len(idle)} process(es) waiting)", file=ahead.stream, flush=True)


def _poll(ahead: Ahead, h: Held) -> str:
    """Advance what the runner knows of one process: a result written (emitted), its gate reached,
    its exit or its cell's timeout (the cell's failure; the cells after it left over)."""
    while h.state != DONE:
        cell = h.cells[h.served][1]
        path = h.results / f"{h.served}.json"  # suite.measure.worker.CELL_RESULT
        exited = h.proc.poll()  # read before the result: a result written before exit is not missed
        if path.exists():
            _emit(ahead, h, launch.result_fields(path))
            continue
        if h.state == WAITING:
            return WAITING
        if (h.results / READY.format(n=h.gate)).exists():
            h.state, h.waiting_since = WAITING, time.monotonic()
            return WAITING
        active = time.monotonic() - h.since - h.waited
        if exited is not None:
            _fail(ahead, h, launch.exit_fields(exited, h.log_path))
        elif active > cell.settings.timeout_s:
            _fail(ahead, h, launch.timeout_fields(cell.settings.timeout_s))
        else:
            return RUNNING
    return DONE


def _emit(ahead: Ahead, h: Held, fields: dict[str, Any]) -> None:
    """One cell's row, its wall time the process's active seconds for it (waits excluded)."""
    index, cell = h.cells[h.served]
    now = time.monotonic()
    log_file = str(h.log_path.relative_to(ahead.paths.run_dir))
    result = WorkerResult(launch.rows_of(cell, fields), now - h.since - h.waited, log_file, start=h.start)
    wave = 1  # a cell compiled after the wave (compile_cache: run) compiled alone
    if h.served == 0 and compiled_ahead(cell):
        result.ahead_s, wave = h.compile_s, h.wave
    h.since, h.waited, h.served = now, 0.0, h.served + 1
    schedule = OVERLAP if ahead.overlap else AHEAD
    ahead.emit(index, cell, tagged(finish_rows(result, cell, ahead.device_type), schedule, wave))
    if h.served == len(h.cells):
        h.state = DONE


def _fail(ahead: Ahead, h: Held, fields: dict[str, Any]) -> None:
    launch.kill_group(h.proc)
    h.leftover = h.cells[h.served + 1 :]
    _emit(ahead, h, fields)
    h.state = DONE


def tagged(result: WorkerResult, schedule: str, wave: int = 1) -> WorkerResult:
    """Every row of the result says how it was measured and how its process started (the
    result's `start`); a row with a compile time also says how many processes compiled at once
    when it compiled (`wave`: 1, alone, as in `serial`)."""
    for row in result.rows:
        row["schedule"] = schedule
        row["process_start"] = result.start
        if row.get("compile_s") not in (None, ""):
            row["compile_wave"] = wave
        if result.ahead_s:
            row["compile_ahead_s"] = round(result.ahead_s, 3)
    return result


def finish_rows(result: WorkerResult, cell: Cell, device_type: str) -> WorkerResult:
    """The rerun interval of each ok row (suite.run.rerun), as suite.run.cell_path gives it."""
    for row in result.rows:
        row.update(rerun.fields(row, cell.settings, device_type))
    return result
