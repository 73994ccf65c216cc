"""The container sessions (`nox -s build`, `bench-stable`, `bench-nightly`): build the images
that are missing, probe the device, run the profile in each build's container, on the command
lines of suite.sessions.images and suite.sessions.docker. Every check that can fail on bad input or a
machine without Docker or a GPU runs before any benchmark starts, and says what is wrong in
one line. A docker command is checked for secrets before it is shown or run.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.sessions import docker, images
from suite.sessions.images import Substitutes
from suite.sessions.runner import (
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


def run_docker(
    cmd: list[str], runner: Runner | None = None, **kwargs: Any
) -> subprocess.CompletedProcess[str]:
    """Run a docker command after checking that it holds no secret (suite.sessions.docker.refusal);
    given a runner, show the command first, only once it has passed that check."""
    refused = docker.refusal(cmd, os.environ)
    if refused:
        raise UsageError("", refused)
    if runner is not None:
        runner.log(" ".join(cmd))
    return subprocess.run(cmd, check=False, text=True, **kwargs)


@dataclass
class Build:
    """How the images are built: the substitutes, and whether to rebuild or skip the cache."""

    subs: Substitutes = field(default_factory=Substitutes)
    rebuild: bool = False
    no_cache: bool = False


def check_local_bases(runner: Runner, matrix: Matrix, chosen: Sequence[BuildSpec], root: Path) -> None:
    """With --local-bases, each stand-in must be there: one line naming the script if not."""
    wanted = {images.substitute_args(b, root, Substitutes(local_bases=True))["BASE_IMAGE"] for b in chosen}
    for base in sorted(wanted):
        if run_docker(images.image_exists_command(base), capture_output=True).returncode != 0:
            kind = "ubuntu" if "ubuntu" in base else "python"
            raise UsageError(
                "--local-bases", f"no image {base}: make it with `sudo {images.LOCAL_BASES_SCRIPT} {kind}`"
            )
        runner.log(f"base image: {base} (containers/local-bases.sh's stand-in for the pinned one)")


def ensure_image(
    runner: Runner,
    matrix: Matrix,
    build: BuildSpec,
    root: Path,
    how: Build | None = None,
    offline: bool = False,
) -> str:
    """The build's image tag, built first if missing (or if asked to)."""
    how = how or Build()
    if not build.container:
        raise no_container(matrix, build)
    dockerfile = root / build.container / "Dockerfile"
    if not dockerfile.is_file():
        raise UsageError(f"{matrix.path}: builds.{build.name}.container", f"{dockerfile} does not exist")
    tag = images.image_tag(build, root, how.subs)
    exists = run_docker(images.image_exists_command(tag), capture_output=True).returncode == 0
    if exists and not how.rebuild:
        runner.log(f"{build.name}: image {tag} is there")
        return tag
    if offline:
        raise UsageError(
            build.name, f"image {tag} is not built and --offline forbids the network; build it first"
        )
    client = images.buildkit_client()
    ca = images.pip_ca()
    cmd = images.build_command(
        build, root, tag, how.subs, client, ca, images.provenance_args(root), how.no_cache
    )
    started = time.monotonic()
    if run_docker(cmd, runner, env={**os.environ, **images.BUILD_ENV}).returncode != 0:
        runner.error(f"{build.name}: docker build failed (its output is above)")
    runner.log(f"{build.name}: built {tag} in {time.monotonic() - started:.1f} s")
    return tag


