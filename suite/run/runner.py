"""Run cells: one child process per cell, with a timeout; rows appended as each ends.

The parent never imports torch. Preflight (suite.run.preflight) has probed the environment
in a child; for each cell this starts a worker (suite.run.launch) and turns what came back
(or did not) into exactly one row: ok / oom / error / timeout / skipped. A failing cell
never stops the sweep. One runner per raw CSV (suite.run.lock); resume (suite.run.resume):
cells already recorded as ok or oom are not re-run. A worker dies with this process
(suite.measure.lifeline).
"""

from __future__ import annotations

import functools
import os
import shutil
import sys
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.measure.provenance import Environment
from suite.measure.random_init import WEIGHTS_INIT
from suite.results import TIMING_COLUMNS, RowWriter, health, key_of, samples
from suite.results.rows import stop_rule_text
from suite.results.samples import samples_path
from suite.run import cell_path, preflight, resume, tidy
from suite.run import schedule as schedule_mod
from suite.run.launch import SAMPLES, RunPaths, WorkerJob, WorkerResult
from suite.run.lock import RunLock
from suite.run.pair import RunnerLine
from suite.run.preflight import DEFAULT_MIN_FREE_MB, megabytes
from suite.run.progress import Progress, row_warnings
from suite.run.zygotes import Zygotes
from suite.spec import schedule as plan_mod
from suite.spec.model import Cell
from suite.spec.pair_protocol import PAIR_ENV, ROLE_ENV, ROLES, pair_key
from suite.system import cpus


@dataclass
class RunReport:
    csv: Path
    ran: int = 0
    resumed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)
    warned: dict[str, list[str]] = field(default_factory=dict)  # progress.row_warnings -> cells
    unhealthy: int = 0  # cells timed on an unhealthy machine (suite.measure.health)
    flags: dict[str, int] = field(default_factory=dict)  # health flag -> cells timed with it

    def health_note(self) -> str:
        """`; 3 cell(s) timed on an unhealthy machine (busy 3): ...` for the done line, or ""."""
        if not self.unhealthy:
            return ""
        flags = ", ".join(f"{f} {n}" for f, n in sorted(self.flags.items()))
        return f"; {self.unhealthy} cell(s) timed on an unhealthy machine ({flags}): see the health column"

    def count(self, cell: Cell, rows: Sequence[dict[str, Any]]) -> None:
        """A cell that ran: its rows' statuses, warnings and health flags."""
        self.ran += 1
        for row in rows:
            self.statuses[row["status"]] = self.statuses.get(row["status"], 0) + 1
            for what in row_warnings(row):
                self.warned.setdefault(what, []).append(cell.label)
            flags = health.flags_of(row.get("health"))
            self.unhealthy += bool(flags)
            for flag in flags:
                self.flags[flag] = self.flags.get(flag, 0) + 1

    def warnings_note(self) -> str:
        """`; 2 ok cell(s) with ACCURACY FAIL (Mask2former bs=1 default inference, ...)` for the
        done line, or ""."""
        return "".join(
            f"; {len(cells)} ok cell(s) with {what} ({', '.join(cells)})"
            for what, cells in self.warned.items()
        )


def build_row(
    cell: Cell,
    env: Environment,
    run_id: str,
    fields: dict[str, Any],
    started_at: str,
    wall: float,
    log_file: str,
    shard: str,
) -> dict[str, Any]:
    """One CSV row: the cell's identity, the environment, and what the worker measured."""
    s = cell.settings
    row: dict[str, Any] = {
        "run_id": run_id,
        **cell.key_fields(env.device),
        "task": cell.model.task,
        **env.columns(),
        "started_at": started_at,
        "wall_s": round(wall, 3),
        "warmup": fields.get("warmup"),  # the calls that ran (suite.measure.timing), not the setting
        "tolerance": s.tolerance,
        "weights_init": WEIGHTS_INIT if s.weights == "random" else None,  # suite.measure.random_init
        "compile_cache": s.compile_cache,
        "stop_rule": stop_rule_text(
            s.stop_rule, s.iterations, s.min_iterations, s.ci_target_pct, s.max_timing_s
        ),
        "variant": cell.variant,
        "shard": shard,
        "log_file": log_file,
        "host_load": round(os.getloadavg()[0], 2),
    }
    row.update(fields)
    if row["status"] != "ok":
        for col in TIMING_COLUMNS:
            row[col] = None
    row["health"] = health.verdict(row, env.cpu_count)  # ok, or why the figures are suspect
    return row


@dataclass(frozen=True)
class Pairing:
    """This runner's side of a pair: the coordinator's socket and this build's role."""

    socket: str
    role: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise UsageError("--pair-role", f"must be {' or '.join(ROLES)}, got {self.role!r}")

    def env(self) -> dict[str, str]:
        """What a worker of this runner is started with to find the coordinator."""
        return {PAIR_ENV: self.socket, ROLE_ENV: self.role}


