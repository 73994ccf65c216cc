"""`python -m suite crosscheck`: run a few cells through the suite, then time each again in a
separate process with code that shares none of the suite's timing loop
(suite.measure.crosscheck), and print both medians and their ratio.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from suite.cli.args import default_profile, filters_of
from suite.errors import UsageError, last_line
from suite.redact import redact
from suite.results import OK, read_rows
from suite.run import preflight, runner
from suite.run.launch import child_env
from suite.spec import expand, load_matrix
from suite.spec.model import Cell


def run_child(cell: Cell, device: str, python: str = sys.executable) -> dict[str, Any]:
    proc = subprocess.run(
        [python, "-m", "suite.measure.crosscheck", cell.to_json(), device],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    if proc.returncode != 0:
        return {"error": last_line(proc.stderr, "no output")}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(cells: list[Cell], rows: list[dict[str, str]], device: str) -> list[str]:
    """Run the independent measurement for each cell and format suite vs independent."""
    by_key = {(r["model"], r["batch_size"], r["mode"]): r for r in rows}
    lines = [
        "| model | batch | mode | suite median ms | torch.utils.benchmark ms | ratio"
        " | CUDA events ms | ratio |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for cell in cells:
        row = by_key.get((cell.model.name, str(cell.batch_size), cell.mode))
        if row is None or row["status"] != OK:
            lines.append(
                f"| {cell.model.name} | {cell.batch_size} | {cell.mode} | "
                f"{row['status'] if row else 'missing'} | | | | |"
            )
            continue
        ours = float(row["median_ms"])
        other = run_child(cell, device)
        if "error" in other:
            lines.append(
                f"| {cell.model.name} | {cell.batch_size} | {cell.mode} | {ours:.3f} | "
                f"error: {other['error'][:60]} | | | |"
            )
            continue
        tb = other["torch_benchmark_median_ms"]
        ev = other.get("cuda_events_mean_ms")
        ev_cols = f"{ev:.3f} | {ours / ev:.3f}" if ev else " | "
        lines.append(
            f"| {cell.model.name} | {cell.batch_size} | {cell.mode} | {ours:.3f} | {tb:.3f} | "
            f"{ours / tb:.3f} | {ev_cols} |"
        )
    return lines


def cmd_crosscheck(args: Any) -> int:
    """`python -m suite crosscheck`: run the cells, then measure them independently."""
    matrix = load_matrix(args.matrix)
    filters = filters_of(args)
    preflight.check_writable(args.out)
    environment = preflight.probe(args.device)
    profile = default_profile(args, environment.device_type)
    build = preflight.resolve_build(matrix, args.build, environment)
    cells = expand(matrix, profile, build, filters)
    preflight.check_inputs(matrix, profile, filters, cells)
    if any(c.scenario != "inference" for c in cells):
        raise UsageError("--scenarios", "the cross-check times forward passes: inference cells only")
    if len(cells) > 12:
        raise UsageError("--models", f"{len(cells)} cells selected; a cross-check takes at most 12")
    run_id = args.run_id or "crosscheck-" + runner.new_run_id()
    result = runner.run_cells(cells, environment, args.out, run_id)
    rows = read_rows(result.csv).rows
    lines = report(cells, rows, environment.device_type)
    text = "\n".join([f"Cross-check on {environment.gpu_name}, torch {environment.torch_version}", *lines])
    print(text)
    target = Path(args.out) / run_id / "crosscheck.md"
    target.write_text(redact(text) + "\n")
    print(f"written to {target}", file=sys.stderr)
    return 0
