"""docs/index.md lists every page of docs/, once each, and names no page that is not there."""

from __future__ import annotations

import re

from support import REPO


def test_the_index_lists_every_docs_page_once() -> None:
    docs = REPO / "docs"
    text = (docs / "index.md").read_text(encoding="utf-8")
    listed = re.findall(r"^\d+\. \[[^\]]+\]\(([^)#]+)\)", text, re.M)
    pages = sorted(p.name for p in docs.glob("*.md") if p.name != "index.md")
    assert sorted(listed) == pages
