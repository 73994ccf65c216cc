"""Measure one cell inside its own child process: `python -m suite.worker CELL RESULT DEVICE`.

The runner starts one of these per cell with a timeout, so memory figures and compile
caches belong to this cell alone, and a crash or hang costs only this cell. The result
(measurement columns + status) is written atomically as JSON to RESULT; anything the
process prints goes to the cell's log file, not the terminal.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from suite import inputs, lifeline, models, train
from suite.matrix import Cell
from suite.measure import PeakMemory, synchronizer, time_call, time_interleaved
from suite.results import one_line
from suite.stats import Speedup, Summary

# --- fault injection (tests): SUITE_FAULT=<kind>[:<model name>] -------------------------
FAULTS = ("raise", "oom", "hang", "abort", "segfault", "leak")


def inject_fault(model_name: str) -> None:
    """Fail on purpose, when the tests ask for it through SUITE_FAULT."""
    spec = os.environ.get("SUITE_FAULT", "")
    if not spec:
        return
    kind, _, target = spec.partition(":")
    if target and target.lower() != model_name.lower():
        return
    if kind == "raise":
        raise RuntimeError("injected fault: exception in forward")
    if kind == "oom":
        import torch

        error = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
        raise error("CUDA out of memory. Tried to allocate 20.00 GiB (injected fault)")
    if kind == "hang":
        while True:
            time.sleep(1)
    if kind == "abort":
        os.abort()
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "leak":  # a worker that spills secrets: print, raw fd 2, an exception message
        print(f"environment: {dict(os.environ)}", flush=True)
        os.write(2, f"HF_TOKEN on fd 2: {os.environ.get('HF_TOKEN', '')}\n".encode())
        raise RuntimeError(f"401 Unauthorized: token {os.environ.get('HF_TOKEN', '')} rejected")


# --- outputs and accuracy ---------------------------------------------------------------


def flatten_tensors(obj: Any) -> list[Any]:
    """Every floating-point tensor in a model output, in a stable order."""
    import torch

    if isinstance(obj, torch.Tensor):
        return [obj] if obj.is_floating_point() else []
    if isinstance(obj, dict) or hasattr(obj, "to_tuple"):
        items = obj.items() if isinstance(obj, dict) else zip(obj.keys(), obj.to_tuple(), strict=False)
        return [t for _, v in items for t in flatten_tensors(v)]
    if isinstance(obj, (list, tuple)):
        return [t for v in obj for t in flatten_tensors(v)]
    return []


def snapshot(obj: Any) -> list[Any]:
    """Copies of an output's tensors (CUDA-graph outputs are overwritten by the next replay)."""
    return [t.detach().float().clone() for t in flatten_tensors(obj)]


def compare(ref: list[Any], out: list[Any], tolerance: float) -> tuple[float, bool]:
    """(max abs diff, passed): each tensor must be within tolerance * max(1, max|ref|)."""
    import torch

    if len(ref) != len(out) or any(a.shape != b.shape for a, b in zip(ref, out, strict=False)):
        return float("inf"), False
    worst, passed = 0.0, True
    for a, b in zip(ref, out, strict=False):
        if a.numel() == 0:
            continue
        both_nan = torch.isnan(a) & torch.isnan(b)
        diff = torch.where(both_nan, torch.zeros_like(a), (a - b).abs())
        diff = torch.nan_to_num(diff, nan=float("inf"))
        d = float(diff.max())
        scale = max(1.0, float(torch.nan_to_num(a.abs(), nan=0.0).max()))
        worst = max(worst, d)
        passed = passed and d <= tolerance * scale
    return worst, passed


# --- dynamo counters (works from torch 2.0.1 on) ----------------------------------------


def dynamo_counts() -> tuple[int, int]:
    """(graph breaks seen so far, graphs compiled so far)."""
    from torch._dynamo.utils import counters

    return sum(counters["graph_break"].values()), int(counters["stats"]["unique_graphs"])


# --- the measurement --------------------------------------------------------------------


