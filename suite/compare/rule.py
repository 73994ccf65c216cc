"""The regression gate's rule: for each cell two runs both ran, the ratio of medians new / base
with an interval, the paired speed-up's change and the compile time's, each judged against a
threshold.

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
machine. Issue 27: where the rows carry the machine's measured between-run noise
(`run_noise_pct`, `speedup_noise_pct`; docs/intervals.md), a median and a speed-up must also clear
`noise_z` standard deviations of it, and the medians' noise floor is not used for those cells.
Compile time is one sample per cell: its own, wider threshold and a floor in seconds.
Issue 37: only like is compared with like. A cell whose two rows differ in a setting that both
record (suite.compare.settings: compile cache, allocator, processes, stopping rule, ...) is not
judged ("not comparable: settings differ", never a failing verdict) and is left out of the noise
floor; where both runs kept their samples, a median's interval comes from them
(suite.compare.samples) instead of the two CIs.
The rates this rule gives on A/A and slowed runs: docs/merge.md, `suite calibrate`.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from suite.compare.samples import Groups, Sampled, SampleKey, sampled_ratio
from suite.compare.settings import SettingDiff, differences, settings_of, unrecorded
from suite.report.load import Loaded
from suite.report.moved import Side, SpeedupSplit
from suite.report.study import Measurement, measurement_of, ratio_interval
from suite.results import CELL_COLUMNS, FAILED_STATUSES, KEY_COLUMNS, STATUS_WORDS, format_value
from suite.stats import log_se, z_of

# A cell across two runs; the build is added when a run holds several builds.
MATCH_COLUMNS: tuple[str, ...] = tuple(c for c in CELL_COLUMNS if c != "build")

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
SECTIONS: tuple[tuple[str, str], ...] = (
    (REGRESSION, "Regressions (slower beyond the threshold and the noise, interval above 1)"),
    (
        LESS_SPEEDUP,
        "Less speed-up (compiled slower against its own eager calls: the paired speed-up fell beyond "
        "the threshold, interval above 1)",
    ),
    (COMPILE_REGRESSION, "Slower compile (beyond the compile threshold and floor)"),
    (
        SUSPECT,
        "Suspect: slower, but timed on an unhealthy machine in either run (not counted; run again on a "
        "quiet machine)",
    ),
    (
        NEWLY_FAILING,
        f"Newly failing (ok in base, {' / '.join(STATUS_WORDS[s] for s in FAILED_STATUSES)} in new)",
    ),
    (ACCURACY_REGRESSION, "Accuracy regressions (compiled output passed in base, fails in new)"),
    (IMPROVEMENT, "Improvements (faster beyond the threshold and the noise, interval below 1)"),
    (FIXED, "Fixed (failed in base, ok in new)"),
    (NO_INTERVAL, "Not judged: a median without a CI"),
    (
        SETTINGS_DIFFER,
        "Not comparable: the settings differ (base -> new; not judged, never a regression)",
    ),
    (NOT_COMPARABLE, "Not comparable (failed or skipped in both, or skipped in one)"),
    (UNCHANGED, "Unchanged (within the threshold or the noise, or the interval includes 1)"),
)


@dataclass(frozen=True)
class Rule:
    """The gate's thresholds (docs/merge.md gives the rates they were chosen from)."""

    threshold: float = THRESHOLD
    compile_threshold: float = COMPILE_THRESHOLD
    compile_floor_s: float = COMPILE_FLOOR_S
    noise_z: float = NOISE_Z
    # the machine's between-run noise (percent) for rows that carry none (runs from before issue 27,
    # a device not yet measured): `compare --run-noise-pct`; None: such rows get the noise floor
    run_noise_pct: float | None = None
    speedup_noise_pct: float | None = None  # the same for the paired speed-up


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


