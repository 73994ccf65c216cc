"""The `train` scenario: one optimizer step per timed call (suite.measure.training)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.measure import training as train
from suite.measure.accuracy import compare
from suite.measure.accuracy_rule import Verdict
from suite.measure.cell import compile_model
from suite.measure.scenarios.base import Scenario
from suite.measure.timing import TimingLoop
from suite.results import FAIL, PASS
from suite.spec.model import Cell

ACCURACY_SEED = 4321  # the RNG state both steps of the training accuracy check start from
# a training step is judged by its own check, not the float64 rule (docs/accuracy.md)
TRAIN_CHECK = "the first step's loss within tolerance x max(1, |eager's|) of eager's (scale-relative)"


class Train(Scenario):
    """One training step per timed call (suite/measure/training.py): forward + loss + backward +
    AdamW step.

    The inference contract, step for step (suite.measure.scenarios.base): warm-up, the one
    timing loop, eager steps interleaved with compiled ones for the paired speed-up, compile
    time = first compiled step - an eager step, dynamo counters, and peak memory over warm-up
    steps (weights, activations, gradients and the optimizer's state all live then).
    `torch.compile` compiles the model (its forward, the loss inside it, and through
    AOTAutograd the backward); the optimizer step stays eager, as it is with
    `Trainer(torch_compile=True)`. Accuracy: the first compiled step's loss against the eager
    loss at the same weights, inputs and dropout masks (same seed, and inductor's
    `fallback_random` so compiled dropout draws eager's masks).
    """

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        super().__init__(cell, model, batch)
        model.train()
        self.labels = train.make_labels(model, cell.model.task, batch["pixel_values"])
        self.optimizer = train.make_optimizer(model)
        self.eager = train.TrainStep(model, model, batch, self.labels, self.optimizer)
        self.checked: Verdict | None = None  # the first compiled step's check

    def warm_up_eager(self, loop: TimingLoop) -> int:
        try:  # the first step also allocates AdamW's state
            return super().warm_up_eager(loop)
        except Exception as exc:
            train.explain(exc, self.cell.batch_size)  # a known "cannot train like this": skipped
            raise

    def compile(self) -> Callable[[], Any]:
        train.set_fallback_random()
        compiled_model = compile_model(self.model, self.cell.mode)
        return train.TrainStep(compiled_model, self.model, self.batch, self.labels, self.optimizer)

    def first_compiled_call(self, loop: TimingLoop, compiled: Callable[[], Any]) -> float:
        """The first compiled step, from a known seed, checked against an eager step's loss and
        gradients from the same seed at the same weights (the check's copies are dropped before
        the warm-up, whose peak memory is the row's)."""
        import torch

        assert isinstance(compiled, train.TrainStep)
        model, batch, labels = self.model, self.batch, self.labels
        torch.manual_seed(ACCURACY_SEED + 1)
        with torch.no_grad():  # is the step random (dropout)? then only the seed makes it comparable
            other_seed_loss = train.loss_of(model(**batch, **labels)).float()
        torch.manual_seed(ACCURACY_SEED)
        ref_loss, ref_grads = train.eager_loss_and_grads(model, batch, labels)
        seen: dict[str, list[Any]] = {}
        compiled.on_grads = lambda m: seen.update(grads=train.grad_snapshot(m))
        torch.manual_seed(ACCURACY_SEED)
        first_ms, first_loss = loop.call(compiled)
        compiled.on_grads = None
        tolerance = self.cell.settings.tolerance
        max_diff, passed = compare([ref_loss], [first_loss.float()], tolerance)
        grad_diff, grads_ok = compare(ref_grads, seen["grads"], tolerance)
        randomness = "random" if bool(other_seed_loss != ref_loss) else "deterministic"
        print(
            f"accuracy: loss eager {float(ref_loss):.6g} compiled {float(first_loss):.6g} "
            f"(|diff| {max_diff:.3g}); gradients max |diff| {grad_diff:.3g} "
            f"({'within' if grads_ok else 'beyond'} tolerance); eager loss with another seed "
            f"{float(other_seed_loss):.6g} (the step is {randomness})",
            flush=True,
        )
        self.checked = Verdict(
            PASS if passed else FAIL,
            max_diff,
            notes=(f"{TRAIN_CHECK}; gradients max |diff| {grad_diff:.3g}",),
            reference="float32 eager step, same seed",
        )
        return first_ms

    def accuracy(self, compiled: Callable[[], Any]) -> Verdict:
        assert self.checked is not None, "the first compiled step carries the check"
        return self.checked
