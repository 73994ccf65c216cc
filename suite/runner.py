"""Run cells: one child process per cell, with a timeout; rows appended as each ends.

The parent never imports torch. It probes the environment once (in a child), then for
each cell starts `python -m suite.worker` in a new process group (inductor's compile
workers die with it on a timeout), waits, and turns what came back (or did not) into
exactly one row: ok / oom / error / timeout / skipped. A failing cell never stops the
sweep. One runner per raw CSV (suite.lock); resume (suite.resume): cells already
recorded as ok or oom are not re-run. A worker dies with this process (suite.lifeline),
and reads and writes files named for its attempt only, so a worker left over from a
killed run can never hand its result to a resumed one. The worker's output reaches its
log through a pipe that redacts secrets (suite.redact).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TextIO

from suite import env as envmod
from suite import resume
from suite.cost import estimate_seconds, format_duration
from suite.errors import UsageError
from suite.lifeline import PARENT_ENV
from suite.lock import RunLock
from suite.matrix import Cell, Matrix
from suite.redact import redact_bytes
from suite.results import (
    COLUMNS,
    STATUSES,
    TIMING_COLUMNS,
    RowWriter,
    key_of,
    one_line,
    raw_csv_name,
    slug,
)

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
# Below this much free space where results go, no cell starts (`run --min-free-mb`):
# a cold compile cache alone can take hundreds of MB per cell.
DEFAULT_MIN_FREE_MB = 1024


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The worker's environment: ours (HF_TOKEN etc. pass through, never written
    anywhere), the suite importable, output unbuffered so the log is complete."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def probe(device: str, python: str = sys.executable) -> envmod.Environment:
    """Collect provenance in a child process (also checks --device cuda before any cell)."""
    cmd = [python, "-m", "suite", "env", "--json", "--device", device]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError("env", "probing the environment took over 300 s") from None
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no output)"])[-1].removeprefix("suite env: error: ")
        if last.startswith("--device: "):
            raise UsageError("--device", one_line(last.removeprefix("--device: ")))
        raise UsageError("env", f"probing the environment failed: {one_line(last)}")
    return envmod.from_json(proc.stdout.strip().splitlines()[-1])


def resolve_build(matrix: Matrix, requested: str | None, env: envmod.Environment) -> str:
    """The build label for the rows: the one asked for (checked against the running
    torch), else the single matrix build whose torch version is running, else
    `torch<version>`."""
    if requested:
        if requested not in matrix.builds:
            raise UsageError(
                "--build",
                f"{requested!r} is not a build of {matrix.path} (known: {', '.join(matrix.builds)})",
            )
        spec = matrix.builds[requested]
        if not spec.matches(env.torch_version):
            raise UsageError(
                "--build",
                f"build {requested!r} pins torch {spec.torch}, but this Python "
                f"runs torch {env.torch_version}; run it in the build's environment "
                f"(nox -s bench-local -- --build {requested}) or drop --build",
            )
        return requested
    matching = [b.name for b in matrix.builds.values() if b.matches(env.torch_version)]
    return matching[0] if len(matching) == 1 else slug(f"torch{env.torch_version}")


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


def check_writable(out: Path) -> None:
    """Fail before any cell runs if results cannot be written."""
    try:
        out.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=out, prefix=".write-test-"):
            pass
    except OSError as exc:
        raise UsageError("--out", f"cannot write results to {out}: {exc.strerror or exc}") from None


def _mb(value: float) -> str:
    return f"{value:.0f}" if value >= 10 else f"{value:g}"


def free_mb(path: Path) -> float:
    return shutil.disk_usage(path).free / 2**20


def check_free_space(out: Path, min_free_mb: float) -> None:
    """Fail before any cell runs if the disk that holds the results is (nearly) full."""
    try:
        free = free_mb(out)
    except OSError as exc:
        raise UsageError("--out", f"cannot check the free space of {out}: {exc.strerror or exc}") from None
    if free < min_free_mb:
        raise UsageError(
            "--out",
            f"only {_mb(free)} MB free on the disk of {out}, below the minimum of {_mb(min_free_mb)} MB: "
            "free some space (or lower --min-free-mb)",
        )


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


def last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1].strip() if lines else ""


def _log_path(paths: RunPaths, stem: str) -> Path:
    """`<stem>.log`, or `<stem>.attempt<n>.log` when an earlier attempt's log is there
    (a re-run never overwrites the log a superseded row points to)."""
    path, n = paths.logs / f"{stem}.log", 1
    while path.exists():
        n += 1
        path = paths.logs / f"{stem}.attempt{n}.log"
    return path


def _pump(source: Any, log: Any) -> None:
    """Copy the worker's output to its log line by line, secrets redacted."""
    try:
        for line in iter(source.readline, b""):
            log.write(redact_bytes(line))
            log.flush()
    except (OSError, ValueError):  # the log was closed under us: the cell is over
        pass


