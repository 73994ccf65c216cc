"""The command line's flags: the parser (one-line errors, a UsageError, exit status 2), the
selection flags shared by `plan`, `run` and `crosscheck` (their values parsed by
suite.cli.values), and the typed request they resolve to."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from suite.cli import values
from suite.errors import UsageError

if TYPE_CHECKING:
    from suite.spec import Filters
    from suite.spec.request import Request

DEFAULT_MATRIX = Path(__file__).resolve().parents[2] / "matrix.yaml"
DEFAULT_REFERENCE = DEFAULT_MATRIX.parent / "results" / "reference"


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError("", message)

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def,override]
        """As argparse's, but unknown arguments are quoted: an empty one must show."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(shlex.quote(a) for a in extras)}")
        return parsed


def add_selection_args(p: argparse.ArgumentParser) -> None:
    """The flags shared by `plan` and `run`."""
    from suite.spec.limits import MAX_BATCH_SIZE
    from suite.spec.vocab import (
        COMPILE_CACHES,
        DEVICES,
        DYNAMIC_SETTINGS,
        MALLOCS,
        MODES,
        SCENARIOS,
        STOP_RULES,
        WEIGHTS,
    )

    p.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)")
    p.add_argument(
        "--profile", default=None, help="profile of the matrix (default: smoke without a GPU, full with one)"
    )
    p.add_argument(
        "--build", default=None, help="build label; must match the running torch (default: detected)"
    )
    p.add_argument(
        "--models",
        type=values.csv_list,
        default=None,
        help="comma list of display names or hub ids (any case)",
    )
    p.add_argument(
        "--batch-sizes", type=values.int_list("--batch-sizes", MAX_BATCH_SIZE), default=None, help="e.g. 1,4"
    )
    p.add_argument(
        "--modes",
        type=values.choice_list("--modes", MODES),
        default=None,
        help=f"comma list of: {', '.join(MODES)}",
    )
    p.add_argument(
        "--scenarios",
        type=values.choice_list("--scenarios", SCENARIOS),
        default=None,
        help=f"comma list of: {', '.join(SCENARIOS)}",
    )
    p.add_argument(
        "--dynamic",
        type=values.choice_list("--dynamic", DYNAMIC_SETTINGS),
        default=None,
        help=f"dynamic-batch cells: comma list of {', '.join(DYNAMIC_SETTINGS)} (default: all three)",
    )
    p.add_argument(
        "--device", choices=DEVICES, default="auto", help="where to run (default: auto = cuda if present)"
    )
    p.add_argument(
        "--weights", choices=WEIGHTS, default=None, help="pretrained (hub) or random (offline, from configs)"
    )
    p.add_argument(
        "--iterations",
        type=values.positive("--iterations", int, "iterations"),
        default=None,
        help="timed iterations per cell",
    )
    p.add_argument(
        "--warmup",
        type=values.positive("--warmup", int, "warmup"),
        default=None,
        help="warm-up iterations per cell",
    )
    p.add_argument(
        "--timeout",
        type=values.positive("--timeout", float, "timeout_s"),
        default=None,
        help="seconds per cell before it is killed",
    )
    p.add_argument(
        "--image", default=None, help="photo to feed: a URL or a local path (default: the guide's COCO image)"
    )
    p.add_argument(
        "--compile-cost",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="compiled cells also run a warm and a mega-cache process (compile_warm_s, compile_megacache_s; "
        "fresh caches for the cell's own): more device time (default: as the profile's compile_cost says)",
    )
    p.add_argument(
        "--compile-cache",
        choices=COMPILE_CACHES,
        default=None,
        help="cold: fresh inductor/triton caches per cell; run: one cache shared by the run's cells "
        "(default: as the profile's compile_cache says)",
    )
    p.add_argument(
        "--malloc",
        choices=MALLOCS,
        default=None,
        help="steady: glibc's mmap and trim thresholds fixed in each worker, so calls do not page-fault "
        "by the allocator's history; system: the allocator as it is (default: as the profile's malloc says)",
    )
    p.add_argument(
        "--processes",
        type=values.positive("--processes", int, "processes"),
        default=None,
        help="worker processes per cell, pooled (docs/intervals.md; default: the profile's processes)",
    )
    p.add_argument(
        "--stop-rule",
        choices=STOP_RULES,
        default=None,
        help="ci: time until the median's 95%% CI is narrow enough; fixed: exactly --iterations calls "
        "(default: as the profile's stop_rule says)",
    )
    p.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: %(default)s)")
    p.add_argument(
        "--run-id",
        type=values.run_id,
        default=None,
        help="run folder name; reuse one to resume (default: a UTC timestamp)",
    )
    p.add_argument(
        "--shard",
        type=values.shard,
        default=None,
        metavar="I/N",
        help="only part I of N (1-based), balanced by estimated cost; the same on every machine",
    )


