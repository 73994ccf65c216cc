"""The scenarios a cell can measure, by name. Each is a small `Scenario` subclass saying only
what differs (its calls, its compiled call, its accuracy check); `measure` (base.py) is the path
they all share. A new scenario: a module here with its subclass, one entry in SCENARIOS, and its
name in suite.spec.vocab.SCENARIOS."""

from __future__ import annotations

from suite.measure.scenarios.base import Scenario, measure
from suite.measure.scenarios.inference import Inference
from suite.measure.scenarios.mixed_resolution import MixedResolution
from suite.measure.scenarios.pipeline import Pipeline
from suite.measure.scenarios.precision import Precision
from suite.measure.scenarios.serving import Serving
from suite.measure.scenarios.train import Train

SCENARIOS: dict[str, type[Scenario]] = {
    "inference": Inference,
    "train": Train,
    "precision": Precision,
    "pipeline": Pipeline,
    "serving": Serving,
    "mixed-resolution": MixedResolution,
}

__all__ = ["SCENARIOS", "Scenario", "measure"]