def _result_fields(path: Path) -> dict[str, Any]:
    """The worker's result, checked: a garbled one becomes an error, never a crash of the sweep."""
    try:
        fields = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        return {"status": "error", "error": f"unreadable worker result: {exc}"}
    if not isinstance(fields, dict) or fields.get("status") not in STATUSES:
        status = fields.get("status") if isinstance(fields, dict) else None
        return {"status": "error", "error": f"worker result has no valid status (got {status!r})"}
    unknown = sorted(set(fields) - set(COLUMNS))
    if unknown:
        print(f"warning: worker result columns outside the CSV contract dropped: {unknown}", file=sys.stderr)
    return {k: v for k, v in fields.items() if k in COLUMNS}


def run_worker(
    cell: Cell, device_type: str, paths: RunPaths, index: int, python: str = sys.executable
) -> tuple[dict[str, Any], float, str]:
    """Run one cell in a child process. Returns (worker fields, wall seconds, log path)."""
    paths.logs.mkdir(parents=True, exist_ok=True)
    paths.scratch.mkdir(parents=True, exist_ok=True)
    stem = f"{index:03d}-{slug(cell.model.name)}-bs{cell.batch_size}-{cell.mode}-{cell.scenario}"
    log_path = _log_path(paths, stem)
    attempt = f"{stem}.{uuid.uuid4().hex[:12]}"  # files of this attempt only
    cell_path = paths.scratch / f"{attempt}.cell.json"
    result_path = paths.scratch / f"{attempt}.result.json"
    cell_path.write_text(cell.to_json())
    extra: dict[str, str] = {PARENT_ENV: str(os.getpid())}
    cache = None
    if cell.settings.compile_cache == "cold":
        cache = paths.scratch / f"{attempt}.compile-cache"
    else:
        cache = paths.run_dir / ".compile-cache"
    extra["TORCHINDUCTOR_CACHE_DIR"] = str(cache / "inductor")
    extra["TRITON_CACHE_DIR"] = str(cache / "triton")
    cmd = [python, "-m", "suite.worker", str(cell_path), str(result_path), device_type]
    start = time.monotonic()
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env=child_env(extra),
            start_new_session=True,
        )
        pump = threading.Thread(target=_pump, args=(proc.stdout, log), name="log-pump", daemon=True)
        pump.start()
        try:
            returncode = proc.wait(timeout=cell.settings.timeout_s)
            timed_out = False
        except subprocess.TimeoutExpired:
            timed_out = True
            returncode = -signal.SIGKILL
        finally:
            _kill_group(proc)
            pump.join(timeout=10)  # EOF once the group is gone
    wall = time.monotonic() - start
    if cell.settings.compile_cache == "cold":
        shutil.rmtree(cache, ignore_errors=True)
    cell_path.unlink(missing_ok=True)
    if timed_out:
        fields: dict[str, Any] = {
            "status": "timeout",
            "error": f"no result after {cell.settings.timeout_s:g} s (worker killed)",
        }
    elif result_path.exists():
        fields = _result_fields(result_path)
        result_path.unlink(missing_ok=True)
    else:
        tail = last_line(log_path)
        reason = describe_exit(returncode) + (f"; last log line: {tail}" if tail else "")
        fields = {"status": "error", "error": one_line(reason)}
    return fields, wall, str(log_path.relative_to(paths.run_dir))


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the worker's whole process group (compile workers included) and reap it."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=30)


@dataclass
class Progress:
    """One line when a cell starts and one when it ends: done/total, elapsed, ETA.

    The ETA is the cost model's estimate for the cells left, scaled by how this machine's
    walls compared with the estimates of the cells done so far: a compiled cell can take
    ten times an eager one, so an average per cell would swing with the order of the plan.
    """

    total: int
    estimate_left: float  # suite.cost seconds of the cells not yet done
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    started: float = field(default_factory=time.monotonic)
    done: int = 0
    wall_done: float = 0.0  # measured seconds of the cells run so far
    estimate_done: float = 0.0  # their estimated seconds

    @staticmethod
    def of(cells: Sequence[Cell]) -> Progress:
        return Progress(total=len(cells), estimate_left=sum(estimate_seconds(c) for c in cells))

    def start(self, cell: Cell) -> None:
        print(
            f"[{self.done + 1:>{len(str(self.total))}}/{self.total}] {cell.label} ...",
            file=self.stream,
            flush=True,
        )

    def finish(self, cell: Cell, row: dict[str, Any], wall: float) -> None:
        self.done += 1
        estimate = estimate_seconds(cell)
        self.estimate_left -= estimate
        self.estimate_done += estimate
        self.wall_done += wall
        elapsed = time.monotonic() - self.started
        eta = self.estimate_left * self.wall_done / self.estimate_done
        status = row["status"]
        if status == "ok":
            detail = f"median {float(row['median_ms']):.2f} ms"
            if row.get("speedup") not in (None, ""):
                detail += f", speed-up x{float(row['speedup']):.2f}"
        else:
            detail = str(row.get("error", ""))[:120]
        width = len(str(self.total))
        print(
            f"[{self.done:>{width}}/{self.total}] {cell.label}: {status} ({detail}) in {wall:.1f} s"
            f" | elapsed {format_duration(elapsed)} | ETA {format_duration(eta)}",
            file=self.stream,
            flush=True,
        )

    def skip(self, cell: Cell, status: str) -> None:
        self.done += 1
        self.estimate_left -= estimate_seconds(cell)
        width = len(str(self.total))
        print(
            f"[{self.done:>{width}}/{self.total}] {cell.label}: already recorded ({status}), skipped",
            file=self.stream,
            flush=True,
        )


