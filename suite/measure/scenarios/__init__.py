"""The scenarios a cell can measure, by name: each a function (cell, device) -> row fields."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.measure.scenarios.inference import measure_inference
from suite.measure.scenarios.train import measure_train
from suite.spec.model import Cell

SCENARIOS: dict[str, Callable[[Cell, str], dict[str, Any]]] = {
    "inference": measure_inference,
    "train": measure_train,
}
