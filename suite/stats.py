"""Plain statistics on latency samples: standard library only, deterministic.

- The 95% CI of the median is distribution-free: two order statistics chosen from the
  Binomial(n, 1/2) distribution (no normality assumption; latencies are skewed).
- The paired speed-up CI is a percentile bootstrap over iteration pairs (eager_i,
  compiled_i) measured back to back, with a fixed seed so the same samples always give
  the same interval.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


def mean(xs: Sequence[float]) -> float:
    return math.fsum(xs) / len(xs)


def percentile(xs: Sequence[float], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), q in [0, 100]."""
    if not xs:
        raise ValueError("percentile of no samples")
    s = sorted(xs)
    pos = (len(s) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(s) - 1)
    return s[lo] + (s[hi] - s[lo]) * (pos - lo)


def median(xs: Sequence[float]) -> float:
    return percentile(xs, 50.0)


def stdev(xs: Sequence[float]) -> float:
    """Sample standard deviation (n - 1); 0 for a single sample."""
    if len(xs) < 2:
        return 0.0
    m = mean(xs)
    return math.sqrt(math.fsum((x - m) ** 2 for x in xs) / (len(xs) - 1))


def _binom_pmf(i: int, n: int) -> float:
    """P(X = i) for X ~ Binomial(n, 1/2), via log-gamma (exact enough for any n)."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) + n * math.log(0.5))


def median_ci(xs: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """Distribution-free CI of the median from order statistics.

    With X ~ Bin(n, 1/2), takes the largest k with P(X <= k - 1) <= alpha/2; the
    interval [x_(k), x_(n-k+1)] (1-based) covers the true median with probability
    >= `confidence`. With too few samples for that (n < 6), the full range.
    """
    if len(xs) == 0:
        raise ValueError("median_ci of no samples")
    return median_ci_of_sorted(sorted(xs), confidence)


def median_ci_of_sorted(s: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """median_ci of samples already in ascending order (a list or a sorted array): no sort."""
    n = len(s)
    k = median_ci_rank(n, confidence)
    return (s[k - 1], s[n - k]) if k else (s[0], s[-1])


@lru_cache(maxsize=4096)
def median_ci_rank(n: int, confidence: float = 0.95) -> int:
    """median_ci's k for n samples (0: the full range), computed once per (n, confidence)."""
    alpha = 1.0 - confidence
    k, cdf = 0, 0.0  # invariant: cdf == P(X <= k - 1)
    while k + 1 <= n // 2:
        nxt = cdf + _binom_pmf(k, n)  # P(X <= k)
        if nxt > alpha / 2:
            break
        k, cdf = k + 1, nxt
    return k


