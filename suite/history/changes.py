"""Change points in one series of nights: where a cell's level moved, how far, and how sure.

The rule, stated (its rates on this suite's own noise: docs/history.md, `history calibrate`):

1. The series is the log of one figure per night (median latency, paired speed-up or compile
   time), in date order; a series of fewer than `min_nights` nights is not judged.
2. Its noise is measured on itself: the median absolute difference of consecutive nights, as a
   standard deviation (robust to the steps it looks for), at least `sigma_floor`. The series in
   those units, each night clipped to `clip_z` of the series' median (one wild night moves a
   level no more than three ordinary ones), is segmented by ruptures' PELT on a mean-shift
   (linear kernel) cost with the penalty `penalty` x log(nights), every level held for at least
   `min_segment` nights: a change is reported only once the new level has held that long.
   A change whose new level has held `confirm_nights` nights is confirmed (issues are opened for
   those alone); before that it is pending.
3. Each break is then tested on the nights themselves, between the levels on either side: a
   Mann-Whitney U test (two-sided, p < `alpha`), the Hodges-Lehmann shift (the median of every
   after-minus-before difference) with its distribution-free 95% CI, which must exclude 0, and a
   size of at least `min_change`. The weakest failing break is dropped, the levels beside it
   joined, and the rest tested again, until every break passes.

Calibrated with `suite.history.calibrate`: histories of this suite's own A/A noise (its repeat
runs) and the same with steps planted at known nights.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

MAD_TO_SD = 1.4826
EXACT_UP_TO = 10  # nights on the shorter side for the exact Mann-Whitney distribution


@dataclass(frozen=True)
class Rule:
    """The detector's settings; the defaults are the calibrated ones (docs/history.md)."""

    min_nights: int = 8
    min_segment: int = 3
    confirm_nights: int = 5
    penalty: float = 5.0
    alpha: float = 0.0001
    min_change: float = 0.01
    clip_z: float = 3.0
    sigma_floor: float = 0.002
    confidence: float = 0.95

    def __post_init__(self) -> None:
        if self.min_segment < 2 or self.min_nights < 2 * self.min_segment:
            raise ValueError("min_segment >= 2 and min_nights >= 2 x min_segment")
        if self.confirm_nights < self.min_segment:
            raise ValueError("confirm_nights >= min_segment")
        if not (0 < self.alpha < 1 and 0 < self.confidence < 1):
            raise ValueError("alpha and confidence are probabilities")
        if self.penalty <= 0 or self.clip_z <= 0 or self.sigma_floor <= 0 or self.min_change < 0:
            raise ValueError("penalty, clip_z and sigma_floor > 0, min_change >= 0")


@dataclass(frozen=True)
class Shift:
    """A level change between night `at - 1` (the last of the old level) and night `at`."""

    at: int  # index of the first night of the new level
    start: int  # the old level's first night
    end: int  # one past the new level's last night
    change: float  # relative: exp(Hodges-Lehmann shift of the logs) - 1
    low: float
    high: float
    p_value: float

    def confirmed(self, rule: Rule) -> bool:
        """The new level has held `confirm_nights` nights (before that, a change is pending)."""
        return self.end - self.at >= rule.confirm_nights


def noise_sigma(x: np.ndarray, floor: float) -> float:
    """The series' night-to-night noise as a standard deviation, from consecutive differences."""
    if len(x) < 2:
        return floor
    return max(floor, MAD_TO_SD * float(np.median(np.abs(np.diff(x)))) / math.sqrt(2))


