"""The run page: `index.html` beside `tables.md`, what the merge wrote, drawn in a browser.

Host side only; `suite.report.publish` calls it after the tables. The data is `run_data`'s,
the drawing static/run.js's (docs/pages.md).
"""

from __future__ import annotations

from pathlib import Path

from suite.report.pages.run_data import RunReport, run_data
from suite.report.pages.shell import Page, write_page

PAGE = "index.html"


def write_run_page(report: RunReport, folder: Path) -> Path:
    """Write `folder/index.html` (and plotly.js beside it); returns the page's path."""
    data = run_data(report)
    return write_page(Page(title=data["meta"]["title"], data=data, script="run.js"), folder, PAGE)
