"""Docker command lines for the builds' images, and the checks made before any of them runs.

Host side only (the noxfile's bench-stable / bench-nightly / build sessions); standard
library only, so nox can import it without a virtualenv. Every command is built here as
an argument list, so the tests can assert it exactly through a fake `docker` on PATH.

Least privilege: the container runs as a non-root user, with every capability dropped
and no-new-privileges, never --privileged. The run's own results folder is the one
writable mount; the Hugging Face cache is writable only when weights must be downloaded,
and read-only (with --network none) in offline mode. Secrets (HF_TOKEN) are passed by
name only (`-e HF_TOKEN`): docker copies the value from our environment, so it never
appears in an argument list, a log line or an image layer.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.errors import first_line
from suite.redact import secrets_of
from suite.spec.model import BuildSpec

NO_OUTPUT = "(no output)"

REPOSITORY = "torch-compile-suite"
# Inside the image (containers/*/Dockerfile): the suite, the results mount point, HF_HOME.
RESULTS_IN_CONTAINER = "/results"
HF_HOME_IN_CONTAINER = "/hf-cache"
IMAGE_UID = 1000  # the image's non-root user `bench`
# Passed through by name only, never by value.
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
# What goes into an image besides its container folder (.dockerignore lets these in).
CONTEXT_FILES = ("suite", "matrix.yaml", "pyproject.toml", "containers/verify_torch.py")
DOCS = "docs/containers.md"


class DockerProblem(Exception):
    """Docker or the GPU cannot run the benchmark; the message is one line that says what to do."""


@dataclass(frozen=True)
class RunOptions:
    """How one build's container runs: where results and the HF cache live on the host."""

    results: Path  # the host's results folder; the run writes <results>/<run_id>/
    run_id: str
    hf_cache: Path
    offline: bool = False
    user: str = f"{IMAGE_UID}:{IMAGE_UID}"


# ---------------------------------------------------------------------------------------
# Images


def context_digest(build: BuildSpec, root: Path) -> str:
    """A digest of everything that goes into the build's image: its container folder,
    the suite, matrix.yaml, and the build arguments. It names the image tag, so a changed
    input is a new tag (rebuilt), and the CSV's `image` column identifies the code."""
    h = hashlib.sha256()
    h.update(json.dumps(sorted(build_args(build, "").items())).encode())  # the tag itself aside
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


def image_tag(build: BuildSpec, root: Path) -> str:
    name = re.sub(r"[^a-z0-9._-]+", "-", build.name.lower()).strip(".-") or "build"
    return f"{REPOSITORY}:{name}-{context_digest(build, root)[:12]}"


def build_args(build: BuildSpec, tag: str) -> dict[str, str]:
    """`--build-arg` values: the build's own (matrix.yaml) and the ones derived from it."""
    args = {
        "BUILD_NAME": build.name,
        "TORCH_VERSION": build.torch,
        "CUDA_VERSION": build.cuda,
        "PYTHON_VERSION": build.python,
        "TORCH_INDEX_URL": build.index_url,
        "SUITE_IMAGE": tag,
    }
    args.update(build.build_args)
    return args


def build_command(build: BuildSpec, root: Path, tag: str) -> list[str]:
    cmd = [
        "docker",
        "build",
        "--platform",
        "linux/amd64",
        "--file",
        str(root / build.container / "Dockerfile"),
    ]
    cmd += ["--tag", tag]
    for key, value in build_args(build, tag).items():
        cmd += ["--build-arg", f"{key}={value}"]
    return [*cmd, str(root)]


def image_exists_command(tag: str) -> list[str]:
    return ["docker", "image", "inspect", "--format", "{{.Id}}", tag]


# ---------------------------------------------------------------------------------------
# Containers


def container_user() -> str:
    """Run as the invoking user (results stay theirs); as root, as the image's own
    unprivileged user instead (the session hands it the run folder)."""
    uid, gid = os.getuid(), os.getgid()
    return f"{IMAGE_UID}:{IMAGE_UID}" if uid == 0 else f"{uid}:{gid}"


