"""A page opened as a user would: Debian's Chromium, headless, driven by Playwright; every console
error, page error and failed request recorded. Shared by the browser tests, the README's
screenshot (`nox -s pages-screenshot`) and the weight-and-speed benchmark (`nox -s pages-bench`).

Host side, test tooling: Playwright is imported only here, when a page is opened.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.errors import UsageError

# the flags a CI machine needs: no sandbox as root, no GPU, nothing fetched on its own
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)
# Debian's Chromium first; GitHub's runners have chromium-browser and Chrome
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
READY_TIMEOUT_MS = 30_000


def find_chromium() -> str:
    """The browser: $SUITE_CHROMIUM, else Debian's `chromium` on PATH; one line if there is none."""
    explicit = os.environ.get("SUITE_CHROMIUM")
    if explicit:
        return explicit
    for name in CHROMIUM_NAMES:
        found = shutil.which(name)
        if found:
            return found
    raise UsageError(
        "chromium", "not installed: `apt-get install chromium` (Debian's package), or set SUITE_CHROMIUM"
    )


@dataclass
class Problems:
    """What went wrong while a page was open: each a line naming what failed."""

    console: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    def all(self) -> list[str]:
        return [
            *(f"console: {m}" for m in self.console),
            *(f"page error: {m}" for m in self.page_errors),
            *(f"request failed: {m}" for m in self.failed_requests),
        ]


@dataclass
class Browser:
    """One Chromium for several pages (starting it takes seconds on a busy 2-core machine)."""

    playwright: Any
    browser: Any

    @contextmanager
    def open(
        self, path: Path, width: int = 1400, height: int = 900, ready: bool = True, before: Any = None
    ) -> Iterator[tuple[Any, Problems]]:
        """The page at `path` (file://), loaded and (`ready`) drawn: body[data-ready]; with what
        went wrong while it was open. `before(context, page)` runs before the page loads."""
        problems = Problems()
        context = self.browser.new_context(viewport={"width": width, "height": height}, offline=True)
        page = context.new_page()
        if before is not None:
            before(context, page)
        page.on("console", lambda m: problems.console.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.page_errors.append(str(e)))
        page.on("requestfailed", lambda r: problems.failed_requests.append(f"{r.url} ({r.failure})"))
        page.on(
            "response",
            lambda r: (
                problems.failed_requests.append(f"{r.url} (HTTP {r.status})") if r.status >= 400 else None
            ),
        )
        try:
            page.goto(path.resolve().as_uri(), wait_until="load")
            if ready:
                page.wait_for_selector("body[data-ready]", state="attached", timeout=READY_TIMEOUT_MS)
            yield page, problems
        finally:
            context.close()


@contextmanager
def chromium() -> Iterator[Browser]:
    """Headless Chromium (Debian's), or one line saying what is missing (exit 2)."""
    executable = find_chromium()
    try:
        from playwright.sync_api import sync_playwright
    except ModuleNotFoundError:
        raise UsageError(
            "playwright", "not installed in this Python: `pip install playwright` (the tests' pins have it)"
        ) from None
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=executable, args=list(FLAGS))
        try:
            yield Browser(p, browser)
        finally:
            browser.close()


def draw_all(page: Any, selector: str = "") -> None:
    """Every chart of the page (or those matching a CSS selector) drawn, in view or not (charts
    are drawn as they come near the screen); returns once plotly.js has drawn them."""
    page.evaluate("(s) => PG.drawAll(s || null)", selector)


# where a chart's first hoverable point is on the page: its marker's centre where the trace
# has markers, else its trace's axes map the point's data to pixels
POINT_JS = """(div) => {
  const data = div._fullData, layout = div._fullLayout;
  const scatter = data.filter((t) => t.type === "scatter");
  for (let c = 0; c < data.length; c++) {
    const t = data[c];
    if (t.hoverinfo === "skip" || t.visible !== true) continue;
    const i = (t.y || []).findIndex((v) => v !== null && v !== undefined);
    if (i < 0) continue;
    if (t.type === "scatter" && t.mode.includes("markers")) {
      const layer = div.querySelectorAll(".scatterlayer .trace")[scatter.indexOf(t)];
      const r = layer.querySelectorAll(".points path")[0].getBoundingClientRect();
      return [r.left + r.width / 2, r.top + r.height / 2];
    }
    const xa = layout[t.xaxis.replace("x", "xaxis")], ya = layout[t.yaxis.replace("y", "yaxis")];
    const box = div.getBoundingClientRect();
    return [box.left + xa._offset + xa.l2p(xa.d2l(t.x[i])), box.top + ya._offset + ya.l2p(ya.d2l(t.y[i]))];
  }
  return null;
}"""


def hover_first_point(page: Any, chart: Any) -> str:
    """Move the mouse onto a chart's first data point; returns the hover label's text."""
    chart.scroll_into_view_if_needed()
    page.mouse.move(0, 0)  # off any chart first: a label from an earlier hover must not stay
    x, y = chart.evaluate(POINT_JS)
    page.mouse.move(x, y, steps=3)
    label = chart.locator(".hoverlayer .hovertext")
    label.first.wait_for(state="attached", timeout=5_000)
    return " ".join(t or "" for t in label.all_text_contents())
