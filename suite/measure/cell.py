"""The pieces every scenario's measurement is made of: the model and batch on the device, the
model compiled in the cell's mode, and the row's latency and compiled-cell fields. The order
they are used in is suite.measure.scenarios.base's."""

from __future__ import annotations

import os
from typing import Any

from suite.measure import inputs, models
from suite.measure.accuracy_pass import strict
from suite.measure.accuracy_rule import Verdict
from suite.measure.aot import AOT_MODE, AotModel
from suite.measure.random_init import calibrate
from suite.spec.model import Cell
from suite.spec.vocab import weights_dtype
from suite.stats import Speedup, Summary, breakeven_calls


def latency_fields(samples: list[float]) -> dict[str, Any]:
    """The per-iteration latency statistics of the timed calls (DESIGN.md's CSV columns)."""
    summary = Summary.of(samples)
    return {
        "iterations": summary.n,
        "mean_ms": summary.mean,
        "median_ms": summary.median,
        "p10_ms": summary.p10,
        "p90_ms": summary.p90,
        "std_ms": summary.std,
        "min_ms": summary.min,
        "ci95_low_ms": summary.ci95_low,
        "ci95_high_ms": summary.ci95_high,
    }


def compiled_fields(
    eager: list[float],
    compiled: list[float],
    compile_ms: float,
    graphs: tuple[int, int, int],
    accuracy: Verdict,
) -> dict[str, Any]:
    """The columns only a compiled cell fills: paired speed-up (interleaved samples), compile
    time, dynamo's counts (graph breaks, graphs after the first call, graphs at the end) and
    the accuracy verdict's columns (suite.measure.accuracy_rule)."""
    speed = Speedup.of(eager, compiled)
    breaks, after_first, at_end = graphs
    paired_eager = Summary.of(eager)
    eager_median, compiled_median = paired_eager.median, Summary.of(compiled).median
    compile_s = max(0.0, compile_ms) / 1000
    return {
        "breakeven_calls": breakeven_calls(compile_s, eager_median, compiled_median),
        "eager_median_ms": eager_median,
        "eager_ci95_low_ms": paired_eager.ci95_low,
        "eager_ci95_high_ms": paired_eager.ci95_high,
        "speedup": speed.ratio,
        "speedup_ci95_low": speed.ci95_low,
        "speedup_ci95_high": speed.ci95_high,
        "compile_s": compile_s,
        "graph_breaks": breaks,
        "recompiles": at_end - after_first,
        **accuracy.fields(),
    }


def compile_model(model: Any, mode: str, **options: Any) -> Any:
    """`torch.compile` in a cell's mode (the matrix's `default` is torch's `mode=None`); `options`
    go to torch.compile as they are (the dynamic-batch scenario's `dynamic=False`)."""
    import torch

    if mode == AOT_MODE:  # exported and packaged ahead of time on its first call (suite.measure.aot)
        return AotModel(model)
    return torch.compile(model, mode=None if mode == "default" else mode, **options)


def prepare(cell: Cell, device: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(model on device, input batch on device, facts for the row). Random weights are seeded,
    then scaled by one calibration pass in float32 on the device (suite.measure.random_init),
    before the model takes the cell's dtype."""
    import torch

    torch.manual_seed(0)
    s = cell.settings
    loaded = models.load(cell.model, s)
    dtype = getattr(torch, weights_dtype(s.dtype))  # an autocast cell keeps float32 weights and inputs
    model = loaded.model.to(device=device).eval()
    offline = s.weights == "random" or os.environ.get("HF_HUB_OFFLINE") == "1"
    image, source = inputs.load_image(s.image, offline=offline)
    text_cfg = getattr(model.config, "text_config", None)
    batch = inputs.make_batch(
        loaded.processor,
        image,
        cell.batch_size,
        cell.model.text_queries,
        text_offline=loaded.tokenizer_offline,
        vocab_size=getattr(text_cfg, "vocab_size", 49408),
    )
    batch = {k: v.to(device=device) for k, v in batch.items()}
    if s.weights == "random":
        with strict(device, replays_graphs=False):  # the same weights in every process on the device
            calibrate(model, batch)
    model = model.to(dtype=dtype)
    batch = {k: v.to(dtype=dtype) if v.is_floating_point() else v for k, v in batch.items()}
    facts = {"params_m": loaded.params_m, "input_source": source}
    return model, batch, facts
