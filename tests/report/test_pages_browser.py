"""The pages as a user sees them: opened from disk, offline, in Debian's Chromium (headless,
through Playwright). Each test fails on any console error, page error or failed request, checks
that every model has its drawn chart and that hovering a point shows its figures, and saves a
screenshot (under pytest's tmp_path). One browser serves the module: starting it is the cost.

Where Chromium or Playwright is missing the tests skip, except on CI (CI=true), where .ci/run
installs Chromium and the tests' pins Playwright: there a missing browser fails.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.pages import MODELS, T4, TROUBLED, page_data

from suite.cli import main
from suite.errors import UsageError
from suite.report.pages.history_page import write_history_page
from tools.pages.browser import Browser, chromium, draw_all, hover_first_point
from tools.pages.sample import A100, sample_history, write_sample_run

ROOT = Path(__file__).resolve().parents[2]
# one worker runs them all (tests/conftest.py's groups): one browser started, not one per worker
pytestmark = pytest.mark.xdist_group("pages-browser")
SMOKE_RUN = ROOT / "results" / "2026-11-21-cpu-amd-epyc-smoke"


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    try:
        with chromium() as b:
            yield b
    except UsageError as exc:
        if os.environ.get("CI"):
            pytest.fail(f"CI has no browser for the page tests: {exc}")
        pytest.skip(str(exc))


def test_the_committed_smoke_runs_page(browser: Browser, tmp_path: Path) -> None:
    """The real run of results/: its 12 architectures, both builds, stable's Maskformer failures."""
    out = tmp_path / "merged"
    assert main(["merge", str(SMOKE_RUN), "-o", str(out), "--no-plots"]) == 0
    page_path = out / "tables" / "index.html"
    data = page_data(page_path)
    with browser.open(page_path) as (page, problems):
        draw_all(page, "#compile-vs-eager-0 .chart")
        cards = page.locator("#compile-vs-eager-0 .card")
        assert cards.count() == len(data["models"]) == 12
        for i in range(12):
            assert cards.nth(i).locator(".chart[data-drawn] .main-svg").count() >= 1, cards.nth(
                i
            ).get_attribute("data-model")
        vit = page.locator('#compile-vs-eager-0 .card[data-model="Image Classification/ViT"] .chart')
        text = hover_first_point(page, vit)
        cell = next(
            c
            for c in data["cells"]
            if c["model"] == "ViT" and c["build"] == "stable" and c["mode"] == "default"
        )
        assert (
            f"{cell['speedup']['x']:.2f}x [{cell['speedup']['lo']:.2f}, {cell['speedup']['hi']:.2f}]" in text
        )
        assert (
            f"compile: {cell['compiled']['ms']:.3f} ms" in text
            and "compile time: " in text
            and "health: ok" in text
        )
        # stable's Maskformer did not compile (torch 2.0.1): a cross with its word, and a row under Failures
        maskformer = page.locator('#compile-vs-eager-0 .card[data-model="Image Segmentation/Maskformer"]')
        assert "error" in maskformer.locator(".textpoint").all_text_contents()
        assert (
            page.locator("#problems table").first.locator("tbody tr").count()
            == len(data["problems"]["failed"])
            > 0
        )
        page.screenshot(path=str(tmp_path / "smoke-run-page.png"))
        assert problems.all() == []


@pytest.fixture(scope="module")
def troubled_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = write_sample_run(tmp_path_factory.mktemp("troubled-browser") / "run", TROUBLED)
    assert main(["merge", str(run), "--no-plots"]) == 0
    return run / "tables" / "index.html"


