"""The host side of a container session: docker commands run (each checked for secrets
before it is shown or run), the Hugging Face cache, the run folder and the token's file made
ready for the mounts, the container names checked free, and the slots the containers get: one
per GPU this session uses (a busy or MIG one refused unless allowed), or shares of the CPUs.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.sessions import docker, fleet
from suite.sessions.runner import Runner
from suite.spec import BuildSpec
from suite.system.gpus import compute_apps, query


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


def hf_cache_dir() -> Path:
    """The host's Hugging Face cache, shared with the containers (downloads happen once)."""
    home = os.environ.get("HF_HOME")
    return Path(home) if home else Path.home() / ".cache" / "huggingface"


def prepare_mounts(runner: Runner, opts: docker.RunOptions) -> None:
    """Create the run folder and the cache, write the HF token's file; as root, hand them to
    the image's user."""
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
    if opts.token_file is not None:
        docker.write_token(opts.token_file, os.environ, docker.IMAGE_UID if os.getuid() == 0 else None)


def check_names_free(
    opts: docker.RunOptions, chosen: Sequence[BuildSpec], slots: Sequence[fleet.Slot] = ()
) -> None:
    """A container of the same name (this run id, build and shard) still there is a run in
    progress or a cancelled one's leftover: one line, instead of docker's conflict later."""
    listing = run_docker(
        ["docker", "container", "ls", "--all", "--format", "{{.Names}}"], capture_output=True
    )
    present = set(listing.stdout.split())
    shards = [s.shard for s in slots] or [opts.shard]
    for spec in chosen:
        names = [replace(opts, shard=shard).name(spec.name) for shard in shards]
        for name in [*names, replace(opts, shard=shards[0]).name(spec.name, "probe")]:
            if name in present:
                raise docker.DockerProblem(
                    f"a container named {name} is still there (this run id is running, or a cancelled "
                    f"run left it): remove it with `docker rm --force {name}`, or use another --run-id"
                )


@dataclass(frozen=True)
class Allow:
    """What the GPU preflight lets through: a GPU other processes use, a GPU in MIG mode."""

    busy: bool = False  # --allow-busy-gpu
    mig: bool = False  # --allow-mig


def machine_slots(
    runner: Runner, device: str, shard: str, containers: int, allow: Allow | None = None
) -> list[fleet.Slot]:
    """Where the containers run: one per GPU this session uses (read once from nvidia-smi,
    SUITE_GPUS choosing; a busy or MIG one refused in one line each, unless `allow`ed), or on
    the CPU one (`--containers N`: N, each on its share of the CPUs)."""
    if device == "cpu":
        return fleet.cpu_slots(containers, shard, sorted(os.sched_getaffinity(0)))
    if containers != 1:
        raise UsageError("--containers", "is for --device cpu; on GPUs, each GPU gets one (SUITE_GPUS)")
    detail = docker.no_nvidia_gpu()
    gpus, why = query() if detail is None else ([], detail)
    if not gpus:
        raise docker.DockerProblem(
            f"no NVIDIA GPU found ({why or 'nvidia-smi lists none'}): the containers need a GPU and its "
            "driver; on this machine run `nox -s bench-local` (CPU)"
        )
    chosen = fleet.choose(gpus, os.environ)
    allow = allow or Allow()
    chosen, said = fleet.refused(chosen, compute_apps(), allow.busy, allow.mig)
    for line in said:
        runner.log(f"refused: {line}")
    if not chosen:
        raise UsageError("GPU", said[0] if len(said) == 1 else f"every GPU refused: {'; '.join(said)}")
    affinity = fleet.topology() if len(gpus) > 1 else {}
    found = fleet.slots(chosen, shard, os.environ, affinity)
    if len(found) > 1:
        pins = ", ".join(f"{s.name} cpus {s.cpus or 'any'}" for s in found)
        runner.log(f"{len(found)} GPUs ({chosen[0].name}): one container each, in parallel ({pins})")
    return found


def slot_options(opts: docker.RunOptions, slot: fleet.Slot) -> docker.RunOptions:
    return replace(
        opts,
        gpu=slot.gpus_arg if opts.device == "cuda" else "",
        shard=slot.shard,
        cpus=slot.cpus,
        mems=slot.mems,
        gpu_state=slot.gpu.to_json() if slot.gpu is not None else "",
    )
