"""A table: its columns, rows and notes, rendered as Markdown and CSV, and its file names.

Host side only. A table family (compile_vs_eager, stable_vs, modes, memory, summary) builds
`Table`s from the study; `suite.report.publish` writes them and lays them out on one page.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from suite.report.study import Gpu, Setup, Study
from suite.report.tables.cellformat import csv_cells, md_cell
from suite.report.tables.cells import (
    DAGGER,
    DAGGER_NOTE,
    DOUBLE_DAGGER,
    HEALTH_NOTE,
    LEGEND,
    SECTION,
    STANDALONE_NOTE,
    TRAIN_DAGGER_NOTE,
    TRAIN_LEGEND,
)
from suite.results import slug


@dataclass(frozen=True)
class Column:
    md: str  # Markdown header
    csv: str  # CSV column name (or prefix, for gain and guide columns)
    kind: str  # text | dur | ms | mb | gain | guide
    markdown: bool = True  # False: in the CSV table only


@dataclass(frozen=True)
class Heading:
    """What a table says above and below its rows: its section, title, subtitle and note."""

    section: str
    title: str
    subtitle: str
    note: str


# A column of text cells: its header (also its CSV name), or (header, CSV name).
TextColumn = str | tuple[str, str]


@dataclass
class Table:
    name: str  # file stem
    section: str
    title: str
    subtitle: str
    columns: list[Column]
    rows: list[list[object]] = field(default_factory=list)
    context: list[dict[str, object]] = field(default_factory=list)  # CSV-only columns per row
    notes: list[str] = field(default_factory=list)

    def add(self, context: dict[str, object], values: list[object]) -> None:
        self.context.append(context)
        self.rows.append(values)

    def markdown_rows(self) -> list[list[str]]:
        return [
            [md_cell(c.kind, v) for c, v in zip(self.columns, row, strict=True) if c.markdown]
            for row in self.rows
        ]

    def frame(self) -> pd.DataFrame:
        records = []
        for context, row in zip(self.context, self.rows, strict=True):
            record = dict(context)
            for col, value in zip(self.columns, row, strict=True):
                if col.kind != "text":
                    record.update(csv_cells(col.csv, col.kind, value))
            records.append(record)
        return pd.DataFrame(records)

    def markdown(self, heading: str = "###", legend: bool = True) -> str:
        """The table under its title, then its notes (the legend left out where the page has it)."""
        cells = [cell for row in self.markdown_rows() for cell in row]
        dagger = TRAIN_DAGGER_NOTE if TRAIN_LEGEND in self.notes else DAGGER_NOTE
        notes = [n for n in self.notes if legend or n not in (LEGEND, TRAIN_LEGEND)]
        for mark, note in ((DAGGER, dagger), (DOUBLE_DAGGER, STANDALONE_NOTE), (SECTION, HEALTH_NOTE)):
            notes += [note] if any(mark in cell for cell in cells) else []
        lines = [f"{heading} {self.title}", "", self.subtitle, "", *markdown_table(self)]
        lines += ["", *(f"- {n}" for n in notes)] if notes else []
        return "\n".join(lines) + "\n"


def markdown_table(table: Table) -> list[str]:
    def esc(text: str) -> str:
        return text.replace("|", "\\|")

    shown = [c for c in table.columns if c.markdown]
    align = ["---" if c.kind == "text" else "---:" for c in shown]
    lines = ["| " + " | ".join(esc(c.md) for c in shown) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(esc(cell) for cell in row) + " |" for row in table.markdown_rows()]
    return lines


def write_table(table: Table, folder: Path) -> tuple[Path, Path]:
    md = folder / f"{table.name}.md"
    csv = folder / f"{table.name}.csv"
    md.write_text(table.markdown(heading="#"), encoding="utf-8")
    table.frame().to_csv(csv, index=False)
    return md, csv


def group_stem(study: Study, *parts: object, setup: Setup | None = None) -> str:
    """File stem: slugged parts joined by `__`, the setup added when runs differ in it."""
    names = [slug(str(p)) for p in parts]
    if setup is not None and len(study.setups) > 1:
        names.append(slug(setup.label))
    return "__".join(names)


def gpu_stem(gpu: Gpu) -> str:
    return slug(gpu.name) if gpu.is_gpu else slug(f"{gpu.device} {gpu.name}")


def row_context(gpu: Gpu, setup: Setup, task: str, model: str, **more: object) -> dict[str, object]:
    """The CSV-only columns that say which cell a row is."""
    return {
        "task": task,
        "model": model,
        "GPU": gpu.name,
        "device": gpu.device,
        **more,
        "dtype": setup.dtype,
        "scenario": setup.scenario,
        "weights": setup.weights,
        "variant": setup.variant,
        "malloc": setup.malloc,
        "TF32": setup.tf32,
    }


def text_table(name: Sequence[object], heading: Heading, columns: Sequence[TextColumn]) -> Table:
    """A table whose cells its family writes as text (the scenarios' tables), its file stem
    made of `name`'s parts."""
    return Table(
        name="__".join(slug(str(p)) for p in name),
        section=heading.section,
        title=heading.title,
        subtitle=heading.subtitle,
        columns=[Column(c, c, "text") if isinstance(c, str) else Column(*c, "text") for c in columns],
        notes=[heading.note],
    )
