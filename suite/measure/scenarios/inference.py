"""The `inference` scenario: the guide's forward pass under `torch.no_grad()`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from suite.measure import accuracy_pass, aot, models, parity
from suite.measure.accuracy_rule import Verdict
from suite.measure.cell import compile_model
from suite.measure.scenarios.base import Scenario
from suite.results import one_line
from suite.spec.model import Cell


class Inference(Scenario):
    """One forward of the batch; accuracy: the float64 rule's pass after the compiled warm-up
    (suite.measure.accuracy_pass: so CUDA-graph replays are what is checked), and the task's
    answers of compiled against eager on the same input (`parity_*`, suite.measure.parity)."""

    task_agreement = True  # the precision scenario's parity (against float32 eager) replaces it

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        super().__init__(cell, model, batch)
        if cell.mode == aot.AOT_MODE:
            aot.check_supported()  # before any call: a build without it is skipped at once

        def eager() -> Any:
            return model(**batch)

        self.eager = eager
        self.agreement: dict[str, Any] = {}

    def grad_mode(self) -> contextlib.AbstractContextManager[Any]:
        import torch

        return torch.no_grad()

    compiled_model: Any = None

    def compile(self) -> Callable[[], Any]:
        compiled_model = self.compiled_model = compile_model(self.model, self.cell.mode)
        batch = self.batch

        def compiled() -> Any:
            return compiled_model(**batch)

        return compiled

    def extra_fields(self, loop: Any, compiled: Callable[[], Any] | None) -> dict[str, Any]:
        """An aot-inductor cell's package figures (suite.measure.aot); none for the other modes;
        a compiled row's task agreement (measured in its accuracy pass)."""
        return {**aot.fields(self.compiled_model), **self.agreement}

    def accuracy(self, compiled: Callable[[], Any]) -> Verdict:
        answers = self._answers() if self.task_agreement else None
        verdict, ran = accuracy_pass.verdict(
            self.cell, self.model, self.batch, (self.eager, compiled), answers
        )
        if answers is not None:
            self.agreement = self._agreement(ran)
        return verdict

    def _answers(self) -> Callable[[Any], Any]:
        """What the task returns for an output (suite.measure.parity.answers); an exception is
        kept as the answer, so the row says why it has no agreement."""
        processor, _ = models.build_processor(self.cell.model, self.cell.settings)
        task = self.cell.model.task

        def answers(out: Any) -> Any:
            try:
                return parity.answers(task, processor, out)
            except Exception as exc:  # a processor without the task's post-processing
                return exc

        return answers

    def _agreement(self, ran: accuracy_pass.Ran) -> dict[str, Any]:
        """The parity columns: compiled's answers against eager's on the row's input."""
        ref, out = ran.eager_kept, ran.compiled_kept
        for kept in (ref, out):
            if isinstance(kept, Exception):
                return {"parity_note": one_line(f"no task answers: {type(kept).__name__}: {kept}", 200)}
        diffs = parity.scaled_diff(ran.outputs.eager, ran.outputs.compiled)
        task, images = self.cell.model.task, len(ref)
        judged = parity.agreement(task, ref, out, diffs, parity.logit_rows(task, ran.outputs.eager, images))
        fields = judged.fields(self.cell.settings)
        note = f"compiled against eager ({self.cell.settings.dtype}) on the row's {images} image(s)"
        tie = judged.tie_note(self.cell.settings)
        fields["parity_note"] = f"{note}; {tie}" if tie else note
        return fields
