"""The regression gate's rule: for each cell two runs both ran, the ratio of medians new / base
with an interval, the paired speed-up's change and the compile time's, each judged against a
threshold (`judge`; the two runs matched cell by cell: suite.compare.comparison).

Host side only. The raw CSVs keep each cell's median and its 95% CI, so without samples the
ratio's interval is built from the two CIs: [new low / base high, new high / base low]. If the
two runs are independent and each CI covers its true median with probability 0.95, both do with
probability >= 0.9025, and then the true ratio lies inside. The CIs cover the noise within a
run, not the machine's drift between runs, and on a shared VM that drift is the larger: two
back-to-back runs of the same cells moved single medians by up to 13% on this project's 2-core
CPU (docs/trust.md). So a slower median must also clear the runs' own noise
floor (`NoiseFloor`: `noise_z` robust standard deviations of all matched cells' log ratios,
which a real change in a few cells does not inflate), and a cell timed on an unhealthy machine
(suite.measure.health: busy, steal, throttled, ...) in either run is not judged slower, only
listed ("suspect"). The paired speed-up (eager / compiled, timed interleaved in one process)
cancels the machine's drift inside a run, so its change is judged against the threshold, in every
cell: a compiled function slowed against its own eager calls fails the gate even on a busy
machine. Where the rows carry the machine's measured between-run noise
(`run_noise_pct`, `speedup_noise_pct`; docs/intervals.md), a median and a speed-up must also clear
`noise_z` standard deviations of it, and the medians' noise floor is not used for those cells.
Compile time is one sample per cell: its own, wider threshold and a floor in seconds.
Only like is compared with like. A cell whose two rows differ in a setting that both
record (suite.compare.settings: compile cache, allocator, processes, stopping rule, ...) is not
judged ("not comparable: settings differ", never a failing verdict) and is left out of the noise
floor; where both runs kept their samples, a median's interval comes from them
(suite.compare.samples) instead of the two CIs.
The rates this rule gives on A/A and slowed runs: docs/merge.md, `suite calibrate`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from suite.compare.samples import Sampled
from suite.report.measurement import Measurement, ratio_interval
from suite.report.moved import Side, SpeedupSplit
from suite.results import FAILED_STATUSES
from suite.run import pairrule
from suite.stats import log_se, z_of

REGRESSION = "regression"
LESS_SPEEDUP = "less speed-up"
COMPILE_REGRESSION = "slower compile"
SUSPECT = "suspect"
ACCURACY_REGRESSION = "accuracy regression"
NEWLY_FAILING = "newly failing"
IMPROVEMENT = "improvement"
FIXED = "fixed"
UNCHANGED = "unchanged"
NO_INTERVAL = "no interval"
NOT_COMPARABLE = "not comparable"
SETTINGS_DIFFER = "settings differ"  # not comparable: measured under different settings, not judged
# Verdicts that make `compare` exit 1.
FAILING_VERDICTS: tuple[str, ...] = (
    REGRESSION,
    LESS_SPEEDUP,
    COMPILE_REGRESSION,
    ACCURACY_REGRESSION,
    NEWLY_FAILING,
)
THRESHOLD = 0.05  # medians and speed-ups
COMPILE_THRESHOLD = 0.25  # compile time: one sample per cell, so a wider band
COMPILE_FLOOR_S = 1.0  # and at least this many seconds more
# The noise floor of the medians: this many robust standard deviations of the matched cells' log
# ratios. Chosen from A/A runs (docs/merge.md): on this project's CPU the largest of 212 healthy
# A/A ratios, 1.126, stayed under the smallest floor 4 gave (13.4%); for normal noise 4 is
# exceeded by 3 cells in 100,000. 0: no floor, the threshold alone.
NOISE_Z = 4.0
NOISE_MIN_CELLS = 8  # fewer healthy cells in common: too few to tell noise from change, no floor
# median absolute deviation -> standard deviation, for normal noise (1.4826...)
MAD_TO_SD = 1 / statistics.NormalDist().inv_cdf(0.75)
Z95 = z_of(0.95)


@dataclass(frozen=True)
class Rule:
    """The gate's thresholds (docs/merge.md gives the rates they were chosen from)."""

    threshold: float = THRESHOLD
    compile_threshold: float = COMPILE_THRESHOLD
    compile_floor_s: float = COMPILE_FLOOR_S
    noise_z: float = NOISE_Z
    # the machine's between-run noise (percent) for rows that carry none (runs from before rows carried it,
    # a device not yet measured): `compare --run-noise-pct`; None: such rows get the noise floor
    run_noise_pct: float | None = None
    speedup_noise_pct: float | None = None  # the same for the paired speed-up
    pairs: bool = True  # a cell timed side by side is judged by the pair's rule (False: as separate runs)


