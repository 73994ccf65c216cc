"""Checks made before the first cell: where results go, the environment (probed in a child,
so the parent never imports torch), the build label, and custom configurations against
transformers (again in a child). Each failure is a UsageError: one line, exit status 2.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable
from dataclasses import asdict
from pathlib import Path

from suite.errors import UsageError, last_line
from suite.measure import provenance
from suite.measure.config_check import Problem
from suite.results import one_line, slug
from suite.run.launch import child_env
from suite.spec.expand import pick_build
from suite.spec.model import Cell, Matrix, ModelSpec

# Below this much free space where results go, no cell starts (`run --min-free-mb`):
# a cold compile cache alone can take hundreds of MB per cell.
DEFAULT_MIN_FREE_MB = 1024


def probe(device: str, python: str = sys.executable) -> provenance.Environment:
    """Collect provenance in a child process (also checks --device cuda before any cell)."""
    cmd = [python, "-m", "suite", "env", "--json", "--device", device]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=child_env(), timeout=300, check=False)
    except subprocess.TimeoutExpired:
        raise UsageError("env", "probing the environment took over 300 s") from None
    if proc.returncode != 0:
        last = last_line(proc.stderr, "(no output)").removeprefix("suite env: error: ")
        if last.startswith("--device: "):
            raise UsageError("--device", one_line(last.removeprefix("--device: ")))
        raise UsageError("env", f"probing the environment failed: {one_line(last)}")
    return provenance.from_json(proc.stdout.strip().splitlines()[-1])


def resolve_build(matrix: Matrix, requested: str | None, env: provenance.Environment) -> str:
    """The build label for the rows: the one asked for (checked against the running
    torch), else the single matrix build whose torch version is running, else
    `torch<version>`."""
    if requested:
        spec = pick_build(matrix, requested)
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


CHECK_TIMEOUT_S = 300
_checked: set[str] = set()  # payloads already checked in this process (cmd_run expands twice)


def check_custom(matrix: Matrix, cells: Iterable[Cell]) -> None:
    """Raise UsageError for the first problem among the custom configurations `cells` use."""
    wanted: dict[tuple[str, bool], ModelSpec] = {}
    for cell in cells:
        if cell.model.base:
            wanted.setdefault((cell.model.name, cell.settings.shrink), cell.model)
    if not wanted:
        return
    # insertion order (the matrix's) keeps the payload stable; default=str: a base config may
    # hold YAML values JSON has no type for (the child then sees their text)
    payload = json.dumps(
        [{"spec": asdict(spec), "shrink": shrink} for (_, shrink), spec in wanted.items()], default=str
    )
    if payload in _checked:
        return
    problems = _run_child(payload)
    if problems is None:
        return
    if problems:
        p = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        field = ".".join(x for x in ("custom", p.name, p.key) if x)
        raise UsageError(f"{matrix.path}: {field}", p.message + more)
    _checked.add(payload)


def _run_child(payload: str) -> list[Problem] | None:
    """Problems found by `python -m suite.measure.config_check`; None when it could not check (no
    transformers here: the workers will report a bad configuration in their rows instead)."""
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "suite.measure.config_check"],
            input=payload,
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(
            f"suite: warning: checking custom configurations took over {CHECK_TIMEOUT_S} s", file=sys.stderr
        )
        return None
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        tail = last_line(proc.stderr, "no output")
        print(f"suite: warning: custom configurations not checked ({tail})", file=sys.stderr)
        return None
    if "unavailable" in answer:
        print(f"suite: warning: custom configurations not checked ({answer['unavailable']})", file=sys.stderr)
        return None
    return [Problem(**p) for p in answer["problems"]]
