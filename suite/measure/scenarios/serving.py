"""The `serving` scenario: how many images a second the cell's function serves with its p99
latency, queueing included, under a target (docs/serving.md).

The cell is first measured as an inference cell at batch size 1 (its row's latency columns, eager
beside it for a compiled mode). Then, in the same process: every batch size the dynamic batcher
calls the model at (suite.measure.loadgen.buckets) is warmed up (a compiled model compiles them
here); batch-1 calls of eager and of the served function are timed, interleaved (the tail); the
target is fixed (the `serving.p99_ms` setting, else SERVING_TARGET_MULTIPLE x eager's batch-1 p99:
a multiple of a median is below a loaded machine's own tail, where no rate can meet it); a lone
request's p99 (max_wait + the served function's batch-1 p99: the floor no rate goes below) is
checked against it; and loadgen's search runs real model calls behind a virtual clock of Poisson
arrivals. The row gets the highest rate that met the target and that trial's figures; when none
did, the floor and the lowest rate tried with its p99, so the table says why.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from suite.measure import loadgen
from suite.measure.counters import dynamo_counts
from suite.measure.scenarios.dynamic import resized
from suite.measure.scenarios.inference import Inference
from suite.measure.timing import TimingLoop
from suite.spec.settings import SERVING_TARGET_MULTIPLE
from suite.stats import median

SERVICE_PROBES = 3  # timed calls per batch size for the capacity estimate (after the warm-up)
TAIL_PROBES = 100  # batch-1 calls of each function for its p99 (the target's, the floor's)
TAIL_MIN_PROBES = 20  # ... at least, whatever the time budget says
TAIL_BUDGET_FRACTION = 0.1  # of max_timing_s: the tail's calls stop early past it


class Serving(Inference):
    """Inference at batch size 1, then the serving search on the same function."""

    def extra_fields(self, loop: TimingLoop, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        model = self.model if compiled is None else self.compiled_model
        return {**serve_search(self, loop, model), **super().extra_fields(loop, compiled)}


def _service(loop: TimingLoop, model: Any, batches: dict[int, dict[str, Any]]) -> Callable[[int], float]:
    sizes = tuple(batches)

    def serve(n: int) -> float:
        batch = batches[loadgen.bucket_of(n, sizes)]
        ms, _ = loop.call(lambda: model(**batch))
        return ms

    return serve


@dataclass(frozen=True)
class Tail:
    """Batch-1 calls timed before the search: eager's p99 (the default target's base; None with a
    fixed target) and the served function's (the floor's), and how many calls of each."""

    eager_p99_ms: float | None
    served_p99_ms: float
    calls: int
    slowdown: float = 1.0  # the served function's batch-1 mean / median: what load adds on average


def measure_tail(loop: TimingLoop, fns: list[Callable[[], Any]], budget_s: float) -> list[list[float]]:
    """Each function's call times (ms): up to TAIL_PROBES batch-1 calls of each, interleaved so
    that the machine's load falls on all alike; at least TAIL_MIN_PROBES, fewer than TAIL_PROBES
    once `budget_s` is spent."""
    samples: list[list[float]] = [[] for _ in fns]
    began = time.monotonic()
    while len(samples[0]) < TAIL_PROBES:
        if len(samples[0]) >= TAIL_MIN_PROBES and time.monotonic() - began > budget_s:
            break
        for j, fn in enumerate(fns):
            samples[j].append(loop.call(fn)[0])
    return samples


def tail_of(scenario: Serving, loop: TimingLoop, served: Callable[[], Any]) -> Tail:
    """The tail the target and the floor need: eager's only for the default target; the served
    function's always (an eager cell serves eager: one set of calls)."""
    cell = scenario.cell
    eager_too = cell.settings.serving.p99_ms is None and cell.mode != "eager"
    fns = [scenario.eager, served] if eager_too else [served]
    samples = measure_tail(loop, fns, TAIL_BUDGET_FRACTION * cell.settings.max_timing_s)
    p99s = [loadgen.percentile(x, loadgen.QUANTILE) for x in samples]
    served_ms = samples[-1]
    slowdown = max(1.0, (sum(served_ms) / len(served_ms)) / median(served_ms))
    fixed = cell.settings.serving.p99_ms is not None
    return Tail(None if fixed else p99s[0], p99s[-1], len(served_ms), slowdown)


def _target(scenario: Serving, tail: Tail) -> tuple[float, str]:
    """(target ms, how it was set)."""
    if tail.eager_p99_ms is None:  # set: eager's tail was not needed
        return float(scenario.cell.settings.serving.p99_ms or 0.0), "serving.p99_ms"
    return (
        SERVING_TARGET_MULTIPLE * tail.eager_p99_ms,
        f"{SERVING_TARGET_MULTIPLE:g} x eager batch-1 p99 {tail.eager_p99_ms:.3g} ms",
    )


