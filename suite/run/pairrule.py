"""The pair's verdict: a cell timed side by side with another build (docs/pairs.md), judged on
its paired ratios alone.

A cell is slower when the 95% interval of any of its paired ratios (base / new: latency,
throughput, and a compiled row's speed-up) lies wholly below `THRESHOLD`, the 0.95 at which
PyTorch's own regression report acts on a speed-up; its compile is slower when compile_s grew past
`COMPILE_THRESHOLD`. One compile each has no interval, so a compile is judged as compare judges
separate runs': past the threshold on a machine whose health column raised a flag, it is suspect,
not slower (on this project's shared 2-core VM an A/A pair's compile ratios spread 0.94x-1.55x,
docs/pairs.md). The history calls a slower cell a regression
only when the next night's pair agrees (two consecutive nights, as that report does). No noise
floor and no between-run allowance: the two builds were timed in the same rounds of the same
minutes, so what drifts between runs cancels. Standard library only (the `pair` verb prints it on
the measuring machine; compare, the history and the run page read it on the host).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from suite.results.health import flags_of
from suite.results.sections import pair as section

THRESHOLD = 0.95
COMPILE_THRESHOLD = 1.15
RULE_NAME = "paired (interval below 0.95x, compile above 1.15x on a healthy machine)"
FIGURES: tuple[str, ...] = tuple(figure for figure, _ in section.FIGURES)  # the pair section's
JUDGED: tuple[str, ...] = ("latency", "throughput", "speedup")  # the row's own function, and compile's gain
SLOWER, SLOWER_COMPILE, FASTER, UNCHANGED = "slower", "slower compile", "faster", "unchanged"
SUSPECT_COMPILE = "suspect compile"  # past the compile threshold, on an unhealthy machine


@dataclass(frozen=True)
class Ratio:
    """base / new of one figure: the median over rounds and its 95% interval."""

    value: float
    low: float
    high: float

    def text(self) -> str:
        return f"{self.value:.3f}x [{self.low:.3f}, {self.high:.3f}]"


@dataclass(frozen=True)
class PairFigures:
    """A row's pair columns, typed (None where the row was not paired as the new build)."""

    pair_id: str
    partner: str
    rounds: int
    ratios: dict[str, Ratio]
    compile_time_ratio: float | None
    health: tuple[str, ...] = ()  # the new row's health flags (the pair's rounds: both builds' machine)

    @staticmethod
    def of(value: Callable[[str], Any]) -> PairFigures | None:
        """From a row's columns (`value(name)`: its text or number, "" or None where empty)."""
        if str(value("pair_role") or "") != "new" or not _number(value("pair_rounds")):
            return None
        ratios = {}
        for name in FIGURES:
            got = [_number(value(column)) for column in section.ratio_names(name)]
            if all(x is not None for x in got):
                ratios[name] = Ratio(*got)  # type: ignore[arg-type]
        return PairFigures(
            str(value("pair_id") or ""),
            str(value("pair_partner") or ""),
            int(_number(value("pair_rounds")) or 0),
            ratios,
            _number(value(section.COMPILE_TIME_RATIO)),
            tuple(flags_of(value("health"))),
        )


@dataclass(frozen=True)
class PairVerdict:
    verdict: str  # SLOWER | SLOWER_COMPILE | SUSPECT_COMPILE | FASTER | UNCHANGED
    why: tuple[str, ...]  # the figures that decided it, in words

    @property
    def regressed(self) -> bool:
        return self.verdict in (SLOWER, SLOWER_COMPILE)


def judge(p: PairFigures) -> PairVerdict:
    """The pair's rule (module docstring)."""
    slower = [f"{k} {r.text()}" for k, r in p.ratios.items() if k in JUDGED and r.high < THRESHOLD]
    if slower:
        return PairVerdict(SLOWER, tuple(slower))
    c = p.compile_time_ratio
    if c is not None and c > COMPILE_THRESHOLD:
        if p.health:
            why = f"compile {c:.2f}x on an unhealthy machine ({','.join(p.health)})"
            return PairVerdict(SUSPECT_COMPILE, (why,))
        return PairVerdict(SLOWER_COMPILE, (f"compile {c:.2f}x",))
    faster = [f"{k} {r.text()}" for k, r in p.ratios.items() if k in JUDGED and r.low > 1 / THRESHOLD]
    return PairVerdict(FASTER, tuple(faster)) if faster else PairVerdict(UNCHANGED, ())


KERNELS, HOST = "in the kernels", "on the host"


def where(base_device_ms: float | None, new_device_ms: float | None) -> str:
    """Where a slower call lost its time (the rows' profiled device time, suite.measure.devicetime):
    in the kernels when the GPU's busy time per call grew as the rule counts slower (past
    1 / THRESHOLD), else on the host; "" without both figures (a CPU, an older row)."""
    if not base_device_ms or not new_device_ms:
        return ""
    return KERNELS if base_device_ms / new_device_ms < THRESHOLD else HOST


def _number(value: object) -> float | None:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None