@dataclass(frozen=True)
class Sweep:
    """One sweep: the cells, the environment the probe found, where the rows go, and how.

    `banner` is printed once the run's CSV is found fit to resume (a refused run prints its
    one error line only). `keep_failed`: a resume keeps the cells recorded as failed.
    `min_free_mb`: no cell starts with less free disk. `keep_compile_cache`: a run that ends
    leaves its compile cache (suite.run.tidy). `python`: the workers' interpreter."""

    cells: Sequence[Cell]
    environment: Environment
    out: Path
    run_id: str
    shard: str = ""
    keep_failed: bool = False
    python: str = sys.executable
    min_free_mb: float = DEFAULT_MIN_FREE_MB
    banner: str = ""
    keep_compile_cache: bool = False
    schedule: str = plan_mod.SERIAL  # suite.run.schedule: `serial` or `ahead` (the CLI's default)
    compile_pool: int | None = None  # `ahead`: compiles at once (None: suite.spec.schedule.pool_size)
    process_start: str = plan_mod.SPAWN  # `ahead`: FORK its processes from a zygote where it can
    pair: Pairing | None = None  # one side of a pair (suite.run.pair): `serial`, the device shared
    overlap: bool = False  # `ahead`: the next wave compiles while one is timed (suite.system.cpus)
    pin_timing: bool = False  # `ahead`: the timed process pinned as `overlap` pins it, phases apart

    def __post_init__(self) -> None:
        if not self.cells:
            raise UsageError("cells", "the selection is empty: nothing to run")
        if self.pair is not None and self.schedule != plan_mod.SERIAL:
            raise UsageError("--pair", "a pair's runners take one process per cell: --schedule serial")
        if self.process_start not in plan_mod.PROCESS_STARTS:
            raise UsageError("--process-start", f"must be fork or spawn, got {self.process_start!r}")
        if self.schedule not in plan_mod.SCHEDULES:
            raise UsageError(
                "--schedule", f"must be one of {', '.join(plan_mod.SCHEDULES)}, got {self.schedule!r}"
            )
        for flag, asked in (("--overlap", self.overlap), ("--pin-timing", self.pin_timing)):
            if asked and not cpus.available():
                raise UsageError(flag, "this system cannot pin a process to CPUs (no sched_setaffinity)")

    @property
    def forks(self) -> bool:
        """Whether `ahead`, or a pair's runner, forks its processes (suite.spec.schedule.forks),
        with workers of this very interpreter (a zygote must be a Python with this suite)."""
        device = self.environment.device_type
        forked = plan_mod.forks(self.schedule, self.process_start, device, paired=self.pair is not None)
        return forked and self.python == sys.executable

    @property
    def paths(self) -> RunPaths:
        return RunPaths.make(self.out, self.run_id, self.cells[0].build, self.environment.device, self.shard)


def run_cells(sweep: Sweep) -> RunReport:
    """Run every cell not already recorded; append one row per row a cell owes as it ends.

    Holds the run's lock throughout. Stops (UsageError, exit 2) when the disk fills up: the
    rows recorded so far are safe, and the same --run-id resumes. A run that ends leaves no
    lock, no scratch file and no compile cache, unless `keep_compile_cache` (suite.run.tidy)."""
    paths = sweep.paths
    report = RunReport(csv=paths.csv)
    for folder in (paths.csv.parent, paths.logs, paths.scratch):  # a damaged run folder: one line
        preflight.check_writable(folder, "--run-id", preflight.RUN_FOLDER_HINT)
    with RunLock(paths.csv):
        state = resume.prepare(paths.csv, sweep.keep_failed)
        if sweep.banner:
            print(sweep.banner, file=sys.stderr, flush=True)
        shutil.rmtree(paths.scratch, ignore_errors=True)  # files of a killed run's attempts
        tidy.explain_cache(paths, sweep.cells)
        progress = Progress.of(sweep.cells, sweep.schedule, pool=sweep.compile_pool)
        try:
            writer = RowWriter(paths.csv)
        except OSError as exc:
            raise UsageError(str(paths.csv), f"cannot open for appending: {exc.strerror or exc}") from None
        with writer:
            todo: list[tuple[int, Cell]] = []
            for index, cell in enumerate(sweep.cells):
                keys = [key_of(k) for k in cell.row_keys(sweep.environment.device)]
                if all(key in state.done for key in keys):
                    report.resumed += 1
                    progress.skip(cell, state.done[keys[0]])
                    continue
                todo.append((index, cell))
            record = _Recorder(sweep, paths, writer, state.done, report, progress)
            if sweep.schedule == plan_mod.SERIAL:
                _serial(sweep, paths, todo, record)
            else:
                if todo:
                    record.check_disk(todo[0][1])
                ahead = schedule_mod.Ahead(
                    paths,
                    sweep.environment.device_type,
                    sweep.python,
                    record,
                    pool=sweep.compile_pool,
                    fork=sweep.forks,
                    overlap=sweep.overlap,
                    pin_timing=sweep.pin_timing,
                )
                schedule_mod.run_ahead(ahead, todo)
        tidy.tidy(paths, sweep.keep_compile_cache)
    return report