def is_oom(exc: BaseException) -> bool:
    import torch

    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # dynamo wraps the real error
        seen.add(id(e))
        if isinstance(e, MemoryError) or (oom_type is not None and isinstance(e, oom_type)):
            return True
        text = str(e).lower()
        if "out of memory" in text or "cublas_status_alloc_failed" in text:
            return True
        e = e.__cause__ or e.__context__
    return False


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else ""
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def describe_exception(exc: BaseException) -> str:
    """`Type: first line`, plus the root cause when the exception wraps one: dynamo raises
    bare wrappers (`InternalTorchDynamoError`, `BackendCompilerFailed`) whose cause is the
    only part that says what went wrong."""
    reason = _first_line(exc)
    root, seen = exc, {id(exc)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    if root is not exc:
        reason += f" (cause: {_first_line(root)})"
    return reason


# --- row fields shared by every scenario ----------------------------------------------------


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
    accuracy: tuple[float, bool],
) -> dict[str, Any]:
    """The columns only a compiled cell fills: paired speed-up (interleaved samples), compile
    time, dynamo's counts (graph breaks, graphs after the first call, graphs at the end) and
    the accuracy check (max |diff|, within tolerance)."""
    speed = Speedup.of(eager, compiled)
    breaks, after_first, at_end = graphs
    max_diff, passed = accuracy
    return {
        "eager_median_ms": Summary.of(eager).median,
        "speedup": speed.ratio,
        "speedup_ci95_low": speed.ci95_low,
        "speedup_ci95_high": speed.ci95_high,
        "compile_s": max(0.0, compile_ms) / 1000,
        "graph_breaks": breaks,
        "recompiles": at_end - after_first,
        "max_abs_diff": max_diff,
        "accuracy": "pass" if passed else "fail",
    }


def prepare(cell: Cell, device: str) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """(model on device, input batch on device, facts for the row)."""
    import torch

    torch.manual_seed(0)
    s = cell.settings
    loaded = models.load(cell.model, s)
    dtype = getattr(torch, s.dtype)
    model = loaded.model.to(device=device, dtype=dtype).eval()
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
    batch = {
        k: v.to(device=device, dtype=dtype if v.is_floating_point() else v.dtype) for k, v in batch.items()
    }
    facts = {"params_m": loaded.params_m, "input_source": source}
    return model, batch, facts


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


ACCURACY_SEED = 4321  # the RNG state both steps of the training accuracy check start from


