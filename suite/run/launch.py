"""Launch one worker per cell: its environment, its files, its log, its timeout, and the rows
that come back.

`python -m suite.measure.worker` runs in a new process group (inductor's compile workers
die with it on a timeout), reads and writes files named for its attempt only (a worker left
over from a killed run can never hand its result to a resumed one), and its output reaches
the cell's log through a pipe that redacts secrets (suite.redact). Whatever comes back, or
does not, becomes the rows the cell owes: a garbled result is an error, never a crash.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Protocol

from suite.errors import last_line
from suite.measure import allocator
from suite.measure.compile_cost import MEASURE, SPAWN_ENV
from suite.measure.lifeline import PARENT_ENV
from suite.redact import redact_bytes
from suite.results import COLUMNS, STATUSES, one_line, raw_csv_name, slug
from suite.results.layout import from_wire
from suite.results.samples import SERIES
from suite.run.environ import child_env
from suite.spec.model import Cell
from suite.spec.schedule import FORK, SPAWN

WORKER_MODULE = "suite.measure.worker"
# A several-row cell's result: its rows' fields, each checked, then spread by `rows_of`.
ROWS = "rows"
# A result's per-call samples by series ({"eager": [...], "compiled": [...]}): not a CSV column,
# kept apart for the samples file beside the CSV (suite.results.samples).
SAMPLES = "samples"


@dataclass
class RunPaths:
    """Where one (run, build, device) writes: raw CSV, per-cell logs, scratch."""

    run_dir: Path
    csv: Path
    logs: Path
    scratch: Path

    @staticmethod
    def make(out: Path, run_id: str, build: str, device: str, shard: str = "") -> RunPaths:
        run_dir = out / run_id
        name = raw_csv_name(build, device, shard)
        stem = name[: -len(".csv")]
        return RunPaths(run_dir, run_dir / "raw" / name, run_dir / "logs" / stem, run_dir / ".scratch" / stem)

    @property
    def compile_cache(self) -> Path:
        """The inductor and triton caches the run's cells share (`compile_cache: run`)."""
        return self.run_dir / ".compile-cache"


def describe_exit(returncode: int) -> str:
    if returncode < 0:
        try:
            name = signal.Signals(-returncode).name
        except ValueError:
            name = f"signal {-returncode}"
        hint = (
            " (out of host memory? the kernel's OOM killer sends SIGKILL)"
            if returncode == -signal.SIGKILL
            else ""
        )
        return f"worker killed by {name}{hint}"
    return f"worker exited with status {returncode} without a result"


def last_log_line(path: Path) -> str:
    try:
        return last_line(path.read_text(errors="replace"))
    except OSError:
        return ""


def next_log_path(paths: RunPaths, stem: str) -> Path:
    """`<stem>.log`, or `<stem>.attempt<n>.log` when an earlier attempt's log is there
    (a re-run never overwrites the log a superseded row points to)."""
    path, n = paths.logs / f"{stem}.log", 1
    while path.exists():
        n += 1
        path = paths.logs / f"{stem}.attempt{n}.log"
    return path


def spawn(cmd: list[str], extra: Mapping[str, str], pass_fds: Sequence[int] = ()) -> subprocess.Popen[bytes]:
    """A child Python of the run (a worker, a fork server): its own session (killed as a group),
    output piped to a log pump, its start stamped in its environment (for time to first result)."""
    return subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=child_env({**extra, SPAWN_ENV: repr(time.time())}),
        start_new_session=True,
        pass_fds=tuple(pass_fds),
    )


def pump(source: IO[bytes], log_path: Path, mode: str = "wb", header: str = "") -> threading.Thread:
    """A thread that copies a process's output to its log (`mode` "ab": appended to, after
    `header`) line by line, secrets redacted, until the output ends."""
    args = (source, log_path, mode, header)
    thread = threading.Thread(target=_copy, args=args, name="log-pump", daemon=True)
    thread.start()
    return thread


def _copy(source: IO[bytes], log_path: Path, mode: str, header: str) -> None:
    with open(log_path, mode) as log:
        try:
            log.write(header.encode())
            for line in iter(source.readline, b""):
                log.write(redact_bytes(line))
                log.flush()
        except (OSError, ValueError):  # the pipe or the log closed under us: the process is over
            pass


def result_fields(path: Path, keep: Collection[str] = COLUMNS) -> dict[str, Any]:
    """The worker's result, checked: a garbled one becomes an error, never a crash of the sweep.
    A several-row cell's rows (under "rows") are checked the same way, each on its own. Only the
    fields in `keep` (the CSV's columns, for the worker) are kept."""
    try:
        fields = from_wire(json.loads(path.read_text(encoding="utf-8")))  # its sections, flat
    except (OSError, ValueError) as exc:
        return {"status": "error", "error": f"unreadable worker result: {exc}"}
    rows = fields.pop("rows", None) if isinstance(fields, dict) else None
    samples = fields.pop(SAMPLES, None) if isinstance(fields, dict) else None
    checked = _checked(fields, keep)
    series = _samples_of(samples)
    if series and checked["status"] == "ok":
        checked[SAMPLES] = series
    if rows is not None and checked["status"] != "error":
        if not isinstance(rows, list):
            return {
                "status": "error",
                "error": f"worker result's rows are not a list (got {type(rows).__name__})",
            }
        checked[ROWS] = [_checked(row, keep) for row in rows]
    return checked


