"""`python -m suite history html OUT_DIR [--store URL]`: the history's page, from the store of
`suite.history` (docs/history.md) through its one function for pages, `view()`, drawn by
`suite.report.pages.history_page`. The store's package may be absent from a checkout (it lands
on its own): then the verb says so in one line, exit status 2.
"""

from __future__ import annotations

import argparse
import inspect
import sys
from pathlib import Path
from typing import Any

from suite.cli.needs import REPORT, needs
from suite.errors import UsageError

PAGES_HINT = (
    "use the merge's virtualenv (`.nox/merge/bin/python -m suite history html ...`), or `pip install pandas`"
)


def add_html_verb(verbs: Any) -> None:
    """`history html OUT_DIR [--store URL]` under `history`'s verbs (suite.cli.history_store
    makes `history` and its store's verbs)."""
    h = verbs.add_parser("html", help="write the history page (index.html and plotly.js) into OUT_DIR")
    h.add_argument("out_dir", type=Path, help="the folder to write the page into (made if missing)")
    h.add_argument("--store", default=None, help="the history store (path or URL; default: the store's own)")
    # narrowing the view (suite.history.view's filters) keeps a page of a large store light
    h.add_argument("--gpu", default=None, help="one GPU's series only (its name as the store has it)")
    h.add_argument("--build-line", default=None, help="one build line's series only (e.g. 'nightly 2.10')")
    h.add_argument("--since", default=None, help="nights from this date on (YYYY-MM-DD)")
    h.set_defaults(func=cmd_history_html)


def load_view(store: str | None, out: Path, filters: dict[str, str] | None = None) -> Any:
    """`suite.history.view(store)`, or one line saying why it cannot be had. A view that can
    make each night's run-page link relative to where the page goes (`pages_dir`) is told."""
    try:
        import suite.history as history
    except ModuleNotFoundError as exc:
        if exc.name in ("suite.history", "suite"):
            raise UsageError(
                "history html", "suite.history (the history store) is not in this checkout"
            ) from None
        raise UsageError(
            str(exc.name), f"not installed in this Python ({sys.executable}); the history store needs it"
        ) from None
    view = getattr(history, "view", None)
    if view is None:
        raise UsageError("history html", "suite.history has no view(): the store and the page disagree")
    given = {k: v for k, v in (filters or {}).items() if v is not None}
    if "pages_dir" in inspect.signature(view).parameters:
        return view(store, pages_dir=out, **given)
    return view(store, **given)


def cmd_history_html(args: argparse.Namespace) -> int:
    with needs("history html", REPORT[:1], PAGES_HINT):
        import pandas  # noqa: F401  (first: the page's one need a host may lack; numpy comes with it)

        from suite.report.pages.history_page import write_history_page
    out: Path = args.out_dir
    if out.exists() and not out.is_dir():
        raise UsageError(str(out), "is a file, not a folder")
    filters = {"gpu": args.gpu, "build_line": args.build_line, "since": args.since}
    view = load_view(args.store, out, filters)
    try:
        page = write_history_page(view, out)
    except OSError as exc:
        raise UsageError(str(exc.filename or out), f"cannot write: {exc.strerror or exc}") from None
    print(f"suite history: the history page -> {page}", file=sys.stderr)
    return 0