def _serial(sweep: Sweep, paths: RunPaths, todo: Sequence[tuple[int, Cell]], record: _Recorder) -> None:
    """One process per cell, in turn; in a pair, the coordinator told of the cells first and of
    each as it ends."""
    device = sweep.environment.device
    keys = [pair_key(cell.key_fields(device)) for _, cell in todo]
    line = _pair_line(sweep.pair, keys) if sweep.pair else None
    env = sweep.pair.env() if sweep.pair else {}
    device_type = sweep.environment.device_type
    # a pair's runner forks each cell's process from a zygote (its imports paid once), as `ahead` does
    say = functools.partial(print, file=record.progress.stream, flush=True)
    zygotes = Zygotes(sweep.python, paths.logs, say) if sweep.forks else None
    fork = zygotes.spawn if zygotes is not None else None
    try:
        for (index, cell), key in zip(todo, keys, strict=True):
            record.check_disk(cell)
            record.progress.start(cell)
            started = _now()
            job = WorkerJob(cell, device_type, paths, index, sweep.python, sweep_env=env, fork=fork)
            record(index, cell, schedule_mod.tagged(cell_path.run_cell(job), plan_mod.SERIAL), started)
            if line is not None:
                line.ended(key)
    finally:
        if zygotes is not None:
            zygotes.close()
        if line is not None:
            line.close()


def _pair_line(pair: Pairing, keys: Sequence[str]) -> RunnerLine:
    try:
        return RunnerLine.connect(pair.socket, pair.role, keys)
    except OSError as exc:
        raise UsageError(
            "--pair", f"no pair coordinator answers at {pair.socket} ({exc.strerror or exc})"
        ) from None


def _resume_hint(sweep: Sweep) -> str:
    return f"the rows recorded so far are safe; run again with --run-id {sweep.run_id} to resume"


def _check_disk(sweep: Sweep, paths: RunPaths, cell: Cell) -> None:
    """No cell starts below the free-disk minimum: stop with the rows so far safe."""
    free = preflight.free_mb(paths.run_dir)
    if free < sweep.min_free_mb:
        raise UsageError(
            "--out",
            f"only {megabytes(free)} MB left on the disk of {paths.run_dir} (minimum "
            f"{megabytes(sweep.min_free_mb)} MB): stopped before {cell.label}; {_resume_hint(sweep)}",
        )


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


@dataclass
class _Recorder:
    """What the runner does with each cell's result, whichever schedule measured it: its rows
    built, appended (a resumed cell's kept rows are not written again) with their samples,
    counted and shown. The `ahead` schedule calls it as each cell's timing ends."""

    sweep: Sweep
    paths: RunPaths
    writer: RowWriter
    done: Collection[tuple]
    report: RunReport
    progress: Progress
    last_end: str = field(default_factory=_now)

    def check_disk(self, cell: Cell) -> None:
        _check_disk(self.sweep, self.paths, cell)

    def __call__(self, index: int, cell: Cell, result: WorkerResult, started: str = "") -> None:
        # a shared process's cell started when the one before it ended (or the process started)
        started = started or self.last_end
        rows = _record(self.sweep, self.paths, cell, result, self.writer, self.done, started)
        self.last_end = _now()
        self.report.count(cell, rows)
        if rows:
            self.progress.finish(cell, rows[0], result.wall_s, result.ahead_s)
        if self.sweep.schedule != plan_mod.SERIAL:
            self.check_disk(cell)  # the rows so far are safe; no further cell starts on a full disk


def _record(
    sweep: Sweep,
    paths: RunPaths,
    cell: Cell,
    result: WorkerResult,
    writer: RowWriter,
    done: Collection[tuple],
    started: str,
) -> list[dict[str, Any]]:
    """One cell's rows appended (a resumed cell's kept rows are not written again), with their
    samples. Returns the rows written."""
    env = sweep.environment
    try:
        measured = [(one, one.pop(SAMPLES, None) or []) for one in result.rows]
        log, wall = result.log_file, result.wall_s
        built = [
            (build_row(cell, env, sweep.run_id, one, started, wall, log, sweep.shard), kept)
            for one, kept in measured
        ]
        built = [(row, kept) for row, kept in built if key_of(row) not in done]
        rows = [row for row, _ in built]
        for row, kept in built:
            writer.append(row)
            if row["status"] == "ok" and kept:  # beside the CSV (suite.results.samples)
                samples.append(samples_path(paths.csv), process_samples(row, kept))
    except OSError as exc:
        where = f"{exc.strerror or exc} ({exc.filename or 'no file'})"
        raise UsageError("--out", f"{cell.label}: {where}; {_resume_hint(sweep)}") from None
    return rows


def process_samples(row: dict[str, Any], kept: object) -> list[samples.ProcessSamples]:
    """A row's samples, one entry per process and series. `kept`: what the cell's path gave, a
    list of {"process", "cold", "series": {name: ms}} (suite.run.cell_path), or one process's
    {name: ms}."""
    if isinstance(kept, dict):
        kept = [{"process": 0, "cold": True, "series": kept}]
    out: list[samples.ProcessSamples] = []
    for one in kept if isinstance(kept, list) else []:
        out += samples.of_row(row, int(one["process"]), bool(one["cold"]), one["series"])
    return out


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
