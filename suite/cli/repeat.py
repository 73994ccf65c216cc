"""`python -m suite repeat --times N`: the same cells N times back to back, each repetition a
run of its own under <out>/<run-id>/rep-<i>/, then each cell's spread of medians
(suite.run.repeat). A repeat with the same --run-id resumes where it stopped."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from suite.cli.args import request_of
from suite.cli.bench import status_counts
from suite.errors import UsageError
from suite.redact import redact
from suite.results import read_rows
from suite.run import coverage, preflight, repeat, runner


def cmd_repeat(args: argparse.Namespace) -> int:
    request = request_of(args)
    prepared = preflight.prepare(request)
    environment, profile, cells = prepared.environment, prepared.profile, prepared.cells
    run_id = request.run_id or "repeat-" + runner.new_run_id()
    folder = Path(request.out) / run_id
    before = os.getloadavg()[0]
    for i in range(1, args.times + 1):
        banner = f"repeat {run_id}: repetition {i} of {args.times}, {len(cells)} cell(s) of {profile}"
        sweep = runner.Sweep(
            cells,
            environment,
            folder,
            repeat.rep_id(i),
            banner=banner,
            schedule=args.schedule,
            compile_pool=args.compile_pool,
            process_start=args.process_start,
            overlap=args.overlap,
            pin_timing=args.pin_timing,
        )
        report = runner.run_cells(sweep)
        counts = status_counts(report.statuses)
        print(f"repetition {i}: {counts}{report.health_note()} -> {report.csv}", file=sys.stderr)
    load = (before, os.getloadavg()[0])
    spreads = repeat.collect([folder / repeat.rep_id(i) for i in range(1, args.times + 1)])
    title = (
        f"Repeatability on {environment.gpu_name}, torch {environment.torch_version}: profile {profile}, "
        f"{args.times} repetitions, {cells[0].settings.iterations} iterations per cell"
    )
    lines = repeat.render(spreads, environment.device_type, title, load)
    processes, device = cells[0].settings.processes, environment.device_type
    lines += ["", *coverage.render(spreads, processes, device, args.hold_out)]  # the intervals' coverage
    text = "\n".join(lines)
    print(text)
    (folder / "repeat.md").write_text(redact(text) + "\n", encoding="utf-8")
    print(f"written to {folder / 'repeat.md'}", file=sys.stderr)
    return 0


def cmd_coverage(args: argparse.Namespace) -> int:
    """The coverage table of a finished (or partly finished) repeat, from its rows alone."""
    folder: Path = args.folder
    reps = sorted((d for d in folder.glob("rep-*") if d.name[4:].isdigit()), key=lambda d: int(d.name[4:]))
    if not reps:
        raise UsageError(str(folder), "no rep-<i> folders: not a repeat's run folder")
    spreads = repeat.collect(reps)
    rows = [r for rep in reps for csv in sorted((rep / "raw").glob("*.csv")) for r in read_rows(csv).rows]
    devices = sorted({r.get("device", "") for r in rows} - {""})
    processes = max((int(r.get("processes") or 1) for r in rows), default=1)
    lines = [
        f"{folder.name}: {len(reps)} repetitions",
        "",
        *coverage.render(spreads, processes, devices[0] if devices else "cpu", args.hold_out),
    ]
    print("\n".join(lines))
    return 0
