"""What the nox sessions share, without nox: the session's own flags, the builds they pick,
running the suite, the one-line errors. noxfile.py declares the sessions and hands each
function here a `Runner` made of its nox session's run/log/error, so all of this runs (and
is tested) without nox, and importing it starts no process.
"""

from __future__ import annotations

import functools
import logging
import os
import subprocess
import sys
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from suite.errors import UsageError
from suite.redact import redact
from suite.run.environ import child_env
from suite.sessions.docker import DockerProblem
from suite.spec import BuildSpec, Matrix, load_matrix, pick_build

F = TypeVar("F", bound=Callable[..., Any])


@dataclass(frozen=True)
class Runner:
    """What a session does besides computing: run a command (which fails the session if
    the command fails), log a line, stop with a failed step (exit status 1)."""

    run: Callable[..., object]  # run(*argv, env=None)
    log: Callable[[str], None]
    error: Callable[[str], NoReturn]


class RedactingFilter(logging.Filter):
    """Redacts (suite.redact) every record before a handler formats it: nox logs each
    command line it runs, each session.log line and each error, a traceback included."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        if record.exc_info:
            message += "\n" + "".join(traceback.format_exception(*record.exc_info)).rstrip()
            record.exc_info, record.exc_text = None, None
        if record.stack_info:
            message += "\n" + record.stack_info
            record.stack_info = None
        record.msg, record.args = redact(message), ()
        return True


def redact_nox_output() -> None:
    """Pass everything nox logs through the redaction (the noxfile calls this on import)."""
    logger = logging.getLogger("nox")
    if not any(isinstance(f, RedactingFilter) for f in logger.filters):
        logger.addFilter(RedactingFilter())


def one_line_errors(session: F) -> F:
    """Bad input or a missing prerequisite (UsageError, DockerProblem): one line on stderr and
    exit status 2, before anything is built (nox's own session.error exits 1 and says
    "Session ... aborted")."""

    @functools.wraps(session)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return session(*args, **kwargs)
        except (UsageError, DockerProblem) as exc:
            print(redact(f"nox > error: {exc}"), file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    return wrapper  # type: ignore[return-value]


def matrix_file(root: Path) -> str:
    """The repository's matrix.yaml, named as seen from here (nox runs in `root`), so the
    messages say `matrix.yaml: builds.x: ...`."""
    return os.path.relpath(root / "matrix.yaml")


def load(root: Path) -> Matrix:
    return load_matrix(matrix_file(root))


def pick_builds(matrix: Matrix, wanted: str | None, default: Sequence[str]) -> list[BuildSpec]:
    """The builds of `--build B1,B2` (each checked by suite.spec.pick_build), else `default`."""
    names = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else list(default)
    return [pick_build(matrix, name) for name in dict.fromkeys(names)]


def no_container(matrix: Matrix, build: BuildSpec) -> UsageError:
    return UsageError(
        f"{matrix.path}: builds.{build.name}",
        f"no container; run it with `nox -s bench-local -- --build {build.name}`",
    )


def pop_flag(args: list[str], flag: str) -> str | None:
    """Remove `--flag VALUE` / `--flag=VALUE` from args; return VALUE."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
            del args[i : i + 2]
            return value
        if arg.startswith(flag + "="):
            del args[i]
            return arg.split("=", 1)[1]
        if arg == flag:
            raise UsageError(flag, "needs a value")
    return None


def pop_switch(args: list[str], flag: str) -> bool:
    if flag in args:
        args.remove(flag)
        return True
    return False


@dataclass
class BenchArgs:
    """The session's own flags, taken out of posargs; the rest goes to `python -m suite run`."""

    builds: str | None
    run_id: str
    out: Path
    offline: bool
    no_merge: bool
    sharded: bool
    suite_args: list[str]
    device: str | None = None  # --device, None: the session's default
    shard: str = ""  # --shard i/n (it stays in suite_args too)


# Checks a build's selection flags before anything is built (the noxfile runs `suite plan`).
SelectionCheck = Callable[[BuildSpec, BenchArgs], None]


def bench_args(posargs: Sequence[str], prefix: str, root: Path) -> BenchArgs:
    args = list(posargs)
    builds = pop_flag(args, "--build")
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id = pop_flag(args, "--run-id") or f"{prefix}-{stamp}"
    out = Path(pop_flag(args, "--out") or root / "results").resolve()
    offline = pop_switch(args, "--offline")
    no_merge = pop_switch(args, "--no-merge")
    device = pop_flag(args, "--device")
    shard = pop_flag(list(args), "--shard")  # looked at, not taken: `suite run` needs it too
    sharded = any(a == "--shard" or a.startswith("--shard=") for a in args)
    return BenchArgs(builds, run_id, out, offline, no_merge, sharded, args, device, shard or "")


# The suite's own exit statuses (README, "Exit status") that a session passes on as they are:
# 2 bad input (one line already printed), 3 a bug, 130 interrupted, 141 its output closed.
SUITE_STATUSES = (2, 3, 130, 141)


def run_suite(runner: Runner, cmd: list[str], extra_env: Mapping[str, str] | None = None) -> None:
    """Run a suite command with the workers' environment (suite.run.environ.child_env: this
    checkout's suite first on PYTHONPATH). The session then exits with the suite's own status
    (nox would make every failure 1): `nox -s merge -- missing-folder` exits 2, as the README
    says, after the suite's one line."""
    runner.log(" ".join(cmd))
    code = subprocess.run(cmd, env=child_env(dict(extra_env or {})), check=False).returncode
    if code in SUITE_STATUSES:
        raise SystemExit(code)
    if code != 0:
        runner.error(f"{cmd[0]} exited with status {code}")


def merge_target(runner: Runner, bench: BenchArgs) -> str | None:
    """The run folder to merge after the benchmark, or None (one shard, or --no-merge)."""
    run_dir = bench.out / bench.run_id
    if bench.sharded or bench.no_merge:
        why = "one shard; the workflow's merge job joins them" if bench.sharded else "--no-merge"
        runner.log(f"raw CSVs: {run_dir}/raw/ (not merged: {why})")
        return None
    return str(run_dir)


MERGE_VALUE_FLAGS = ("-o", "--out", "--matrix", "--reference")  # `suite merge` flags with a value


def merge_args(posargs: Sequence[str], results: Path) -> tuple[list[str], bool]:
    """`nox -s merge -- [RUN_DIR...] [-o OUT] [--offline]`: the arguments of `suite merge` and
    whether to install nothing. The run folders are checked before anything is installed (a
    missing one: one line, exit 2); without one, the newest run under `results`."""
    args = [a for a in posargs if a != "--offline"]
    offline = len(args) != len(posargs)
    inputs = [
        a
        for i, a in enumerate(args)
        if not a.startswith("-") and not (i > 0 and args[i - 1] in MERGE_VALUE_FLAGS)
    ]
    for name in inputs:
        if not Path(name).exists():
            raise UsageError(name, "no such run folder or CSV file")
    return (args if inputs else [newest_run(results), *args]), offline


def newest_run(results: Path) -> str:
    """The run folder under `results` whose raw CSVs were written last (none: bad input, exit 2)."""
    runs = [p for p in results.glob("*/raw") if any(p.glob("*.csv"))]
    if not runs:
        raise UsageError(f"{results}", "no run folder with raw CSVs here; give one: nox -s merge -- RUN_DIR")
    newest = max(runs, key=lambda raw: max(f.stat().st_mtime for f in raw.glob("*.csv")))
    return str(newest.parent)