def hodges_lehmann(before: np.ndarray, after: np.ndarray, confidence: float) -> tuple[float, float, float]:
    """The shift after - before (median of all pairwise differences) and its distribution-free CI
    (order statistics of the differences, from the Mann-Whitney statistic's normal approximation)."""
    from scipy.stats import norm

    diffs = np.sort((after[:, None] - before[None, :]).ravel())
    n = len(diffs)
    na, nb = len(before), len(after)
    z = norm.ppf(0.5 + confidence / 2)
    k = math.floor(n / 2 - z * math.sqrt(na * nb * (na + nb + 1) / 12))
    k = min(max(k, 0), (n - 1) // 2)
    return float(np.median(diffs)), float(diffs[k]), float(diffs[n - 1 - k])


def _test(x: np.ndarray, start: int, at: int, end: int, rule: Rule) -> Shift:
    from scipy.stats import mannwhitneyu  # only where a break is tested: most series have none

    before, after = x[start:at], x[at:end]
    # the exact distribution where a side is short (its normal approximation is far off there:
    # 3 nights above 30 give p = 0.0004 exactly, 0.005 approximated)
    method = "exact" if min(len(before), len(after)) <= EXACT_UP_TO else "asymptotic"
    p = float(mannwhitneyu(after, before, alternative="two-sided", method=method).pvalue)
    shift, low, high = hodges_lehmann(before, after, rule.confidence)
    return Shift(at, start, end, math.expm1(shift), math.expm1(low), math.expm1(high), p)


def _passes(s: Shift, rule: Rule) -> bool:
    return s.p_value < rule.alpha and (s.low > 0 or s.high < 0) and abs(s.change) >= rule.min_change


@cache
def _pelt_l2() -> Callable[[np.ndarray, float, int], np.ndarray]:
    """ruptures' PELT on the linear kernel, in C: the function `KernelCPD(kernel="linear")
    .predict(pen=...)` calls, loaded from ruptures' own extension module without the package's
    `__init__` (which imports all of SciPy's stats and spatial: most of a report's import time);
    through `ruptures` itself where its files are not laid out so."""
    spec = importlib.util.find_spec("ruptures")
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(folder) / "detection" / "_detection" / f"ekcpd{suffix}"
            if path.is_file():
                ext = importlib.util.spec_from_file_location("ruptures.detection._detection.ekcpd", path)
                if ext is not None and ext.loader is not None:
                    module = importlib.util.module_from_spec(ext)
                    ext.loader.exec_module(module)
                    return module.ekcpd_pelt_L2  # type: ignore[no-any-return]
    from ruptures.detection._detection.ekcpd import ekcpd_pelt_L2

    return ekcpd_pelt_L2  # type: ignore[no-any-return]


def candidates(x: np.ndarray, rule: Rule) -> list[int]:
    """Where ruptures' PELT puts the breaks of the standardized, clipped series (what
    `ruptures.KernelCPD(kernel="linear", min_size=rule.min_segment).fit(z).predict(pen=...)`
    returns, but its last index: the same C function, called as that method calls it)."""
    sigma = noise_sigma(x, rule.sigma_floor)
    z = np.clip((x - np.median(x)) / sigma, -rule.clip_z, rule.clip_z)
    n = len(z)
    if rule.min_segment + rule.min_segment > n:  # ruptures: BadSegmentationParameters
        raise ValueError(f"a series of {n} nights cannot hold two levels of {rule.min_segment}")
    path = _pelt_l2()(z.reshape(-1, 1).astype(np.double), rule.penalty * math.log(n), rule.min_segment)
    breaks, at = [], n
    while at > 0:
        breaks.append(at)
        at = int(path[at])
    return breaks[::-1][:-1]


def detect(values: Sequence[float], rule: Rule | None = None) -> list[Shift]:
    """The level changes of a series of positive figures, in night order (empty if too short)."""
    rule = rule or Rule()
    v = np.asarray(values, dtype=float)
    if len(v) < rule.min_nights or np.any(~np.isfinite(v)) or np.any(v <= 0):
        return []
    x = np.log(v)
    breaks = candidates(x, rule)
    while breaks:
        edges = [0, *breaks, len(x)]
        shifts = [_test(x, edges[i - 1], edges[i], edges[i + 1], rule) for i in range(1, len(edges) - 1)]
        failing = [s for s in shifts if not _passes(s, rule)]
        if not failing:
            return shifts
        weakest = max(failing, key=lambda s: (s.p_value, -abs(s.change)))
        breaks.remove(weakest.at)
    return []
