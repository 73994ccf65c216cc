"""The verbs that measure: `plan` (the cells and their estimated cost), `run`, `env`."""

from __future__ import annotations

import argparse
import sys

from suite.cli.args import default_profile, filters_of, selected
from suite.errors import UsageError
from suite.measure import provenance
from suite.run import preflight, runner
from suite.spec import expand, load_matrix, pick_build
from suite.spec.cost import estimate_seconds, format_duration
from suite.spec.shard import assign, select


def cmd_plan(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    profile = default_profile(args, "cuda" if args.device == "cuda" else None)
    build = args.build or "(detected at run time)"
    if args.build:
        pick_build(matrix, args.build)
    filters = filters_of(args)
    cells = selected(args, expand(matrix, profile, build, filters), profile)
    preflight.check_inputs(matrix, profile, filters, cells)
    costs = [estimate_seconds(c) for c in cells]
    print(f"profile {profile}: {len(cells)} cell(s), build {build}")
    shown = range(len(cells))
    if args.shard:
        shards = assign(cells, args.shard.count)
        shown = shards[args.shard.index - 1]
        print(
            f"shard {args.shard.label}: {len(shown)} of the {len(cells)} cell(s), "
            f"estimated {format_duration(sum(costs[i] for i in shown))}"
            + ("" if shown else " (empty: more shards than cells; `run` does nothing and exits 0)")
        )
    print(
        f"{'#':>4}  {'task':<20} {'model':<18} {'bs':>3}  {'mode':<16} {'scenario':<9} "
        f"{'weights':<10} {'dtype':<8} {'iters':>5} {'est':>8}"
    )
    for i in shown:
        c, s = cells[i], cells[i].settings
        print(
            f"{i + 1:>4}  {c.model.task:<20} {c.model.name:<18} {c.batch_size:>3}  {c.mode:<16} "
            f"{c.scenario:<9} {s.weights + (' (shrunk)' if s.shrink else ''):<10} {s.dtype:<8} "
            f"{s.iterations:>5} {format_duration(costs[i]):>8}"
        )
    total = sum(costs)
    print(f"estimated total {format_duration(total)} (suite/spec/cost.py: a rough model; the ratios count)")
    if args.shard:
        loads = [sum(costs[i] for i in shard) for shard in shards]
        mean = total / len(shards)
        print(
            "estimated per shard: "
            + ", ".join(
                f"{k}/{len(shards)} {format_duration(load)}{' (this one)' if k == args.shard.index else ''}"
                for k, load in enumerate(loads, 1)
            )
            + f"; largest/mean {max(loads) / mean if mean else 1.0:.2f}"
        )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    if args.run_id:  # a damaged run folder is found in a moment, before the slower checks
        preflight.check_run_folder(args.out / args.run_id)
    filters = filters_of(args)
    if args.build:
        pick_build(matrix, args.build)
    # validate the selection before probing (cheap, and no model is built either way)
    guess = default_profile(args, None)
    planned = expand(matrix, guess, args.build or "?", filters)
    preflight.check_inputs(matrix, guess, filters, planned)
    if args.profile:  # without one, the probe decides (smoke on CPU, full on a GPU)
        selected(args, planned, guess)
    preflight.check_writable(args.out)
    preflight.check_free_space(args.out, args.min_free_mb)
    environment = preflight.probe(args.device)
    profile = default_profile(args, environment.device_type)
    build = preflight.resolve_build(matrix, args.build, environment)
    cells = selected(args, expand(matrix, profile, build, filters), profile)
    preflight.check_inputs(matrix, profile, filters, cells)
    run_id = args.run_id or runner.new_run_id()
    shard = ""
    if args.shard:
        planned = len(cells)
        cells = select(cells, args.shard)
        shard = args.shard.label
        if not cells:
            print(
                f"run {run_id}: shard {shard} is empty ({planned} cell(s) over {args.shard.count} "
                "shards): nothing to run",
                file=sys.stderr,
            )
            return 0
    report = runner.run_cells(
        cells,
        environment,
        args.out,
        run_id,
        shard,
        keep_failed=args.keep_failed,
        min_free_mb=args.min_free_mb,
        banner=f"run {run_id}: profile {profile}, build {build}, {len(cells)} cell(s)"
        f"{f' (shard {shard})' if shard else ''} on "
        f"{environment.gpu_name} ({environment.device_type}), torch {environment.torch_version}",
    )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.statuses.items())) or "nothing new"
    print(f"done: {counts}; {report.resumed} already recorded -> {report.csv}", file=sys.stderr)
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    try:
        environment = provenance.collect(args.device)
    except RuntimeError as exc:
        raise UsageError("--device", str(exc)) from None
    print(provenance.to_json(environment) if args.json else provenance.render(environment))
    return 0
