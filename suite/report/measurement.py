"""One cell's row typed (`Measurement`: durations in ms, None where not measured, its status,
health and the later issues' columns by name), the durations a compile-vs-eager row shows
(`paired_durations`: one rule for every table and plot), and a ratio of medians' interval.

Host side only; suite.report.study keys these by cell.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from suite.measure import cudagraphs, energy, phases
from suite.results import FAIL, OK
from suite.results.health import HEALTHY
from suite.results.sections import devicetime, health, latency, throughput
from suite.results.sections import phases as phase_section
from suite.run.pairrule import PairFigures

# throughput beside latency, the switch penalty, the host's speed, the compile phases' remainder
# (their sections' columns: suite.results.sections)
THROUGHPUT_COLUMNS: tuple[str, ...] = (
    *throughput.FIGURES,
    *latency.SWITCH,
    health.HOST_SPEED_MOVED,
    phase_section.FIRST_RUN.name,
)
MORE_COLUMNS: tuple[str, ...] = (
    *phases.COLUMNS,
    *cudagraphs.COLUMNS,
    *energy.COLUMNS,
)
# the compile-cost figures a Measurement carries beside compile_s and breakeven_calls
COMPILE_COST_FIGURES: tuple[str, ...] = (
    "compile_warm_s",
    "compile_megacache_s",
    "first_result_s",
    "eager_first_result_s",
    "breakeven_calls_warm",
)


@dataclass(frozen=True)
class Measurement:
    """One cell's row, typed; durations in ms, None where not measured."""

    status: str
    error: str
    mean_ms: float | None
    median_ms: float | None
    ci_low_ms: float | None
    ci_high_ms: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    accuracy: str
    max_abs_diff: float | None
    source: str
    peak_mem_mb: float | None = None
    params_m: float | None = None
    eager_median_ms: float | None = None  # a compiled cell's: the eager calls interleaved with its own
    eager_ci_low_ms: float | None = None
    eager_ci_high_ms: float | None = None
    compile_s: float | None = None
    compile_wave: float | None = None  # processes compiling at once when compile_s was measured
    health: str = ""  # ok, the flags that make the figures suspect, or "" (not measured)
    breakeven_calls: float | None = None
    # what compiling costs (README "What compiling costs"); None where not measured
    recompiles: float | None = None
    compile_warm_s: float | None = None
    compile_megacache_s: float | None = None
    first_result_s: float | None = None
    eager_first_result_s: float | None = None
    breakeven_calls_warm: float | None = None
    compile_note: str = ""
    # the machine's between-run noise of the median the run was given (run_noise_pct)
    run_noise_pct: float | None = None
    speedup_noise_pct: float | None = None  # and of the paired speed-up (speedup_noise_pct)
    # the compile phases', CUDA graphs' and energy's columns (suite.report.tables.phases, energy),
    # by column name: numbers as floats (None where empty), notes as text
    more: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # a pair's (suite.run.pair): the session both builds were timed in, and on the new build's row
    # its paired ratios (suite.run.pairrule)
    pair_id: str = ""
    pair: PairFigures | None = field(default=None, compare=False, hash=False)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def accuracy_failed(self) -> bool:
        return self.accuracy == FAIL

    @property
    def unhealthy(self) -> bool:
        """Timed on a machine with a health flag (suite.measure.health): the figures are suspect."""
        return self.ok and self.health not in ("", HEALTHY)


def _num(value: object) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _extra(r: Any, name: str) -> float | None:
    """A number from a column after the contract's: the merge does not type those, and an
    older file may lack them (then None), as may a malformed one."""
    value = getattr(r, name, None)
    try:
        return None if value in (None, "") else _num(float(value))
    except (TypeError, ValueError):
        return None


