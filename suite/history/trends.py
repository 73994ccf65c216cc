"""Each series in figures: the latest night with its own CIs, the level since the series' last
change point with its CI over the nights, and the change from the night before.

The level is the median of the usable nights (series.usable_mask) since the last change point of
that figure on the series' track (all of them if none), with a distribution-free 95% CI from order
statistics (suite.stats.median_ci): the night-to-night spread, not one run's CI; under 6 nights
none (too few for a 95% interval), and the level stands alone.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from suite.history.series import METRICS, SERIES_KEY, TRACK_KEY, groups, usable_mask
from suite.results import OK
from suite.stats import median_ci_of_sorted, median_ci_rank

MIN_CI_NIGHTS = 6  # the fewest nights whose order statistics give a 95% CI of their median


def level(values: np.ndarray) -> tuple[float, float, float]:
    """The median of some nights' figures and its 95% CI (NaN if none): `np.median` and
    `suite.stats.median_ci_of_sorted`, read off one sort of the figures. Under MIN_CI_NIGHTS
    nights no pair of order statistics covers the median with 95% (two nights' range: 50%),
    so the CI is NaN there, not the range called a CI."""
    n = len(values)
    if n == 0:
        return math.nan, math.nan, math.nan
    s = np.sort(values)
    mid = n // 2
    median = float(s[mid]) if n % 2 else float((s[mid - 1] + s[mid]) / 2)  # np.median's mean of two
    if median_ci_rank(n) == 0:
        return median, math.nan, math.nan
    low, high = median_ci_of_sorted(s)
    return median, float(low), float(high)


def trends(pts: pd.DataFrame, changes: pd.DataFrame) -> pd.DataFrame:
    """One row per series: its nights, first and last dates, the latest night's figures and CIs,
    and per figure the level since its last change point within the series and the change from
    the previous usable night."""
    if pts.empty:
        return pd.DataFrame(columns=[*SERIES_KEY, "nights", "ok_nights", "first", "last", "last_run"])
    changed: dict[tuple[object, ...], list[np.datetime64]] = {}
    for r in changes.itertuples(index=False):
        changed.setdefault((*(getattr(r, k) for k in TRACK_KEY), r.metric), []).append(
            np.datetime64(r.first_bad_date, "ns")
        )
    dates = pts["date"].to_numpy("datetime64[ns]")
    run_dates = pts["run_date"].to_numpy("datetime64[ns]") if "run_date" in pts.columns else dates
    ok = (pts["status"] == OK).to_numpy(bool)
    masks = {m: usable_mask(pts, m) for m in METRICS}
    values = {m: pts[m].to_numpy(float) for m in METRICS}
    series = groups(pts, SERIES_KEY)
    # the text columns read per series, of its last night alone (a column of every night as
    # Python strings costs more than the rest)
    at = [int(positions[-1]) for positions in series]
    lasts = pts.iloc[at]
    names = [*SERIES_KEY, "status", "health", "torch_version", "median_ci_low_ms", "median_ci_high_ms",
             "speedup_ci_low", "speedup_ci_high"]  # fmt: skip
    cols = {c: dict(zip(at, lasts[c].to_numpy(), strict=True)) for c in names}
    rows = []
    for positions in series:
        last = positions[-1]
        row: dict[str, object] = {k: cols[k][last] for k in SERIES_KEY}
        first_day, last_day = dates[positions[0]], dates[last]
        row.update(
            nights=len(positions),
            ok_nights=int(ok[positions].sum()),
            first=pd.Timestamp(first_day),
            last=pd.Timestamp(last_day),
            last_status=cols["status"][last],
            last_health=cols["health"][last],
            torch_version=cols["torch_version"][last],
            last_run=pd.Timestamp(run_dates[last]),  # when its last night ran (`last`: its place)
        )
        track = tuple(row[k] for k in TRACK_KEY)
        for metric in METRICS:
            good = positions[masks[metric][positions]]
            within = [d for d in changed.get((*track, metric), []) if first_day <= d <= last_day]
            since = max(within) if within else None
            kept = good[dates[good] >= since] if since is not None else good
            row[f"{metric}_level"], row[f"{metric}_level_low"], row[f"{metric}_level_high"] = level(
                values[metric][kept]
            )
            row[f"{metric}_since"] = pd.Timestamp(since) if since is not None else None
            row[f"{metric}_latest"] = values[metric][last] if ok[last] else math.nan
            last_two = values[metric][good[-2:]]
            fresh = len(good) >= 2 and good[-1] == last
            row[f"{metric}_vs_previous"] = last_two[1] / last_two[0] - 1 if fresh else math.nan
        row["median_latest_low"], row["median_latest_high"] = (
            cols["median_ci_low_ms"][last],
            cols["median_ci_high_ms"][last],
        )
        row["speedup_latest_low"], row["speedup_latest_high"] = (
            cols["speedup_ci_low"][last],
            cols["speedup_ci_high"][last],
        )
        rows.append(row)
    return pd.DataFrame(rows)
