"""The history page: one trend chart per model (speed-up, median latency and compile time over
the nights, their CIs as bands), the change points marked with the last good and first bad
night and the commit range between them, and a link to each night's run page.

Host side only. It reads a `HistoryView`'s two frames by the columns of the contract between the
store (suite.history) and this page (docs/pages.md, "The history view"; the columns
are suite.results.series_key's), and nothing else of the store: it never imports suite.history,
so it is tested with frames built from the contract alone.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pandas as pd

from suite import __version__
from suite.errors import UsageError
from suite.report.pages.shell import Page, write_page
from suite.results.series_key import CHANGE_COLUMNS, POINT_COLUMNS, SERIES_KEY

METRICS: tuple[str, ...] = ("speedup", "median_ms", "compile_s")
# A year of a full profile on a few builds and GPUs is a quarter of a million points: the page
# carries them compactly (static/history.js decodes a series when it draws it). Per series: the
# nights as differences (mostly 1); each figure with SIGNIFICANT digits; each CI bound as its
# distance from its figure in 1/BASIS of the figure (an integer: 99 = 0.99%); the statuses and
# health flags as the exceptions to the usual one. A figure absent from a whole series (an eager
# series has no speed-up and no compile time) is left out.
FIGURES: tuple[tuple[str, str, str, str], ...] = (  # page key, figure, CI low, CI high
    ("speedup", "speedup", "speedup_ci_low", "speedup_ci_high"),
    ("median_ms", "median_ms", "median_ci_low_ms", "median_ci_high_ms"),
    ("compile_s", "compile_s", "", ""),
)
SIGNIFICANT = 4
BASIS = 10_000
PAGE = "index.html"


class HistoryViewLike(Protocol):
    points: pd.DataFrame
    changes: pd.DataFrame


def check_columns(frame: pd.DataFrame, columns: Sequence[str], name: str) -> None:
    missing = [c for c in columns if c not in frame.columns]
    if missing:
        raise UsageError(f"history view: {name}", f"lacks column(s) {', '.join(missing)} (docs/pages.md)")


def rounded(values: pd.Series) -> list[float | None]:
    """Figures with SIGNIFICANT digits, None where there is none (NaN, infinite)."""
    x = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    finite = np.isfinite(x) & (x != 0)
    scale = np.ones_like(x)
    scale[finite] = 10.0 ** (SIGNIFICANT - 1 - np.floor(np.log10(np.abs(x[finite]))))
    out = np.where(finite, np.round(x * scale) / scale, x)
    return [float(v) if math.isfinite(v) else None for v in out.tolist()]


def one(value: object) -> float | None:
    return rounded(pd.Series([value]))[0]


def offsets(values: pd.Series, bounds: pd.Series) -> np.ndarray:
    """Each CI bound's distance from its figure, in 1/BASIS of the figure (NaN where either is)."""
    v = pd.to_numeric(values, errors="coerce").to_numpy(dtype=float)
    b = pd.to_numeric(bounds, errors="coerce").to_numpy(dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.round(np.abs(v - b) / np.abs(v) * BASIS)


def _ints(values: np.ndarray) -> list[int | None]:
    return [int(v) if math.isfinite(v) else None for v in values.tolist()]


def _exceptions(codes: np.ndarray, usual: int) -> list[list[int]]:
    """[[position, code], ...] where a code is not the usual one."""
    where = np.flatnonzero(codes != usual)
    return [[int(i), int(codes[i])] for i in where]


def _day(value: object) -> str:
    """A date as the page shows it (YYYY-MM-DD, UTC), "" where unknown."""
    if value is None or (isinstance(value, float) and math.isnan(value)) or value is pd.NaT:
        return ""
    stamp = pd.Timestamp(value)  # type: ignore[arg-type]
    return "" if pd.isna(stamp) else stamp.strftime("%Y-%m-%d")


def _days(values: pd.Series) -> pd.Series:
    """Each date as YYYY-MM-DD (UTC), "" where unknown."""
    stamps = pd.to_datetime(values, errors="coerce", utc=True)
    return stamps.dt.strftime("%Y-%m-%d").fillna("")


def _texts(values: pd.Series) -> pd.Series:
    """A column as text, "" where empty (NaN, None)."""
    return values.astype(object).where(values.notna(), "").astype(str)


def _text(value: object) -> str:
    return "" if value is None or (isinstance(value, float) and math.isnan(value)) else str(value)


def history_data(view: HistoryViewLike) -> dict[str, Any]:
    """What static/history.js draws, from the view's two frames (contract columns only)."""
    points, changes = view.points, view.changes
    check_columns(points, POINT_COLUMNS, "points")
    check_columns(changes, CHANGE_COLUMNS, "changes")
    models = list(dict.fromkeys(zip(_texts(points["task"]), _texts(points["model"]), strict=True)))
    points = points.assign(day=_days(points["date"])).sort_values(["day", *SERIES_KEY], kind="stable")
    points = points.reset_index(drop=True)
    dates = sorted(d for d in points["day"].unique() if d)
    night_cols = ["day", "gpu", "build_line", "build", "run_id"]
    text = {c: _texts(points[c]) for c in (*SERIES_KEY, "run_id", "torch_version", "torch_git", "run_page")}
    night_of = (
        pd.DataFrame({c: points[c] if c == "day" else text[c] for c in night_cols})
        .groupby(night_cols, sort=False)
        .ngroup()
    )
    first = points.groupby(night_of, sort=True).head(1)  # one row per night, in night order
    # where a night stands (its nightly's date, for a nightly build) is not always when it ran
    ran = _days(first["run_date"]) if "run_date" in first.columns else pd.Series("", index=first.index)
    first = first.assign(ran=ran.where(ran != first["day"], ""))
    nights = [
        {
            "date": r.day,
            "ran": r.ran,
            "gpu": _text(r.gpu),
            "line": _text(r.build_line),
            "build": _text(r.build),
            "run": _text(r.run_id),
            "torch": _text(r.torch_version),
            "git": _text(r.torch_git),
            "page": _text(r.run_page),
        }
        for r in first.iloc[np.argsort(night_of[first.index].to_numpy(), kind="stable")].itertuples(
            index=False
        )
    ]
    status, health = _texts(points["status"]), _texts(points["health"])
    statuses, healths = sorted(set(status)), sorted(set(health))
    status_code = pd.Categorical(status, categories=statuses).codes
    health_code = pd.Categorical(health, categories=healths).codes
    usual_status = statuses.index("ok") if "ok" in statuses else 0
    usual_health = healths.index("ok") if "ok" in healths else 0
    figures = {
        key: (
            np.array(rounded(points[value]), dtype=float),
            offsets(points[value], points[low]) if low else None,
            offsets(points[value], points[high]) if high else None,
        )
        for key, value, low, high in FIGURES
    }
    nights_of = night_of.to_numpy()
    series: list[dict[str, Any]] = []
    series_index: dict[tuple[str, ...], int] = {}
    keys = pd.DataFrame({c: text[c] for c in SERIES_KEY})
    keys["batch_size"] = [str(int(float(b))) for b in points["batch_size"]]
    for key, rows in keys.groupby(list(SERIES_KEY), sort=False).indices.items():
        key_text = tuple(str(k) for k in key)
        series_index[key_text] = len(series)
        entry: dict[str, Any] = dict(zip(SERIES_KEY, key_text, strict=True))
        entry["batch_size"] = int(entry["batch_size"])
        own = nights_of[rows]
        entry["nights"] = np.diff(own, prepend=0).tolist()
        for key_name, (value, low, high) in figures.items():
            mine = value[rows]
            if not np.isfinite(mine).any():
                continue
            entry[key_name] = [float(v) if math.isfinite(v) else None for v in mine.tolist()]
            if low is not None and high is not None:
                entry[key_name + "_lo"] = _ints(low[rows])
                entry[key_name + "_hi"] = _ints(high[rows])
        entry["status"] = _exceptions(status_code[rows], usual_status)
        entry["health"] = _exceptions(health_code[rows], usual_health)
        series.append(entry)

    change_rows = []
    for r in changes.to_dict("records"):
        index = series_index.get(_series_key(r), -1)  # -1: no point of its series (the table shows it)
        if r["metric"] not in METRICS:
            raise UsageError("history view: changes.metric", f"{r['metric']!r} is not one of {METRICS}")
        change_rows.append(
            {
                "series": index,
                **{k: _text(r[k]) for k in SERIES_KEY},
                "metric": r["metric"],
                "last_good": _day(r["last_good_date"]),
                "first_bad": _day(r["first_bad_date"]),
                "last_good_git": _text(r["last_good_git"]),
                "first_bad_git": _text(r["first_bad_git"]),
                "url": _text(r["commit_range_url"]),
                "pct": one(r["change_pct"]),
                "lo": one(r["change_ci_low_pct"]),
                "hi": one(r["change_ci_high_pct"]),
                "direction": _text(r["direction"]),
                "confirm": _text(r["confirm_command"]),
                "measured": _text(r.get("remeasured", "")),
                "last_good_page": _page_of(nights, r, "last_good_date"),
                "first_bad_page": _page_of(nights, r, "first_bad_date"),
            }
        )
    change_rows.sort(key=lambda c: (c["first_bad"], c["model"]), reverse=True)
    return {
        "meta": {
            "title": "torch.compile benchmark: history",
            "suite_version": __version__,
            "first": dates[0] if dates else "",
            "last": dates[-1] if dates else "",
            "points": len(points),
        },
        "dates": dates,
        "nights": nights,
        "statuses": statuses,
        "healths": healths,
        "usual": {"status": usual_status, "health": usual_health},
        "basis": BASIS,
        "series": series,
        "changes": change_rows,
        "models": models,  # in the store's order (the matrix's, where it keeps it)
        "filters": {
            "gpus": list(dict.fromkeys(s["gpu"] for s in series)),
            "lines": list(dict.fromkeys(s["build_line"] for s in series)),
            "batch_sizes": sorted({s["batch_size"] for s in series}),
            "modes": list(dict.fromkeys(s["mode"] for s in series)),
        },
    }


def _series_key(row: dict[str, Any]) -> tuple[str, ...]:
    """A series' key as text, its batch size as a whole number ("4", not "4.0")."""
    return tuple(str(int(float(row[k]))) if k == "batch_size" else _text(row[k]) for k in SERIES_KEY)


def _page_of(nights: list[dict[str, str]], change: dict[str, Any], column: str) -> str:
    """The run page of the night a change names (its GPU, build and date), "" if none."""
    day = _day(change[column])
    for n in nights:
        if n["date"] == day and n["gpu"] == _text(change["gpu"]) and n["build"] == _text(change["build"]):
            return n["page"]
    return ""


def write_history_page(view: HistoryViewLike, out_dir: Path) -> Path:
    """Write `out_dir/index.html` (and plotly.js beside it); returns the page's path."""
    data = history_data(view)
    return write_page(Page(title=data["meta"]["title"], data=data, script="history.js"), out_dir, PAGE)