def floor_ms(cfg: Any, tail: Tail) -> float:
    """A lone request's p99: it waits max_wait for company (unless max_batch is 1), then a batch-1
    call. No arrival rate gives a lower p99."""
    return (cfg.max_wait_ms if cfg.max_batch > 1 else 0.0) + tail.served_p99_ms


def serve_search(scenario: Serving, loop: TimingLoop, model: Any) -> dict[str, Any]:
    """The serving columns of one cell: warm-up of the batcher's batch sizes, target, search."""
    cell = scenario.cell
    cfg = cell.settings.serving
    sizes = loadgen.buckets(cfg.max_batch)
    batches = {b: resized(scenario.batch, cell.batch_size, b) for b in sizes}
    _, graphs_before = dynamo_counts()
    for b in sizes:  # a compiled model compiles each batch size here, before any trial
        loop.warm_up(lambda b=b: model(**batches[b]), compiled=cell.mode != "eager")
    _, graphs_after = dynamo_counts()
    serve = _service(loop, model, batches)
    tail = tail_of(scenario, loop, lambda: model(**batches[1]))
    # a queue fills at the mean service time: on a loaded machine far above the median
    capacity = (
        max(b * 1000.0 / median([serve(b) for _ in range(SERVICE_PROBES)]) for b in sizes) / tail.slowdown
    )
    target, how = _target(scenario, tail)
    floor = floor_ms(cfg, tail)
    print(
        f"serving: target {target:.4g} ms ({how}), a lone request's p99 {floor:.4g} ms "
        f"({tail.calls} batch-1 calls, mean / median {tail.slowdown:.3g}), "
        f"capacity estimate {capacity:.4g}/s",
        flush=True,
    )
    batcher = loadgen.Batcher(cfg.max_batch, cfg.max_wait_ms, cfg.queue)
    load = loadgen.Load(cfg.requests, cfg.burst, budget_s=cell.settings.max_timing_s)
    if floor > target:  # no rate can pass: say so instead of spending the budget halving rates
        found = loadgen.Search(target, note=f"target unreachable: a lone request's p99 is {floor:.4g} ms")
    else:
        found = loadgen.search(serve, batcher, target, load, capacity)
    for trial in found.trials:
        print(f"  trial {trial.summary()}", flush=True)
    if found.note:
        print(f"  {found.note}", flush=True)
    row = fields_of(found, cfg_text(cfg, sizes), how, graphs_after - graphs_before)
    return {**row, "serving_floor_ms": floor}


def cfg_text(cfg: Any, sizes: tuple[int, ...]) -> str:
    burst = f", bursts of {cfg.burst}" if cfg.burst > 1 else ""
    return (
        f"max_batch {cfg.max_batch} (sizes {'/'.join(map(str, sizes))}), max_wait {cfg.max_wait_ms:g} ms, "
        f"queue {cfg.queue}{burst}"
    )


def fields_of(found: loadgen.Search, batcher: str, how: str, graphs: int) -> dict[str, Any]:
    """The row's serving columns from a search."""
    best = found.best
    failed = [t.rate_per_s for t in found.trials if not t.passed]
    above = [r for r in failed if best is None or r > best.rate_per_s]
    bracket = f"failed at {min(above):.4g}/s" if above else ("no rate failed" if found.trials else "none run")
    compiled = f"; {graphs} graph(s) compiled for the batch sizes" if graphs else ""
    extra = f"; {found.note}" if found.note else ""
    row: dict[str, Any] = {
        "serving_target_ms": found.target_ms,
        "serving_trials": len(found.trials),
        "serving_rate_per_s": 0.0 if best is None else best.rate_per_s,
        # the bracket's top: empty where a rate met the target and none above it was tried (a lower bound)
        "serving_failed_rate_per_s": min(above) if above and best is not None else None,
        "serving_note": f"target {how}; {batcher}; {len(found.trials)} trials, {bracket}{compiled}{extra}",
    }
    if best is None and found.trials:  # none met it: the lowest rate tried, and how far off it was
        lowest = min(found.trials, key=lambda t: t.rate_per_s)
        row.update(
            serving_lowest_rate_per_s=lowest.rate_per_s,
            serving_lowest_p99_ms=lowest.percentile(loadgen.QUANTILE),
        )
    if best is not None:
        row.update(
            serving_p50_ms=best.percentile(0.5),
            serving_p90_ms=best.percentile(0.9),
            serving_p99_ms=best.percentile(loadgen.QUANTILE),
            serving_throughput_per_s=best.throughput_per_s,
            serving_dropped=best.dropped,
            serving_requests=best.finished,
            serving_mean_batch=best.mean_batch,
        )
    return row