def add_run_args(p: argparse.ArgumentParser) -> None:
    """The flags of `run` alone: how a resume treats failed cells, the disk check, the cache."""
    from suite.run.preflight import DEFAULT_MIN_FREE_MB

    p.add_argument(
        "--keep-failed",
        action="store_true",
        help="on resume, keep the cells recorded as error/timeout/skipped (default: run them again)",
    )
    p.add_argument(
        "--min-free-mb",
        type=values.min_free,
        default=DEFAULT_MIN_FREE_MB,
        help="no cell starts with less free space than this where results go (default: %(default)s; 0: off)",
    )
    p.add_argument(
        "--keep-compile-cache",
        action="store_true",
        help="keep the compile cache of a `compile_cache: run` profile in <run>/.compile-cache "
        "(default: removed when the run ends)",
    )
    p.add_argument(
        "--allow-busy-gpu",
        action="store_true",
        help="time on a GPU that other processes use (default: refused before the first cell)",
    )
    p.add_argument("--allow-mig", action="store_true", help="time on a GPU in MIG mode (default: refused)")


def add_schedule_args(p: argparse.ArgumentParser, default: str = "ahead") -> None:
    """`--schedule` and `--compile-pool` (run, plan, repeat) and, for plan, `--cores`: how the
    cells are laid out in processes (docs/measurement.md#what-runs-where)."""
    p.add_argument(
        "--schedule",
        choices=("ahead", "serial"),
        default=default,
        help="ahead: each compiled cell's process compiles in a wave beside others, then times alone, "
        "its model's eager cells after it in the same process; serial: one process per cell "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--compile-pool",
        type=values.compile_pool,
        default=None,
        help="ahead: processes compiling at once (default: one per 2 cores, so that compiles do not "
        "share cores; more is faster, but each compile_s is then measured beside the others, which "
        "every row's compile_wave says)",
    )
    p.add_argument(
        "--process-start",
        choices=("fork", "spawn"),
        default="fork",
        help="ahead: fork each process from one that imported torch and transformers once and never "
        "touched CUDA (its start-up paid once; where CUDA was initialised by the imports it refuses, "
        "in one line, and the processes are spawned), or spawn each fresh; serial spawns, but for a "
        "pair's runner (--pair), whose one process per cell forks alike (default: %(default)s)",
    )
    p.add_argument(
        "--overlap",
        action="store_true",
        help="ahead: while a wave is timed, the next one compiles on the cores the timed process is not "
        "pinned to (default: off, compiles and timing apart; docs/measurement.md#compiles-beside-the-timing)",
    )
    p.add_argument(
        "--pin-timing",
        action="store_true",
        help="ahead: pin each timed process to the cores --overlap would give it, the phases apart (on a "
        "CPU with one torch thread a core): the like-with-like side of --overlap's A/A",
    )


def add_cores_arg(p: argparse.ArgumentParser) -> None:
    """`plan --cores N`: the machine the `ahead` schedule is estimated for (its compile pool)."""
    p.add_argument(
        "--cores",
        type=values.cores,
        default=None,
        help="CPU cores of the machine to estimate for: the ahead schedule's compile pool "
        "(default: this machine's)",
    )


def filters_of(args: argparse.Namespace) -> Filters:
    """The selection flags and the setting overrides, typed; a local --image is checked here,
    before anything else (a file pillow reads, found where the worker looks)."""
    from suite.run.preflight import check_image
    from suite.spec import Filters, ImageSpec
    from suite.spec.expand import Overrides

    image = None
    if args.image:
        is_url = args.image.startswith(("http://", "https://"))
        image = ImageSpec(url=args.image if is_url else "", path="" if is_url else args.image)
        if not is_url:
            check_image(image, "--image", offline=False)
    compile_cost = getattr(args, "compile_cost", None)
    overrides = Overrides(
        weights=args.weights or None,
        iterations=int(args.iterations) if args.iterations else None,
        warmup=int(args.warmup) if args.warmup else None,
        timeout_s=float(args.timeout) if args.timeout else None,
        compile_cost=None if compile_cost is None else bool(compile_cost),
        # a warm compile is measured against a cold one; --compile-cache says otherwise itself
        compile_cache=getattr(args, "compile_cache", None) or ("cold" if compile_cost else None),
        malloc=getattr(args, "malloc", None) or None,
        image=image,
        processes=int(args.processes) if getattr(args, "processes", None) else None,
        stop_rule=getattr(args, "stop_rule", None) or None,
    )
    return Filters(
        models=tuple(args.models) if args.models is not None else None,
        batch_sizes=args.batch_sizes,
        modes=args.modes,
        scenarios=args.scenarios,
        overrides=overrides,
        dynamic=getattr(args, "dynamic", None),
    )


def request_of(args: argparse.Namespace) -> Request:
    """A verb's selection flags, resolved once: the matrix loaded, the filters typed, the build
    checked. What runs next (suite.run.preflight.prepare, `plan`) reads this, not `args`."""
    from suite.spec import load_matrix
    from suite.spec.request import Request

    if getattr(args, "compile_pool", None) is not None and getattr(args, "schedule", "ahead") == "serial":
        raise UsageError("--compile-pool", "applies to --schedule ahead only (serial compiles one at a time)")
    for flag in ("overlap", "pin_timing"):
        if getattr(args, flag, False) and getattr(args, "schedule", "ahead") == "serial":
            name = "--" + flag.replace("_", "-")
            raise UsageError(name, "applies to --schedule ahead only (serial compiles one at a time)")
    matrix = load_matrix(args.matrix)
    filters = filters_of(args)
    return Request(
        matrix=matrix,
        profile=args.profile,
        build=args.build,
        filters=filters,
        device=args.device,
        out=args.out,
        run_id=args.run_id,
        shard=args.shard,
    )