@dataclass(frozen=True)
class CellChange:
    """One cell in both runs, and what changed."""

    key: tuple[str, ...]
    base_build: str
    new_build: str
    base: Measurement
    new: Measurement
    ratio: float | None
    low: float | None
    high: float | None
    verdict: str
    settings: tuple[SettingDiff, ...] = ()  # what differs (verdict SETTINGS_DIFFER)
    sampled: bool = False  # the median's interval came from both runs' samples

    @property
    def unhealthy(self) -> bool:
        return self.base.unhealthy or self.new.unhealthy

    @property
    def judged(self) -> bool:
        """Compared like with like (the settings both rows record are the same)."""
        return self.verdict != SETTINGS_DIFFER


@dataclass(frozen=True)
class Comparison:
    changes: tuple[CellChange, ...]
    only_base: tuple[tuple[str, ...], ...]
    only_new: tuple[tuple[str, ...], ...]
    key_columns: tuple[str, ...]
    threshold: float
    rule: Rule = Rule()
    noise: NoiseFloor = NoiseFloor()
    # settings that one run records and the other does not, and in how many matched cells
    unrecorded: tuple[tuple[str, int], ...] = ()

    @property
    def judged(self) -> tuple[CellChange, ...]:
        """The matched cells compared like with like."""
        return tuple(c for c in self.changes if c.judged)

    @property
    def not_comparable(self) -> tuple[CellChange, ...]:
        """The matched cells whose settings differ: listed, never judged."""
        return tuple(c for c in self.changes if not c.judged)

    @property
    def nothing_judged(self) -> bool:
        """No cell in both runs under the same settings: the gate has nothing to say."""
        return not self.judged

    def differing_settings(self) -> dict[str, tuple[int, tuple[str, ...]]]:
        """Each setting that differs: in how many cells, and its distinct `base -> new` values."""
        out: dict[str, tuple[int, tuple[str, ...]]] = {}
        for c in self.not_comparable:
            for d in c.settings:
                n, seen = out.get(d.name, (0, ()))
                pair = f"{d.base} -> {d.new}"
                out[d.name] = (n + 1, seen if pair in seen else (*seen, pair))
        return out

    @property
    def sampled_cells(self) -> int:
        """Cells whose median was judged from both runs' samples."""
        return sum(c.sampled for c in self.changes)

    @property
    def rerun_cells(self) -> int:
        """Cells whose medians were judged against the rows' between-run noise, not the floor."""
        if self.rule.noise_z <= 0:
            return 0
        return sum(between_run_sd(c.base, c.new, self.rule.run_noise_pct) is not None for c in self.judged)

    @property
    def speedup_noise_cells(self) -> int:
        """Compiled cells whose paired speed-up was judged against its between-run noise."""
        if self.rule.noise_z <= 0:
            return 0
        return sum(
            speedup_noise_sd(c.base, c.new, self.rule.speedup_noise_pct) is not None for c in self.judged
        )

    @property
    def median_bound(self) -> float:
        """What a ratio of medians must exceed: the threshold, or the runs' noise floor if higher."""
        return max(self.threshold, self.noise.bound(self.rule.noise_z))

    @property
    def failed(self) -> bool:
        return any(c.verdict in FAILING_VERDICTS for c in self.changes)

    def count(self, verdict: str) -> int:
        return sum(c.verdict == verdict for c in self.changes)


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


def compile_change(base: Measurement, new: Measurement, rule: Rule) -> bool:
    """Compile time beyond its threshold and its floor in seconds."""
    b, n = base.compile_s, new.compile_s
    if b is None or n is None or b <= 0:
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
    carry the machine's between-run noise (issue 27, docs/intervals.md; `fallback_pct` for a row
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


@dataclass(frozen=True)
class _Row:
    """One run's row of a cell, as compare needs it."""

    build: str
    measurement: Measurement
    settings: dict[str, str]
    samples: SampleKey


