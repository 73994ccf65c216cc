"""The builds' images: their tags, build arguments and `docker build` command lines.

Host side only (the noxfile's build, bench-stable, bench-nightly and containers-e2e
sessions); standard library only, so nox can import it without a virtualenv. Every
command is an argument list, so the tests can assert it exactly through a fake `docker`.

Where Docker Hub, the CUDA index or the public CAs are out of reach, two substitutes
(`--local-bases`, `--torch-from-pypi`) change what goes into an image; they are build
arguments the Dockerfile declares, and they are part of the tag's digest, so a substituted
image never shares a tag with a pinned one. A CA bundle pip is configured to trust goes in
as a BuildKit secret (mounted only while a RUN step runs, never in a layer): it changes no
content, so it is not part of the digest; neither are the OCI provenance labels (revision,
source, created), or the tag would change with every build.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from suite.errors import UsageError
from suite.redact import redact
from suite.sessions.docker import DOCS, DockerProblem
from suite.sessions.posargs import take
from suite.sessions.venv import wheel_version
from suite.spec.model import BuildSpec

REPOSITORY = "torch-compile-suite"
# The one Dockerfile of every build: the builds differ in their build arguments.
DOCKERFILE = "containers/Dockerfile"
# What goes into an image besides its container folder (.dockerignore lets these in).
CONTEXT_FILES = (
    DOCKERFILE,
    "suite",
    "matrix.yaml",
    "pyproject.toml",
    "containers/verify_torch.py",
    "containers/probe.py",
    "containers/nightly_pin.py",
    "containers/common",
)
# containers/local-bases.sh's stand-ins, by the pinned base they stand in for (repo:tag).
LOCAL_BASES = {
    "ubuntu:22.04": "local/ubuntu:22.04",
    "python:3.11-slim-bookworm": "local/python:3.11-bookworm",
}
LOCAL_BASES_SCRIPT = "containers/local-bases.sh"
# Docker >= 23 builds with BuildKit only through the buildx plugin; an older client has
# BuildKit built in and takes DOCKER_BUILDKIT=1.
BUILDX_REQUIRED_FROM = 23
BUILD_ENV = {"DOCKER_BUILDKIT": "1"}
# `docker build --network` (host: RUN steps reach an index mirror on this machine's loopback)
BUILD_NETWORK_ENV = "SUITE_BUILD_NETWORK"


@dataclass(frozen=True)
class Substitutes:
    """What replaces the pinned inputs out of their reach (docs/containers.md, "Building
    where Docker Hub is out of reach")."""

    local_bases: bool = False  # containers/local-bases.sh's images instead of the pinned bases
    torch_from_pypi: bool = False  # PyPI's torch/torchvision of the build's versions

    def flags(self) -> list[str]:
        """The session flags that ask for these (the same flags find the same tags)."""
        return [
            flag
            for flag, on in (("--local-bases", self.local_bases), ("--torch-from-pypi", self.torch_from_pypi))
            if on
        ]


def pop_substitutes(args: list[str]) -> Substitutes:
    """Take `--local-bases` and `--torch-from-pypi` out of a session's arguments."""
    flags = take(args, switches=["--local-bases", "--torch-from-pypi"])
    return Substitutes(local_bases=flags["--local-bases"], torch_from_pypi=flags["--torch-from-pypi"])


def pinned_base(build: BuildSpec) -> str:
    """The base image the build pins (its BASE_IMAGE build argument, by tag and digest)."""
    base = build.build_args.get("BASE_IMAGE", "")
    if not base:
        raise UsageError(f"builds.{build.name}.build_args.BASE_IMAGE", "is missing: the base image")
    return base


def substitute_args(build: BuildSpec, root: Path, subs: Substitutes) -> dict[str, str]:
    """The build arguments that carry the substitutes for this build (empty: none asked)."""
    args: dict[str, str] = {}
    where = f"builds.{build.name}"
    if subs.local_bases:
        pinned = pinned_base(build).split("@")[0]
        if pinned not in LOCAL_BASES:
            raise UsageError(
                f"--local-bases: {where}", f"no stand-in for its base {pinned} in {LOCAL_BASES_SCRIPT}"
            )
        args["BASE_IMAGE"] = LOCAL_BASES[pinned]
    if subs.torch_from_pypi:
        if "TORCH_WHEEL_URL" not in build.build_args:
            raise UsageError(
                f"--torch-from-pypi: {where}",
                "installs no torch wheel by URL (a nightly comes only from its index)",
            )
        args["TORCH_REQUIREMENT"] = f"torch=={build.torch}"
        if "TORCHVISION_WHEEL_URL" in build.build_args:
            args["TORCHVISION_REQUIREMENT"] = (
                f"torchvision=={wheel_version(build.build_args['TORCHVISION_WHEEL_URL'])}"
            )
        # PyPI's torch is its own CUDA build (2.0.1: 11.7, 2.1.0: 12.1): empty skips
        # verify_torch's CUDA check; every row records the CUDA that ran.
        args["CUDA_VERSION"] = ""
        # no wheel by URL went in: the labels and every row (SUITE_TORCH_WHEEL_URL) say none
        for name in ("TORCH", "TORCHVISION"):
            if f"{name}_REQUIREMENT" in args:
                args.update({f"{name}_WHEEL_URL": "", f"{name}_WHEEL_SHA256": ""})
    return args


def build_args(build: BuildSpec, tag: str) -> dict[str, str]:
    """`--build-arg` values: the build's own (matrix.yaml) and the ones derived from it."""
    args = {
        "BUILD_NAME": build.name,
        "TORCH_VERSION": build.torch,
        "CUDA_VERSION": build.cuda,
        "PYTHON_VERSION": build.python,
        "TORCH_INDEX_URL": build.index_url,
        "REQUIREMENTS": f"{build.container}/requirements.txt",
        "SUITE_IMAGE": tag,
    }
    args.update(build.build_args)
    return args


def context_digest(build: BuildSpec, root: Path, subs: Substitutes = Substitutes()) -> str:
    """A digest of everything that goes into the build's image: its container folder, the
    suite, matrix.yaml, the build arguments and the substitutes. It names the image tag, so
    a changed input is a new tag (rebuilt), and the CSV's `image` column identifies the code."""
    h = hashlib.sha256()
    args = {**build_args(build, ""), **substitute_args(build, root, subs)}  # the tag itself aside
    h.update(json.dumps(sorted(args.items())).encode())
    paths: list[Path] = []
    for name in (build.container, *CONTEXT_FILES):
        p = root / name
        paths += sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
    for f in paths:
        if "__pycache__" in f.parts or f.suffix == ".pyc" or not f.exists():
            continue
        h.update(f.relative_to(root).as_posix().encode() + b"\0")
        h.update(f.read_bytes() + b"\0")
    return h.hexdigest()


def _tag_name(build: str) -> str:
    return re.sub(r"[^a-z0-9._-]+", "-", build.lower()).strip(".-") or "build"


def image_tag(build: BuildSpec, root: Path, subs: Substitutes = Substitutes()) -> str:
    return f"{REPOSITORY}:{_tag_name(build.name)}-{context_digest(build, root, subs)[:12]}"


def _git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.strip() if proc.returncode == 0 else ""


def provenance_args(root: Path, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The OCI labels' revision (the checkout's commit), source (the GitHub repository in
    Actions, else the `origin` remote, credentials taken out) and created (now, UTC)."""
    env = os.environ if environ is None else environ
    if env.get("GITHUB_SERVER_URL") and env.get("GITHUB_REPOSITORY"):
        source = f"{env['GITHUB_SERVER_URL']}/{env['GITHUB_REPOSITORY']}"
    else:
        source = redact(_git(root, "remote", "get-url", "origin"), {})
    return {
        "SOURCE_REVISION": _git(root, "rev-parse", "HEAD"),
        "SOURCE_URL": "" if "<redacted:" in source else source,
        "CREATED": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    }


def pip_ca(environ: Mapping[str, str] | None = None) -> Path | None:
    """The CA bundle this machine's pip is configured to trust (PIP_CERT, else pip's
    `global.cert`), handed to the image's pip steps as the BuildKit secret `pip_ca`."""
    env = os.environ if environ is None else environ
    value = env.get("PIP_CERT", "")
    if not value:  # `pip config list` merges pip's files (`pip config get` reads one of them)
        try:
            proc = subprocess.run(
                [sys.executable, "-m", "pip", "config", "list"],
                capture_output=True, text=True, timeout=60, check=False, env=dict(env),
            )  # fmt: skip
        except (OSError, subprocess.TimeoutExpired):
            proc = subprocess.CompletedProcess([], 1, "", "")
        found = [
            ln.split("=", 1)[1].strip("'\"")
            for ln in proc.stdout.splitlines()
            if ln.startswith("global.cert=")
        ]
        value = found[-1] if proc.returncode == 0 and found else ""
    path = Path(value).expanduser() if value else None
    return path if path is not None and path.is_file() else None