@dataclass(frozen=True)
class NoiseFloor:
    """How far two runs' medians drift apart where nothing changed, measured on the runs
    themselves: the robust spread (median absolute deviation, as a standard deviation) of the
    log ratios new / base of the cells ok and healthy in both, around their median, so that a
    change common to all cells is not counted as noise and a change in a few is not either."""

    sigma: float | None = None  # None: fewer than NOISE_MIN_CELLS cells
    cells: int = 0

    @staticmethod
    def of(ratios: Iterable[float]) -> NoiseFloor:
        logs = [math.log(r) for r in ratios if r > 0]
        if len(logs) < NOISE_MIN_CELLS:
            return NoiseFloor(None, len(logs))
        center = statistics.median(logs)
        return NoiseFloor(MAD_TO_SD * statistics.median(abs(x - center) for x in logs), len(logs))

    def bound(self, z: float) -> float:
        """The fraction a median must rise by before it can be told from drift (0: none)."""
        return 0.0 if self.sigma is None or z <= 0 else math.expm1(z * self.sigma)


def speedup_change(base: Measurement, new: Measurement) -> tuple[float, float, float] | None:
    """base speed-up / new speed-up (> 1: compiled lost ground against eager), with the interval
    the two paired CIs allow; None where either has no speed-up with a CI."""
    figures = (base.speedup, base.speedup_low, base.speedup_high)
    figures += (new.speedup, new.speedup_low, new.speedup_high)
    if any(f is None or f <= 0 for f in figures):
        return None
    b, b_lo, b_hi, n, n_lo, n_hi = figures  # type: ignore[misc]
    return b / n, b_lo / n_hi, b_hi / n_lo


def speedup_split(base: Measurement, new: Measurement) -> SpeedupSplit | None:
    """The change of the paired speed-up, new / base, split into its eager and compiled sides
    (suite.report.moved), as the stable-vs tables split it; None without both pairs of medians."""
    sides = []
    for m in (base, new):
        if m.eager_median_ms is None or m.median_ms is None:
            return None
        sides += [
            Side(m.eager_median_ms, m.eager_ci_low_ms, m.eager_ci_high_ms),
            Side(m.median_ms, m.ci_low_ms, m.ci_high_ms),
        ]
    speedups = [Side(m.speedup, m.speedup_low, m.speedup_high) if m.speedup else None for m in (base, new)]
    return SpeedupSplit.of(*sides, *speedups)


def crowded_compile(base: Measurement, new: Measurement) -> bool:
    """The two compile_s were measured beside different numbers of other compiles (`ahead` with a
    wider `--compile-pool` than one per 2 cores: compile_wave), so they are not like with like."""
    waves = {m.compile_wave or 1.0 for m in (base, new)}
    return len(waves) > 1


def compile_change(base: Measurement, new: Measurement, rule: Rule) -> bool:
    """Compile time beyond its threshold and its floor in seconds (not judged between compiles
    that ran beside different numbers of others: crowded_compile)."""
    b, n = base.compile_s, new.compile_s
    if b is None or n is None or b <= 0 or crowded_compile(base, new):
        return False
    return n / b > 1 + rule.compile_threshold and n - b > rule.compile_floor_s


def _noise_sd(
    intervals: Sequence[tuple[float | None, float | None]], pcts: Sequence[float | None]
) -> float | None:
    """sqrt of the sum of the two runs' squared log standard errors (from their 95% CIs) and
    squared between-run noises (percent); None when a figure is missing."""
    if None in pcts or any(not lo or not hi or lo <= 0 or hi < lo for lo, hi in intervals):
        return None
    taus = [math.log1p(pct / 100) for pct in pcts]  # type: ignore[operator]
    ses = [log_se(lo, hi) for lo, hi in intervals]  # type: ignore[arg-type]
    return math.sqrt(sum(t * t for t in taus) + sum(e * e for e in ses))


def between_run_sd(
    base: Measurement, new: Measurement, fallback_pct: float | None = None, sampled: Sampled | None = None
) -> float | None:
    """The log-scale standard deviation of new / base medians where nothing changed, when both rows
    carry the machine's between-run noise (docs/intervals.md; `fallback_pct` for a row
    that carries none): both medians' sampling errors (from their CIs, or from both runs' samples
    where `sampled`) and both runs' level shifts. None when either lacks a figure."""
    pcts = [fallback_pct if m.run_noise_pct is None else m.run_noise_pct for m in (base, new)]
    if sampled is not None:
        sd = _noise_sd([], pcts)
        return None if sd is None else math.hypot(sd, sampled.log_se)
    return _noise_sd([(m.ci_low_ms, m.ci_high_ms) for m in (base, new)], pcts)


def speedup_noise_sd(base: Measurement, new: Measurement, fallback_pct: float | None = None) -> float | None:
    """The same for base / new paired speed-ups (`speedup_noise_pct`)."""
    return _noise_sd(
        [(m.speedup_low, m.speedup_high) for m in (base, new)],
        [fallback_pct if m.speedup_noise_pct is None else m.speedup_noise_pct for m in (base, new)],
    )


