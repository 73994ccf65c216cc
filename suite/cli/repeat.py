"""`python -m suite repeat --times N`: the same cells N times back to back, each repetition a
run of its own under <out>/<run-id>/rep-<i>/, then each cell's spread of medians
(suite.run.repeat). A repeat with the same --run-id resumes where it stopped."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from suite.cli.args import default_profile, filters_of, selected
from suite.cli.bench import check_before_probe
from suite.redact import redact
from suite.run import preflight, repeat, runner
from suite.spec import expand, load_matrix


def cmd_repeat(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    filters = filters_of(args)
    preflight.check_writable(args.out)
    preflight.check_free_space(args.out, preflight.DEFAULT_MIN_FREE_MB)
    check_before_probe(args, matrix, filters)
    environment = preflight.probe(args.device)
    profile = default_profile(args, environment.device_type)
    build = preflight.resolve_build(matrix, args.build, environment)
    cells = selected(args, expand(matrix, profile, build, filters), profile)
    preflight.check_inputs(matrix, profile, filters, cells, warn_unchecked=True)
    run_id = args.run_id or "repeat-" + runner.new_run_id()
    folder = Path(args.out) / run_id
    before = os.getloadavg()[0]
    for i in range(1, args.times + 1):
        report = runner.run_cells(
            cells,
            environment,
            folder,
            repeat.rep_id(i),
            banner=f"repeat {run_id}: repetition {i} of {args.times}, {len(cells)} cell(s) of {profile}",
        )
        counts = ", ".join(f"{n} {s}" for s, n in sorted(report.statuses.items())) or "nothing new"
        print(f"repetition {i}: {counts}{report.health_note()} -> {report.csv}", file=sys.stderr)
    load = (before, os.getloadavg()[0])
    spreads = repeat.collect([folder / repeat.rep_id(i) for i in range(1, args.times + 1)])
    title = (
        f"Repeatability on {environment.gpu_name}, torch {environment.torch_version}: profile {profile}, "
        f"{args.times} repetitions, {cells[0].settings.iterations} iterations per cell"
    )
    text = "\n".join(repeat.render(spreads, environment.device_type, title, load))
    print(text)
    (folder / "repeat.md").write_text(redact(text) + "\n", encoding="utf-8")
    print(f"written to {folder / 'repeat.md'}", file=sys.stderr)
    return 0