def measure_train(cell: Cell, device: str) -> dict[str, Any]:
    """One training step per timed call (suite/train.py): forward + loss + backward + AdamW step.

    The inference contract, step for step: warm-up, the one timing loop, eager steps interleaved
    with compiled ones for the paired speed-up, compile time = first compiled step - an eager
    step, dynamo counters, and peak memory over warm-up steps (weights, activations, gradients
    and the optimizer's state all live then). `torch.compile` compiles the model (its forward,
    the loss inside it, and through AOTAutograd the backward); the optimizer step stays eager,
    as it is with `Trainer(torch_compile=True)`. Accuracy: the first compiled step's loss
    against the eager loss at the same weights, inputs and dropout masks (same seed, and
    inductor's `fallback_random` so compiled dropout draws eager's masks).
    """
    import torch

    s = cell.settings
    model, batch, facts = prepare(cell, device)
    model.train()
    labels = train.make_labels(model, cell.model.task, batch["pixel_values"])
    optimizer = train.make_optimizer(model)
    sync = synchronizer(device)
    inject_fault(cell.model.name)
    eager = train.TrainStep(model, model, batch, labels, optimizer)

    def warm_up_eager() -> None:
        try:
            for _ in range(max(1, s.warmup)):  # the first step also allocates AdamW's state
                eager()
        except Exception as exc:
            train.explain(exc, cell.batch_size)  # a known "cannot train like this": skipped
            raise

    row: dict[str, Any] = dict(facts)
    if cell.mode == "eager":
        with PeakMemory(device) as mem:
            warm_up_eager()
        (samples,) = time_interleaved([eager], s.iterations, sync)
    else:
        warm_up_eager()
        eager_call_ms, _ = time_call(eager, sync)
        train.set_fallback_random()
        compiled_model = torch.compile(model, mode=None if cell.mode == "default" else cell.mode)
        compiled = train.TrainStep(compiled_model, model, batch, labels, optimizer)
        torch.manual_seed(ACCURACY_SEED + 1)
        with torch.no_grad():  # is the step random (dropout)? then only the seed makes it comparable
            other_seed_loss = train.loss_of(model(**batch, **labels)).float()
        torch.manual_seed(ACCURACY_SEED)
        ref_loss, ref_grads = train.eager_loss_and_grads(model, batch, labels)
        seen: dict[str, list[Any]] = {}
        compiled.on_grads = lambda m: seen.update(grads=train.grad_snapshot(m))
        torch.manual_seed(ACCURACY_SEED)
        first_ms, first_loss = time_call(compiled, sync)
        compiled.on_grads = None
        breaks, graphs_after_first = dynamo_counts()
        max_diff, passed = compare([ref_loss], [first_loss.float()], s.tolerance)
        grad_diff, grads_ok = compare(ref_grads, seen["grads"], s.tolerance)
        randomness = "random" if bool(other_seed_loss != ref_loss) else "deterministic"
        print(
            f"accuracy: loss eager {float(ref_loss):.6g} compiled {float(first_loss):.6g} "
            f"(|diff| {max_diff:.3g}); gradients max |diff| {grad_diff:.3g} "
            f"({'within' if grads_ok else 'beyond'} tolerance); eager loss with another seed "
            f"{float(other_seed_loss):.6g} (the step is {randomness})",
            flush=True,
        )
        del ref_grads, seen  # copies of every gradient: not part of a training step's memory
        with PeakMemory(device) as mem:
            for _ in range(max(3, s.warmup)):
                compiled()
        eager_samples, samples = time_interleaved([eager, compiled], s.iterations, sync)
        _, graphs_end = dynamo_counts()
        graphs = (breaks, graphs_after_first, graphs_end)
        row.update(
            compiled_fields(eager_samples, samples, first_ms - eager_call_ms, graphs, (max_diff, passed))
        )
    row.update(latency_fields(samples), peak_mem_mb=mem.peak_mb)
    return row


SCENARIOS: dict[str, Callable[[Cell, str], dict[str, Any]]] = {
    "inference": measure_inference,
    "train": measure_train,
}


def run(cell: Cell, device: str) -> dict[str, Any]:
    """Status + measurement for one cell; never raises for a failure inside the cell."""
    import torch

    row: dict[str, Any] = {"torch_threads": torch.get_num_threads()}
    measure = SCENARIOS.get(cell.scenario)
    if measure is None:
        return {
            **row,
            "status": "skipped",
            "error": f"scenario {cell.scenario!r} is not supported by this suite version",
        }
    try:
        row.update(measure(cell, device))
        row["status"], row["error"] = "ok", ""
    except train.Unsupported as exc:  # no such measurement for this model: say why
        traceback.print_exc()
        return {**row, "status": "skipped", "error": one_line(str(exc))}
    except Exception as exc:  # the sweep goes on: record why, in one line
        traceback.print_exc()
        oom = is_oom(exc)
        reason = describe_exception(exc)
        row = {
            "torch_threads": row["torch_threads"],
            "status": "oom" if oom else "error",
            "error": one_line(reason),
        }
    return row


def write_result(path: Path, row: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row, default=str))
    tmp.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m suite.worker CELL_JSON RESULT_JSON DEVICE", file=sys.stderr)
        return 2
    lifeline.die_with_parent()  # never outlive the runner (it may be killed mid-cell)
    cell = Cell.from_json(Path(argv[0]).read_text())
    device = argv[2]
    print(f"cell: {cell.label} | build {cell.build} | device {device}", flush=True)
    write_result(Path(argv[1]), run(cell, device))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
