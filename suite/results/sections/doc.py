"""docs/csv.md's sections, written from the sections themselves: `render` gives the markdown
(each section's title, what it is, a table of its columns, its notes), and
`python -m suite.results.sections.doc docs/csv.md` puts it between the page's markers. A test
checks that the page holds what `render` gives, so a column is described once, in its section.
Standard library only.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

from suite.results.layout import COLUMN_OF, ORDER, SECTIONS
from suite.results.sections.base import TEXT, Column, Section

BEGIN = "<!-- from suite/results/sections by: python -m suite.results.sections.doc docs/csv.md -->"
END = "<!-- end of the sections -->"


def _paragraph(text: str) -> str:
    """A paragraph wrapped as the hand-written pages are (tables and notes are left as they are)."""
    return textwrap.fill(text, width=100, break_long_words=False, break_on_hyphens=False)


def _unit(column: Column) -> str:
    return column.unit or ("" if column.kind == TEXT else column.kind)


def _section(section: Section) -> str:
    rows = "\n".join(f"| `{c.name}` | {_unit(c)} | {c.doc} |" for c in section.columns)
    parts = [
        f"## {section.title}",
        _paragraph(f"{section.about} Section `{section.name}` of a worker's result and of `report.json`."),
        f"| column | unit | meaning |\n|---|---|---|\n{rows}",
    ]
    return "\n\n".join([*parts, *([section.notes] if section.notes else [])])


def render() -> str:
    """The generated part of docs/csv.md, markers included."""
    contract = [n for n in ORDER if COLUMN_OF[n].contract]
    head = (
        f"The contract's {len(contract)} columns come first, in this order: "
        + ", ".join(f"`{n}`" for n in contract)
        + f"; then the suite's own {len(ORDER) - len(contract)}, in the order of "
        "`suite/results/layout.py` (a new column is appended, never inserted). Below, the columns "
        "by section: " + ", ".join(f"[{s.title}](#{anchor(s.title)})" for s in SECTIONS) + "."
    )
    return "\n\n".join([BEGIN, _paragraph(head), *(_section(s) for s in SECTIONS), END])


def anchor(title: str) -> str:
    """The anchor a markdown renderer gives a heading (GitHub's rule, for these titles)."""
    kept = "".join(ch for ch in title.lower() if ch.isalnum() or ch in " -_")
    return kept.replace(" ", "-")


def rewrite(page: str) -> str:
    """`page` with its generated part replaced by `render()`'s."""
    start, end = page.find(BEGIN), page.find(END)
    if start < 0 or end < start:
        raise ValueError(f"the page lacks its markers ({BEGIN!r} ... {END!r})")
    return page[:start] + render() + page[end + len(END) :]


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m suite.results.sections.doc docs/csv.md", file=sys.stderr)
        return 2
    path = Path(argv[0])
    try:
        path.write_text(rewrite(path.read_text(encoding="utf-8")), encoding="utf-8")
    except (OSError, ValueError) as exc:
        print(f"suite.results.sections.doc: {path}: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the sections into {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
