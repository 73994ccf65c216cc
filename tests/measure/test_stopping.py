"""The timed loop's stopping rule: fixed (the guide's count), or until the 95% CI of
every timed function's median is within a target, between a minimum and a maximum of calls or
seconds; the row says how many calls and why it stopped. Fake clocks and functions: no model."""

from __future__ import annotations

import itertools
from dataclasses import replace

import pytest

from suite.measure.timing import CI, FIXED, MAX_CALLS, MAX_SECONDS, STOP_REASONS, StopRule, Timed, TimingLoop
from suite.results import BY_NAME
from suite.spec.settings import SettingError, Settings


def loop_of(step_ns: itertools.count) -> TimingLoop:
    return TimingLoop(lambda: None, clock=lambda: next(step_ns))


def steady_clock() -> TimingLoop:
    """Every call takes exactly 1 ms: the CI collapses to the median at once."""
    return loop_of(itertools.count(0, 1_000_000))


def noisy_clock() -> TimingLoop:
    """Calls alternate 1 ms and 3 ms: the CI of the median never gets narrow."""
    times = itertools.accumulate(itertools.cycle([0, 1_000_000, 0, 3_000_000]))
    return TimingLoop(lambda: None, clock=lambda: next(times))


def test_fixed_runs_exactly_the_count() -> None:
    timed = steady_clock().until([lambda: None, lambda: None], StopRule(FIXED, max_calls=30, min_calls=5))
    assert [len(s) for s in timed.samples] == [30, 30] and timed.reason == FIXED
    # 6 rounds of blocks of 5: 30 latency calls and 6 throughput blocks of 5 calls each, per
    # function, and 7 switch calls (the first block, then one a round: A B | B A | A B ...)
    assert timed.fields()["calls"] == 2 * (30 + 30) + 7 and timed.fields()["stop_reason"] == "fixed"
    assert [len(b) for b in timed.blocks] == [6, 6] and [len(s) for s in timed.switch] == [4, 3]


def test_ci_stops_at_the_minimum_when_the_interval_is_tight() -> None:
    timed = steady_clock().until([lambda: None], StopRule(CI, max_calls=300, min_calls=20))
    assert len(timed.samples[0]) == 20 and timed.reason == CI


def test_ci_goes_on_to_the_maximum_when_it_is_not() -> None:
    timed = noisy_clock().until([lambda: None], StopRule(CI, max_calls=40, min_calls=10, ci_target_pct=1.0))
    assert len(timed.samples[0]) == 40 and timed.reason == MAX_CALLS


def test_ci_stops_on_seconds() -> None:
    rule = StopRule(CI, max_calls=10_000, min_calls=10, ci_target_pct=1.0, max_seconds=1e-9)
    timed = noisy_clock().until([lambda: None], rule)
    assert len(timed.samples[0]) == 10 and timed.reason == MAX_SECONDS


def test_the_rule_comes_from_the_settings_and_is_validated() -> None:
    s = Settings(stop_rule="ci", iterations=50, min_iterations=20, ci_target_pct=0.5, max_timing_s=30)
    assert StopRule.of(s) == StopRule(CI, 50, 20, 0.5, 30.0)
    assert StopRule.of(Settings(iterations=5)).min_calls == 5  # fixed: the minimum is never above the count
    assert StopRule.of(replace(s, min_iterations=60)).min_calls == 50  # the minimum is then the maximum
    for field, value in (("stop_rule", "often"), ("ci_target_pct", 0), ("max_timing_s", -1)):
        with pytest.raises(SettingError) as err:
            replace(s, **{field: value})
        assert err.value.fields == (field,)
    with pytest.raises(ValueError, match="min_calls"):
        StopRule(CI, max_calls=5, min_calls=6)
    with pytest.raises(ValueError, match="stop reason"):
        Timed([[1.0]], "bored", 1.0)


def test_the_csv_column_allows_every_reason() -> None:
    assert BY_NAME["stop_reason"].choices == STOP_REASONS
    assert BY_NAME["calls"].timing and BY_NAME["timed_s"].timing
