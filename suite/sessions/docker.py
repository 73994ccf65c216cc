"""Docker command lines for the benchmark containers, and the checks made before any runs
(the images' own command lines: suite.sessions.images).

Host side only (the noxfile's bench-stable / bench-nightly / build sessions); standard
library only, so nox can import it without a virtualenv. Every command is built here as
an argument list, so the tests can assert it exactly through a fake `docker` on PATH.

Least privilege: the container runs as a non-root user, with every capability dropped
and no-new-privileges, never --privileged. The run's own results folder is the one
writable mount; the Hugging Face cache is writable only when weights must be downloaded,
and read-only (with --network none) in offline mode. The Hugging Face token (HF_TOKEN, or
the older HUGGING_FACE_HUB_TOKEN) goes in as a read-only file (HF_TOKEN_PATH names it), never
as an environment variable: `docker inspect` shows a container's environment, values included,
so the token is in no argument list, no log line, no image layer and no inspect output.

Each container also gets what a row records about the machine and cannot see from inside:
its GPU's state as the host read it (SUITE_GPU_STATE), the image's ID (SUITE_IMAGE_ID) and
whether the clocks were locked (SUITE_GPU_CLOCKS_LOCKED, by name); with one container per
GPU, its GPU's CPUs and memory (--cpuset-cpus, --cpuset-mems).

Every container is named after its run (`suite-<run id>-<build>[-shard-i-of-n]`) and
labelled with the runner that started it (RUNNER_LABEL=<RUNNER_NAME, or `local`), so a
runner's clean-up (.github/scripts/nightly.py) finds the leftovers of a cancelled job. A
runner pinned to one GPU (SUITE_GPU, an index or UUID) gives the container that GPU alone.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.errors import UsageError, first_line
from suite.redact import has_url_credentials, secrets_of
from suite.spec.model import BuildSpec
from suite.system.gpus import CLOCKS_ENV, IMAGE_ID_ENV, STATE_ENV
from suite.system.nvidia_smi import NO_OUTPUT, no_nvidia_gpu, run_quietly

# Inside the image (containers/Dockerfile): the suite, the results mount point, HF_HOME.
RESULTS_IN_CONTAINER = "/results"
HF_HOME_IN_CONTAINER = "/hf-cache"
PROBE_IN_CONTAINER = "/opt/suite/containers/probe.py"
IMAGE_UID = 1000  # the image's non-root user `bench`
# The Hugging Face token's variables on the host; the container reads the token from a file.
SECRET_ENV = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
TOKEN_IN_CONTAINER = "/run/secrets/hf_token"
# Passed by name: docker copies the value (not a secret) from our environment when it is set.
BY_NAME_ENV = (CLOCKS_ENV,)
OFFLINE_ENV = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
DOCS = "docs/containers.md"
# The label every benchmark container carries, its value the runner that started it; the
# workflow's clean-up (.github/scripts/nightly.py, CONTAINER_LABEL) filters on it.
RUNNER_LABEL = "io.torch-compile-suite.runner"
DEVICES = ("cuda", "cpu")
_GPU_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*")


class DockerProblem(Exception):
    """Docker or the GPU cannot run the benchmark; the message is one line that says what to do."""


@dataclass(frozen=True)
class RunOptions:
    """How one build's container runs: where results and the HF cache live on the host,
    on which device, and who started it."""

    results: Path  # the host's results folder; the run writes <results>/<run_id>/
    run_id: str
    hf_cache: Path
    offline: bool = False
    user: str = f"{IMAGE_UID}:{IMAGE_UID}"
    device: str = "cuda"  # cpu: no --gpus at all
    gpu: str = ""  # SUITE_GPU: this one GPU instead of all
    runner: str = "local"  # RUNNER_NAME in GitHub Actions
    shard: str = ""  # "i/n" for one shard of the run ("i/n,k/m": a GPU's part of it)
    token_file: Path | None = None  # the HF token, mounted read-only (none offline)
    cpus: str = ""  # --cpuset-cpus: the GPU's NUMA node (one container per GPU)
    mems: str = ""  # --cpuset-mems
    gpu_state: str = ""  # SUITE_GPU_STATE: the GPU as the host read it (JSON)

    def __post_init__(self) -> None:
        if self.device not in DEVICES:
            raise UsageError("--device", f"{self.device!r}: the containers run on cuda or cpu")
        if self.gpu and not _GPU_ID.fullmatch(self.gpu):
            raise UsageError("SUITE_GPU", f"{self.gpu!r}: one GPU, by index or UUID (nvidia-smi -L)")

    def name(self, build: str, what: str = "") -> str:
        """`suite-<run id>-<build>[-shard-i-of-n[-k-of-m]][-<what>]`: one name per container of a run."""
        shard = "-shard-" + self.shard.replace("/", "-of-").replace(",", "-") if self.shard else ""
        return "-".join(p for p in (f"suite-{self.run_id}-{build}{shard}", what) if p)


def run_options(
    results: Path, run_id: str, hf_cache: Path, offline: bool, device: str, shard: str,
    environ: Mapping[str, str] | None = None,
) -> RunOptions:  # fmt: skip
    """RunOptions for this machine: its user, its runner's name and GPU pin (SUITE_GPU)."""
    env = os.environ if environ is None else environ
    return RunOptions(
        results=results,
        run_id=run_id,
        hf_cache=hf_cache,
        offline=offline,
        user=container_user(),
        device=device,
        gpu=env.get("SUITE_GPU", "").strip() if device == "cuda" else "",
        runner=env.get("RUNNER_NAME", "").strip() or "local",
        shard=shard,
        token_file=token_file(env) if not offline else None,
    )


