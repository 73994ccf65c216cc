"""docs/csv.md is written from the row's sections (suite.results.sections.doc): a column is
described once, in its section's module, and the page says what the code does."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from suite.results import COLUMNS
from suite.results.sections import doc

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "csv.md"


def test_csv_md_is_the_sections() -> None:
    text = PAGE.read_text(encoding="utf-8")
    assert text == doc.rewrite(text), "run: python -m suite.results.sections.doc docs/csv.md"
    for name in COLUMNS:
        assert f"| `{name}` |" in text, name


def test_every_link_into_csv_md_finds_its_heading() -> None:
    headings = {doc.anchor(h) for h in re.findall(r"^#+ (.+)$", PAGE.read_text(encoding="utf-8"), re.M)}
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for page in pages:
        for anchor in re.findall(r"csv\.md#([a-z0-9-]+)", page.read_text(encoding="utf-8")):
            assert anchor in headings, f"{page.name}: csv.md#{anchor}"


def test_the_page_without_its_markers_is_refused(tmp_path: Path) -> None:
    page = tmp_path / "csv.md"
    page.write_text("# no markers\n")
    assert doc.main([str(page)]) == 2
    with pytest.raises(ValueError, match="markers"):
        doc.rewrite("# none")
