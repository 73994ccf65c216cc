"""The local builds (`nox -s bench-local`, `nox -s tests-stable`): a virtualenv per build,
pinned like the build's image, and the benchmark run in it.

The virtualenv lives under .nox/build-<name>/ and is reused while its pins are unchanged.
torch (and torchvision, where the image has one) comes from the image's exact wheels when
their index is reachable, else from PyPI at the same versions; then the image's hash-locked
requirements (or the build's `pins`). Finding an interpreter only looks at files, so the
noxfile can ask for one when it is imported without starting a process.
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from suite.errors import UsageError
from suite.run.pair import Coordinator, Side, run_pair
from suite.sessions import nightly, pairing
from suite.sessions.docker import OFFLINE_ENV
from suite.sessions.posargs import BenchArgs, SelectionCheck, bench_args, merge_args, merge_target
from suite.sessions.runner import SUITE_STATUSES, Runner, load, matrix_file, pick_builds, run_suite
from suite.sessions.toolpins import MERGE_PACKAGES
from suite.spec import BuildSpec

BY_VERSION = "SUITE_TORCH_BY_VERSION"


def find_python(version: str) -> str | None:
    """A Python `version` interpreter, found without running one: a pyenv install of it
    (newest first), else python<version> on PATH unless it is a version manager's shim (a
    pyenv shim fails for a version that is not selected), else None."""
    root = os.environ.get("PYENV_ROOT", os.path.expanduser("~/.pyenv"))
    installs = glob.glob(f"{root}/versions/{version}.*/bin/python{version}")
    if installs:
        return max(installs, key=lambda exe: _release(Path(exe).parents[1].name))
    on_path = shutil.which(f"python{version}")
    return on_path if on_path and Path(on_path).parent.name != "shims" else None


def session_pythons() -> tuple[str, str]:
    """The Pythons of the tests' (and lint's) sessions and the merge's. The tests run on the
    current build's Python 3.11 (CI also runs them on 3.10: `nox -s tests --force-python 3.10`);
    a pyenv install is taken over its shim, which fails when that version is not pyenv's
    selected one. Any Python can merge; a GPU VM may have no 3.11: then the one nox runs on."""
    found = find_python("3.11")
    return found or "3.11", found or sys.executable


def _release(name: str) -> tuple[int, ...]:
    """3.10.13 -> (3, 10, 13), so 3.10.13 sorts after 3.10.2 (a pre-release counts as 0)."""
    return tuple(int(part) if part.isdigit() else 0 for part in name.split("."))


def reachable(url: str) -> bool:
    """A quick HEAD request: is the build's own torch index reachable from here?"""
    try:
        req = urllib.request.Request(url, method="HEAD")
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status < 400
    except (OSError, ValueError):
        return False


def wheel_version(url: str) -> str:
    """The public version in a wheel's file name: 0.15.2 for .../torchvision-0.15.2%2Bcu118-...whl."""
    name = urllib.parse.unquote(url.rsplit("/", 1)[-1])
    return name.split("-")[1].split("+")[0]


def torch_steps(build: BuildSpec, venv: Path) -> tuple[list[list[str]], str]:
    """pip install arguments for torch (and torchvision, where the image has one) in a
    build's local virtualenv, and where they come from: the image's exact wheels (URL +
    sha256) or nightlies when reachable, else PyPI's of the same versions (PyPI's torch
    2.0.1 and torchvision 0.15.2 pair: both CUDA 11.7 builds, large on a CPU-only machine;
    the rows still record the torch and CUDA that ran). With SUITE_TORCH_BY_VERSION=1, the
    versions from pip's indexes even where the wheels are reachable: CI sets it with
    PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu, whose 2.0.1+cpu outranks the
    multi-GB CUDA builds (a test's torch needs no CUDA)."""
    args = build.build_args
    wheels = [
        (n, args[f"{n.upper()}_WHEEL_URL"])
        for n in ("torch", "torchvision")
        if f"{n.upper()}_WHEEL_URL" in args
    ]
    by_version = os.environ.get(BY_VERSION) == "1"
    if wheels and not by_version and all(reachable(url) for _, url in wheels):
        req = venv / "torch-requirement.txt"
        req.write_text(
            "".join(f"{n} @ {url} --hash=sha256:{args[f'{n.upper()}_WHEEL_SHA256']}\n" for n, url in wheels)
        )
        return [["--require-hashes", "--no-deps", "-r", str(req)]], " + ".join(url for _, url in wheels)
    if "TORCH_NIGHTLY_DATE" in args:
        date = args["TORCH_NIGHTLY_DATE"]
        pins = [f"torch=={build.torch}.dev{date}"]
        if "TORCHVISION_VERSION" in args:
            pins.append(f"torchvision=={args['TORCHVISION_VERSION']}.dev{date}")
        elif "TORCHVISION_WHEEL_URL" in args:  # the night's own, as resolved
            pins.append(f"torchvision=={wheel_version(args['TORCHVISION_WHEEL_URL'])}")
        return [["--pre", *pins, "--index-url", build.index_url]], build.index_url
    pins = [f"torch=={build.torch}"]
    if "TORCHVISION_WHEEL_URL" in args:
        pins.append(f"torchvision=={wheel_version(args['TORCHVISION_WHEEL_URL'])}")
    return [pins], "pip's configured indexes" if by_version else "PyPI (or pip's configured index)"


