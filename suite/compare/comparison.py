"""Two runs compared cell by cell (`compare`, the `Comparison`): cells matched (by build too
when a run holds several), those measured under different settings set aside, the runs' noise
floor measured on the others, and each judged by the gate's rule (suite.compare.rule.judge),
from both runs' samples where both kept them (suite.compare.samples).

Host side only.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from suite.compare.rule import (
    FAILING_VERDICTS,
    SEPARATE_RULE,
    SETTINGS_DIFFER,
    NoiseFloor,
    Rule,
    between_run_sd,
    judge,
    judge_paired,
    paired,
    speedup_noise_sd,
)
from suite.compare.samples import Groups, Sampled, SampleKey, sampled_ratio
from suite.compare.settings import SettingDiff, differences, settings_of, unrecorded
from suite.report.load import Loaded
from suite.report.measurement import Measurement, measurement_of
from suite.results import CELL_COLUMNS, KEY_COLUMNS, format_value
from suite.run import pairrule

# A cell across two runs; the build is added when a run holds several builds.
MATCH_COLUMNS: tuple[str, ...] = tuple(c for c in CELL_COLUMNS if c != "build")


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
    rule: str = SEPARATE_RULE  # which rule judged it: the separate runs', or the pair's
    separate: str = ""  # a paired cell: the separate runs' verdict on the same two rows, beside it

    @property
    def paired(self) -> bool:
        return self.rule == pairrule.RULE_NAME

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
    rule: Rule = field(default_factory=Rule)
    noise: NoiseFloor = field(default_factory=NoiseFloor)
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
    def paired_cells(self) -> int:
        """Cells judged by the pair's rule (timed side by side)."""
        return sum(c.paired for c in self.changes)

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
    if rule.pairs and paired(bm, nm):  # the pair's rule; the separate runs' verdict kept beside it
        by_pair, *interval = judge_paired(bm, nm)
        return CellChange(
            key, base.build, new.build, bm, nm, *interval, by_pair, rule=pairrule.RULE_NAME, separate=verdict
        )
    return CellChange(
        key, base.build, new.build, bm, nm, ratio, low, high, verdict, sampled=sampled is not None
    )


def _counts_for_noise(m: Measurement) -> bool:
    """A median the noise floor may be measured on: ok, positive, on a healthy machine."""
    return m.ok and bool(m.median_ms) and m.median_ms > 0 and not m.unhealthy
