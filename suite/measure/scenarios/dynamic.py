"""The `dynamic-batch` scenario: one process, one compiled model, several batch sizes in turn
(the cell's `served`: for the guide's sizes 1, 4, 16, then 1 again), under one `dynamic`
setting:

- `static`: torch.compile(dynamic=False): every new batch size compiles a new graph;
- `auto`: torch's default. From torch 2.1 a graph specialised to the first shape, then, when
  another shape comes, one graph with a symbolic batch dimension. torch 2.0.1 has no automatic
  dynamic shapes (its default is dynamic=False), so there `auto` compiles as `static` does;
- `marked`: torch's default plus torch._dynamo.mark_dynamic on dimension 0 of every input,
  before the first call at each size. torch 2.0.1 has no mark_dynamic: the cell is skipped.

At each batch size's first arrival: eager warm-up, an eager call, the first compiled call
(`compile_s` = its time - the eager call's: the compile paid when that size arrived), the graphs
dynamo compiled then (`recompiles`; the first size's are the first compile, not recompiles),
the compiled warm-up (peak memory), an accuracy check, and eager and compiled calls timed
interleaved (the usual latency columns and the paired speed-up). Back at the first size: one
eager call and one compiled call; graphs compiled then count as that size's recompiles.

torch specialises sizes 0 and 1: a graph compiled at batch size 1 serves 1 alone, marked or not,
and the symbolic graph comes with the next size (and covers 2 and up). `compile_note` says, per
row, what dynamo compiled and why (its guard failures, where the build records them).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.measure import accuracy_pass, cudagraphs
from suite.measure import cell as parts
from suite.measure.counters import dynamo_counts, guard_failures
from suite.measure.failures import describe_exception, is_oom
from suite.measure.faults import inject_fault
from suite.measure.memory import PeakMemory
from suite.measure.phases import Ledger
from suite.measure.provenance import matmul_fields
from suite.measure.timing import TimingLoop, synchronizer
from suite.results import one_line
from suite.spec.model import Cell


class Unsupported(Exception):
    """This build cannot compile the cell's setting; the message says why (-> status `skipped`)."""


def compile_options(setting: str) -> dict[str, Any]:
    """torch.compile's arguments for a `dynamic` setting: only `static` passes one."""
    return {"dynamic": False} if setting == "static" else {}


def check_supported(setting: str) -> str:
    """Raise Unsupported where this torch cannot run the setting; else a note on what the setting
    means in this build ("" when it means what it says)."""
    import torch
    import torch._dynamo

    if setting == "marked" and not hasattr(torch._dynamo, "mark_dynamic"):
        raise Unsupported(
            f"torch {torch.__version__} has no torch._dynamo.mark_dynamic (its only dynamic-shape switch "
            "is dynamic=True, every dimension of every input)"
        )
    if setting == "auto" and not getattr(torch._dynamo.config, "automatic_dynamic_shapes", False):
        return (
            f"torch {torch.__version__} has no automatic dynamic shapes (its default is dynamic=False): "
            "auto compiles as static does"
        )
    return ""


def resized(batch: dict[str, Any], first: int, size: int) -> dict[str, Any]:
    """The batch at another size: each tensor's rows for one image, repeated (the batch is one
    image repeated, and OwlViT's query rows are per image, so this is what make_batch gives)."""
    out = {}
    for key, value in batch.items():
        per_image = value.shape[0] // first
        out[key] = value[:per_image].repeat(size, *([1] * (value.dim() - 1)))
    return out