def _samples_of(samples: object) -> dict[str, list[float]]:
    """A result's samples as {series: milliseconds}; anything malformed is dropped (the row's own
    figures do not depend on them)."""
    if not isinstance(samples, dict):
        return {}
    out = {}
    for name, ms in samples.items():
        numbers = isinstance(ms, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) and x > 0 for x in ms
        )
        if name in SERIES and numbers and ms:
            out[name] = [float(x) for x in ms]
    return out


def _checked(fields: object, keep: Collection[str] = COLUMNS) -> dict[str, Any]:
    """One row's fields with a valid status and the contract's columns only."""
    if not isinstance(fields, dict) or fields.get("status") not in STATUSES:
        status = fields.get("status") if isinstance(fields, dict) else None
        return {"status": "error", "error": f"worker result has no valid status (got {status!r})"}
    unknown = sorted(set(fields) - set(keep))
    if unknown:
        print(f"warning: worker result columns outside the CSV contract dropped: {unknown}", file=sys.stderr)
    return {k: v for k, v in fields.items() if k in keep}


def cell_stem(cell: Cell, index: int) -> str:
    """The name of a cell's files (its log, its attempt's scratch files)."""
    stem = f"{index:03d}-{slug(cell.model.name)}-bs{cell.batch_size}-{cell.mode}-{cell.scenario}"
    dtype = cell.settings.dtype
    return stem + (f"-{dtype}" if dtype != "float32" else "") + (f"-{cell.dynamic}" if cell.dynamic else "")


