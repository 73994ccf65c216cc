"""`history report`'s level: a 95% CI only where the nights can give one. The median of one or
two nights (a span of 1-2 nights: the range of two covers the median half the time) has none,
and the report says so rather than calling the range a 95% CI."""

from __future__ import annotations

import math

import numpy as np

from suite.history.changes import Rule
from suite.history.report import render
from suite.history.trends import MIN_CI_NIGHTS, level
from suite.stats import median_ci_rank


def test_a_level_over_too_few_nights_has_no_ci() -> None:
    # the fewest nights whose order statistics give a 95% CI, as suite.stats computes it
    assert median_ci_rank(MIN_CI_NIGHTS) > 0 and median_ci_rank(MIN_CI_NIGHTS - 1) == 0
    for n in (1, 2, MIN_CI_NIGHTS - 1):
        median, low, high = level(np.arange(1.0, n + 1))
        assert median == np.median(np.arange(1.0, n + 1)) and math.isnan(low) and math.isnan(high)
    median, low, high = level(np.arange(1.0, MIN_CI_NIGHTS + 1))
    assert (median, low, high) == (3.5, 1.0, float(MIN_CI_NIGHTS))


def test_the_report_says_when_a_level_has_no_ci() -> None:
    import pandas as pd

    empty = pd.DataFrame(columns=["confirmed", "night_id", "date", "gpu", "build"])
    text = render("s", empty, empty, pd.DataFrame(), Rule())
    assert f"where there are at least {MIN_CI_NIGHTS} (fewer give no 95% interval" in text
