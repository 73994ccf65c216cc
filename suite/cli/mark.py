"""`python -m suite mark`: record the selection's cells as `skipped` or `error`, with a reason,
without running them. The container sessions call it on the host (no torch) for a build the
machine cannot run (its driver or GPU; a failed probe) and for the cells a dead container
never reached, so every cell of a run has a row that says what happened to it.

    suite mark --build B --device cuda --gpu-state JSON --run-id R --status skipped \
        --reason "..." [--shard i/n] [--only compiled|eager] [--count] [selection flags as for run]
"""

from __future__ import annotations

import argparse
import os
import sys

from suite import __version__
from suite.cli.args import request_of
from suite.errors import UsageError
from suite.measure import machine
from suite.measure.provenance import Environment, cpu_name
from suite.results import slug
from suite.run import unrun
from suite.spec.shard import select
from suite.system import gpus

ONLY = ("all", "compiled", "eager")


def add_mark_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--status", choices=unrun.STATUSES, required=True, help="what the rows say")
    p.add_argument("--reason", required=True, help="one line: why the cells did not run")
    p.add_argument("--only", choices=ONLY, default="all", help="all cells, or the compiled or eager ones")
    p.add_argument("--count", action="store_true", help="print how many cells there are; write nothing")
    p.add_argument("--gpu-state", default="", help="the GPU's state as suite.system.gpus reads it (JSON)")
    p.add_argument("--image-tag", default="", help="the image the cells were to run in, if built")
    p.add_argument("--image-id", default="", help="its ID as Docker reports it")


def host_environment(args: argparse.Namespace) -> Environment:
    """What a row can say about where its cell was to run, without running it: the GPU as
    nvidia-smi showed it to the host, the image if there is one; nothing about torch."""
    device = "cpu" if args.device == "cpu" else "cuda"
    gpu = gpus.GpuState.from_json(args.gpu_state) if args.gpu_state else None
    if args.gpu_state and gpu is None:
        raise UsageError("--gpu-state", "not the JSON of a GPU's state (suite.system.gpus.GpuState)")
    if device == "cuda" and (gpu is None or not gpu.name):
        raise UsageError("--gpu-state", "--device cuda needs the GPU's state (at least its name)")
    cpu = cpu_name()
    environ = {
        gpus.CLOCKS_ENV: os.environ.get(gpus.CLOCKS_ENV, ""),
        gpus.IMAGE_ID_ENV: args.image_id,
    }
    return Environment(
        device=slug(gpu.name) if device == "cuda" and gpu else "cpu",
        device_type=device,
        gpu_name=gpu.name if device == "cuda" and gpu else cpu_name(plain=True),
        gpu_count=1 if device == "cuda" else 0,
        torch_version="",
        torch_git="",
        cuda_version="",
        cudnn_version="",
        triton_version="",
        transformers_version="",
        python_version="",
        driver_version=gpu.driver if gpu else "",
        image=args.image_tag,
        suite_version=__version__,
        cpu_name=cpu,
        cpu_count=os.cpu_count() or 0,
        machine=machine.columns(gpu if device == "cuda" else None, environ),
    )


def cmd_mark(args: argparse.Namespace) -> int:
    if not args.build:
        raise UsageError("--build", "mark needs the build whose cells did not run")
    if not args.run_id:
        raise UsageError("--run-id", "mark needs the run the rows belong to")
    request = request_of(args)  # the matrix read and the build checked: one line naming the field
    env = host_environment(args)
    profile = request.profile_for(env.device_type)
    cells = request.cells(profile, args.build)
    shard = ""
    if request.shard:
        cells, shard = select(cells, request.shard), request.shard.label
    if args.only != "all":
        cells = [c for c in cells if (c.mode == "eager") == (args.only == "eager")]
    if args.count:
        print(len(cells))
        return 0
    written = unrun.record(cells, env, args.out, args.run_id, shard, args.status, args.reason)
    print(f"mark: {written} {args.status} row(s) for build {args.build}", file=sys.stderr)
    print(written)
    return 0
