"""Time a cell with code that shares none of the suite's timing loop: the child side of
`python -m suite crosscheck` (`python -m suite.measure.crosscheck CELL_JSON DEVICE`).

It builds the same model and batch as the worker (`suite.measure.cell.prepare`), then times
the forward with `torch.utils.benchmark.Timer.blocked_autorange` (its own loop, warm-up and
synchronization) and, on CUDA, with CUDA events around a block of iterations.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from suite.spec.model import Cell
from suite.spec.warmup import warmup_calls


def independent_timing(cell: Cell, device: str, block: int = 50) -> dict[str, Any]:
    """Per-call milliseconds by torch.utils.benchmark (and CUDA events), in this process."""
    import torch
    import torch.utils.benchmark as benchmark

    from suite.measure.cell import compile_model, prepare

    model, batch, _ = prepare(cell, device)
    fn = model if cell.mode == "eager" else compile_model(model, cell.mode)
    out: dict[str, Any] = {}
    with torch.no_grad():
        # The warm-up policy's count for a compiled function, whatever the mode (its first call
        # compiles, CUDA graphs record on a later one; an eager function needs fewer). Only the
        # policy is shared with the worker, not its loop; blocked_autorange warms up again.
        for _ in range(warmup_calls(cell.settings.warmup, compiled=True)):
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


def main(argv: list[str]) -> int:
    cell = Cell.from_json(argv[0])
    print(json.dumps(independent_timing(cell, argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