def has_modules(python: Path, modules: Sequence[str]) -> bool:
    """Whether that interpreter imports every one of `modules` (a kept virtualenv's)."""
    if not python.exists():
        return False
    try:
        proc = subprocess.run(
            [str(python), "-c", f"import {', '.join(modules)}"], capture_output=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0


def lock_file(build: BuildSpec, root: Path) -> Path | None:
    """The image's hash-locked requirements (containers/<build>/requirements.txt), if any."""
    lock = root / build.container / "requirements.txt" if build.container else None
    return lock if lock is not None and lock.is_file() else None


def _pins_digest(build: BuildSpec, root: Path) -> str:
    """What a build's virtualenv was made from: reused while this is unchanged."""
    lock = lock_file(build, root)
    source = f"{BY_VERSION}={os.environ.get(BY_VERSION, '')}".encode()  # another torch: another venv
    return hashlib.sha256(repr(build).encode() + source + (lock.read_bytes() if lock else b"")).hexdigest()


def ready_venv(build: BuildSpec, root: Path) -> Path | None:
    """The Python of the build's virtualenv when it is there and pinned as the build is now."""
    venv = root / ".nox" / f"build-{build.name}"
    marker, python = venv / ".suite-pins", venv / "bin" / "python"
    if marker.is_file() and marker.read_text() == _pins_digest(build, root) and python.exists():
        return python
    return None


def missing_python(build: BuildSpec, root: Path) -> str | None:
    """Why the build's virtualenv cannot be made here (no Python of its version, and none made
    before), in one line; None when it can."""
    if ready_venv(build, root) is not None or find_python(build.python) is not None:
        return None
    return (
        f"build {build.name} needs Python {build.python} ({matrix_file(root)}: builds.{build.name}.python), "
        f"and this machine has no python{build.python} (pyenv's versions, then PATH): install it "
        f"(`pyenv install {build.python}`, or your distribution's python{build.python} and "
        f"python{build.python}-venv) to run this build"
    )


def build_venv(runner: Runner, build: BuildSpec, root: Path) -> Path:
    """The Python of a virtualenv pinned like the build's image, under .nox/, reused while
    its pins are unchanged: torch as above, then the image's hash-locked requirements
    (else `pins`)."""
    ready = ready_venv(build, root)
    if ready is not None:
        return ready
    venv = root / ".nox" / f"build-{build.name}"
    lock = lock_file(build, root)
    python = venv / "bin" / "python"
    interpreter = find_python(build.python)
    if interpreter is None:
        raise UsageError(
            f"{matrix_file(root)}: builds.{build.name}.python",
            f"no Python {build.python} found on this machine",
        )
    shutil.rmtree(venv, ignore_errors=True)
    runner.run(interpreter, "-m", "venv", str(venv))
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    steps, source = torch_steps(build, venv)
    vision = any(k.startswith("TORCHVISION_") for k in build.build_args)
    runner.log(f"{build.name}: torch {build.torch}{' and its torchvision' if vision else ''} from {source}")
    for step in steps:
        runner.run(*pip, *step)
    if lock is not None:
        runner.run(*pip, "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", str(lock))
    else:
        runner.run(*pip, *[p for p in build.pins if not p.startswith("torch")])
    runner.run(str(python), "-m", "pip", "check")
    (venv / ".suite-pins").write_text(_pins_digest(build, root))
    return python


def bench_local(runner: Runner, posargs: Sequence[str], root: Path, check: SelectionCheck) -> str | None:
    """Each local build (or `--build`) in its pinned virtualenv, on this machine's device;
    returns the run folder to merge (None: not to be merged). Every build's flags are
    checked before any virtualenv is made."""
    matrix = load(root)
    bench = bench_args(posargs, "local", root)
    chosen = pick_builds(matrix, bench.builds, [n for n, b in matrix.builds.items() if b.local])
    for build in chosen:
        check(build, bench)
    chosen, _ = nightly.resolve_all(chosen, root)  # a build that follows the nightly: tonight's wheels
    missing = {b.name: why for b in chosen if (why := missing_python(b, root)) is not None}
    if len(missing) == len(chosen):  # nothing can run here: that is bad input, not a skip
        raise UsageError("bench-local", "; ".join(missing.values()))
    ready: list[tuple[BuildSpec, Path]] = []
    for build in chosen:
        if build.name in missing:  # one line, then the other builds run
            runner.log(f"skipped: {missing[build.name]}")
            continue
        ready.append((build, build_venv(runner, build, root)))
    pair, why = pairing.plan([b for b, _ in ready], bench.separate)
    commands = {b.name: _run_command(python, b, bench) for b, python in ready}
    env = OFFLINE_ENV if bench.offline else None
    if pair is None:
        if len(ready) > 1:
            runner.log(f"builds timed apart: {why}")
        for build, _ in ready:
            run_suite(runner, commands[build.name], env)
    else:
        run_paired(runner, pair, commands, bench.out / bench.run_id, env)
    return merge_target(runner, bench)


def _run_command(python: Path, build: BuildSpec, bench: BenchArgs) -> list[str]:
    cmd = [str(python), "-m", "suite", "run", "--build", build.name, "--run-id", bench.run_id]
    cmd += ["--device", bench.device] if bench.device else []
    return [*cmd, "--out", str(bench.out), *bench.suite_args]


def run_paired(
    runner: Runner,
    pair: pairing.PairPlan,
    commands: dict[str, list[str]],
    run_dir: Path,
    env: Mapping[str, str] | None,
) -> None:
    """The two builds' runners at once under one coordinator (suite.run.pair): each cell timed
    side by side. The session ends with the suite's own status where a runner refused its input."""
    coordinator = Coordinator(pairing.socket_path(run_dir), log=runner.log)
    sides = []
    for build in (pair.base, pair.new):
        role = pair.role(build)
        cmd = [*commands[build.name], *pairing.runner_flags(coordinator.path, role)]
        runner.log(" ".join(cmd))
        sides.append(Side(role, cmd, dict(env or {})))
    runner.log(f"pair {coordinator.pair_id}: {pair.base.name} (base), {pair.new.name} (new), side by side")
    codes = run_pair(coordinator, sides)
    for code in codes.values():
        if code in SUITE_STATUSES:
            raise SystemExit(code)
    failed = [f"{role} exited with status {code}" for role, code in codes.items() if code != 0]
    if failed:
        runner.error("; ".join(failed))


def merge(
    runner: Runner, posargs: Sequence[str], root: Path, python: Path, install: Callable[..., object]
) -> None:
    """`nox -s merge`: the run folders checked first, pandas, matplotlib and pyarrow installed in the
    session's virtualenv (kept between runs: `--offline` installs nothing and uses what an
    earlier merge installed), then this checkout's `suite merge`, whose exit status is the
    session's (2 for bad input, as the README says, not nox's 1)."""
    args, offline = merge_args(posargs, root / "results")
    if not (offline and has_modules(python, ["pandas", "matplotlib", "yaml", "pyarrow"])):
        if offline:
            raise UsageError(
                "--offline",
                "the merge's virtualenv has no pandas and matplotlib (or no pyarrow), and installing "
                "them needs the network: run `nox -s merge` once online (the virtualenv is kept), "
                "or drop --offline",
            )
        install(*MERGE_PACKAGES)
    run_suite(runner, [str(python), "-m", "suite", "merge", *args])
