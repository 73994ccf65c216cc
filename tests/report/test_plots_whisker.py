"""The % improvement plot's CI whiskers: never negative, whatever the speed-up."""

from __future__ import annotations

import pytest

from suite.report.plots import CI_FLOOR_PCT, whisker
from suite.report.tables.cells import improvement_pct


@pytest.mark.parametrize(
    ("speedup", "low", "high"),
    [(1.5, 1.2, 1.9), (0.56, 0.07, 18.1), (0.2437, 0.0322, 14.87), (0.1, 0.09, 0.11), (3.0, 3.0, 3.0)],
)
def test_whisker_brackets_the_bar(speedup: float, low: float, high: float) -> None:
    pct = improvement_pct(speedup)
    lo, hi, cut = whisker(pct, improvement_pct(low), improvement_pct(high))
    assert lo <= pct <= hi  # matplotlib refuses negative error bars
    assert lo >= min(CI_FLOOR_PCT, pct)
    assert cut == (improvement_pct(low) < min(CI_FLOOR_PCT, pct))


def test_a_bar_below_the_floor_keeps_its_whisker_at_the_bar() -> None:
    # compiled 4x slower than eager (the CPU nightly run that crashed the merge)
    assert whisker(-310.0, -3003.0, 93.3) == (-310.0, 93.3, True)