def test_failures_suspects_and_a_missing_build_show_for_what_they_are(
    browser: Browser, tmp_path: Path
) -> None:
    run = write_sample_run(tmp_path / "run", TROUBLED)
    assert main(["merge", str(run), "--no-plots"]) == 0
    page_path = run / "tables" / "index.html"
    data = page_data(page_path)
    with browser.open(page_path) as (page, problems):
        draw_all(page, ".card .chart")
        a100, t4 = page.locator("#compile-vs-eager-0"), page.locator("#compile-vs-eager-1")
        assert A100 in a100.locator("h2").inner_text() and T4 in t4.locator("h2").inner_text()
        for section in (a100, t4):
            assert section.locator(".card .chart[data-drawn]").count() == len(MODELS)
        # the nightly build ran on the A100 only: said on the T4's section, not on the A100's
        assert "Build nightly (nightly) has no row on this GPU" in t4.locator(".missing-build").inner_text()
        assert a100.locator(".missing-build").count() == 0
        # the OOM cell: a cross labelled OOM in DETR's chart, its row under Failures
        detr = a100.locator('.card[data-model="Object Detection/DETR"]')
        assert "OOM" in detr.locator(".textpoint").all_text_contents()
        tables = page.locator("#problems table")
        failed, suspect, missing = (tables.nth(i).inner_text() for i in range(3))
        assert "OOM" in failed and "timeout" in failed and "generated failure" in failed
        assert "busy, steal" in suspect and "accuracy check failed" in suspect
        assert "nightly" in missing and T4 in missing
        # a suspect point wears its flags: ringed in red, and named in its hover text
        (busy,) = [c for c in data["cells"] if c["health"]]
        assert (busy["gpu"], busy["model"], busy["build"], busy["bs"], busy["mode"]) == (
            A100,
            "DETR",
            "nightly",
            1,
            "default",
        )
        page.screenshot(path=str(tmp_path / "troubled-run-page.png"), full_page=True)
        # the filters: a batch size fewer, fewer points; a task off, its cards hidden
        vit = a100.locator('.card[data-model="Image Classification/ViT"] .chart')
        before = vit.locator(".scatterlayer .points path").count()
        page.locator('[data-filter="batch-size"] input[value="4"]').uncheck()
        vit_points = (
            '#compile-vs-eager-0 .card[data-model="Image Classification/ViT"] .scatterlayer .points path'
        )
        page.wait_for_function(
            "([s, n]) => document.querySelectorAll(s).length < n", arg=[vit_points, before]
        )
        assert vit.locator(".scatterlayer .points path").count() > 0
        page.locator('[data-filter="task"] input[value="Object Detection"]').uncheck()
        assert page.locator('.card[data-task="Object Detection"]:visible').count() == 0
        assert page.locator('.card[data-task="Image Classification"]:visible').count() == 2  # one per GPU
        assert problems.all() == []


def test_the_history_page(browser: Browser, tmp_path: Path) -> None:
    view = sample_history(nights=30, models=MODELS, batch_sizes=(1, 4), modes=("eager", "default"))
    page_path = write_history_page(view, tmp_path / "history")
    data = page_data(page_path)
    with browser.open(page_path) as (page, problems):
        draw_all(page)
        charts = page.locator("#trends .card .chart[data-drawn]")
        assert charts.count() == len(MODELS)
        text = hover_first_point(page, page.locator('#trends .chart[data-model="Image Classification/ViT"]'))
        assert "2026-01-01" in text and "median " in text and " ms [" in text and "torch " in text
        # the change points: the table's rows link the commit range and the two nights' run pages
        rows = page.locator("#changes-table tr.change")
        assert rows.count() == len([c for c in data["changes"] if c["gpu"] == A100]) == 2  # bs 1 and 4
        links = [rows.first.locator("a").nth(i).get_attribute("href") for i in range(3)]
        assert links[0].endswith("/tables/index.html") and links[1].endswith("/tables/index.html")
        assert links[2].startswith("https://github.com/pytorch/pytorch/compare/")
        # and the chart marks the change on its panel, with the commit range as a link
        vit = page.locator('#trends .chart[data-model="Image Classification/ViT"]')
        assert vit.locator(".annotation a").first.get_attribute("xlink:href") == links[2]
        # every night links its run page
        night_links = page.locator("#nights a")
        assert night_links.count() == len(data["nights"]) == 60
        # a click on a point opens that night's run page (stand-ins here, where the run pages would be)
        for night in data["nights"]:
            stand_in = tmp_path / "history" / night["page"]
            stand_in.parent.mkdir(parents=True, exist_ok=True)
            stand_in.write_text(f"<title>{night['run']}</title>")
        with page.expect_popup() as popup:
            page.mouse.down()
            page.mouse.up()
        popup.value.wait_for_load_state()
        assert popup.value.url.endswith("/tables/index.html") and "20260101" in popup.value.url
        popup.value.close()
        page.screenshot(path=str(tmp_path / "history-page.png"))
        assert problems.all() == []


def test_a_page_without_plotly_beside_it_says_so(browser: Browser, tmp_path: Path) -> None:
    view = sample_history(nights=3, models=MODELS[:1], batch_sizes=(1,), modes=("default",))
    page_path = write_history_page(view, tmp_path / "h")
    for js in (tmp_path / "h").glob("*.js"):
        js.unlink()
    with browser.open(page_path, ready=False) as (page, problems):
        page.wait_for_selector(".fatal")
        assert "plotly.js did not load" in page.locator(".fatal").first.inner_text()
        assert any("plotly-basic" in r for r in problems.failed_requests), problems.all()
        assert any("plotly.js did not load" in m for m in problems.console)
