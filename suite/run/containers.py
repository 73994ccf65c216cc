"""The container sessions (`nox -s build`, `bench-stable`, `bench-nightly`): build the images
that are missing, probe the GPU, run the profile in each build's container, on the command
lines of suite.run.docker. Every check that can fail on bad input or a machine without
Docker or a GPU runs before any benchmark starts, and says what is wrong in one line.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.run import docker
from suite.run.session import (
    Runner,
    SelectionCheck,
    bench_args,
    load,
    merge_target,
    no_container,
    pick_builds,
    pop_flag,
    pop_switch,
)
from suite.spec import BuildSpec, Matrix


def run_docker(cmd: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    """Run a docker command, after checking that no secret's value is in it."""
    leaked = docker.leaked_secrets(cmd, os.environ)
    if leaked:
        raise UsageError("", f"refusing to run docker: the value of {leaked[0]} would be in its arguments")
    return subprocess.run(cmd, check=False, text=True, **kwargs)


def ensure_image(
    runner: Runner, matrix: Matrix, build: BuildSpec, root: Path, rebuild: bool = False, offline: bool = False
) -> str:
    """The build's image tag, built first if missing (or if asked to)."""
    if not build.container:
        raise no_container(matrix, build)
    dockerfile = root / build.container / "Dockerfile"
    if not dockerfile.is_file():
        raise UsageError(f"{matrix.path}: builds.{build.name}.container", f"{dockerfile} does not exist")
    tag = docker.image_tag(build, root)
    exists = run_docker(docker.image_exists_command(tag), capture_output=True).returncode == 0
    if exists and not rebuild:
        runner.log(f"{build.name}: image {tag} is there")
        return tag
    if offline:
        raise UsageError(
            build.name, f"image {tag} is not built and --offline forbids the network; build it first"
        )
    cmd = docker.build_command(build, root, tag)
    runner.log(" ".join(cmd))
    if run_docker(cmd).returncode != 0:
        runner.error(f"{build.name}: docker build failed (its output is above)")
    return tag


def build_images(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    """`nox -s build [-- --build B1,B2] [--rebuild]`: the images of the builds that have a
    container (or those named)."""
    args = list(posargs)
    wanted = pop_flag(args, "--build")
    rebuild = pop_switch(args, "--rebuild")
    if args:
        raise UsageError("build", f"unknown arguments {' '.join(args)} (takes --build B1,B2 and --rebuild)")
    matrix = load(root)
    chosen = pick_builds(matrix, wanted, [n for n, b in matrix.builds.items() if b.container])
    for spec in chosen:
        if not spec.container:
            raise UsageError(
                f"{matrix.path}: builds.{spec.name}", "no container to build (a local-only build)"
            )
    docker.check_docker()
    for spec in chosen:
        runner.log(f"{spec.name}: {ensure_image(runner, matrix, spec, root, rebuild=rebuild)}")


def hf_cache_dir() -> Path:
    """The host's Hugging Face cache, shared with the containers (downloads happen once)."""
    home = os.environ.get("HF_HOME")
    return Path(home) if home else Path.home() / ".cache" / "huggingface"


def prepare_mounts(runner: Runner, opts: docker.RunOptions) -> None:
    """Create the run folder and the cache; as root, hand them to the image's user."""
    run_dir = opts.results / opts.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    if not opts.offline:
        opts.hf_cache.mkdir(parents=True, exist_ok=True)
    elif not opts.hf_cache.is_dir():
        raise UsageError(
            "--offline", f"no Hugging Face cache at {opts.hf_cache} (set HF_HOME to where the weights are)"
        )
    if os.getuid() == 0:
        uid = docker.IMAGE_UID
        runner.log(f"running as root: the containers run as uid {uid}, which gets {run_dir}")
        for path in [run_dir, *([] if opts.offline else [opts.hf_cache])]:
            for top, dirs, files in os.walk(path):
                for name in [top, *(os.path.join(top, n) for n in dirs + files)]:
                    os.chown(name, uid, uid, follow_symlinks=False)


def default_builds(matrix: Matrix, prefix: str) -> list[str]:
    """bench-stable: the stable builds that have a container; bench-nightly: `nightly`."""
    if prefix == "stable":
        return [n for n, b in matrix.builds.items() if b.kind == "stable" and b.container]
    return ["nightly"]


def bench_containers(
    runner: Runner, posargs: Sequence[str], root: Path, prefix: str, check: SelectionCheck
) -> str | None:
    """Build if missing, probe the GPU, run the profile in each build's container; returns
    the run folder to merge (None: not to be merged)."""
    bench = bench_args(posargs, prefix, root)
    matrix = load(root)
    chosen = pick_builds(matrix, bench.builds, default_builds(matrix, prefix))
    # bench-nightly compares against the stable build, so it also runs whatever stable
    # cells are missing from this run (the runner skips the cells already recorded).
    if prefix == "nightly":
        stables = [b for b in matrix.builds.values() if b.kind == "stable" and b not in chosen]
        chosen = stables + chosen
    if any(a == "--matrix" or a.startswith("--matrix=") for a in bench.suite_args):
        raise UsageError(
            "--matrix", "the containers read the matrix.yaml built into their image; edit matrix.yaml"
        )
    for spec in chosen:
        if not spec.container:
            raise no_container(matrix, spec)
        check(spec, bench)
    docker.check_docker()
    docker.check_gpu()
    opts = docker.RunOptions(
        results=bench.out,
        run_id=bench.run_id,
        hf_cache=hf_cache_dir().resolve(),
        offline=bench.offline,
        user=docker.container_user(),
    )
    prepare_mounts(runner, opts)
    tags = {spec.name: ensure_image(runner, matrix, spec, root, offline=bench.offline) for spec in chosen}
    for spec in chosen:
        probe = run_docker(docker.probe_command(opts, tags[spec.name]), capture_output=True)
        if probe.returncode != 0:
            raise docker.DockerProblem(docker.explain_probe_failure(probe, tags[spec.name]))
    for spec in chosen:
        cmd = docker.suite_run_command(spec, opts, tags[spec.name], bench.suite_args)
        runner.log(" ".join(cmd))
        code = run_docker(cmd).returncode
        if code == 2:
            raise SystemExit(2)  # the suite's one-line usage error is above
        if code != 0:
            runner.error(f"{spec.name}: the benchmark container exited with status {code}")
    return merge_target(runner, bench)
