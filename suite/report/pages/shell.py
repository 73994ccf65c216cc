"""One HTML page: a title, the data as inlined JSON, plotly.js beside the page, our script and
style inlined. Nothing is fetched: a page opened from disk (file://) works offline, and a
script or data error shows on the page itself, not only on the console.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.report.pages.assets import PLOTLY_FILE, ship_plotly, static_text


def clean(value: Any) -> Any:
    """JSON-safe: NaN and infinities become null (JSON has neither), tuples lists."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [clean(v) for v in value]
    return value


def embed_json(data: Any) -> str:
    """The data as JSON that cannot end its <script> element early: every `<` (only ever inside a
    string) is written `\\u003c`, so no `</script` or `<!--` can appear."""
    try:  # most data is clean already; walking a year of history to check costs seconds
        text = json.dumps(data, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError:
        text = json.dumps(clean(data), separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return text.replace("<", "\\u003c")


@dataclass(frozen=True)
class Page:
    """What a page is made of: its title, its data, and our script that draws it."""

    title: str
    data: dict[str, Any]
    script: str  # a file of static/, e.g. "run.js"

    def __post_init__(self) -> None:
        if not self.title.strip():
            raise ValueError("a page needs a title")
        if not self.script.endswith(".js"):
            raise ValueError(f"script {self.script!r}: a .js file of static/")


def write_page(page: Page, folder: Path, name: str = "index.html") -> Path:
    """Write `folder/name` and plotly.js beside it; returns the page's path."""
    folder.mkdir(parents=True, exist_ok=True)
    ship_plotly(folder)
    text = f"""<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(page.title)}</title>
<style>
{static_text("page.css")}
</style>
</head>
<body>
<div id="app"><p class="loading">Loading the charts&hellip;</p></div>
<noscript><p class="fatal">This page draws its charts with JavaScript; the same figures are in the
Markdown and CSV tables beside it.</p></noscript>
<script id="page-data" type="application/json">{embed_json(page.data)}</script>
<script src="{PLOTLY_FILE}"></script>
<script>
{static_text("common.js")}
{static_text(page.script)}
</script>
</body>
</html>
"""
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path
