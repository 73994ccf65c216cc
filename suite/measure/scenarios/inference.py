"""The `inference` scenario: the guide's forward pass under `torch.no_grad()`."""

from __future__ import annotations

from typing import Any

from suite.measure.accuracy import compare, snapshot
from suite.measure.cell import compiled_fields, latency_fields, prepare
from suite.measure.counters import dynamo_counts
from suite.measure.faults import inject_fault
from suite.measure.memory import PeakMemory
from suite.measure.timing import synchronizer, time_call, time_interleaved
from suite.spec.model import Cell


def measure_inference(cell: Cell, device: str) -> dict[str, Any]:
    import torch

    s = cell.settings
    model, batch, facts = prepare(cell, device)
    sync = synchronizer(device)

    inject_fault(cell.model.name)

    def eager() -> Any:
        return model(**batch)

    row: dict[str, Any] = dict(facts)
    with torch.no_grad():
        if cell.mode == "eager":
            with PeakMemory(device) as mem:
                for _ in range(max(1, s.warmup)):
                    eager()
            (samples,) = time_interleaved([eager], s.iterations, sync)
        else:
            for _ in range(max(1, s.warmup)):
                eager()
            eager_call_ms, _ = time_call(eager, sync)
            compiled_model = torch.compile(model, mode=None if cell.mode == "default" else cell.mode)

            def compiled() -> Any:
                return compiled_model(**batch)

            first_ms, _ = time_call(compiled, sync)
            breaks, graphs_after_first = dynamo_counts()
            # CUDA-graph trees warm up on the 1st call after compiling, record on the 2nd,
            # replay from the 3rd: at least 3 warm-up calls before anything is timed.
            with PeakMemory(device) as mem:
                for _ in range(max(3, s.warmup)):
                    compiled()
            ref = snapshot(eager())
            out = snapshot(compiled())
            max_diff, passed = compare(ref, out, s.tolerance)
            eager_samples, samples = time_interleaved([eager, compiled], s.iterations, sync)
            _, graphs_end = dynamo_counts()
            graphs = (breaks, graphs_after_first, graphs_end)
            row.update(
                compiled_fields(eager_samples, samples, first_ms - eager_call_ms, graphs, (max_diff, passed))
            )
    row.update(latency_fields(samples), peak_mem_mb=mem.peak_mb)
    return row
