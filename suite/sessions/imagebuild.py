"""The images, built when missing (`nox -s build`, and every session that runs a container):
a build's tag from suite.sessions.images, its `docker build` line run (or --offline refused),
the stand-in bases checked, old images pruned.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import UsageError
from suite.sessions import docker, images, nightly
from suite.sessions.host import run_docker
from suite.sessions.images import Substitutes
from suite.sessions.posargs import refuse_rest, take
from suite.sessions.runner import Runner, load, no_container, pick_builds
from suite.spec import BuildSpec, Matrix


@dataclass
class Build:
    """How the images are built: the substitutes, and whether to rebuild or skip the cache."""

    subs: Substitutes = field(default_factory=Substitutes)
    rebuild: bool = False
    no_cache: bool = False
    # what each build that follows the nightly resolved to (suite.sessions.nightly), and the
    # night asked for (--nightly-date; empty: each build's own, else the newest)
    resolved: dict[str, dict[str, str]] = field(default_factory=dict)
    nightly_date: str = ""


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
    if nightly.follows(build):  # a date not resolved yet (a bisect's): its wheels first
        build = nightly.pinned(build, nightly.resolve(build, root))
    lock = root / build.container / "requirements.txt"  # the image: containers/Dockerfile
    if not lock.is_file():
        raise UsageError(f"{matrix.path}: builds.{build.name}.container", f"{lock} does not exist")
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
    network = os.environ.get(images.BUILD_NETWORK_ENV, "").strip()
    if network:  # e.g. host: a mirror of the nightly index on this machine's loopback
        cmd[-1:-1] = ["--network", network]
    started = time.monotonic()
    if run_docker(cmd, runner, env={**os.environ, **images.BUILD_ENV}).returncode != 0:
        runner.error(f"{build.name}: docker build failed (its output is above)")
    runner.log(f"{build.name}: built {tag} in {time.monotonic() - started:.1f} s")
    return tag


def build_images(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    """`nox -s build [-- --build B1,B2] [--rebuild] [--local-bases] [--torch-from-pypi]`: the
    images of the builds that have a container (or those named)."""
    args = list(posargs)
    flags = take(args, values=["--build", "--nightly-date", "--keep"], switches=["--rebuild"])
    how = Build(subs=images.pop_substitutes(args), rebuild=flags["--rebuild"])
    usage = "--build B1,B2, --rebuild, --nightly-date D, --keep N, --local-bases, --torch-from-pypi"
    refuse_rest(args, "build", usage)
    keep = images.keep_count(flags["--keep"])
    wanted = flags["--build"]
    matrix = load(root)
    chosen = pick_builds(matrix, wanted, [n for n, b in matrix.builds.items() if b.container])
    for spec in chosen:
        if not spec.container:
            raise UsageError(
                f"{matrix.path}: builds.{spec.name}", "no container to build (a local-only build)"
            )
        images.substitute_args(spec, root, how.subs)  # a substitute this build cannot take: one line now
    docker.check_docker()
    chosen, how.resolved = nightly.resolve_all(chosen, root, flags["--nightly-date"] or "")
    for name, found in how.resolved.items():
        runner.log(nightly.describe(name, found))
    if how.subs.local_bases:
        check_local_bases(runner, matrix, chosen, root)
    for spec in chosen:
        runner.log(f"{spec.name}: {ensure_image(runner, matrix, spec, root, how)}")
    if keep is not None:
        for line in images.prune(run_docker, [s.name for s in chosen], keep):
            runner.log(line)


def image_id(tag: str) -> str:
    """The image's ID as Docker reports it (empty if it cannot tell)."""
    proc = run_docker(images.image_exists_command(tag), capture_output=True)
    return proc.stdout.strip() if proc.returncode == 0 else ""
