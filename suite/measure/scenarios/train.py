"""The `train` scenario: one optimizer step per timed call (suite.measure.training)."""

from __future__ import annotations

from typing import Any

from suite.measure import training as train
from suite.measure.accuracy import compare
from suite.measure.cell import compiled_fields, latency_fields, prepare
from suite.measure.counters import dynamo_counts
from suite.measure.faults import inject_fault
from suite.measure.memory import PeakMemory
from suite.measure.timing import synchronizer, time_call, time_interleaved
from suite.spec.model import Cell

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