def token_file(environ: Mapping[str, str]) -> Path | None:
    """Where the session will write the HF token for the containers (a private folder of its
    own, made now, the file written by `write_token`); None without a token."""
    if not any(environ.get(name) for name in SECRET_ENV):
        return None
    return Path(tempfile.mkdtemp(prefix="suite-hf-token-")) / "hf_token"


def write_token(path: Path, environ: Mapping[str, str], uid: int | None = None) -> None:
    """The token, readable by the containers' user only (`uid`: theirs when nox runs as root)."""
    value = next(environ[name] for name in SECRET_ENV if environ.get(name))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(value)
    if uid is not None:
        for item in (path.parent, path):
            os.chown(item, uid, uid)


def remove_token(path: Path | None) -> None:
    if path is not None:
        shutil.rmtree(path.parent, ignore_errors=True)


# ---------------------------------------------------------------------------------------
# Containers


def container_user() -> str:
    """Run as the invoking user (results stay theirs); as root, as the image's own
    unprivileged user instead (the session hands it the run folder)."""
    uid, gid = os.getuid(), os.getgid()
    return f"{IMAGE_UID}:{IMAGE_UID}" if uid == 0 else f"{uid}:{gid}"


def compile_threads(cpus: str) -> int:
    """How many CPUs a --cpuset-cpus list holds (`0-3,8`: 5)."""
    count = 0
    for part in cpus.split(","):
        low, _, high = part.partition("-")
        count += int(high or low) - int(low) + 1
    return count


def _placement(options: RunOptions) -> list[str]:
    """The container's GPU, CPUs and memory nodes."""
    cmd: list[str] = []
    if options.device == "cuda":
        cmd += ["--gpus", f"device={options.gpu}" if options.gpu else "all"]
    if options.cpus:
        cmd += ["--cpuset-cpus", options.cpus]
        # inductor's compile workers on the container's own CPUs, not as many as the host has
        cmd += ["--env", f"TORCHINDUCTOR_COMPILE_THREADS={compile_threads(options.cpus)}"]
    if options.mems:
        cmd += ["--cpuset-mems", options.mems]
    return cmd


def _hub_access(options: RunOptions) -> list[str]:
    """The model cache, and offline (no network, the cache read-only) or the token's file."""
    cache = f"type=bind,source={options.hf_cache},target={HF_HOME_IN_CONTAINER}"
    cmd = ["--mount", cache + (",readonly" if options.offline else "")]
    if options.offline:
        for key, value in OFFLINE_ENV.items():
            cmd += ["--env", f"{key}={value}"]
    elif options.token_file is not None:
        cmd += ["--mount", f"type=bind,source={options.token_file},target={TOKEN_IN_CONTAINER},readonly"]
        cmd += ["--env", f"HF_TOKEN_PATH={TOKEN_IN_CONTAINER}"]
    return cmd


def run_prefix(options: RunOptions, tag: str, name: str, image_id: str = "") -> list[str]:
    """`docker run ...IMAGE`: name, label, GPU, CPUs, mounts, user, environment; the command follows."""
    run_dir = options.results / options.run_id
    cmd = ["docker", "run", "--rm", "--init", "--pull", "never", "--name", name]
    cmd += ["--label", f"{RUNNER_LABEL}={options.runner}"]
    cmd += _placement(options)
    cmd += ["--ipc=host"]
    cmd += ["--user", options.user, "--cap-drop", "ALL", "--security-opt", "no-new-privileges"]
    if options.offline:
        cmd += ["--network", "none"]
    cmd += ["--mount", f"type=bind,source={run_dir},target={RESULTS_IN_CONTAINER}/{options.run_id}"]
    cmd += _hub_access(options)
    if options.gpu_state:
        cmd += ["--env", f"{STATE_ENV}={options.gpu_state}"]
    if image_id:
        cmd += ["--env", f"{IMAGE_ID_ENV}={image_id}"]
    for name in BY_NAME_ENV:
        cmd += ["--env", name]
    return [*cmd, tag]


