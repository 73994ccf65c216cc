"""How a nox session runs things, without nox: the `Runner` (noxfile.py hands each session
function one, made of its nox session's run/log/error, so all of this runs and is tested without
nox), the builds it picks, running the suite with its own exit status, one-line errors and
redacted nox output. Importing it starts no process. What a session was asked: posargs.py.
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


# The suite's own exit statuses (docs/failures.md, "Exit status") that a session passes on as they are:
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
