"""A synthetic nightly history the history tests share: stable and a nightly on one GPU's name,
six real cells (ViT, ResNet, DETR; eager and default) moved by the suite's own A/A noise, the
nightly's compiled ResNet 10% slower from night `step` on."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from suite.benchmarks.synth import Build, History, Step, template_rows
from suite.history.calibrate import TRUST, noise_pool

REPO = Path(__file__).resolve().parents[2]


def nightly_history(nights: int, step: int, seed: int) -> History:
    """`nights` nights from 2026-12-01, the planted step at night `step`."""
    template = template_rows(
        REPO / TRUST / "gate" / "aa" / "rep-1" / "raw" / "current__cpu.csv",
        models=("ViT", "ResNet", "DETR"),
        modes=("eager", "default"),
    )
    return History(
        template,
        [Build("stable", "2.0.1+cu118"), Build("nightly-current", "2.15.0.dev{date}+cu130")],
        [("cuda", "NVIDIA H100 80GB HBM3")],
        date(2026, 12, 1),
        nights,
        noise_pool([REPO / TRUST / "gate" / "aa"]).deviations,
        steps=[Step(step, 1.10, models=("ResNet",), modes=("default",), builds=("nightly-current",))],
        seed=seed,
    )
