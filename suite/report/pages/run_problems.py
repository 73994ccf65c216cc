"""The run page's problems: what must not be missed, read off the merge's study: failed cells
(with their status and error), suspect ones (an unhealthy machine, a failed accuracy check),
builds with no row on a GPU where others ran, and the cells a build that ran there lacks.

Host side only; its keys are part of the run page's contract with static/run.js (docs/pages.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from suite.report.measurement import Measurement
from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cells import DAGGER, SECTION
from suite.results import DEGENERATE, NONDETERMINISTIC, STATUS_WORDS
from suite.results.health import HEALTHY

UNJUDGED = (DEGENERATE, NONDETERMINISTIC)  # a compiled row the accuracy rule could not judge


def health_flags(m: Measurement | None) -> list[str]:
    if m is None or m.health in ("", HEALTHY):
        return []
    return [f for f in m.health.split(",") if f and f != HEALTHY]


def problems(study: Study) -> dict[str, Any]:
    """What must not be missed: failed cells, suspect ones (unhealthy machine, accuracy failed),
    builds with no row on a GPU where other builds ran, and cells one build lacks there."""
    failed, suspect = _failed_and_suspect(study)
    missing_builds, missing_cells = _missing(study)
    return {
        "failed": failed,
        "suspect": suspect,
        "missing_builds": missing_builds,
        "missing_cells": missing_cells,
    }


def _where(study: Study, key: CellKey) -> dict[str, Any]:
    """A cell as the problems' lists name it."""
    return {
        "gpu": key.gpu.label,
        "setup": key.setup.label,
        "build": key.build,
        "label": study.model_label(key.task, key.model),
        "task": key.task,
        "bs": key.batch_size,
        "mode": key.mode,
    }


def _failed_and_suspect(study: Study) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The failed cells, with their status and error; the suspect ones, with why."""
    failed, suspect = [], []
    for key, m in study.cells.items():
        if not m.ok:
            failed.append({**_where(study, key), "status": STATUS_WORDS[m.status], "error": m.error})
            continue
        why = []
        if m.unhealthy:
            why.append(f"{SECTION} timed on an unhealthy machine: {', '.join(health_flags(m))}")
        if key.mode != EAGER and m.accuracy_failed:
            why.append(f"{DAGGER} accuracy check failed: compiled output differs from eager beyond the rule")
        elif key.mode != EAGER and m.accuracy in UNJUDGED:
            why.append(f"accuracy not judged: {m.accuracy} (docs/accuracy.md)")
        if why:
            suspect.append({**_where(study, key), "why": "; ".join(why)})
    return failed, suspect


def _missing(study: Study) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The builds with no row on a GPU where others ran; the cells a build that ran there lacks."""
    missing_builds, missing_cells = [], []
    for gpu in study.gpus:
        present = [b for b in study.builds if any(k.gpu == gpu and k.build == b for k in study.cells)]
        missing_builds += [
            {"gpu": gpu.label, "build": b, "others": present, "kind": study.kind(b)}
            for b in study.builds
            if b not in present
        ]
        for setup in study.setups:
            missing_cells += _missing_cells(study, gpu, setup, present)
    return missing_builds, missing_cells


def _missing_cells(study: Study, gpu: Gpu, setup: Setup, present: Sequence[str]) -> list[dict[str, Any]]:
    """The cells of one GPU and setup that a build with rows there lacks."""

    def cells(build: str | None) -> set[tuple[str, str, int, str]]:
        return {
            (k.task, k.model, k.batch_size, k.mode)
            for k in study.cells
            if k.gpu == gpu and k.setup == setup and (build is None or k.build == build)
        }

    wanted, out = cells(None), []
    for b in present:
        have = cells(b)
        if not have:
            continue
        for task, model, bs, mode in sorted(wanted - have, key=str):
            out.append(
                {"gpu": gpu.label, "setup": setup.label, "build": b, "label": study.model_label(task, model),
                 "task": task, "bs": bs, "mode": mode}
            )  # fmt: skip
    return out