def run_prefix(options: RunOptions, tag: str) -> list[str]:
    """`docker run ...IMAGE`: GPU, mounts, user, environment; the command follows."""
    run_dir = options.results / options.run_id
    cmd = ["docker", "run", "--rm", "--init", "--pull", "never", "--gpus", "all", "--ipc=host"]
    cmd += ["--user", options.user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if options.offline:
        cmd += ["--network", "none"]
    cmd += ["--mount", f"type=bind,source={run_dir},target={RESULTS_IN_CONTAINER}/{options.run_id}"]
    cache = f"type=bind,source={options.hf_cache},target={HF_HOME_IN_CONTAINER}"
    cmd += ["--mount", cache + (",readonly" if options.offline else "")]
    if options.offline:
        for key, value in OFFLINE_ENV.items():
            cmd += ["--env", f"{key}={value}"]
    else:
        for name in SECRET_ENV:
            cmd += ["--env", name]  # by name: docker reads the value from our environment
    return [*cmd, tag]


def suite_run_command(
    build: BuildSpec, options: RunOptions, tag: str, suite_args: Sequence[str]
) -> list[str]:
    """The benchmark itself: `python -m suite run` inside the build's image, on the GPU."""
    inner = ["python", "-m", "suite", "run", "--build", build.name, "--device", "cuda"]
    inner += ["--out", RESULTS_IN_CONTAINER, "--run-id", options.run_id, *suite_args]
    return run_prefix(options, tag) + inner


def probe_command(options: RunOptions, tag: str) -> list[str]:
    """A first container that only asks torch for the GPU: a missing NVIDIA runtime or a
    GPU that torch cannot see is then reported in one line, before any cell runs."""
    return [*run_prefix(options, tag), "python", "-m", "suite", "env", "--device", "cuda"]


# ---------------------------------------------------------------------------------------
# Checks


def _run(cmd: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(cmd), 127, "", str(exc))


def check_docker() -> None:
    """Docker installed and its engine reachable, else one line pointing to bench-local."""
    if shutil.which("docker") is None:
        raise DockerProblem(
            "docker is not installed on this machine; to benchmark without containers run "
            "`nox -s bench-local` (GPU VM set-up: " + DOCS + ")"
        )
    proc = _run(["docker", "version", "--format", "{{.Server.Version}}"])
    if proc.returncode != 0:
        raise DockerProblem(
            f"cannot reach the Docker engine ({first_line(proc.stderr, NO_OUTPUT)}); start it, or run "
            "`nox -s bench-local` to benchmark without containers"
        )


def check_gpu() -> None:
    """An NVIDIA GPU on this machine and the NVIDIA container runtime in Docker."""
    smi = shutil.which("nvidia-smi")
    gpus = _run([smi, "-L"]) if smi else None
    if gpus is None or gpus.returncode != 0 or "GPU" not in gpus.stdout:
        detail = "nvidia-smi not found" if gpus is None else first_line(gpus.stderr or gpus.stdout, NO_OUTPUT)
        raise DockerProblem(
            f"no NVIDIA GPU found ({detail}): the containers need a GPU and its driver; "
            "on this machine run `nox -s bench-local` (CPU)"
        )
    info = _run(["docker", "info", "--format", "{{json .Runtimes}}"])
    runtimes = info.stdout if info.returncode == 0 else ""
    has_hook = any(shutil.which(t) for t in ("nvidia-container-runtime-hook", "nvidia-container-runtime"))
    if "nvidia" not in runtimes and not has_hook:
        raise DockerProblem(
            "Docker has no NVIDIA runtime: install the NVIDIA Container Toolkit, then "
            "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker` "
            f"(see {DOCS})"
        )


def explain_probe_failure(proc: subprocess.CompletedProcess[str], tag: str) -> str:
    """One line for a failed GPU probe container."""
    err = proc.stderr + proc.stdout
    if "could not select device driver" in err or "nvidia-container-cli" in err:
        return (
            "Docker cannot give the container the GPU (NVIDIA runtime missing or broken: "
            f"{first_line(err, NO_OUTPUT)}); install/configure the NVIDIA Container Toolkit ({DOCS})"
        )
    if proc.returncode == 2:  # the suite's own one-line error, e.g. torch sees no GPU
        return f"{tag}: {first_line(proc.stderr, NO_OUTPUT).removeprefix('suite env: error: ')}"
    status = proc.returncode
    return f"{tag}: the GPU probe container failed with status {status}: {first_line(err, NO_OUTPUT)}"


def leaked_secrets(cmd: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """Names of the secrets (suite.redact's rule: HF_TOKEN, *_KEY, ...) whose value appears in
    `cmd`: the container sessions refuse to run such a command."""
    return sorted({name for value, name in secrets_of(environ) if any(value in arg for arg in cmd)})
