"""The `serving` scenario: how many images a second the cell's function serves with its p99
latency, queueing included, under a target (docs/serving.md).

The cell is first measured as an inference cell at batch size 1 (its row's latency columns, eager
beside it for a compiled mode). Then, in the same process: every batch size the dynamic batcher
calls the model at (suite.measure.loadgen.buckets) is warmed up (a compiled model compiles them
here), the target is fixed (the `serving.p99_ms` setting, else SERVING_TARGET_MULTIPLE x eager's
batch-1 median measured here), and loadgen's search runs real model calls behind a virtual clock
of Poisson arrivals. The row gets the highest rate that met the target and that trial's figures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.measure import loadgen
from suite.measure.counters import dynamo_counts
from suite.measure.scenarios.dynamic import resized
from suite.measure.scenarios.inference import Inference
from suite.measure.timing import TimingLoop
from suite.spec.settings import SERVING_TARGET_MULTIPLE
from suite.stats import median

SERVICE_PROBES = 3  # timed calls per batch size for the capacity estimate (after the warm-up)
EAGER_PROBES = 11  # eager batch-1 calls for the default target


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


def _target(scenario: Serving, loop: TimingLoop) -> tuple[float, str]:
    """(target ms, how it was set)."""
    fixed = scenario.cell.settings.serving.p99_ms
    if fixed is not None:
        return float(fixed), "serving.p99_ms"
    eager = median([loop.call(scenario.eager)[0] for _ in range(EAGER_PROBES)])
    return (
        SERVING_TARGET_MULTIPLE * eager,
        f"{SERVING_TARGET_MULTIPLE:g} x eager batch-1 median {eager:.3g} ms",
    )


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
    capacity = max(b * 1000.0 / median([serve(b) for _ in range(SERVICE_PROBES)]) for b in sizes)
    target, how = _target(scenario, loop)
    batcher = loadgen.Batcher(cfg.max_batch, cfg.max_wait_ms, cfg.queue)
    load = loadgen.Load(cfg.requests, cfg.burst, budget_s=cell.settings.max_timing_s)
    print(f"serving: target {target:.4g} ms ({how}), capacity estimate {capacity:.4g}/s", flush=True)
    found = loadgen.search(serve, batcher, target, load, capacity)
    for trial in found.trials:
        print(f"  trial {trial.summary()}", flush=True)
    return fields_of(found, cfg_text(cfg, sizes), how, graphs_after - graphs_before)


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
    bracket = f"failed at {min(above):.4g}/s" if above else "no rate failed"
    compiled = f"; {graphs} graph(s) compiled for the batch sizes" if graphs else ""
    extra = f"; {found.note}" if found.note else ""
    row: dict[str, Any] = {
        "serving_target_ms": found.target_ms,
        "serving_trials": len(found.trials),
        "serving_rate_per_s": 0.0 if best is None else best.rate_per_s,
        "serving_note": f"target {how}; {batcher}; {len(found.trials)} trials, {bracket}{compiled}{extra}",
    }
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