def build_images(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    """`nox -s build [-- --build B1,B2] [--rebuild] [--local-bases] [--torch-from-pypi]`: the
    images of the builds that have a container (or those named)."""
    args = list(posargs)
    wanted = pop_flag(args, "--build")
    how = Build(subs=images.pop_substitutes(args), rebuild=pop_switch(args, "--rebuild"))
    if args:
        raise UsageError(
            "build",
            f"unknown arguments {' '.join(args)} "
            "(takes --build B1,B2, --rebuild, --local-bases, --torch-from-pypi)",
        )
    matrix = load(root)
    chosen = pick_builds(matrix, wanted, [n for n, b in matrix.builds.items() if b.container])
    for spec in chosen:
        if not spec.container:
            raise UsageError(
                f"{matrix.path}: builds.{spec.name}", "no container to build (a local-only build)"
            )
        images.substitute_args(spec, root, how.subs)  # a substitute this build cannot take: one line now
    docker.check_docker()
    if how.subs.local_bases:
        check_local_bases(runner, matrix, chosen, root)
    for spec in chosen:
        runner.log(f"{spec.name}: {ensure_image(runner, matrix, spec, root, how)}")


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


def check_names_free(opts: docker.RunOptions, chosen: Sequence[BuildSpec]) -> None:
    """A container of the same name (this run id, build and shard) still there is a run in
    progress or a cancelled one's leftover: one line, instead of docker's conflict later."""
    listing = run_docker(
        ["docker", "container", "ls", "--all", "--format", "{{.Names}}"], capture_output=True
    )
    present = set(listing.stdout.split())
    for spec in chosen:
        for name in (opts.name(spec.name), opts.name(spec.name, "probe")):
            if name in present:
                raise docker.DockerProblem(
                    f"a container named {name} is still there (this run id is running, or a cancelled "
                    f"run left it): remove it with `docker rm --force {name}`, or use another --run-id"
                )


def default_builds(matrix: Matrix, prefix: str) -> list[str]:
    """bench-stable: the stable builds that have a container; bench-nightly: `nightly`."""
    if prefix == "stable":
        return [n for n, b in matrix.builds.items() if b.kind == "stable" and b.container]
    return ["nightly"]


@dataclass
class Bench:
    """What a container session did: the run folder to merge (None: not to be merged), the
    image of each build, and how long each step took (s), in order."""

    merge: str | None
    tags: dict[str, str]
    seconds: dict[str, float]


def bench_containers(
    runner: Runner,
    posargs: Sequence[str],
    root: Path,
    prefix: str,
    check: SelectionCheck,
    hf_cache: Path | None = None,
) -> Bench:
    """Build if missing, probe the device, run the profile in each build's container."""
    args = list(posargs)
    how = Build(subs=images.pop_substitutes(args))
    bench = bench_args(args, prefix, root)
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
    device = bench.device or "cuda"
    opts = docker.run_options(
        bench.out, bench.run_id, (hf_cache or hf_cache_dir()).resolve(), bench.offline, device, bench.shard
    )
    for spec in chosen:
        if not spec.container:
            raise no_container(matrix, spec)
        check(spec, replace(bench, device=device))  # the cells of the device the containers use
    # Every container's command line, checked for secrets before anything runs or is shown.
    commands = {}
    for spec in chosen:
        tag = images.image_tag(spec, root, how.subs)  # a substitute this build cannot take: one line
        commands[spec.name] = (
            docker.probe_command(spec, opts, tag),
            docker.suite_run_command(spec, opts, tag, bench.suite_args),
        )
        for cmd in commands[spec.name]:
            if docker.refusal(cmd, os.environ):
                raise UsageError("", docker.refusal(cmd, os.environ))
    docker.check_docker()
    if device == "cuda":
        docker.check_gpu()
    if how.subs.local_bases:
        check_local_bases(runner, matrix, chosen, root)
    check_names_free(opts, chosen)
    prepare_mounts(runner, opts)
    seconds: dict[str, float] = {}
    tags = {}
    for spec in chosen:
        started = time.monotonic()
        tags[spec.name] = ensure_image(runner, matrix, spec, root, how, offline=bench.offline)
        seconds[f"{spec.name} image"] = time.monotonic() - started
    for spec in chosen:
        started = time.monotonic()
        probe = run_docker(commands[spec.name][0], capture_output=True)
        if probe.returncode != 0:
            raise docker.DockerProblem(docker.explain_probe_failure(probe, tags[spec.name]))
        seconds[f"{spec.name} probe"] = time.monotonic() - started
        runner.log(f"{spec.name}: {probe.stdout.strip() or 'probe passed'}")
    for spec in chosen:
        started = time.monotonic()
        code = run_docker(commands[spec.name][1], runner).returncode
        if code == 2:
            raise SystemExit(2)  # the suite's one-line usage error is above
        if code != 0:
            runner.error(f"{spec.name}: the benchmark container exited with status {code}")
        seconds[f"{spec.name} run"] = time.monotonic() - started
        runner.log(f"{spec.name}: the benchmark container ran {seconds[f'{spec.name} run']:.1f} s")
    return Bench(merge=merge_target(runner, bench), tags=tags, seconds=seconds)
