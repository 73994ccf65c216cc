"""Cross-check the suite's latency with measurements that share none of its timing code.

For each cell, a separate child process builds the same model and batch (the worker's
`prepare`), then times the forward with `torch.utils.benchmark.Timer.blocked_autorange`
(its own loop, warm-up and synchronization) and, on CUDA, with CUDA events around a
block of iterations. `python -m suite crosscheck` runs the cells through the normal
runner too and prints the ratio of the medians.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from suite.matrix import Cell


def independent_timing(cell: Cell, device: str, block: int = 50) -> dict[str, Any]:
    """Per-call milliseconds by torch.utils.benchmark (and CUDA events), in this process."""
    import torch
    import torch.utils.benchmark as benchmark

    from suite.worker import prepare

    model, batch, _ = prepare(cell, device)
    fn = (
        model
        if cell.mode == "eager"
        else torch.compile(model, mode=None if cell.mode == "default" else cell.mode)
    )
    out: dict[str, Any] = {}
    with torch.no_grad():
        for _ in range(max(3, cell.settings.warmup)):
            fn(**batch)
        # Timer runs on one thread unless told: match the worker's thread count, or a small
        # model's figure differs by threading overhead alone, not by the timing loop.
        timer = benchmark.Timer(
            stmt="fn(**batch)", globals={"fn": fn, "batch": batch}, num_threads=torch.get_num_threads()
        )
        m = timer.blocked_autorange(min_run_time=max(1.0, cell.settings.iterations * 0.002))
        out["torch_benchmark_median_ms"] = m.median * 1e3
        if device == "cuda":
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            torch.cuda.synchronize()
            start.record()
            for _ in range(block):
                fn(**batch)
            end.record()
            torch.cuda.synchronize()
            out["cuda_events_mean_ms"] = start.elapsed_time(end) / block
    return out


def run_child(cell: Cell, device: str, python: str = sys.executable) -> dict[str, Any]:
    from suite.runner import child_env

    proc = subprocess.run(
        [python, "-m", "suite.crosscheck", cell.to_json(), device],
        capture_output=True,
        text=True,
        env=child_env(),
        check=False,
    )
    if proc.returncode != 0:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": tail}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv: list[str]) -> int:
    cell = Cell.from_json(argv[0])
    print(json.dumps(independent_timing(cell, argv[1])))
    return 0


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
        if row is None or row["status"] != "ok":
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
    from suite import runner
    from suite.cli import _default_profile, _filters
    from suite.errors import UsageError
    from suite.matrix import expand, load_matrix
    from suite.redact import redact
    from suite.results import read_rows

    matrix = load_matrix(args.matrix)
    filters = _filters(args)
    runner.check_writable(args.out)
    environment = runner.probe(args.device)
    profile = _default_profile(args, environment.device_type)
    build = runner.resolve_build(matrix, args.build, environment)
    cells = expand(matrix, profile, build, filters)
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


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
