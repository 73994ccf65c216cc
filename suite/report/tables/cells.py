"""What a table cell holds and how it reads: durations, peak memory, speed-ups (with their
intervals), the guide's figures, failures; in Markdown and in CSV.

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

from dataclasses import dataclass

from suite.report import moved
from suite.report.reference import GuideFigure
from suite.report.study import Measurement, paired_durations
from suite.results import OK, OOM, STATUS_WORDS, STATUSES

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
DAGGER_NOTE = f"{DAGGER} compiled output differs from eager beyond the tolerance (accuracy check failed)."
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
    """A duration cell of a row (suite.report.study.paired_durations): a median with its 95% CI
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


def fmt_ms(value: float) -> str:
    return f"{value:.3f}"


def fmt_factor(gain: Gain) -> str:
    text = f"{gain.factor:.2f}x"
    if gain.low is not None and gain.high is not None:
        text += f" [{gain.low:.2f}, {gain.high:.2f}]"
    return text


def md_cell(kind: str, value: object) -> str:
    """How a value reads in Markdown."""
    if kind == "ms":
        assert isinstance(value, Ms)
        if value.m is None:
            return NOT_MEASURED
        if not value.m.ok:
            return STATUS_WORDS[value.m.status]
        assert value.m.mean_ms is not None
        mark = f" {DAGGER}" if value.compiled and value.m.accuracy_failed else ""
        return fmt_ms(value.m.mean_ms) + mark
    if kind == "dur":
        assert isinstance(value, Dur)
        if value.ms is None:
            return value.word or NOT_MEASURED
        return fmt_ms(value.ms) + (f" {value.marks}" if value.marks else "")
    if kind == "gain":
        if value is None:
            return NOT_MEASURED
        if isinstance(value, str):
            return value
        assert isinstance(value, Gain)
        marks = (DAGGER if value.flagged else "") + (SECTION if value.unhealthy else "")
        return f"{value.pct:.1f}% · {fmt_factor(value)}" + (f" {marks}" if marks else "")
    if kind == "mb":
        assert isinstance(value, Mb)
        if value.m is None:
            return NOT_MEASURED
        if not value.m.ok:
            return STATUS_WORDS[value.m.status]
        return NOT_MEASURED if value.m.peak_mem_mb is None else f"{value.m.peak_mem_mb:.0f}"
    if kind == "dyn":
        assert isinstance(value, Dyn)
        return _dyn_md(value)
    if kind == "qty":
        assert isinstance(value, Qty)
        if value.m is not None and not value.m.ok:
            return STATUS_WORDS[value.m.status]
        if value.value is None:
            return value.text or NOT_MEASURED
        return f"{value.value:,.{value.digits}f}{value.mark}"
    if kind == "factor":  # a ratio with its interval (suite.report.moved), or a failure word
        if value is None:
            return NOT_MEASURED
        return value if isinstance(value, str) else moved.fmt(value)
    if kind == "guide":
        if value is None:
            return NOT_MEASURED
        assert isinstance(value, GuideFigure)
        if value.erratum:
            return GUIDE_ERRATUM
        if value.speedup is None:
            return STATUS_WORDS[OOM]  # the guide ran out of memory there
        return f"{improvement_pct(value.speedup):.1f}% · {value.speedup:.2f}x"
    return str(value)