def _index(loaded: Loaded, columns: Sequence[str]) -> dict[tuple[str, ...], _Row]:
    out = {}
    for r in loaded.frame.itertuples(index=False):
        row = r._asdict()
        sample_key = (tuple(format_value(row.get(c)) for c in KEY_COLUMNS), str(row.get("run_id") or ""))
        out[tuple(str(row[c]) for c in columns)] = _Row(
            r.build, measurement_of(r), settings_of(row), sample_key
        )
    return out


@dataclass(frozen=True)
class Samples:
    """Both runs' kept samples (suite.compare.samples.groups_of), where they kept any; each
    cell's bootstrap made once however many rules judge it (calibrate)."""

    base: Groups
    new: Groups
    memo: dict[tuple[SampleKey, SampleKey], Sampled | None] = field(default_factory=dict, compare=False)

    def ratio(self, base: SampleKey, new: SampleKey) -> Sampled | None:
        """new / base from the two rows' samples (None where either run kept none)."""
        if (base, new) not in self.memo:
            groups = self.base.get(base), self.new.get(new)
            self.memo[base, new] = sampled_ratio(*groups) if groups[0] and groups[1] else None
        return self.memo[base, new]


def compare(
    base: Loaded, new: Loaded, threshold: float, rule: Rule | None = None, samples: Samples | None = None
) -> Comparison:
    """Match cells (ignoring the build when each run has one build, else by build too), set aside
    those measured under different settings, and judge the others (from their samples where both
    runs kept them)."""
    rule = replace(rule or Rule(), threshold=threshold)
    one_build_each = base.frame["build"].nunique() == 1 and new.frame["build"].nunique() == 1
    columns = MATCH_COLUMNS if one_build_each else ("build", *MATCH_COLUMNS)
    b, n = _index(base, columns), _index(new, columns)
    both = b.keys() & n.keys()
    apart = {k: differences(b[k].settings, n[k].settings) for k in both}
    noise = NoiseFloor.of(
        n[k].measurement.median_ms / b[k].measurement.median_ms  # type: ignore[operator]
        for k in both
        if not apart[k] and _counts_for_noise(b[k].measurement) and _counts_for_noise(n[k].measurement)
    )
    changes = [_change(key, b[key], n[key], apart[key], (rule, noise), samples) for key in both]
    bs = columns.index("batch_size")

    def order(key: tuple[str, ...]) -> tuple[object, ...]:
        return (*key[:bs], int(key[bs]), *key[bs + 1 :])

    changes.sort(key=lambda c: order(c.key))
    missing = Counter(name for k in both for name in unrecorded(b[k].settings, n[k].settings))
    return Comparison(
        changes=tuple(changes),
        only_base=tuple(sorted(b.keys() - n.keys(), key=order)),
        only_new=tuple(sorted(n.keys() - b.keys(), key=order)),
        key_columns=columns,
        threshold=threshold,
        rule=rule,
        noise=noise,
        unrecorded=tuple(sorted(missing.items())),
    )


def _change(
    key: tuple[str, ...],
    base: _Row,
    new: _Row,
    apart: tuple[SettingDiff, ...],
    how: tuple[Rule, NoiseFloor],
    samples: Samples | None,
) -> CellChange:
    """One matched cell: set aside when its settings differ, else judged."""
    bm, nm = base.measurement, new.measurement
    if apart:
        return CellChange(key, base.build, new.build, bm, nm, None, None, None, SETTINGS_DIFFER, apart)
    rule, noise = how
    sampled = samples.ratio(base.samples, new.samples) if samples is not None and bm.ok and nm.ok else None
    verdict, ratio, low, high = judge(bm, nm, rule.threshold, rule, noise.bound(rule.noise_z), sampled)
    return CellChange(
        key, base.build, new.build, bm, nm, ratio, low, high, verdict, sampled=sampled is not None
    )


def _counts_for_noise(m: Measurement) -> bool:
    """A median the noise floor may be measured on: ok, positive, on a healthy machine."""
    return m.ok and bool(m.median_ms) and m.median_ms > 0 and not m.unhealthy