@dataclass
class RunReport:
    csv: Path
    ran: int = 0
    resumed: int = 0
    statuses: dict[str, int] = field(default_factory=dict)


def build_row(
    cell: Cell,
    env: envmod.Environment,
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
        "warmup": s.warmup,
        "tolerance": s.tolerance,
        "compile_cache": s.compile_cache,
        "variant": cell.variant,
        "shard": shard,
        "log_file": log_file,
        "host_load": round(os.getloadavg()[0], 2),
    }
    row.update(fields)
    if row["status"] != "ok":
        for col in TIMING_COLUMNS:
            row[col] = None
    return row


def run_cells(
    cells: Sequence[Cell],
    env: envmod.Environment,
    out: Path,
    run_id: str,
    shard: str = "",
    keep_failed: bool = False,
    python: str = sys.executable,
    min_free_mb: float = DEFAULT_MIN_FREE_MB,
    banner: str = "",
) -> RunReport:
    """Run every cell not already recorded; append one row per cell as it ends.

    Holds the run's lock throughout. `banner` is printed once the run's CSV is found fit
    to resume (a refused run prints its one error line only). Stops (UsageError, exit 2)
    when the disk fills up: the rows recorded so far are safe, and the same --run-id
    resumes."""
    if not cells:
        raise UsageError("cells", "the selection is empty: nothing to run")
    build = cells[0].build
    paths = RunPaths.make(out, run_id, build, env.device, shard)
    report = RunReport(csv=paths.csv)
    resume_hint = f"the rows recorded so far are safe; run again with --run-id {run_id} to resume"
    with RunLock(paths.csv):
        state = resume.prepare(paths.csv, keep_failed)
        if banner:
            print(banner, file=sys.stderr, flush=True)
        shutil.rmtree(paths.scratch, ignore_errors=True)  # files of a killed run's attempts
        progress = Progress.of(cells)
        try:
            writer = RowWriter(paths.csv)
        except OSError as exc:
            raise UsageError(str(paths.csv), f"cannot open for appending: {exc.strerror or exc}") from None
        with writer:
            for index, cell in enumerate(cells):
                key = key_of(cell.key_fields(env.device))
                if key in state.done:
                    report.resumed += 1
                    progress.skip(cell, state.done[key])
                    continue
                free = free_mb(paths.run_dir)
                if free < min_free_mb:
                    raise UsageError(
                        "--out",
                        f"only {_mb(free)} MB left on the disk of {paths.run_dir} (minimum "
                        f"{_mb(min_free_mb)} MB): stopped before {cell.label}; {resume_hint}",
                    )
                progress.start(cell)
                started_at = datetime.now(timezone.utc).isoformat(timespec="seconds")
                try:
                    fields, wall, log_file = run_worker(cell, env.device_type, paths, index, python)
                    row = build_row(cell, env, run_id, fields, started_at, wall, log_file, shard)
                    writer.append(row)
                except OSError as exc:
                    raise UsageError(
                        "--out",
                        f"{cell.label}: {exc.strerror or exc} ({exc.filename or 'no file'}); {resume_hint}",
                    ) from None
                report.ran += 1
                report.statuses[row["status"]] = report.statuses.get(row["status"], 0) + 1
                progress.finish(cell, row, wall)
        shutil.rmtree(paths.scratch, ignore_errors=True)
    return report


def new_run_id() -> str:
    return datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")


def env_json_main(device: str) -> int:
    """`suite env --json`: one JSON line on stdout (used by `probe`)."""
    try:
        environment = envmod.collect(device)
    except RuntimeError as exc:
        raise UsageError("--device", str(exc)) from None
    print(envmod.to_json(environment))
    return 0
