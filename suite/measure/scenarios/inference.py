"""The `inference` scenario: the guide's forward pass under `torch.no_grad()`."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from suite.measure import aot
from suite.measure.accuracy import judge, snapshot
from suite.measure.cell import compile_model
from suite.measure.scenarios.base import Scenario
from suite.spec.model import Cell


class Inference(Scenario):
    """One forward of the batch; accuracy: one more call of each function after the compiled
    warm-up, every floating-point output compared (so CUDA-graph replays are what is checked)."""

    def __init__(self, cell: Cell, model: Any, batch: dict[str, Any]) -> None:
        super().__init__(cell, model, batch)
        if cell.mode == aot.AOT_MODE:
            aot.check_supported()  # before any call: a build without it is skipped at once

        def eager() -> Any:
            return model(**batch)

        self.eager = eager

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
        """An aot-inductor cell's package figures (suite.measure.aot); none for the other modes."""
        return aot.fields(self.compiled_model)

    def accuracy(self, compiled: Callable[[], Any]) -> tuple[float, bool | None]:
        ref = snapshot(self.eager())
        out = snapshot(compiled())
        judged = judge(ref, out, self.cell.settings.tolerance)
        self.accuracy_note = judged.note
        return judged.max_diff, judged.passed
