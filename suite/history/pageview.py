"""`suite.history.view()`: the history as the pages draw it (the contract with the pages,
docs/history.md): every point of every series and every confirmed change point, in two frames
the page renders without computing anything of its own.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from suite.history.changes import Rule
from suite.history.confirm import annotate, kept
from suite.history.series import all_changes, points
from suite.history.store import open_store
from suite.results.series_key import CHANGE_COLUMNS, POINT_COLUMNS


@dataclass(frozen=True)
class HistoryView:
    """`points`: one row per (series, night); `changes`: one row per confirmed change point.
    Both carry the contract's columns first (suite.results.series_key: POINT_COLUMNS,
    CHANGE_COLUMNS), then a few of the store's own (night_id, build_kind, model_name, run_date,
    nightly_date, ...; p_value, change_id, remeasured: what measuring the two nightlies again said, ...)."""

    points: pd.DataFrame
    changes: pd.DataFrame

    def __post_init__(self) -> None:
        for name, frame, wanted in (
            ("points", self.points, POINT_COLUMNS),
            ("changes", self.changes, CHANGE_COLUMNS),
        ):
            missing = [c for c in wanted if c not in frame.columns]
            if missing:
                raise ValueError(f"HistoryView.{name} lacks {', '.join(missing)}")


def _run_pages(pts: pd.DataFrame, pages_dir: Path | None) -> pd.Series:
    """The recorded link of each night, else (given where the history page goes) a relative link
    to the run page its merge wrote beside tables.md, if the run folder still holds one."""
    pages = pts["run_page"].copy()
    if pages_dir is None:
        return pages
    found: dict[str, str] = {}
    for run_dir in pts.loc[pages == "", "run_dir"].unique():
        found[run_dir] = ""
        for candidate in (Path(run_dir) / "tables" / "index.html", Path(run_dir) / "index.html"):
            if run_dir and candidate.is_file():
                found[run_dir] = os.path.relpath(candidate.resolve(), pages_dir.resolve())
                break
    empty = pages == ""
    pages[empty] = pts.loc[empty, "run_dir"].map(found)
    return pages.fillna("")


def view(
    store: str | Path | None = None,
    *,
    rule: Rule | None = None,
    pages_dir: str | Path | None = None,
    **filters: object,
) -> HistoryView:
    """The history of `store` (default results/history.duckdb; a folder or URL: Parquet), narrowed
    by `filters` (gpu, build_line, build, model, task, batch_size, mode, dtype, scenario: a value
    or a list; since, until: dates). `pages_dir`: where the history page will be written, for the
    relative links to each night's run page."""
    history = open_store(store)
    con = history.connect()
    try:
        pts = points(con, filters)
        cache = history.change_cache(con, rule or Rule())
        confirmations = kept(history, con)
    finally:
        con.close()
    changes = annotate(all_changes(pts, cache.rule, cache), confirmations).drop(columns="confirmation")
    history.keep_changes(cache)
    changes = changes[changes["confirmed"]].reset_index(drop=True)
    pts["run_page"] = _run_pages(pts, Path(pages_dir) if pages_dir is not None else None)
    return HistoryView(points=pts, changes=changes)
