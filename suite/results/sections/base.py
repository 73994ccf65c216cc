"""What a section of the row is made of: `Column` (one CSV column and the rules readers and
writers apply to it) and `Section` (a topic's columns, with the words docs/csv.md prints for
it), and the few ways a column is built. Each section is its own module beside this one;
suite.results.sections gathers them, suite.results.layout orders their columns in the CSV.
Imported inside the containers: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

TEXT, INT, NUMBER = "text", "int", "number"
ALWAYS, WHEN_OK = "always", "when ok"
KINDS: tuple[str, ...] = (TEXT, INT, NUMBER)


@dataclass(frozen=True)
class Column:
    """One CSV column and the rules readers and writers apply to it."""

    name: str
    kind: str = TEXT  # TEXT | INT | NUMBER (what a non-empty value must parse as)
    unit: str = ""  # of a number: ms, s, MB, M (millions), x (a ratio)
    contract: bool = True  # one of the contract's columns (docs/design.md); else an extra after them
    required: str = ""  # ALWAYS | WHEN_OK: never empty / never empty on an ok row (merge checks)
    timing: bool = False  # measured: emptied on any status but ok
    positive: bool = False  # a duration or ratio: > 0 when present
    key: bool = False  # in the resume key (a cell inside one <build>__<device> file)
    cell: int = 0  # place in the key that matches a cell across runs (merge, compare); 0: not in it
    choices: tuple[str, ...] = ()  # the values allowed besides empty, where the set is closed
    doc: str = ""
    nonfinite: bool = False  # a NUMBER that may be `nan` or `inf` (measured so); elsewhere: empty
    # a setting that changes the row's figures (compare, calibrate and history match cells on it:
    # two rows that both record it and differ in it are not compared); empty: not recorded
    setting: bool = False


@dataclass(frozen=True)
class Section:
    """One topic of the row: its columns, and how docs/csv.md introduces and closes it.

    `about`: the paragraph before the section's table (markdown, linking the page that says
    how its figures are measured); `notes`: what follows the table. `name` is the section's key
    in a worker's result and in report.json."""

    name: str
    title: str
    about: str
    columns: tuple[Column, ...]
    notes: str = ""

    def __post_init__(self) -> None:
        if not self.name.isidentifier() or not self.columns:
            raise ValueError(f"section {self.name!r}: a Python name and at least one column")
        names = [c.name for c in self.columns]
        if len(set(names)) != len(names):
            raise ValueError(f"section {self.name!r}: a column listed twice")
        undocumented = [c.name for c in self.columns if not c.doc]
        if undocumented:
            raise ValueError(f"section {self.name!r}: column(s) without a doc: {', '.join(undocumented)}")

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns)


def timed(name: str, unit: str = "ms", doc: str = "", positive: bool = True, required: str = "") -> Column:
    """A contract column's measured number: emptied on a failed row."""
    return Column(name, NUMBER, unit, required=required, timing=True, positive=positive, doc=doc)


def extra_timed(name: str, unit: str, doc: str, positive: bool = True) -> Column:
    """A measured number after the contract's columns: emptied on a failed row."""
    return Column(name, NUMBER, unit, contract=False, timing=True, positive=positive, doc=doc)


def extra(name: str, doc: str, kind: str = TEXT, unit: str = "") -> Column:
    """A column after the contract's that is not emptied on a failed row (a setting, a note)."""
    return Column(name, kind, unit, contract=False, doc=doc)


def counted(name: str, doc: str, setting: bool = False) -> Column:
    """A measured count after the contract's columns (calls, blocks, graphs): emptied on a failed row."""
    return Column(name, INT, contract=False, timing=True, doc=doc, setting=setting)


def with_ci(name: str, unit: str, doc: str) -> tuple[Column, ...]:
    """A measured figure and its 95% interval: `<name>_ci95_low`, `_ci95_high` (for a `<stem>_ms`,
    `<stem>_ci95_low_ms` and `<stem>_ci95_high_ms`)."""
    stem, end = (name[:-3], "_ms") if name.endswith("_ms") else (name, "")
    return (
        extra_timed(name, unit, doc),
        extra_timed(f"{stem}_ci95_low{end}", unit, f"95% CI of `{name}`: low"),
        extra_timed(f"{stem}_ci95_high{end}", unit, f"95% CI of `{name}`: high"),
    )


def table(head: tuple[str, str], *rows: tuple[str, str]) -> str:
    """A two-column markdown table (a section's notes: flags, stages) from its rows."""
    lines = [f"| {head[0]} | {head[1]} |", "|---|---|"]
    return "\n".join([*lines, *(f"| {a} | {b} |" for a, b in rows)])