def csv_cells(name: str, kind: str, value: object) -> dict[str, object]:
    """How a value reads in the CSV: plain numbers in their own columns, failures as words."""
    if kind == "ms":
        assert isinstance(value, Ms)
        m = value.m
        if m is None:
            return {name: ""}
        return {name: m.mean_ms if m.ok else STATUS_WORDS[m.status]}
    if kind == "dur":
        assert isinstance(value, Dur)
        return {name: value.ms if value.ms is not None else value.word}
    if kind == "mb":
        assert isinstance(value, Mb)
        m = value.m
        if m is None:
            return {name: ""}
        return {
            name: (m.peak_mem_mb if m.peak_mem_mb is not None else "") if m.ok else STATUS_WORDS[m.status]
        }
    if kind == "dyn":
        assert isinstance(value, Dyn)
        return _dyn_csv(name, value)
    if kind == "qty":
        assert isinstance(value, Qty)
        if value.m is not None and not value.m.ok:
            return {name: STATUS_WORDS[value.m.status]}
        # plain numbers: "never" stays in the Markdown (the note says so); the CSV column stays numeric
        return {name: "" if value.value is None else round(value.value, 4)}
    if kind == "gain":
        pre = f"{name} " if name else ""
        out: dict[str, object] = {f"{pre}{c}": "" for c in ("improvement %", "speed-up", "CI low", "CI high")}
        if isinstance(value, str):
            out[f"{pre}speed-up"] = value
        elif isinstance(value, Gain):
            out[f"{pre}improvement %"] = round(value.pct, 2)
            out[f"{pre}speed-up"] = round(value.factor, 4)
            out[f"{pre}CI low"] = "" if value.low is None else round(value.low, 4)
            out[f"{pre}CI high"] = "" if value.high is None else round(value.high, 4)
        return out
    if kind == "factor":
        out = {name: "", f"{name} CI low": "", f"{name} CI high": ""}
        if isinstance(value, str):
            out[name] = value
        elif isinstance(value, moved.Factor):
            out[name] = round(value.value, 4)
            out[f"{name} CI low"] = "" if value.low is None else round(value.low, 4)
            out[f"{name} CI high"] = "" if value.high is None else round(value.high, 4)
        return out
    if kind == "guide":
        out = {f"{name} without torch.compile": "", f"{name} with torch.compile": "", f"{name} speed-up": ""}
        if isinstance(value, GuideFigure):
            if value.erratum:
                out[f"{name} speed-up"] = GUIDE_ERRATUM
            elif value.speedup is None:
                out.update({k: STATUS_WORDS[OOM] for k in out})
            else:
                out[f"{name} without torch.compile"] = value.eager_ms
                out[f"{name} with torch.compile"] = value.compiled_ms
                out[f"{name} speed-up"] = round(value.speedup, 4)
        return out
    return {name: value}


def _dyn_md(value: Dyn) -> str:
    """`18.0 s · 1 · 1.047 ms · 33.89x` (compile, recompiles, compiled median, speed-up), or totals."""
    m = value.m
    if m is None:
        if value.total_s is None:
            return NOT_MEASURED
        graphs = "" if value.total_recompiles is None else f" · {value.total_recompiles:.0f}"
        return f"{value.total_s:.1f} s{graphs}"
    if not m.ok:
        return STATUS_WORDS[m.status]
    parts = [
        NOT_MEASURED if m.compile_s is None else f"{m.compile_s:.1f} s",
        NOT_MEASURED if m.recompiles is None else f"{m.recompiles:.0f}",
        NOT_MEASURED if m.median_ms is None else fmt_ms(m.median_ms) + " ms",
        NOT_MEASURED if m.speedup is None else f"{m.speedup:.2f}x",
    ]
    return " · ".join(parts) + (f" {DAGGER}" if m.accuracy_failed else "")


def _dyn_csv(name: str, value: Dyn) -> dict[str, object]:
    m = value.m
    out: dict[str, object] = {f"{name} {c}": "" for c in ("compile s", "recompiles", "median ms", "speed-up")}
    if m is None:
        out[f"{name} compile s"] = "" if value.total_s is None else round(value.total_s, 4)
        out[f"{name} recompiles"] = "" if value.total_recompiles is None else value.total_recompiles
    elif not m.ok:
        out[f"{name} median ms"] = STATUS_WORDS[m.status]
    else:
        for col, v in (
            ("compile s", m.compile_s),
            ("recompiles", m.recompiles),
            ("median ms", m.median_ms),
            ("speed-up", m.speedup),
        ):
            out[f"{name} {col}"] = "" if v is None else round(v, 4)
    return out
