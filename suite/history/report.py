"""`history report` as Markdown: the store in one line, the change points (confirmed, then
pending), and the trend of every series (docs/history.md says how to read each column)."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pandas as pd

from suite.history.changes import Rule
from suite.history.trends import MIN_CI_NIGHTS

FIGURE = {"median_ms": "median latency", "speedup": "paired speed-up", "compile_s": "compile time"}


def _day(value: object) -> str:
    return "" if value is None or pd.isna(value) else f"{pd.Timestamp(value):%Y-%m-%d}"


def _num(value: float, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    return f"{value:.{digits}g}" if abs(value) < 1000 else f"{value:.0f}"


def _ci(value: float, low: float, high: float, suffix: str = "") -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "—"
    if low is None or high is None or math.isnan(low) or math.isnan(high):
        return f"{_num(value)}{suffix}"
    return f"{_num(value)}{suffix} [{_num(low)}, {_num(high)}]"


def _pct(value: float) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:+.1%}"


def _sha(sha: str) -> str:
    return sha[:10] if sha else "?"


def cell_name(r: object) -> str:
    return f"{r.model} bs{r.batch_size} {r.mode}"  # type: ignore[attr-defined]


def setup_name(r: object) -> str:
    parts = [r.dtype, r.scenario]  # type: ignore[attr-defined]
    return ", ".join(p for p in parts if p)


MEASURED = {
    "agrees": "agrees",
    "disagrees": "disagrees: not confirmed",
    "not run": "a nightly did not run",
    "awaiting": "awaiting (`nox -s confirm`)",
    "": "—",
}


def change_table(changes: pd.DataFrame) -> list[str]:
    """The change points; with a `remeasured` column (suite.history.confirm.annotate), what
    measuring the two nightlies again said. For a nightly build the dates are the nightlies'."""
    again = "remeasured" in changes.columns
    lines = [
        "| GPU | build line | cell | setup | figure | last good "
        "| first bad | change [95% CI] | torch, good → bad "
        "| commits | confirm |" + (" measured again |" if again else ""),
        "|---|---|---|---|---|---|---|---|---|---|---|" + ("---|" if again else ""),
    ]
    for r in changes.itertuples(index=False):
        if r.commit_range_url:
            commits = f"[{_sha(r.last_good_git)}...{_sha(r.first_bad_git)}]({r.commit_range_url})"
        elif r.last_good_git and r.last_good_git == r.first_bad_git:
            commits = "same torch: the machine, driver or suite changed"
        else:
            commits = "—"
        size = f"{r.change_pct:+.1f}% [{r.change_ci_low_pct:+.1f}, {r.change_ci_high_pct:+.1f}] {r.direction}"
        torch = f"{r.last_good_torch} → {r.first_bad_torch}"
        lines.append(
            f"| {r.gpu} | {r.build_line} | {cell_name(r)} | {setup_name(r)} | {FIGURE[r.metric]} | "
            f"{_day(r.last_good_date)} | {_day(r.first_bad_date)} | {size} | {torch} | {commits} | "
            f"`{r.confirm_command}` |" + (f" {MEASURED.get(r.remeasured, r.remeasured)} |" if again else "")
        )
    return lines


def trend_table(trend: pd.DataFrame) -> list[str]:
    lines = [
        "| GPU | build line | cell | setup | nights (ok) | last night | median ms, last night [CI] "
        "| vs night before | median ms, level [CI] | paired speed-up, last night [CI] "
        "| speed-up, level [CI] | compile s, level [CI] | last change |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in trend.itertuples(index=False):
        last = _day(r.last) + ("" if r.last_status == "ok" else f" **{r.last_status}**")
        if r.last_health not in ("", "ok"):
            last += f" § {r.last_health}"
        since = [
            f"{FIGURE[m]} {_day(getattr(r, f'{m}_since'))}"
            for m in FIGURE
            if getattr(r, f"{m}_since") is not None and not pd.isna(getattr(r, f"{m}_since"))
        ]
        lines.append(
            f"| {r.gpu} | {r.build_line} | {cell_name(r)} | "
            f"{setup_name(r)} | {r.nights} ({r.ok_nights}) | {last} | "
            f"{_ci(r.median_ms_latest, r.median_latest_low, r.median_latest_high)} "
            f"| {_pct(r.median_ms_vs_previous)} | "
            f"{_ci(r.median_ms_level, r.median_ms_level_low, r.median_ms_level_high)} | "
            f"{_ci(r.speedup_latest, r.speedup_latest_low, r.speedup_latest_high, 'x')} | "
            f"{_ci(r.speedup_level, r.speedup_level_low, r.speedup_level_high, 'x')} | "
            f"{_ci(r.compile_s_level, r.compile_s_level_low, r.compile_s_level_high)} | "
            f"{'; '.join(since) or '—'} |"
        )
    return lines


def render(
    store: str,
    pts: pd.DataFrame,
    changes: pd.DataFrame,
    trend: pd.DataFrame,
    rule: Rule,
    trends_too: bool = True,
    notes: Sequence[str] = (),
) -> str:
    confirmed = changes[changes["confirmed"]]
    pending = changes[~changes["confirmed"]]
    nights = pts[["night_id"]].drop_duplicates()
    out = [
        f"# History: {store}",
        "",
        f"{len(nights)} night(s) from {_day(pts['date'].min())} to {_day(pts['date'].max())}, "
        f"{len(trend)} series on {pts['gpu'].nunique()} GPU(s) and {pts['build'].nunique()} build(s); "
        f"{len(confirmed)} confirmed change point(s), {len(pending)} pending."
        if len(pts)
        else "No nights match.",
        *notes,
        "",
        "## Change points",
        "",
        "Found per series by the rule of docs/history.md "
        f"(ruptures' PELT, penalty {rule.penalty:g} x log(nights), "
        f"then a Mann-Whitney test at p < {rule.alpha:g} and a Hodges-Lehmann shift whose 95% CI excludes 0, "
        f"at least {rule.min_change:.0%}); confirmed once the "
        f"new level has held {rule.confirm_nights} nights. "
        "+ is slower or larger. A nightly build's dates are its nightlies' (the torch it ran), "
        "not when it ran; an issue is opened only once the two nightlies, measured again back to "
        "back, agree (`nox -s confirm`).",
        "",
    ]
    out += change_table(confirmed) if len(confirmed) else ["None confirmed."]
    if len(pending):
        out += ["", f"### Pending (the new level has held fewer than {rule.confirm_nights} nights)", ""]
        out += change_table(pending)
    if trends_too:
        out += [
            "",
            "## Trends",
            "",
            "Last night: that night's median and paired speed-up "
            "with the run's own 95% CIs. Level: the median of "
            "the nights since the figure's last change point "
            "(all, if none), with its 95% CI over those nights where there are at least "
            f"{MIN_CI_NIGHTS} (fewer give no 95% interval: the level alone). "
            "§: timed on an unhealthy machine (not judged).",
            "",
        ]
        out += trend_table(trend) if len(trend) else ["No series."]
    return "\n".join(out) + "\n"