def suite_run_command(
    build: BuildSpec, options: RunOptions, tag: str, suite_args: Sequence[str], image_id: str = ""
) -> list[str]:
    """The benchmark itself: `python -m suite run` inside the build's image, on the device."""
    inner = ["python", "-m", "suite", "run", "--build", build.name, "--device", options.device]
    inner += ["--out", RESULTS_IN_CONTAINER, "--run-id", options.run_id, *suite_args]
    return run_prefix(options, tag, options.name(build.name), image_id) + inner


def probe_command(build: BuildSpec, options: RunOptions, tag: str) -> list[str]:
    """A first container that compiles one tiny function on the device (containers/probe.py):
    a missing NVIDIA runtime, a GPU that torch cannot see (with torch's own reason), a wheel
    without kernels for the GPU or a broken compiler toolchain is then reported in one line,
    before any cell runs."""
    cmd = run_prefix(options, tag, options.name(build.name, "probe"))
    return [*cmd, "python", f"{PROBE_IN_CONTAINER}", options.device]


# ---------------------------------------------------------------------------------------
# Checks


def check_docker() -> None:
    """Docker installed and its engine reachable, else one line pointing to bench-local."""
    if shutil.which("docker") is None:
        raise DockerProblem(
            "docker is not installed on this machine; to benchmark without containers run "
            "`nox -s bench-local` (GPU VM set-up: " + DOCS + ")"
        )
    proc = run_quietly(["docker", "version", "--format", "{{.Server.Version}}"])
    if proc.returncode != 0:
        raise DockerProblem(
            f"cannot reach the Docker engine ({first_line(proc.stderr, NO_OUTPUT)}); start it, or run "
            "`nox -s bench-local` to benchmark without containers"
        )


def check_gpu() -> None:
    """An NVIDIA GPU on this machine and the NVIDIA container runtime in Docker."""
    detail = no_nvidia_gpu()
    if detail is not None:
        raise DockerProblem(
            f"no NVIDIA GPU found ({detail}): the containers need a GPU and its driver; "
            "on this machine run `nox -s bench-local` (CPU)"
        )
    info = run_quietly(["docker", "info", "--format", "{{json .Runtimes}}"])
    runtimes = info.stdout if info.returncode == 0 else ""
    has_hook = any(shutil.which(t) for t in ("nvidia-container-runtime-hook", "nvidia-container-runtime"))
    if "nvidia" not in runtimes and not has_hook:
        raise DockerProblem(
            "Docker has no NVIDIA runtime: install the NVIDIA Container Toolkit, then "
            "`sudo nvidia-ctk runtime configure --runtime=docker && sudo systemctl restart docker` "
            f"(see {DOCS})"
        )


def explain_probe_failure(proc: subprocess.CompletedProcess[str], tag: str) -> str:
    """One line for a failed probe container: Docker's own GPU error, else probe.py's one
    line (`probe: ...`), else the first line of what it printed."""
    err = proc.stderr + proc.stdout
    if "could not select device driver" in err or "nvidia-container-cli" in err:
        return (
            "Docker cannot give the container the GPU (NVIDIA runtime missing or broken: "
            f"{first_line(err, NO_OUTPUT)}); install/configure the NVIDIA Container Toolkit ({DOCS})"
        )
    said = [line.strip() for line in err.splitlines() if line.startswith("probe: ")]
    if said:
        return f"{tag}: {said[-1]}"
    status = proc.returncode
    return f"{tag}: the probe container failed with status {status}: {first_line(err, NO_OUTPUT)}"


def leaked_secrets(cmd: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """Names of the secrets (suite.redact's rule: HF_TOKEN, *_KEY, ...) whose value appears in
    `cmd`: the container sessions refuse to run such a command."""
    return sorted({name for value, name in secrets_of(environ) if any(value in arg for arg in cmd)})


def refusal(cmd: Sequence[str], environ: Mapping[str, str]) -> str:
    """Why `cmd` must not run (empty: it may): a secret's value in it, or a URL with
    credentials. Either would be readable in the host's process list and `docker inspect`."""
    leaked = leaked_secrets(cmd, environ)
    if leaked:
        return f"refusing to run docker: the value of {leaked[0]} would be in its arguments"
    if any(has_url_credentials(arg) for arg in cmd):
        return (
            "refusing to run docker: an argument holds a URL with credentials (user:password@host); "
            "give the container a URL without them"
        )
    return ""
