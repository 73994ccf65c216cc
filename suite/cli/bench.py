"""The verbs that measure: `plan` (the cells and their estimated cost), `run`, `env`."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace

from suite.cli.args import request_of
from suite.cli.needs import TORCH, TORCH_HINT, needs
from suite.errors import UsageError
from suite.measure import provenance
from suite.measure.energy import OFF_ENV
from suite.run import preflight, runner
from suite.spec.cost import RATES_FROM, STUDY_GOAL_S, estimate_schedule, estimate_seconds, format_duration
from suite.spec.model import Cell
from suite.spec.schedule import AHEAD, SERIAL, forks, overlap_cores, pool_size
from suite.spec.shard import select, siblings
from suite.spec.vocab import STOP_CI
from suite.system import cpus
from suite.system.nvidia_smi import no_nvidia_gpu


def cmd_plan(args: argparse.Namespace) -> int:
    request = request_of(args)
    profile = request.profile_for("cuda" if request.device == "cuda" else None)
    build = request.build or "(detected at run time)"
    cells = request.cells(profile, build)
    shard = request.shard
    preflight.check_inputs(request.matrix, profile, request.filters, cells)
    narrowed = request.narrowed(cells, profile)
    if narrowed:
        print(f"suite plan: warning: {narrowed}", file=sys.stderr)
    # the estimate's rates: a GPU's for --device cuda, a CPU's for --device cpu; with --device auto,
    # whichever this machine has (as `run` would find)
    no_gpu = None if request.device == "cpu" else no_nvidia_gpu()
    on_gpu = request.device == "cuda" or (request.device != "cpu" and no_gpu is None)
    rates = "cuda" if on_gpu else "cpu"
    # SUITE_ENERGY=off in this environment: the workers `run` starts skip the energy window
    energy = os.environ.get(OFF_ENV) != "off"
    costs = [estimate_seconds(c, rates, energy) for c in cells]
    if request.device == "cuda" and no_gpu is not None:  # `run` stops here; a plan is still worth seeing
        print(
            f"suite plan: warning: --device cuda: this machine has no NVIDIA GPU ({no_gpu}): "
            "`suite run --device cuda` would stop here before the first cell (exit 2); "
            "the cells below are those of a GPU machine",
            file=sys.stderr,
        )
    print(f"profile {profile}: {len(cells)} cell(s), build {build}")
    shown = range(len(cells))
    if shard:
        shards = siblings(cells, shard)
        shown = shards[shard.index - 1]
        print(
            f"shard {shard.label}: {len(shown)} of the {len(cells)} cell(s), "
            f"estimated {format_duration(sum(costs[i] for i in shown))}"
            + ("" if shown else " (empty: more shards than cells; `run` does nothing and exits 0)")
        )
    # a dynamic-batch cell: its batch sizes in turn and its setting; + the compile-cost processes
    header = ("#", "task", "model", "bs", "mode", "scenario", "weights", "dtype", "iters", "est")
    rows = [
        (
            str(i + 1),
            cells[i].model.task,
            cells[i].model.name,
            ">".join(map(str, cells[i].served)),
            cells[i].mode,
            _scenario_label(cells[i]),
            cells[i].settings.weights + (" (shrunk)" if cells[i].settings.shrink else ""),
            cells[i].settings.dtype,
            str(cells[i].settings.iterations),
            format_duration(costs[i]),
        )
        for i in shown
    ]
    print("\n".join(aligned(header, rows, right={"#", "bs", "iters", "est"})))
    total = sum(costs)
    print(
        f"estimated total {format_duration(total)} on a {'GPU' if on_gpu else 'CPU'} "
        f"(suite/spec/cost.py at the rates of {RATES_FROM[rates]}: a rough model; the ratios count)"
    )
    _print_schedule(args, [cells[i] for i in shown], rates, profile, energy)
    if shard:
        loads = [sum(costs[i] for i in part) for part in shards]
        mean = sum(loads) / len(shards)  # the parent shard's cells when nested (i/n,k/m)
        print(
            "estimated per shard: "
            + ", ".join(
                f"{k}/{len(shards)} {format_duration(load)}{' (this one)' if k == shard.index else ''}"
                for k, load in enumerate(loads, 1)
            )
            + f"; largest/mean {max(loads) / mean if mean else 1.0:.2f}"
        )
    return 0


def _print_schedule(
    args: argparse.Namespace, cells: Sequence[Cell], rates: str, profile: str, energy: bool
) -> None:
    """The estimate of the schedule `run` would use (suite.spec.cost.estimate_schedule), beside
    the serial one, on the cores of this machine or `--cores`; the full study's goal with it,
    and, where it is not met, the estimate with the leaner settings that shorten the timing."""
    if not cells:
        return
    serial = estimate_schedule(cells, rates, SERIAL, energy=energy).total_s
    fork = forks(args.schedule, args.process_start, rates)
    overlap = args.schedule == AHEAD and args.overlap
    est = estimate_schedule(cells, rates, args.schedule, args.cores, args.compile_pool, energy, fork, overlap)
    if est.schedule == AHEAD:
        print(
            f"schedule ahead on {est.cores} core(s): compile {format_duration(est.compile_s)} (up to "
            f"{est.pool} processes at once{', forked' if fork else ''}"
            f"{', beside the timing after the first wave' if overlap else ''}), then timing "
            f"{format_duration(est.timing_s)}: "
            f"{format_duration(est.total_s)} in all, {est.total_s / serial:.2f} x serial's "
            f"{format_duration(serial)}"
        )
    if profile == "full" and rates == "cuda":
        met = "met" if est.total_s <= STUDY_GOAL_S else "not met"
        print(
            f"goal for the guide's whole study on one GPU with 16 cores: {format_duration(STUDY_GOAL_S)} "
            f"({met} by this estimate of {format_duration(est.total_s)} on {est.cores} core(s))"
        )
        if est.total_s > STUDY_GOAL_S:
            lean = [replace(c, settings=replace(c.settings, stop_rule=STOP_CI)) for c in cells]
            fast = estimate_schedule(lean, rates, AHEAD, args.cores, args.compile_pool, energy=False)
            print(
                f"  with --stop-rule ci and SUITE_ENERGY=off (no energy window): "
                f"{format_duration(fast.total_s)} ({'met' if fast.total_s <= STUDY_GOAL_S else 'not met'})"
            )


def _schedule_label(args: argparse.Namespace) -> str:
    """`serial`, or `ahead (compile pool N)`: how many compile at once on this machine."""
    if args.schedule == SERIAL:
        return SERIAL
    if args.overlap:
        cores = len(cpus.available()) or 1
        pool = pool_size(cores - overlap_cores(cores), args.compile_pool)
        return f"{AHEAD} with --overlap (compile pool {pool}, beside the timing on its own cores)"
    return f"{AHEAD} (compile pool {pool_size(None, args.compile_pool)})"


def _scenario_label(cell: Cell) -> str:
    """`inference`, `dynamic-batch (marked)`, `inference + compile cost` (its extra processes)."""
    label = f"{cell.scenario} ({cell.dynamic})" if cell.dynamic else cell.scenario
    return label + (" + compile cost" if cell.compile_cost else "")


def aligned(header: Sequence[str], rows: Sequence[Sequence[str]], right: Collection[str]) -> list[str]:
    """A plain-text table whose columns are as wide as their widest value, header included, so
    they stay aligned whatever a value holds (`random (shrunk)`, a long custom model name)."""
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]

    def line(row: Sequence[str]) -> str:
        padded = zip(header, row, widths, strict=True)
        return "  ".join(v.rjust(w) if h in right else v.ljust(w) for h, v, w in padded).rstrip()

    return [line(header), *(line(row) for row in rows)]


def cmd_run(args: argparse.Namespace) -> int:
    request = request_of(args)
    prepared = preflight.prepare(request, args.min_free_mb)
    preflight.check_gpu(prepared.environment, args.allow_busy_gpu, args.allow_mig)
    environment, profile, build, cells = (
        prepared.environment,
        prepared.profile,
        prepared.build,
        prepared.cells,
    )
    run_id = request.run_id or runner.new_run_id()
    shard = ""
    if request.shard:
        planned = len(cells)
        cells = select(cells, request.shard)
        shard = request.shard.label
        if not cells:
            print(
                f"run {run_id}: shard {shard} is empty ({planned} cell(s) over {request.shard.count} "
                "shards): nothing to run",
                file=sys.stderr,
            )
            return 0
    sweep = runner.Sweep(
        cells,
        environment,
        request.out,
        run_id,
        shard,
        keep_failed=args.keep_failed,
        min_free_mb=args.min_free_mb,
        keep_compile_cache=args.keep_compile_cache,
        schedule=args.schedule,
        compile_pool=args.compile_pool,
        process_start=args.process_start,
        pair=runner.Pairing(args.pair, args.pair_role or "") if args.pair else None,
        overlap=args.overlap,
        pin_timing=args.pin_timing,
        banner=f"run {run_id}: profile {profile}, build {build}, {len(cells)} cell(s)"
        f"{f' (shard {shard})' if shard else ''}, schedule {_schedule_label(args)} on "
        f"{environment.gpu_name} ({environment.device_type}), torch {environment.torch_version}",
    )
    report = runner.run_cells(sweep)
    print(
        f"done: {status_counts(report.statuses)}{report.warnings_note()}{report.health_note()}; "
        f"{report.resumed} already recorded -> {report.csv}",
        file=sys.stderr,
    )
    return 0


def status_counts(statuses: Mapping[str, int]) -> str:
    """A sweep's rows by status, as `run` and `repeat` print them: "2 error, 34 ok"."""
    return ", ".join(f"{n} {s}" for s, n in sorted(statuses.items())) or "nothing new"


def cmd_env(args: argparse.Namespace) -> int:
    try:
        with needs("env", TORCH, TORCH_HINT):
            environment = provenance.collect(args.device)
    except RuntimeError as exc:
        raise UsageError("--device", str(exc)) from None
    print(provenance.to_json(environment) if args.json else provenance.render(environment))
    return 0
