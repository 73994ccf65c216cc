"""`python -m suite repeat --times N`: the same cells N times back to back, each repetition a
run of its own under <out>/<run-id>/rep-<i>/, then each cell's spread of medians
(suite.run.repeat). A repeat with the same --run-id resumes where it stopped."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from suite.cli.args import request_of
from suite.redact import redact
from suite.run import preflight, repeat, runner


def cmd_repeat(args: argparse.Namespace) -> int:
    request = request_of(args)
    prepared = preflight.prepare(request)
    environment, profile, cells = prepared.environment, prepared.profile, prepared.cells
    run_id = request.run_id or "repeat-" + runner.new_run_id()
    folder = Path(request.out) / run_id
    before = os.getloadavg()[0]
    for i in range(1, args.times + 1):
        banner = f"repeat {run_id}: repetition {i} of {args.times}, {len(cells)} cell(s) of {profile}"
        report = runner.run_cells(runner.Sweep(cells, environment, folder, repeat.rep_id(i), banner=banner))
        counts = ", ".join(f"{n} {s}" for s, n in sorted(report.statuses.items())) or "nothing new"
        print(f"repetition {i}: {counts}{report.health_note()} -> {report.csv}", file=sys.stderr)
    load = (before, os.getloadavg()[0])
    spreads = repeat.collect([folder / repeat.rep_id(i) for i in range(1, args.times + 1)])
    title = (
        f"Repeatability on {environment.gpu_name}, torch {environment.torch_version}: profile {profile}, "
        f"{args.times} repetitions, {cells[0].settings.iterations} iterations per cell"
    )
    lines = repeat.render(spreads, environment.device_type, title, load)
    lines += ["", *repeat.render_coverage(spreads, cells[0].settings.processes)]  # issue 27
    text = "\n".join(lines)
    print(text)
    (folder / "repeat.md").write_text(redact(text) + "\n", encoding="utf-8")
    print(f"written to {folder / 'repeat.md'}", file=sys.stderr)
    return 0
