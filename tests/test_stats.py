"""Statistics: checked against exact values and against scipy/numpy where they exist."""

from __future__ import annotations

import math
import random

import pytest

from suite import stats


def test_percentile_matches_linear_interpolation() -> None:
    xs = [4.0, 1.0, 3.0, 2.0]
    assert stats.percentile(xs, 0) == 1.0
    assert stats.percentile(xs, 100) == 4.0
    assert stats.percentile(xs, 50) == 2.5
    assert stats.percentile(xs, 10) == pytest.approx(1.3)
    assert stats.median([5.0]) == 5.0


def test_percentile_agrees_with_numpy() -> None:
    np = pytest.importorskip("numpy")
    rng = random.Random(1)
    xs = [rng.lognormvariate(0, 0.5) for _ in range(301)]
    for q in (10, 50, 90):
        assert stats.percentile(xs, q) == pytest.approx(float(np.percentile(xs, q)))


def test_stdev_is_the_sample_standard_deviation() -> None:
    assert stats.stdev([2, 4, 4, 4, 5, 5, 7, 9]) == pytest.approx(math.sqrt(32 / 7))
    assert stats.stdev([3.0]) == 0.0


def test_median_ci_order_statistics_for_n_300() -> None:
    # For n=300 the distribution-free 95% interval is [x(133), x(168)] (1-based).
    lo, hi = stats.median_ci([float(i) for i in range(1, 301)])
    assert (lo, hi) == (133.0, 168.0)


def test_median_ci_coverage_is_at_least_95_percent() -> None:
    rng = random.Random(7)
    true_median = math.exp(0.0)  # median of lognormal(0, 1)
    covered = 0
    trials = 400
    for _ in range(trials):
        xs = [rng.lognormvariate(0, 1) for _ in range(60)]
        lo, hi = stats.median_ci(xs)
        covered += lo <= true_median <= hi
    assert covered / trials >= 0.93  # nominal >= 0.95, minus Monte-Carlo slack


def test_median_ci_small_samples_fall_back_to_the_range() -> None:
    assert stats.median_ci([3.0, 1.0, 2.0]) == (1.0, 3.0)


def test_bootstrap_ratio_ci_brackets_the_ratio_and_is_deterministic() -> None:
    rng = random.Random(3)
    eager = [10 + rng.gauss(0, 0.5) for _ in range(200)]
    compiled = [e / 2 + rng.gauss(0, 0.1) for e in eager]
    a = stats.Speedup.of(eager, compiled)
    b = stats.Speedup.of(eager, compiled)
    assert a == b
    assert a.ci95_low < a.ratio < a.ci95_high
    assert a.ci95_low > 1.9 and a.ci95_high < 2.1


def test_pairing_cancels_shared_drift() -> None:
    # Both series drift together (e.g. a clock ramp): the paired ratio stays tight.
    eager = [10.0 + i * 0.05 for i in range(200)]
    compiled = [e / 1.25 for e in eager]
    s = stats.Speedup.of(eager, compiled)
    assert s.ratio == pytest.approx(1.25)
    assert s.ci95_high - s.ci95_low < 0.01


def test_summary_fields() -> None:
    s = stats.Summary.of([1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10.0])
    assert s.n == 10 and s.mean == 5.5 and s.median == 5.5 and s.min == 1.0
    assert s.p10 == pytest.approx(1.9) and s.p90 == pytest.approx(9.1)
    assert s.ci95_low <= s.median <= s.ci95_high


def test_errors_on_empty_input() -> None:
    with pytest.raises(ValueError):
        stats.median_ci([])
    with pytest.raises(ValueError):
        stats.bootstrap_ratio_ci([1.0], [])


# --- against scipy (host-side: the container code keeps its own small implementation) ---


@pytest.mark.parametrize("n", [*range(6, 80), 100, 101, 299, 300, 301, 1000])
@pytest.mark.parametrize("confidence", [0.90, 0.95, 0.99])
def test_median_ci_order_statistics_are_scipys_binomial_quantiles(n: int, confidence: float) -> None:
    """The interval's ranks: k - 1 is the largest j with P(X <= j) <= alpha/2, X ~ Bin(n, 1/2),
    read off scipy.stats.binom's quantile function; the interval is [x(k), x(n-k+1)]."""
    binom = pytest.importorskip("scipy.stats").binom
    alpha = 1 - confidence
    j = int(binom.ppf(alpha / 2, n, 0.5))  # smallest j with P(X <= j) >= alpha/2
    if binom.cdf(j, n, 0.5) > alpha / 2 + 1e-12:
        j -= 1  # then the largest with P(X <= j) <= alpha/2 is one below
    k = j + 1
    xs = [float(i) for i in range(1, n + 1)]  # x(i) = i
    lo, hi = stats.median_ci(xs, confidence)
    if k >= 1:
        assert (lo, hi) == (float(k), float(n - k + 1))
        # and its coverage, by scipy: P(x(k) <= median <= x(n-k+1)) = 1 - 2 P(X <= k - 1)
        assert 1 - 2 * binom.cdf(k - 1, n, 0.5) >= confidence
    else:
        assert (lo, hi) == (1.0, float(n))


@pytest.mark.parametrize("seed", range(5))
def test_paired_bootstrap_matches_scipys(seed: int) -> None:
    """scipy.stats.bootstrap (paired, percentile) of median(eager) / median(compiled) on the same
    samples: the interval ends agree within Monte-Carlo error (10% of the interval's width;
    2000 resamples here, 9999 there)."""
    np = pytest.importorskip("numpy")
    scipy_stats = pytest.importorskip("scipy.stats")
    rng = random.Random(seed)
    drift = [1 + 0.3 * i / 150 for i in range(150)]  # shared by each pair: only pairing cancels it
    eager = [10 * d * rng.lognormvariate(0, 0.08) for d in drift]
    compiled = [e / 1.3 * rng.lognormvariate(0, 0.04) for e in eager]
    ours = stats.Speedup.of(eager, compiled)
    ref = scipy_stats.bootstrap(
        (np.array(eager), np.array(compiled)),
        lambda a, b: np.median(a) / np.median(b),
        paired=True,
        vectorized=False,
        method="percentile",
        confidence_level=0.95,
        n_resamples=9999,
        random_state=seed,
    ).confidence_interval
    width = ref.high - ref.low
    assert abs(ours.ci95_low - ref.low) <= 0.1 * width
    assert abs(ours.ci95_high - ref.high) <= 0.1 * width
    assert ours.ratio == pytest.approx(float(np.median(eager) / np.median(compiled)))
