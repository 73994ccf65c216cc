"""The series key and the history view's columns: the contract between the store (suite.history)
and the history page (suite.report.pages), defined once here because the page may not import the
store (docs/pages.md, "The history view"). Standard library only, like the rest of suite.results.

A series is one cell on one GPU and build line: the nine columns of SERIES_KEY. POINT_COLUMNS are
a point's (one per series and night), CHANGE_COLUMNS a change point's; both frames carry these
first, in this order, and may carry more after them.
"""

from __future__ import annotations

SERIES_KEY: tuple[str, ...] = (
    "gpu", "build_line", "build", "model", "task", "batch_size", "mode", "dtype", "scenario",
)  # fmt: skip
POINT_COLUMNS: tuple[str, ...] = (
    *SERIES_KEY, "date", "run_id", "torch_version", "torch_git", "run_page", "status", "health",
    "median_ms", "median_ci_low_ms", "median_ci_high_ms", "speedup", "speedup_ci_low",
    "speedup_ci_high", "compile_s",
)  # fmt: skip
CHANGE_COLUMNS: tuple[str, ...] = (
    *SERIES_KEY, "metric", "last_good_date", "first_bad_date", "last_good_git", "first_bad_git",
    "commit_range_url", "change_pct", "change_ci_low_pct", "change_ci_high_pct", "direction",
    "confirm_command",
)  # fmt: skip
