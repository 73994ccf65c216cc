"""Every night remembered: the results store, trends and change points per series, bisect, and
the nightly verdict (docs/history.md). Host side (DuckDB, pyarrow, pandas, ruptures), but for
`bisect` (the search, standard library only: `nox -s bisect` imports it without them).

The pages (docs/pages.md) use one function of it: `view(store, **filters) -> HistoryView`, imported
on first use so that importing the package needs none of those libraries.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from suite.history.pageview import HistoryView, view

__all__ = ["HistoryView", "view"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from suite.history import pageview as module

        return getattr(module, name)
    raise AttributeError(f"module 'suite.history' has no attribute {name!r}")
