"""What a table cell holds: durations, peak memory, speed-ups (with their
intervals), the guide's figures, failures; how each reads in Markdown and in CSV is
suite.report.tables.cellformat.

Host side only. What the cells show, and why:
- the durations of a row are the compiled cell's paired medians (suite.report.study.
  paired_durations): its eager and compiled calls, timed interleaved in one process. The
  speed-up beside them is their ratio (eager median / compiled median, with its paired 95%
  CI), so a row's durations and its % agree. It is printed as the guide's "% improvement"
  (the share of time saved, (1 - 1/speed-up) x 100) and as the factor with its CI. Where the
  compiled cell has no such pair (it failed), the eager duration is the eager cell's own
  median, marked with a double dagger;
- the guide's statistic, each cell's mean over its timed calls ("the mean of 300 inferences"),
  stays in the CSV tables and stands beside the guide's figures, labelled as such;
- a failed cell prints its status (OOM, error, timeout, skipped), never a number;
- a compiled output that failed the accuracy check is marked with a dagger; a figure timed on
  an unhealthy machine (its `health` flags: busy, steal, throttled, ...) with a section sign.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from suite.report.measurement import Measurement, paired_durations
from suite.results import OK, STATUS_WORDS, STATUSES

NOT_MEASURED = "—"
NEVER = "never"  # a break-even where compiling is not faster: it never pays off
DAGGER = "†"
DOUBLE_DAGGER = "‡"  # an eager duration from the eager cell's own process: not the paired one
SECTION = "§"  # timed on an unhealthy machine
GUIDE_ERRATUM = "erratum"
# How a failed or skipped cell reads: "OOM", "error", "timeout", "skipped".
FAILURE_WORDS: tuple[str, ...] = tuple(STATUS_WORDS[s] for s in STATUSES if s != OK)
LEGEND = (
    "Durations: latency, median per inference in ms (a synchronize around each call) of the compiled "
    "cell's eager and compiled calls, timed "
    "interleaved in its one process (the paired medians). Speed-up: % improvement (time saved, "
    "(1 - 1/speed-up) x 100) · eager median / compiled median [95% CI]: the ratio of the two durations "
    "beside it. "
    f"{' / '.join(FAILURE_WORDS)}: the cell failed (reason in the raw CSV); {NOT_MEASURED}: not measured."
)
TRAIN_LEGEND = (
    "Durations: median per training step in ms (forward + loss + backward + AdamW step) of the compiled "
    "cell's eager and compiled steps, timed interleaved in its one process. Speed-up: % improvement "
    "(time saved, (1 - 1/speed-up) x 100) · eager median / compiled median [95% CI]: the ratio of the "
    f"two durations beside it. {' / '.join(FAILURE_WORDS)}: the cell failed or has no training step "
    f"(reason in the raw CSV); {NOT_MEASURED}: not measured."
)
COMPILE_NOTE = (
    "compile (s): the first compiled call minus an eager call, in the cell's own process (cold caches "
    "unless compile_cache: run). break-even (calls): calls after which compiling has paid for itself, "
    f"compile seconds / (eager - compiled median per call); {NEVER} where compiling is not faster."
)
DAGGER_NOTE = (
    f"{DAGGER} compiled output differs from eager beyond the accuracy rule (float64 reference, "
    "docs/accuracy.md: accuracy check failed)."
)
STANDALONE_NOTE = (
    f"{DOUBLE_DAGGER} no paired eager median (the compiled cell failed, is missing, or its row has none): "
    "the eager cell's own median, from another process, so the % beside it is not their ratio."
)
HEALTH_NOTE = (
    f"{SECTION} timed on an unhealthy machine (the raw CSV's `health`: busy = other tasks waited for a CPU, "
    "steal = the hypervisor took CPU time, throttled / clock-varied = the GPU's clock dropped or moved, "
    "shared-gpu = another process used the GPU): the figure is suspect; run it again on a quiet machine."
)
MEANS_NOTE = (
    "mean, no compile / compile: each cell's own mean over its timed calls (the eager cell's, the "
    "compiled cell's): the guide's statistic, for its figures beside them; two processes, so their ratio "
    "is not the speed-up."
)
TRAIN_DAGGER_NOTE = (
    f"{DAGGER} the first compiled step's loss differs from the eager loss at the same weights, inputs and "
    "dropout masks beyond the tolerance (accuracy check failed)."
)
TRAIN = "train"
THROUGHPUT_NOTE = (
    "back-to-back (ms), back-to-back speed-up: throughput, the compiled cell's eager and compiled "
    "functions in blocks of back-to-back calls with one synchronize per block (CUDA events on a GPU), "
    "median over blocks of ms per call [95% CI], paired over blocks; the guide's statistic (the mean of "
    "back-to-back calls), so the one set beside its figures. The durations before them are latency: a "
    "synchronize around each call."
)


def number(value: object) -> float | None:
    """A merged frame's value as a number: None for an empty, unparsable or NaN one (the tables
    that read the frame's extra columns directly: precision, pipeline, serving, ...)."""
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return None if math.isnan(x) else x


def legend(scenario: str) -> str:
    """How to read a table's durations and speed-ups, for its scenario."""
    return TRAIN_LEGEND if scenario == TRAIN else LEGEND


@dataclass(frozen=True)
class Ms:
    """A duration cell: one measurement (or none), compiled or not."""

    m: Measurement | None
    compiled: bool