def _status_verdict(base: Measurement, new: Measurement) -> str | None:
    """The verdict where the two rows' statuses decide it (a failure, a fix, no pair of ok rows);
    None where both are ok and their figures are to be judged."""
    if base.ok and new.status in FAILED_STATUSES:
        return NEWLY_FAILING
    if new.ok and base.status in FAILED_STATUSES:
        return FIXED
    return None if base.ok and new.ok else NOT_COMPARABLE


def _less_speedup(base: Measurement, new: Measurement, threshold: float, rule: Rule) -> bool:
    """The paired speed-up fell past the threshold and its two CIs (drift inside a process
    cancels), and where both rows carry its between-run noise, past `noise_z` of that too."""
    pair = speedup_change(base, new)
    if pair is None:
        return False
    s_sd = speedup_noise_sd(base, new, rule.speedup_noise_pct) if rule.noise_z > 0 else None
    if s_sd is None:
        return pair[0] > 1 + threshold and pair[1] > 1
    return pair[0] > 1 + max(threshold, math.expm1(rule.noise_z * s_sd))


SEPARATE_RULE = "separate runs"


def paired(base: Measurement, new: Measurement) -> bool:
    """Whether the two rows were timed side by side (one pair session, the new row its new side):
    then the pair's rule judges them (suite.run.pairrule), not the separate runs' one."""
    return new.pair is not None and bool(base.pair_id) and base.pair_id == new.pair.pair_id


def judge_paired(base: Measurement, new: Measurement) -> tuple[str, float | None, float | None, float | None]:
    """A paired cell's verdict in compare's words, with its latency as new / base (the pair keeps
    base / new: the ratio and interval turned over)."""
    assert new.pair is not None
    unmatched = _status_verdict(base, new)
    if unmatched is not None:
        return unmatched, None, None, None
    latency = new.pair.ratios.get("latency")
    ratio, low, high = (
        (1 / latency.value, 1 / latency.high, 1 / latency.low) if latency else (None, None, None)
    )
    if new.accuracy_failed and not base.accuracy_failed:
        return ACCURACY_REGRESSION, ratio, low, high
    verdict = pairrule.judge(new.pair)
    if verdict.verdict == pairrule.SLOWER:
        only_speedup = all(why.startswith("speedup") for why in verdict.why)
        return (LESS_SPEEDUP if only_speedup else REGRESSION), ratio, low, high
    if verdict.verdict == pairrule.SLOWER_COMPILE:
        return COMPILE_REGRESSION, ratio, low, high
    if verdict.verdict == pairrule.SUSPECT_COMPILE:
        return SUSPECT, ratio, low, high
    return (IMPROVEMENT if verdict.verdict == pairrule.FASTER else UNCHANGED), ratio, low, high


def judge(
    base: Measurement,
    new: Measurement,
    threshold: float,
    rule: Rule | None = None,
    floor: float = 0.0,
    sampled: Sampled | None = None,
) -> tuple[str, float | None, float | None, float | None]:
    """The verdict for one cell, with the ratio new/base and its interval when both are ok.
    A median is judged against the threshold or its noise, whichever is higher: where both rows
    carry the machine's between-run noise, `noise_z` standard deviations of it (`between_run_sd`;
    the interval is then the ratio's 95% one under no change); else `floor`, the runs' noise floor
    (NoiseFloor.bound), and the interval from the two CIs, or from both runs' samples where
    `sampled` (suite.compare.samples). The paired speed-up's fall is judged
    against the threshold and its two CIs, and where both rows carry its between-run noise, against
    `noise_z` standard deviations of that too (`speedup_noise_sd`)."""
    rule = rule or Rule(threshold=threshold)
    sd = between_run_sd(base, new, rule.run_noise_pct, sampled) if rule.noise_z > 0 else None
    bound = max(threshold, floor if sd is None else math.expm1(rule.noise_z * sd))
    unmatched = _status_verdict(base, new)
    if unmatched is not None or base.median_ms is None or new.median_ms is None:
        return unmatched or NOT_COMPARABLE, None, None, None
    ratio = new.median_ms / base.median_ms
    low, high = ratio_interval(new, base) if sampled is None else (sampled.low, sampled.high)
    if sd is not None:
        low, high = ratio * math.exp(-Z95 * sd), ratio * math.exp(Z95 * sd)
    if new.accuracy_failed and not base.accuracy_failed:
        return ACCURACY_REGRESSION, ratio, low, high
    if _less_speedup(base, new, threshold, rule):
        return LESS_SPEEDUP, ratio, low, high
    slower = low is not None and ratio > 1 + bound and low > 1
    compile_slower = compile_change(base, new, rule)
    if slower or compile_slower:
        if base.unhealthy or new.unhealthy:
            return SUSPECT, ratio, low, high
        return (REGRESSION if slower else COMPILE_REGRESSION), ratio, low, high
    if low is None or high is None:
        return NO_INTERVAL, ratio, low, high
    if ratio < 1 - bound and high < 1:
        return IMPROVEMENT, ratio, low, high
    return UNCHANGED, ratio, low, high