def build_command(
    build: BuildSpec,
    root: Path,
    tag: str,
    subs: Substitutes = Substitutes(),
    client: str = "docker",
    ca: Path | None = None,
    provenance: Mapping[str, str] | None = None,
    no_cache: bool = False,
) -> list[str]:
    cmd = [client, "build", "--platform", "linux/amd64", "--file", str(root / DOCKERFILE)]
    cmd += ["--tag", tag]
    args = {**build_args(build, tag), **substitute_args(build, root, subs), **(provenance or {})}
    for key, value in args.items():
        cmd += ["--build-arg", f"{key}={value}"]
    if ca is not None:
        cmd += ["--secret", f"id=pip_ca,src={ca}"]
    if no_cache:
        cmd.append("--no-cache")
    return [*cmd, str(root)]


def keep_count(text: str | None) -> int | None:
    """`--keep N`: how many images of each build to keep (None: prune nothing)."""
    if text is None:
        return None
    if not text.isdigit() or int(text) < 1:
        raise UsageError("--keep", f"{text!r} is not a whole number >= 1")
    return int(text)


def prune(
    docker_run: Callable[..., subprocess.CompletedProcess[str]], builds: Sequence[str], keep: int
) -> list[str]:
    """All but the `keep` newest images of each of `builds` (a night's image is a tag of its
    own), then the dangling layers; the layers the kept images share stay cached. An image a
    container still uses is left (no --force). What was done, one line each."""
    listing = docker_run(
        ["docker", "image", "ls", REPOSITORY, "--format", "{{.Tag}}\t{{.CreatedAt}}"], capture_output=True
    )
    by_build: dict[str, list[tuple[str, str]]] = {}
    for row in listing.stdout.splitlines() if listing.returncode == 0 else []:
        tag, _, created = row.partition("\t")
        build = tag.rsplit("-", 1)[0]
        if build in {_tag_name(b) for b in builds} and created:
            by_build.setdefault(build, []).append((created[:25], tag))
    old = sorted(t for images in by_build.values() for _, t in sorted(images, reverse=True)[keep:])
    done = []
    if old:
        docker_run(["docker", "image", "rm", *(f"{REPOSITORY}:{t}" for t in old)], capture_output=True)
        done.append(f"removed {len(old)} old image(s), keeping {keep} a build: {', '.join(old)}")
    docker_run(["docker", "image", "prune", "--force"], capture_output=True)
    return done or [f"no image to prune (at most {keep} a build)"]