@dataclass(frozen=True)
class Dur:
    """A duration cell of a row (suite.report.measurement.paired_durations): a median with its 95% CI
    and its marks, or, without a figure, the word of the failure that left none ("" for none)."""

    ms: float | None
    low: float | None = None
    high: float | None = None
    word: str = ""
    marks: str = ""

    @property
    def unhealthy(self) -> bool:
        return SECTION in self.marks


def durations(eager: Measurement | None, compiled: Measurement | None) -> tuple[Dur, Dur]:
    """The no-compile and compile durations of a row, by the study's one rule."""
    d = paired_durations(eager, compiled)
    unpaired = "" if d.paired else DOUBLE_DAGGER
    return (
        _dur(d.eager_ms, d.eager_low, d.eager_high, d.source_eager, unpaired),
        _dur(d.compiled_ms, d.compiled_low, d.compiled_high, d.source_compiled, "", compiled=True),
    )


def _dur(
    ms: float | None, low: float | None, high: float | None, m: Measurement | None, mark: str, compiled=False
) -> Dur:
    if m is None:
        return Dur(None)
    if ms is None:
        return Dur(None, word="" if m.ok else STATUS_WORDS[m.status])
    dagger = DAGGER if compiled and m.accuracy_failed else ""
    return Dur(ms, low, high, marks=dagger + mark + (SECTION if m.unhealthy else ""))


@dataclass(frozen=True)
class Mb:
    """A peak-memory cell: one measurement (or none)."""

    m: Measurement | None


@dataclass(frozen=True)
class Qty:
    """A number of a cell's row (seconds, calls), or the cell's failure word when it failed."""

    m: Measurement | None
    value: float | None
    digits: int = 1
    mark: str = ""  # after the number in Markdown (a footnote sign)
    text: str = ""  # what an empty value reads as, where it means something ("never")


def breakeven(m: Measurement | None, warm: bool = False) -> Qty:
    """A break-even cell: the calls, "never" where the compiled median is not below eager's."""
    value = None if m is None else (m.breakeven_calls_warm if warm else m.breakeven_calls)
    slower = (
        m is not None
        and value is None
        and m.eager_median_ms is not None
        and m.median_ms is not None
        and m.median_ms >= m.eager_median_ms
        and (m.compile_warm_s if warm else m.compile_s) is not None
    )
    return Qty(m, value, digits=0, text=NEVER if slower else "")


@dataclass(frozen=True)
class Dyn:
    """A batch size under one way of compiling: the compile paid when it arrived, the graphs
    compiled then, the compiled mean and the paired speed-up; or (m None) a sequence's totals."""

    m: Measurement | None
    total_s: float | None = None
    total_recompiles: float | None = None


@dataclass(frozen=True)
class Gain:
    """A speed-up factor (> 1: faster) with its 95% interval where known."""

    factor: float
    low: float | None
    high: float | None
    flagged: bool = False  # accuracy check failed
    unhealthy: bool = False  # timed on an unhealthy machine

    @property
    def pct(self) -> float:
        return improvement_pct(self.factor)


def improvement_pct(factor: float) -> float:
    """The guide's "% improvement": time saved, in % of the slower duration."""
    return (1.0 - 1.0 / factor) * 100.0


def back_to_back(compiled: Measurement | None) -> tuple[Dur, Dur, Gain | str | None]:
    """A compiled cell's throughput figures (eager's, compiled's, their paired speed-up), or its
    failure word; empty where the row has none (rows from before the columns)."""
    if compiled is None:
        return Dur(None), Dur(None), None
    if not compiled.ok:
        word = STATUS_WORDS[compiled.status]
        return Dur(None, word=word), Dur(None, word=word), word
    more = compiled.more
    marks = SECTION if compiled.unhealthy else ""
    dagger = DAGGER if compiled.accuracy_failed else ""

    def dur(prefix: str, mark: str) -> Dur:
        ms = more.get(f"{prefix}throughput_ms")
        if ms is None:
            return Dur(None)
        low, high = more.get(f"{prefix}throughput_ci95_low_ms"), more.get(f"{prefix}throughput_ci95_high_ms")
        return Dur(ms, low, high, marks=mark + marks)

    factor = more.get("throughput_speedup")
    gain = None
    if factor is not None:
        low, high = more.get("throughput_speedup_ci95_low"), more.get("throughput_speedup_ci95_high")
        gain = Gain(factor, low, high, compiled.accuracy_failed, compiled.unhealthy)
    return dur("eager_", ""), dur("", dagger), gain


def paired_gain(m: Measurement | None) -> Gain | str | None:
    """The compiled cell's own paired speed-up, its failure word, or None (not measured)."""
    if m is None:
        return None
    if not m.ok:
        return STATUS_WORDS[m.status]
    if m.speedup is None:
        return None
    return Gain(m.speedup, m.speedup_low, m.speedup_high, m.accuracy_failed, m.unhealthy)


def cross_gain(base: Dur, new: Dur) -> Gain | str | None:
    """new vs base from two processes: base duration / new duration (the two shown beside it),
    with the widest interval the two medians' 95% CIs allow (conservative: no samples to pair)."""
    for d in (base, new):
        if d.word:
            return d.word
    if base.ms is None or new.ms is None:
        return None
    interval: tuple[float | None, float | None] = (None, None)
    if None not in (base.low, base.high, new.low, new.high):
        interval = (base.low / new.high, base.high / new.low)  # type: ignore[operator]
    return Gain(base.ms / new.ms, *interval, unhealthy=base.unhealthy or new.unhealthy)