def measurement_of(r: Any) -> Measurement:
    """A typed row (a `Loaded.frame.itertuples()` item) as a Measurement."""
    return Measurement(
        status=r.status,
        error=r.error,
        mean_ms=_num(r.mean_ms),
        median_ms=_num(r.median_ms),
        ci_low_ms=_num(r.ci95_low_ms),
        ci_high_ms=_num(r.ci95_high_ms),
        speedup=_num(r.speedup),
        speedup_low=_num(r.speedup_ci95_low),
        speedup_high=_num(r.speedup_ci95_high),
        accuracy=r.accuracy,
        max_abs_diff=_num(r.max_abs_diff),
        source=r.source,
        peak_mem_mb=_num(r.peak_mem_mb),
        params_m=_num(r.params_m),
        eager_median_ms=_num(r.eager_median_ms),
        eager_ci_low_ms=_extra(r, "eager_ci95_low_ms"),
        eager_ci_high_ms=_extra(r, "eager_ci95_high_ms"),
        compile_s=_num(r.compile_s),
        compile_wave=_extra(r, "compile_wave"),
        health=str(getattr(r, "health", "") or ""),
        breakeven_calls=_num(getattr(r, "breakeven_calls", None)),
        recompiles=_num(r.recompiles),
        **{name: _num(getattr(r, name, None)) for name in COMPILE_COST_FIGURES},
        compile_note=str(getattr(r, "compile_note", "") or ""),
        run_noise_pct=_extra(r, "run_noise_pct"),
        speedup_noise_pct=_extra(r, "speedup_noise_pct"),
        more=more_of(r),
        pair_id=str(getattr(r, "pair_id", "") or ""),
        pair=PairFigures.of(lambda name: getattr(r, name, None)),
    )


def more_of(r: Any) -> dict[str, Any]:
    """The compile phases', energy's and throughput's columns of a typed row (an older file lacks
    them: None, "")."""
    from suite.results import BY_NAME, TEXT

    return {
        name: (str(getattr(r, name, "") or "") if BY_NAME[name].kind == TEXT else _extra(r, name))
        for name in (*MORE_COLUMNS, *THROUGHPUT_COLUMNS, *devicetime.SECTION.names)
    }


@dataclass(frozen=True)
class Durations:
    """The two durations of a compile-vs-eager row, and where they come from.

    One rule for every table and plot: when the compiled cell has its paired eager median
    (eager and compiled calls timed interleaved in its one process), both durations are that
    pair, so the durations, their ratio and the speed-up shown beside them agree. Otherwise
    (the compiled cell failed, is missing, or predates the column) each side is its own
    cell's median, and `paired` is False. Each side carries its 95% CI where known."""

    eager_ms: float | None
    eager_low: float | None
    eager_high: float | None
    compiled_ms: float | None
    compiled_low: float | None
    compiled_high: float | None
    paired: bool
    source_eager: Measurement | None  # the measurement each side's figure (and marks) come from
    source_compiled: Measurement | None


def paired_durations(eager: Measurement | None, compiled: Measurement | None) -> Durations:
    """The durations a row shows for an eager cell and a compiled cell of one model (see
    `Durations`); a side without a figure is None (its measurement says why)."""
    c = compiled if compiled is not None and compiled.ok else None
    if c is not None and c.eager_median_ms is not None and c.median_ms is not None:
        return Durations(
            c.eager_median_ms,
            c.eager_ci_low_ms,
            c.eager_ci_high_ms,
            c.median_ms,
            c.ci_low_ms,
            c.ci_high_ms,
            paired=True,
            source_eager=c,
            source_compiled=c,
        )
    e = eager if eager is not None and eager.ok else None
    return Durations(
        e.median_ms if e else None,
        e.ci_low_ms if e else None,
        e.ci_high_ms if e else None,
        c.median_ms if c else None,
        c.ci_low_ms if c else None,
        c.ci_high_ms if c else None,
        paired=False,
        source_eager=eager,
        source_compiled=compiled,
    )


def ratio_interval(num: Measurement, den: Measurement) -> tuple[float | None, float | None]:
    """Bounds of num.median / den.median from the two medians' 95% CIs (None if absent)."""
    if None in (num.ci_low_ms, num.ci_high_ms, den.ci_low_ms, den.ci_high_ms):
        return None, None
    return num.ci_low_ms / den.ci_high_ms, num.ci_high_ms / den.ci_low_ms  # type: ignore[operator]