def bootstrap_ratio_ci(
    numer: Sequence[float],
    denom: Sequence[float],
    confidence: float = 0.95,
    resamples: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile-bootstrap CI of median(numer) / median(denom) over *paired* samples.

    Pairs are resampled together, so drift that hits both halves of a pair (clock
    boost, a noisy neighbour) cancels instead of widening the interval.
    """
    n = len(numer)
    if n != len(denom) or n == 0:
        raise ValueError("bootstrap_ratio_ci needs two equally long, non-empty samples")
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        idx = [rng.randrange(n) for _ in range(n)]
        ratios.append(median([numer[i] for i in idx]) / median([denom[i] for i in idx]))
    alpha = 1.0 - confidence
    return percentile(ratios, 100 * alpha / 2), percentile(ratios, 100 * (1 - alpha / 2))


@dataclass(frozen=True)
class Summary:
    """The latency figures of one series of timed iterations (milliseconds)."""

    n: int
    mean: float
    median: float
    p10: float
    p90: float
    std: float
    min: float
    ci95_low: float
    ci95_high: float

    @staticmethod
    def of(samples_ms: Sequence[float]) -> Summary:
        lo, hi = median_ci(samples_ms)
        return Summary(
            n=len(samples_ms),
            mean=mean(samples_ms),
            median=median(samples_ms),
            p10=percentile(samples_ms, 10),
            p90=percentile(samples_ms, 90),
            std=stdev(samples_ms),
            min=min(samples_ms),
            ci95_low=lo,
            ci95_high=hi,
        )


@dataclass(frozen=True)
class Speedup:
    """Paired speed-up: eager median / compiled median, with a bootstrap CI."""

    ratio: float
    ci95_low: float
    ci95_high: float

    @staticmethod
    def of(eager_ms: Sequence[float], compiled_ms: Sequence[float]) -> Speedup:
        lo, hi = bootstrap_ratio_ci(eager_ms, compiled_ms)
        return Speedup(median(eager_ms) / median(compiled_ms), lo, hi)


def breakeven_calls(
    compile_s: float | None, eager_ms: float | None, compiled_ms: float | None
) -> float | None:
    """Calls after which compiling has paid for itself: the compile's seconds over the seconds
    each compiled call saves (paired medians, eager - compiled). None when compiling is not
    faster or a figure is missing. The one definition of the CSV's breakeven columns."""
    if compile_s is None or eager_ms is None or compiled_ms is None:
        return None
    saved_s = (eager_ms - compiled_ms) / 1000.0
    if not saved_s > 0 or not math.isfinite(compile_s):
        return None
    return compile_s / saved_s


def _hierarchical_indices(rng: random.Random, sizes: Sequence[int]) -> list[tuple[int, list[int]]]:
    """One hierarchical resample: processes drawn with replacement, then calls within each."""
    k = len(sizes)
    out = []
    for _ in range(k):
        p = rng.randrange(k)
        out.append((p, [rng.randrange(sizes[p]) for _ in range(sizes[p])]))
    return out


def hierarchical_median_ci(
    groups: Sequence[Sequence[float]], confidence: float = 0.95, resamples: int = 1000, seed: int = 0
) -> tuple[float, float]:
    """CI of the pooled median of several processes' samples (`groups`: one list per process):
    a percentile bootstrap that resamples processes with replacement, then calls within each drawn
    process, so what moves between processes widens the interval (docs/intervals.md). One
    process: the distribution-free interval of its median (`median_ci`)."""
    groups = [list(g) for g in groups if g]
    if not groups:
        raise ValueError("hierarchical_median_ci of no samples")
    if len(groups) == 1:
        return median_ci(groups[0], confidence)
    rng = random.Random(seed)
    stats = []
    for _ in range(resamples):
        pooled = [
            groups[p][i] for p, idx in _hierarchical_indices(rng, [len(g) for g in groups]) for i in idx
        ]
        stats.append(median(pooled))
    alpha = 1.0 - confidence
    return percentile(stats, 100 * alpha / 2), percentile(stats, 100 * (1 - alpha / 2))


def hierarchical_ratio_ci(
    numer: Sequence[Sequence[float]],
    denom: Sequence[Sequence[float]],
    confidence: float = 0.95,
    resamples: int = 1000,
    seed: int = 0,
) -> tuple[float, float]:
    """CI of median(pooled numer) / median(pooled denom) over several processes whose samples are
    paired within each process (interleaved rounds): processes resampled, then pairs within each.
    One process: `bootstrap_ratio_ci`."""
    pairs = [(list(a), list(b)) for a, b in zip(numer, denom, strict=True) if a]
    if not pairs or any(len(a) != len(b) for a, b in pairs):
        raise ValueError("hierarchical_ratio_ci needs equally long, non-empty paired samples per process")
    if len(pairs) == 1:
        return bootstrap_ratio_ci(pairs[0][0], pairs[0][1], confidence, resamples, seed)
    rng = random.Random(seed)
    ratios = []
    for _ in range(resamples):
        drawn = _hierarchical_indices(rng, [len(a) for a, _ in pairs])
        top = [pairs[p][0][i] for p, idx in drawn for i in idx]
        bottom = [pairs[p][1][i] for p, idx in drawn for i in idx]
        ratios.append(median(top) / median(bottom))
    alpha = 1.0 - confidence
    return percentile(ratios, 100 * alpha / 2), percentile(ratios, 100 * (1 - alpha / 2))


# --- Where another run's median should fall (docs/intervals.md) ---------------------------------
#
# A run's log median = the cell's level + the run's own level shift (what moves between runs: the
# host's speed, where the heap and code land, a neighbour's load; variance tau^2, the same for every
# run of the cell on one machine) + the sampling error of its median (variance se^2, which the
# row's CI of the median measures). Another run of the same cell then differs from this one by
# both runs' shifts and both runs' errors: its log median lies within
# z * sqrt(2 * (se^2 + tau^2)) of this one's, 95% of the time for z = 1.96. tau is the machine's:
# measured by repeating cells (`between_run_variance` below, `nox -s coverage`), then a setting.


def z_of(confidence: float) -> float:
    """The two-sided normal quantile of a confidence (1.96 for 0.95)."""
    return statistics.NormalDist().inv_cdf(0.5 + confidence / 2)


def log_se(low: float, high: float, confidence: float = 0.95) -> float:
    """The standard error, on the log scale, that a `confidence` interval [low, high] implies."""
    if not 0 < low <= high:
        raise ValueError(f"log_se of the interval [{low}, {high}]")
    return (math.log(high) - math.log(low)) / (2 * z_of(confidence))


def rerun_interval(
    center: float, low: float, high: float, tau: float, confidence: float = 0.95
) -> tuple[float, float]:
    """Where another run's median of the cell should fall, `confidence` of the time: `center`
    (this run's median) with its CI [low, high] and the machine's between-run log sd `tau`."""
    half = z_of(confidence) * math.sqrt(2 * (log_se(low, high, confidence) ** 2 + tau**2))
    return center * math.exp(-half), center * math.exp(half)


def between_run_variance(runs: Sequence[tuple[float, float, float]], confidence: float = 0.95) -> float:
    """tau^2 from one cell's repeated runs, each (median, CI low, CI high): the variance of their
    log medians less the mean of their own squared standard errors (the method-of-moments estimate
    of a random-effects model's between-study variance), at least 0. Needs two runs."""
    if len(runs) < 2:
        raise ValueError("between_run_variance needs two or more runs")
    logs = [math.log(m) for m, _, _ in runs]
    within = mean([log_se(lo, hi, confidence) ** 2 for _, lo, hi in runs])
    return max(0.0, stdev(logs) ** 2 - within)
