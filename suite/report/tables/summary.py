"""The summary: per build, mode, GPU, batch size and setup, the pass rate and the geometric
mean of the paired speed-ups (unclipped, and clipped at 1x).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from suite.report.measurement import Measurement
from suite.report.study import EAGER, Gpu, Setup, Study
from suite.report.tables.allocators import allocator_notes
from suite.report.tables.cells import FAILURE_WORDS, NOT_MEASURED, SECTION
from suite.report.tables.table import Column, Table


def geomean(values: Iterable[float]) -> float | None:
    logs = [math.log(v) for v in values]
    return math.exp(sum(logs) / len(logs)) if logs else None


@dataclass(frozen=True)
class SummaryRow:
    build: str
    kind: str
    mode: str
    gpu: Gpu
    batch_size: int
    setup: Setup
    cells: int
    ok: int
    accuracy_fail: int
    speedups: tuple[float, ...]
    unhealthy: int = 0  # ok cells timed on an unhealthy machine

    @property
    def pass_rate(self) -> float:
        return self.ok / self.cells

    @property
    def geomean(self) -> float | None:
        return geomean(self.speedups)

    @property
    def geomean_clipped(self) -> float | None:
        """Each cell's speed-up floored at 1x: what you get if you keep eager where compile loses."""
        return geomean(max(1.0, s) for s in self.speedups)


def summary_rows(study: Study) -> list[SummaryRow]:
    groups: dict[tuple[str, str, Gpu, int, Setup], list[Measurement]] = {}
    for key, m in study.cells.items():
        groups.setdefault((key.build, key.mode, key.gpu, key.batch_size, key.setup), []).append(m)
    rows = []
    for (build, mode, gpu, bs, setup), ms in groups.items():
        rows.append(
            SummaryRow(
                build=build,
                kind=study.kind(build),
                mode=mode,
                gpu=gpu,
                batch_size=bs,
                setup=setup,
                cells=len(ms),
                ok=sum(m.ok for m in ms),
                accuracy_fail=sum(m.ok and m.accuracy_failed for m in ms),
                speedups=tuple(m.speedup for m in ms if m.ok and m.speedup is not None and mode != EAGER),
                unhealthy=sum(m.unhealthy for m in ms),
            )
        )
    order = (study.builds, study.modes, study.gpus, study.setups)
    return sorted(
        rows,
        key=lambda r: (
            order[0].index(r.build),
            order[1].index(r.mode),
            order[2].index(r.gpu),
            order[3].index(r.setup),
            r.batch_size,
        ),
    )


def summary_table(study: Study) -> Table:
    """Geometric-mean speed-up (unclipped and clipped at 1x) and pass rate per build, mode, GPU,
    batch size and setup."""
    columns = [
        Column("Build", "build", "text"),
        Column("Mode", "mode", "text"),
        Column("GPU", "GPU", "text"),
        Column("Batch Size", "batch size", "text"),
        Column("Setup", "setup", "text"),
        Column("pass rate (ok / cells)", "pass rate", "text"),
        Column("accuracy fails", "accuracy fails", "text"),
        Column("geomean speed-up", "geomean speed-up", "text"),
        Column("geomean speed-up, clipped at 1x", "geomean speed-up clipped", "text"),
        Column(f"unhealthy {SECTION}", "unhealthy", "text"),
    ]
    table = Table(
        name="summary",
        section="summary",
        title="Summary",
        subtitle="Per build, mode, GPU, batch size and setup.",
        columns=columns,
        notes=[
            f"pass rate: cells with status ok / all cells recorded (failures: {', '.join(FAILURE_WORDS)}).",
            "geomean speed-up: geometric mean of the paired speed-ups (eager median / compiled median) of "
            "the ok cells, n = how many; clipped: each speed-up floored at 1x first (keep eager where "
            "compile loses). Eager rows have no speed-up.",
            f"unhealthy {SECTION}: ok cells timed on an unhealthy machine (their `health` flags, in the raw "
            "CSV: busy, steal, throttled, clock-varied, shared-gpu, host-varied); their figures are suspect.",
        ],
    )
    table.notes.extend(allocator_notes(study))  # where the allocator decides whether compile pays
    for r in summary_rows(study):
        n = len(r.speedups)
        gm, gmc = r.geomean, r.geomean_clipped
        table.add(
            {
                "build": r.build,
                "kind": r.kind,
                "mode": r.mode,
                "GPU": r.gpu.name,
                "device": r.gpu.device,
                "batch size": r.batch_size,
                "setup": r.setup.label,
                "cells": r.cells,
                "ok": r.ok,
                "pass rate": round(r.pass_rate, 4),
                "accuracy fails": r.accuracy_fail,
                "speed-ups": n,
                "geomean speed-up": "" if gm is None else round(gm, 4),
                "geomean speed-up clipped": "" if gmc is None else round(gmc, 4),
                "unhealthy": r.unhealthy,
            },
            [
                r.build,
                r.mode,
                r.gpu.label,
                str(r.batch_size),
                r.setup.label,
                f"{r.ok}/{r.cells} ({r.pass_rate:.0%})",
                str(r.accuracy_fail) if r.mode != EAGER else NOT_MEASURED,
                f"{gm:.3f}x (n={n})" if gm is not None else NOT_MEASURED,
                f"{gmc:.3f}x (n={n})" if gmc is not None else NOT_MEASURED,
                str(r.unhealthy),
            ],
        )
    return table
