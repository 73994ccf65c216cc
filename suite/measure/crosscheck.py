"""The child side of `python -m suite crosscheck`: the suite's timing loop and timers that share
none of its code, alternating in rounds in one process
(`python -m suite.measure.crosscheck CELL_JSON RESULT_JSON DEVICE ROUNDS`, started by the runner's
launcher: the cell's timeout, its own process group, the lifeline).

The model, batch and compiled function are built once (suite.measure.cell, the worker's own
pieces) and warmed up by the warm-up policy. Then each round runs two halves, in alternating
order (suite first in even rounds, second in odd ones), so that a drift in the machine's load
hits both alike. Like is checked against like (docs/trust.md):
- the suite's half: `TimingLoop.until` over the cell's functions for `iterations` latency calls,
  exactly as a row is measured (blocks, switch calls, throughput blocks), with a witness inside
  its own timed windows: on CUDA, CUDA events around each of its latency calls (latency against
  latency, the same calls) and the host clock with its synchronize around each of its throughput
  blocks, which the suite times on CUDA events (throughput against throughput, the same blocks);
- the independent half: each function alone under `torch.utils.benchmark.Timer` (its own loop
  and synchronization; the worker's thread count): as many single calls (`timeit(1)`: latency)
  and as many blocks of the same size (`timeit(block_calls)`: throughput) as the suite made,
  after the function has settled as the suite's loop lets it settle after a switch (`settle`).
Each round's medians of each timer are kept; the parent (suite.run.crosscheck) forms the ratios.
The rounds go on until they have taken the parent's time budget a timed function (`Rounds`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.measure import allocator
from suite.measure.failures import describe_exception, is_oom
from suite.measure.timing import BLOCK_CALLS, FIXED, Events, StopRule, TimingLoop, Witness
from suite.measure.worker import child_cell, write_result
from suite.results import one_line
from suite.spec.model import Cell
from suite.stats import median

# Each round's median of one timer and figure; the parent pairs them (suite.run.crosscheck.PAIRS).
SUITE_LATENCY, EVENTS_LATENCY, BENCHMARK_LATENCY = "suite_latency", "events_latency", "benchmark_latency"
SUITE_THROUGHPUT, HOST_THROUGHPUT = "suite_throughput", "host_throughput"
BENCHMARK_THROUGHPUT = "benchmark_throughput"
SERIES = (
    SUITE_LATENCY,
    EVENTS_LATENCY,
    BENCHMARK_LATENCY,
    SUITE_THROUGHPUT,
    HOST_THROUGHPUT,
    BENCHMARK_THROUGHPUT,
)


class InsideWitness(Witness):
    """Inside the suite's own timed windows: CUDA events around each latency call (not the
    switch calls, which the suite keeps out of its figure), and the host clock's figure of each
    throughput block, per function."""

    def __init__(self, functions: int, events: Events | None) -> None:
        self.events = events
        self.latency: list[list[float]] = [[] for _ in range(functions)]
        self.blocks: list[list[float]] = [[] for _ in range(functions)]

    def start(self) -> None:
        if self.events is not None:
            self.events.start()

    def stop(self) -> None:
        if self.events is not None:
            self.events.stop()

    def took(self, kind: str, index: int, suite_ms: float, host_ms: float) -> None:
        if kind == "block":
            self.blocks[index].append(host_ms)
        elif kind == "call" and self.events is not None:
            self.latency[index].append(self.events.ms())


def _timer(fn: Callable[[], Any], threads: int) -> Any:
    import torch.utils.benchmark as benchmark

    # Timer runs on one thread unless told: match the worker's thread count, or a small model's
    # figure differs by threading overhead alone, not by the timing loop.
    return benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=threads)


def benchmark_figures(fn: Callable[[], Any], threads: int, calls: int, block: int) -> tuple[float, float]:
    """(latency, throughput) by torch.utils.benchmark: the median of `calls` single calls, and of
    `calls // block` blocks of `block` back-to-back calls (ms per call); its timer synchronizes
    CUDA at each end of a measurement (and each `timeit` makes two untimed warm-up calls first)."""
    timer = _timer(fn, threads)
    single = [timer.timeit(1).raw_times[0] * 1e3 for _ in range(calls)]
    blocks = [timer.timeit(block).raw_times[0] * 1e3 / block for _ in range(max(1, calls // block))]
    return median(single), median(blocks)


@dataclass(frozen=True)
class Rounds:
    """How long the rounds go on: until they have taken `seconds` a timed function (both halves),
    at least `least` of them, at most `most`."""

    most: int
    seconds: float = float("inf")
    least: int = 1

    def stop(self, done: int, elapsed_s: float, functions: int) -> str:
        """ "rounds" at the most, "budget" once the time is spent (after the least), else ""."""
        if done >= self.most:
            return "rounds"
        if done >= self.least and elapsed_s >= self.seconds * functions:
            return "budget"
        return ""


def crosscheck_rounds(
    cell: Cell, device: str, rounds: Rounds
) -> tuple[dict[str, dict[str, list[float]]], float, str]:
    """({function: {series (SERIES): [median per round]}}, the rounds' seconds, why they stopped);
    the functions are "eager" and, for a compiled cell, its mode. Series a device has no timer for
    (CUDA events on a CPU) stay empty."""
    import torch

    from suite.measure.cell import prepare
    from suite.measure.scenarios.inference import Inference

    model, batch, _ = prepare(cell, device)
    scenario = Inference(cell, model, batch)
    loop = TimingLoop.on(device, cell.settings.warmup)
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
        out = {name: {series: [] for series in SERIES} for name in names}
        block = [min(n, BLOCK_CALLS)]  # the suite's block size (its first half says so too)

        def suite_half() -> None:
            witness = InsideWitness(len(names), Events() if device == "cuda" else None)
            loop.witness = witness
            timed = loop.until([fns[name] for name in names], StopRule(FIXED, n, n))
            loop.witness = None
            block[0] = timed.block_calls
            for j, name in enumerate(names):
                figures = out[name]
                figures[SUITE_LATENCY].append(median(timed.samples[j]))
                figures[SUITE_THROUGHPUT].append(median(timed.blocks[j]))
                if device == "cuda":
                    figures[EVENTS_LATENCY].append(median(witness.latency[j]))
                    figures[HOST_THROUGHPUT].append(median(witness.blocks[j]))

        def independent_half() -> None:
            for name in names:
                loop.settle(fns[name], loop.clock())  # as the suite's loop does after a switch
                latency, throughput = benchmark_figures(fns[name], threads, n, block[0])
                out[name][BENCHMARK_LATENCY].append(latency)
                out[name][BENCHMARK_THROUGHPUT].append(throughput)

        began, done, stopped = time.monotonic(), 0, ""
        while not stopped:
            halves = (suite_half, independent_half) if done % 2 == 0 else (independent_half, suite_half)
            for half in halves:
                half()
            done += 1
            stopped = rounds.stop(done, time.monotonic() - began, len(names))
    return out, time.monotonic() - began, stopped


def main(argv: list[str]) -> int:
    usage = "python -m suite.measure.crosscheck CELL RESULT DEVICE ROUNDS [SECONDS LEAST]"
    cell = child_cell(argv, len(argv) in (4, 6), usage)
    if cell is None:
        return 2
    device = argv[2]
    rounds = Rounds(int(argv[3]), *((float(argv[4]), int(argv[5])) if len(argv) == 6 else ()))
    print(f"crosscheck: {cell.label} | build {cell.build} | device {device} | {rounds}", flush=True)
    try:
        timings, seconds, stopped = crosscheck_rounds(cell, device, rounds)
        result: dict[str, Any] = {"status": "ok", "error": "", "timings": timings}
        result.update(malloc=allocator.in_effect(), rounds_s=round(seconds, 3), stopped=stopped)
    except Exception as exc:  # the parent reports it in the cell's line
        import traceback

        traceback.print_exc()
        result = {"status": "oom" if is_oom(exc) else "error", "error": one_line(describe_exception(exc))}
    write_result(Path(argv[1]), result)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