class _Sequence:
    """The process's state: the model, the compiled model, the counters between arrivals."""

    def __init__(self, cell: Cell, device: str) -> None:
        self.cell, self.device = cell, device
        self.model, self.first_batch, self.facts = parts.prepare(cell, device)
        self.facts = {**self.facts, **matmul_fields()}  # TF32 and matmul precision as timed
        self.compiled_model = parts.compile_model(self.model, cell.mode, **compile_options(cell.dynamic))
        self.loop = TimingLoop(synchronizer(device), cell.settings.warmup)
        self.batches: dict[int, dict[str, Any]] = {}
        self.first_breaks: int | None = None

    def batch(self, size: int) -> dict[str, Any]:
        """The batch at `size`, made (and its batch dimension marked, for `marked`) on first use."""
        if size not in self.batches:
            batch = resized(self.first_batch, self.cell.batch_sizes[0], size)
            if self.cell.dynamic == "marked":
                import torch._dynamo

                for tensor in batch.values():
                    torch._dynamo.mark_dynamic(tensor, 0)
            self.batches[size] = batch
        return self.batches[size]

    def calls(self, size: int) -> tuple[Callable[[], Any], Callable[[], Any]]:
        batch, model, compiled_model = self.batch(size), self.model, self.compiled_model

        def eager() -> Any:
            return model(**batch)

        def compiled() -> Any:
            return compiled_model(**batch)

        return eager, compiled

    def first_compiled(self, size: int) -> tuple[float, int, list[str], Ledger]:
        """(compile seconds, graphs compiled, guard failures, torch's accounting) of the first
        compiled call at `size` after an eager call there."""
        eager, compiled = self.calls(size)
        eager_ms, _ = self.loop.call(eager)
        _, graphs_before = dynamo_counts()
        failures_before = len(guard_failures())
        ledger = Ledger.start()
        first_ms, _ = self.loop.call(compiled)
        ledger.first_call_done()
        breaks, graphs_after = dynamo_counts()
        if self.first_breaks is None:
            self.first_breaks = breaks
        failures = guard_failures()[failures_before:]
        return max(0.0, first_ms - eager_ms) / 1000.0, graphs_after - graphs_before, failures, ledger

    def arrive(self, size: int, first: bool) -> dict[str, Any]:
        """A batch size's first arrival: its row's fields."""
        eager, compiled = self.calls(size)
        with PeakMemory(self.device) as eager_mem:
            self.loop.warm_up(eager, compiled=False)
        compile_s, graphs, failures, ledger = self.first_compiled(size)
        with PeakMemory(self.device) as mem:
            warmup = self.loop.warm_up(compiled, compiled=True)
        ledger.warm_up_done()  # CUDA graphs recorded at this size: in the calls after the first
        accuracy, _ = accuracy_pass.verdict(self.cell, self.model, self.batch(size), (eager, compiled))
        _, graphs_timed_from = dynamo_counts()
        eager_samples, samples = self.loop.interleaved([eager, compiled], self.cell.settings.iterations)
        _, graphs_end = dynamo_counts()
        counts = (self.first_breaks or 0, graphs_timed_from, graphs_end)
        row = parts.compiled_fields(eager_samples, samples, compile_s * 1000.0, counts, accuracy)
        row.update(parts.latency_fields(samples), peak_mem_mb=mem.peak_mb, warmup=warmup, **self.facts)
        # graphs compiled when this size arrived (none counted for the process's first compile)
        # and any while it was timed
        row["recompiles"] = (0 if first else graphs) + (graphs_end - graphs_timed_from)
        what = "first compile" if first else f"{graphs} graph(s) compiled"
        row["compile_note"] = f"at {size}: {what}" + (f" ({'; '.join(failures)})" if failures else "")
        # where this size's compile went (suite.measure.phases), and its CUDA graphs' cost
        row.update(ledger.fields(compile_s, self.device, self.cell.mode, graphs))
        row.update(
            cudagraphs.fields(self.device, self.cell.mode, ledger, eager_mem.reserved_mb, mem.reserved_mb)
        )
        return row

    def come_back(self, size: int, row: dict[str, Any]) -> None:
        """Back at a size served before: one eager and one compiled call; graphs compiled then
        are that size's recompiles too."""
        compile_s, graphs, failures, ledger = self.first_compiled(size)
        row["recompiles"] = int(row.get("recompiles") or 0) + graphs
        if row.get("cudagraph_records") is not None:  # a graph recorded again on the way back
            records, seconds = ledger.recordings()
            row["cudagraph_records"] += records
            row["cudagraph_record_s"] = (row.get("cudagraph_record_s") or 0.0) + seconds
        row["compile_note"] = (
            f"{row.get('compile_note', '')}; back at {size}: {graphs} graph(s) compiled in {compile_s:.2f} s"
            + (f" ({'; '.join(failures)})" if failures else "")
        )


def measure_sequence(cell: Cell, device: str) -> list[dict[str, Any]]:
    """One row's fields per batch size the cell serves, each with its own status: a size whose
    compile or calls fail gets that failure, and the sizes after it are still served."""
    import torch

    meaning = check_supported(cell.dynamic)
    if meaning:
        print(f"note: {meaning}", flush=True)
    state = _Sequence(cell, device)
    inject_fault(cell.model.name)  # test-only (suite.measure.faults): once, before any call
    rows: dict[int, dict[str, Any]] = {}
    with torch.no_grad():
        for i, size in enumerate(cell.served):
            print(f"batch size {size} ({'again' if size in rows else 'first arrival'})", flush=True)
            try:
                if size in rows:
                    if rows[size].get("status") == "ok":
                        state.come_back(size, rows[size])
                    continue
                rows[size] = {**state.arrive(size, first=i == 0), "status": "ok", "error": ""}
            except Exception as exc:  # this size failed; the next may not
                import traceback

                traceback.print_exc()
                status = "oom" if is_oom(exc) else "error"
                if size in rows:  # the return call failed: the row's figures stand, the failure is noted
                    rows[size]["compile_note"] += f"; back at {size}: {status} {describe_exception(exc)}"
                else:
                    rows[size] = {"status": status, "error": one_line(describe_exception(exc))}
            if size in rows and rows[size].get("status") == "ok":
                print(f"  {rows[size]['compile_note']}", flush=True)
    out = []
    for size, row in rows.items():
        if meaning and row.get("status") == "ok":
            row["compile_note"] = f"{meaning}; {row['compile_note']}"
        out.append({"batch_size": size, **row})
    return out
