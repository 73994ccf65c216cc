"""Statistics: checked against exact values and against scipy/numpy where they exist."""

from __future__ import annotations

import math
import random

import pytest

from suite.measure import stats


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
