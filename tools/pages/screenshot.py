"""The screenshot of a run page in docs/pages.md: `nox -s pages-screenshot` (or `python -m
tools.pages.screenshot [RUN_DIR] [PNG]`). It merges the run (by default the committed smoke
run of results/) into a scratch folder, opens its page in headless Chromium, hovers the first
model's first point and saves the compile-vs-eager charts with the hover label showing. Any
console error or failed request stops it.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from tools.pages.browser import chromium, draw_all, hover_first_point
from tools.pages.merge import merge

ROOT = Path(__file__).resolve().parents[2]
SMOKE_RUN = ROOT / "results" / "2026-11-21-cpu-amd-epyc-smoke"
PNG = ROOT / "docs" / "img" / "run-page.png"
WIDTH, HEIGHT = 1400, 860


def screenshot(run: Path, png: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        merge(run, Path(tmp))
        with (
            chromium() as browser,
            browser.open(Path(tmp) / "tables" / "index.html", WIDTH, HEIGHT) as (page, problems),
        ):
            section = page.locator("#compile-vs-eager-0")
            draw_all(page, "#compile-vs-eager-0 .chart")
            section.scroll_into_view_if_needed()
            page.evaluate("() => document.getElementById('compile-vs-eager-0').scrollIntoView()")
            text = hover_first_point(page, section.locator(".card .chart").first)
            png.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(png))
            if problems.all():
                raise SystemExit(f"the page had problems: {problems.all()}")
    print(f"{png} (hover: {text[:80]}...)", file=sys.stderr)
    return png


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tools.pages.screenshot", description=__doc__.split("\n")[0]
    )
    parser.add_argument(
        "run", nargs="?", type=Path, default=SMOKE_RUN, help="a run folder (default: %(default)s)"
    )
    parser.add_argument(
        "png", nargs="?", type=Path, default=PNG, help="where to save it (default: %(default)s)"
    )
    args = parser.parse_args(argv)
    screenshot(args.run, args.png)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
