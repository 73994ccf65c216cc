"""Compile's speed-up under both allocators (docs/trust.md): on a CPU the workers' C allocator
(`malloc`: steady | system, suite.measure.allocator) can decide whether compiling pays. For every
compiled cell measured under both (the same cell in a `steady` run and a `system` run merged
together), the cells where the two disagree: one says faster and the other slower, or their 95%
intervals do not overlap. Lines for the summary's notes."""

from __future__ import annotations

from dataclasses import replace

from suite.report.measurement import Measurement
from suite.report.study import CellKey, Study

STEADY, SYSTEM = "steady", "system"


def _speedup(m: Measurement | None) -> tuple[float, float, float] | None:
    if m is None or m.status != "ok" or m.speedup is None:
        return None
    low = m.speedup_low if m.speedup_low is not None else m.speedup
    high = m.speedup_high if m.speedup_high is not None else m.speedup
    return m.speedup, low, high


def disagree(a: tuple[float, float, float], b: tuple[float, float, float]) -> bool:
    """Two (speed-up, low, high): one above 1x and the other below, or intervals apart."""
    sides = (a[0] > 1) != (b[0] > 1)
    apart = a[2] < b[1] or b[2] < a[1]
    return sides or apart


def pairs(study: Study) -> list[tuple[CellKey, tuple[float, float, float], tuple[float, float, float]]]:
    """(the steady key, steady's speed-up, system's) for every compiled cell measured under both."""
    out = []
    for key, m in study.rows.items():
        if key.setup.malloc != STEADY or key.mode == "eager":
            continue
        other = study.rows.get(key.at(setup=replace(key.setup, malloc=SYSTEM)))
        steady, system = _speedup(m), _speedup(other)
        if steady is not None and system is not None:
            out.append((key, steady, system))
    return out


def allocator_notes(study: Study) -> list[str]:
    """The summary's lines: how many cells were measured under both allocators, and each one
    where compile's speed-up disagrees between them."""
    both = pairs(study)
    if not both:
        return []
    differ = [(k, a, b) for k, a, b in both if disagree(a, b)]
    lines = [
        f"allocators: {len(both)} compiled cell(s) measured under both malloc steady and system; "
        f"compile's speed-up disagrees in {len(differ)}" + (":" if differ else ".")
    ]
    for k, a, b in differ:
        lines.append(
            f"allocators: {k.model} bs={k.batch_size} {k.mode} on {k.build} ({k.gpu.name}): "
            f"steady x{a[0]:.2f} [{a[1]:.2f}, {a[2]:.2f}], system x{b[0]:.2f} [{b[1]:.2f}, {b[2]:.2f}]"
        )
    return lines