def cache_env(cache: Path) -> dict[str, str]:
    """The variables that point inductor and triton at one set of compile cache folders."""
    return {"TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}


@dataclass(frozen=True)
class WorkerJob:
    """One child process of a cell: which cell, where its files go, and how it runs.

    `phase`: the worker's job (suite.measure.compile_cost: the cell itself, or its warm or
    mega-cache process). `cache`: compile cache folders the caller owns (suite.run.cell_path);
    by default the cell's `compile_cache` setting decides (cold: fresh, removed after). `log_path`:
    append to this log instead of starting the cell's own. `module` is run as
    `python -m MODULE CELL_JSON RESULT_JSON DEVICE [PHASE] [ARGS...]` (the worker by default; the
    cross-check's child too), and the fields in `keep` are taken from its result. `sweep_env`:
    what every process of the sweep starts with (a pair's coordinator: suite.run.runner.Pairing),
    kept by every process of the cell; `extra_env`: this process's own. `fork`: a fork server's
    offer (a pair's runner: suite.run.runner), taken by the cell's own process, never by its
    compile-cost ones (their start is part of what they measure)."""

    cell: Cell
    device_type: str
    paths: RunPaths
    index: int
    python: str = sys.executable
    phase: str = MEASURE
    cache: Path | None = None
    log_path: Path | None = None
    extra_env: Mapping[str, str] = field(default_factory=dict)
    module: str = WORKER_MODULE
    args: tuple[str, ...] = ()
    keep: Collection[str] = COLUMNS
    sweep_env: Mapping[str, str] = field(default_factory=dict)
    fork: Fork | None = None


class Process(Protocol):
    """What the runner uses of a worker process: spawned (`subprocess.Popen`) or forked from a
    fork server (suite.run.zygotes.Forked)."""

    pid: int
    stdout: Any

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


# A fork server's offer to start `python -m MODULE ARGV...` with an environment: the process, or
# None where it cannot (suite.run.zygotes.Zygotes.spawn); the worker is then spawned.
Fork = Callable[[str, list[str], Mapping[str, str]], Process | None]


@dataclass(frozen=True)
class Attempt:
    """One attempt at a job: its name (its scratch files are named for it only, so a worker left
    over from a killed run can never hand its result to a resumed one), its log, and its compile
    cache (`owned`: a fresh one, removed when the process ends)."""

    name: str
    log_path: Path
    appending: bool
    cache: Path
    owned: bool
    scratch: Path

    @staticmethod
    def of(job: WorkerJob) -> Attempt:
        paths, cell = job.paths, job.cell
        paths.logs.mkdir(parents=True, exist_ok=True)
        paths.scratch.mkdir(parents=True, exist_ok=True)
        stem = cell_stem(cell, job.index)
        name = f"{stem}.{uuid.uuid4().hex[:12]}"
        owned = job.cache is None and cell.settings.compile_cache == "cold"
        cache = job.cache or (paths.scratch / f"{name}.compile-cache" if owned else paths.compile_cache)
        log_path = job.log_path or next_log_path(paths, stem)
        return Attempt(name, log_path, job.log_path is not None, cache, owned, paths.scratch)

    def file(self, suffix: str) -> Path:
        """One of the attempt's scratch files (`.cell.json`, `.result.json`, ...)."""
        return self.scratch / f"{self.name}{suffix}"


@dataclass
class Started:
    """A worker as started: its process, its attempt, the thread that copies its output to its
    log. `end` kills what is left of it and removes what it owned."""

    proc: Process
    attempt: Attempt
    pump: threading.Thread

    @property
    def start(self) -> str:
        """How its process started: spawned fresh, or forked from a fork server (whose children
        are not `subprocess.Popen`s: suite.run.zygotes.Forked)."""
        return SPAWN if isinstance(self.proc, subprocess.Popen) else FORK

    def end(self) -> None:
        kill_group(self.proc)
        self.pump.join(timeout=10)  # EOF once the group is gone
        if self.attempt.owned:
            shutil.rmtree(self.attempt.cache, ignore_errors=True)


def worker_env(job: WorkerJob, attempt: Attempt) -> dict[str, str]:
    """What a worker starts with beyond the suite's own (suite.run.environ): its runner (it dies
    with it), its compile caches, its allocator, the sweep's environment and its own."""
    return {
        PARENT_ENV: str(os.getpid()),
        **cache_env(attempt.cache),
        **allocator.child_env(job.cell.settings.malloc, os.environ),
        **job.sweep_env,
        **job.extra_env,
    }


def start_worker(job: WorkerJob, attempt: Attempt, argv: Sequence[str], fork: Fork | None = None) -> Started:
    """The one way a worker starts (`python -m MODULE ARGV...`, every schedule's): its
    environment, its log (the attempt's, appended to with a header when the job names one),
    forked from a fork server where `fork` can, else spawned."""
    extra = worker_env(job, attempt)
    proc = fork(job.module, list(argv), extra) if fork is not None else None
    proc = proc or spawn([job.python, "-m", job.module, *argv], extra)
    if attempt.appending:
        log = pump(proc.stdout, attempt.log_path, "ab", f"\n--- {job.phase} process ---\n")
    else:
        log = pump(proc.stdout, attempt.log_path)
    return Started(proc, attempt, log)


def exit_fields(returncode: int, log_path: Path) -> dict[str, Any]:
    """A worker that ended without a result: why, with its log's last line."""
    tail = last_log_line(log_path)
    reason = describe_exit(returncode) + (f"; last log line: {tail}" if tail else "")
    return {"status": "error", "error": one_line(reason)}


def timeout_fields(timeout_s: float) -> dict[str, Any]:
    """A worker killed at its cell's timeout."""
    return {"status": "timeout", "error": f"no result after {timeout_s:g} s (worker killed)"}


@dataclass
class WorkerResult:
    """What one child process gave: always a list of rows (the fields of each row the cell owes,
    in its order: one, or one per batch size of a dynamic-batch cell), its wall seconds, and its
    log (relative to the run folder)."""

    rows: list[dict[str, Any]]
    wall_s: float
    log_file: str
    ahead_s: float = 0.0  # of wall_s, a compile process's ahead of the timing (suite.run.schedule)
    start: str = SPAWN  # how its process started: spawned, or forked from a fork server

    @property
    def fields(self) -> dict[str, Any]:
        """The first row's fields: the whole result of a cell that owes one row."""
        return self.rows[0]


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


def run_worker(job: WorkerJob) -> WorkerResult:
    """Run one child process of a cell, with its timeout; whatever comes back, or does not,
    becomes its rows."""
    cell = job.cell
    attempt = Attempt.of(job)
    cell_file, result_path = attempt.file(".cell.json"), attempt.file(".result.json")
    cell_file.write_text(cell.to_json())
    argv = [str(cell_file), str(result_path), job.device_type]
    argv += [job.phase] if job.phase != MEASURE else []
    start = time.monotonic()
    worker = start_worker(job, attempt, [*argv, *job.args], job.fork if job.phase == MEASURE else None)
    try:
        returncode: int | None = worker.proc.wait(timeout=cell.settings.timeout_s)
    except subprocess.TimeoutExpired:
        returncode = None
    finally:
        worker.end()
    wall = time.monotonic() - start
    cell_file.unlink(missing_ok=True)
    if returncode is None:
        fields = timeout_fields(cell.settings.timeout_s)
    elif result_path.exists():
        fields = result_fields(result_path, job.keep)
        result_path.unlink(missing_ok=True)
    else:
        fields = exit_fields(returncode, attempt.log_path)
    log_file = str(attempt.log_path.relative_to(job.paths.run_dir))
    return WorkerResult(rows_of(cell, fields), wall, log_file, start=worker.start)


def kill_group(proc: Process) -> None:
    """Kill the worker's whole process group (compile workers included) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)