def image_exists_command(tag: str) -> list[str]:
    return ["docker", "image", "inspect", "--format", "{{.Id}}", tag]


def _major(version: str) -> int:
    match = re.match(r"\d+", version)
    return int(match.group()) if match else 0


def _run(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(cmd), 127, "", str(exc))


def buildkit_client(path: str | None = None) -> str:
    """The first `docker` on PATH that builds with BuildKit (the Dockerfile mounts a build
    secret): one with the buildx plugin, or one older than 23 (BuildKit built in, with
    DOCKER_BUILDKIT=1). Else one line that says what to install."""
    seen: set[Path] = set()
    tried: list[str] = []
    for folder in (os.environ.get("PATH", "") if path is None else path).split(os.pathsep):
        exe = Path(folder or ".") / "docker"
        if not (exe.is_file() and os.access(exe, os.X_OK)) or exe.resolve() in seen:
            continue
        seen.add(exe.resolve())
        if _run([str(exe), "buildx", "version"]).returncode == 0:
            return str(exe)
        version = _run([str(exe), "version", "--format", "{{.Client.Version}}"]).stdout.strip()
        if version and _major(version) < BUILDX_REQUIRED_FROM:
            return str(exe)
        tried.append(f"{exe} {version or '(version unknown)'}")
    if not tried:
        raise DockerProblem("docker is not installed on this machine; the images cannot be built")
    raise DockerProblem(
        f"no docker client here builds with BuildKit, which the Dockerfile needs (it mounts a build "
        f"secret): {', '.join(tried)} has no buildx plugin; install it (docker-buildx-plugin, or "
        f"Debian's docker-buildx) or put a client older than 23 first on PATH ({DOCS})"
    )
