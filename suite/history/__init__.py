"""Every night remembered: the results store, trends and change points per series, bisect, and
the nightly verdict (docs/history.md). Host side only (DuckDB, pyarrow, pandas, ruptures).

The pages (issue 26) use one function of it: `view(store, **filters) -> HistoryView`.
"""

from suite.history.view import HistoryView, view

__all__ = ["HistoryView", "view"]
