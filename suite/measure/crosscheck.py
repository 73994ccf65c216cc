"""The child side of `python -m suite crosscheck`: the suite's timing loop and timers that share
none of its code, alternating in rounds in one process
(`python -m suite.measure.crosscheck CELL_JSON RESULT_JSON DEVICE ROUNDS`, started by the runner's
launcher: the cell's timeout, its own process group, the lifeline).

The model, batch and compiled function are built once (suite.measure.cell, the worker's own
pieces) and warmed up by the warm-up policy. Then each round runs two halves, in alternating
order (suite first in even rounds, second in odd ones), so that a drift in the machine's load
hits both alike:
- the suite's half: `TimingLoop.interleaved` over the cell's functions, exactly as a row is
  measured (a compiled cell times eager and compiled calls interleaved), and their medians;
- the independent half: each function alone under `torch.utils.benchmark.Timer.blocked_autorange`
  (its own loop, warm-up and synchronization; the worker's thread count) for as long as the
  suite's half took, and on CUDA, CUDA events around a block of `iterations` calls.
The result holds every round's figures; the parent (suite.run.crosscheck) forms the ratios.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from suite.measure import allocator, lifeline
from suite.measure.failures import describe_exception, is_oom
from suite.measure.timing import TimingLoop, synchronizer
from suite.measure.worker import write_result
from suite.results import one_line
from suite.spec.model import Cell
from suite.stats import median

SUITE, BENCHMARK, EVENTS = "suite", "benchmark", "events"


def _benchmark_ms(fn: Callable[[], Any], seconds: float, threads: int) -> float:
    """Median per-call milliseconds by torch.utils.benchmark over about `seconds`."""
    import torch.utils.benchmark as benchmark

    # Timer runs on one thread unless told: match the worker's thread count, or a small model's
    # figure differs by threading overhead alone, not by the timing loop.
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)
    return timer.blocked_autorange(min_run_time=max(0.2, seconds)).median * 1e3


def _events_ms(fn: Callable[[], Any], calls: int) -> float:
    """Mean per-call milliseconds from CUDA events around a block of `calls` calls."""
    import torch

    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        fn()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def crosscheck_rounds(cell: Cell, device: str, rounds: int) -> dict[str, dict[str, list[float]]]:
    """{function: {"suite" | "benchmark" | "events": [ms per round]}}; the functions are
    "eager" and, for a compiled cell, its mode."""
    import torch

    from suite.measure.cell import prepare
    from suite.measure.scenarios.inference import Inference

    model, batch, _ = prepare(cell, device)
    scenario = Inference(cell, model, batch)
    loop = TimingLoop(synchronizer(device), cell.settings.warmup)
    n = cell.settings.iterations
    threads = torch.get_num_threads()
    with scenario.grad_mode():
        scenario.warm_up_eager(loop)
        fns: dict[str, Callable[[], Any]] = {"eager": scenario.eager}
        if cell.mode != "eager":
            compiled = scenario.compile()
            loop.call(compiled)  # compiles
            loop.warm_up(compiled, compiled=True)
            fns[cell.mode] = compiled
        names = list(fns)
        out = {name: {SUITE: [], BENCHMARK: [], EVENTS: []} for name in names}
        span = [0.0]  # how long the suite's half took: the independent half takes as long

        def suite_half() -> None:
            start = time.monotonic()
            samples = loop.interleaved([fns[name] for name in names], n)
            span[0] = time.monotonic() - start
            for name, ms in zip(names, samples, strict=True):
                out[name][SUITE].append(median(ms))

        def independent_half() -> None:
            for name in names:
                seconds = span[0] / len(names) if span[0] else n * 0.001
                out[name][BENCHMARK].append(_benchmark_ms(fns[name], seconds, threads))
                if device == "cuda":
                    out[name][EVENTS].append(_events_ms(fns[name], n))

        for r in range(rounds):
            halves = (suite_half, independent_half) if r % 2 == 0 else (independent_half, suite_half)
            for half in halves:
                half()
    return out


def main(argv: list[str]) -> int:
    if len(argv) != 4:
        print("usage: python -m suite.measure.crosscheck CELL RESULT DEVICE ROUNDS", file=sys.stderr)
        return 2
    lifeline.die_with_parent()  # never outlive the parent (it may be killed mid-cell)
    cell = Cell.from_json(Path(argv[0]).read_text())
    device, rounds = argv[2], int(argv[3])
    print(f"crosscheck: {cell.label} | build {cell.build} | device {device} | {rounds} rounds", flush=True)
    try:
        timings = crosscheck_rounds(cell, device, rounds)
        result: dict[str, Any] = {"status": "ok", "error": "", "timings": timings}
        result["malloc"] = allocator.in_effect()
    except Exception as exc:  # the parent reports it in the cell's line
        import traceback

        traceback.print_exc()
        result = {"status": "oom" if is_oom(exc) else "error", "error": one_line(describe_exception(exc))}
    write_result(Path(argv[1]), result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
