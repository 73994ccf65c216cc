"""The CSV contract's rules: the table of columns in the CSV's order, the statuses, and which
columns key a cell (how a row's values are written and which row of a cell is kept:
suite.results.rows).

A column is defined once, in its section's module (suite.results.sections); the CSV's order is
suite.results.layout's. `TABLE` below is those columns in that order, and every reader and
writer takes its column groups from it and its statuses from `STATUS_TABLE`. Imported inside
the containers: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

from suite.results.layout import COLUMN_OF, ORDER, SECTION_OF
from suite.results.sections.base import Column


def _table() -> tuple[Column, ...]:
    """The sections' columns in the CSV's order; a column not in both is a mistake said by name."""
    unplaced = [f"{n} (section {SECTION_OF[n]})" for n in COLUMN_OF if n not in ORDER]
    unknown = [n for n in ORDER if n not in COLUMN_OF]
    if unplaced or unknown or len(set(ORDER)) != len(ORDER):
        raise ValueError(
            "suite.results.layout.ORDER and the sections disagree: "
            f"not in ORDER (append them at its end): {unplaced}; in no section: {unknown}"
        )
    return tuple(COLUMN_OF[n] for n in ORDER)


# The contract's columns, in this order, first; then the suite's extras ("more may follow").
TABLE: tuple[Column, ...] = _table()
BY_NAME: dict[str, Column] = {c.name: c for c in TABLE}

COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE)
CONTRACT_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.contract)
EXTRA_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if not c.contract)
# Measurement columns: empty on any status but "ok".
TIMING_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.timing)
# The columns that identify a cell inside one <build>__<device> file (resume key).
KEY_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.key)
# A cell across runs: the resume key with the GPU and the model variant (smoke, custom), less
# the model id; in the order a comparison lists and sorts cells (build first).
CELL_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in sorted((c for c in TABLE if c.cell), key=lambda c: c.cell)
)
# The settings that change a row's figures beyond the cell key (compile cache, allocator,
# processes, stopping rule, warm-up, threads, image, ...): cells are compared across runs only
# where every setting both rows record is the same (suite.compare.settings).
SETTING_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.setting)


@dataclass(frozen=True)
class Status:
    """A row's outcome, and what each reader does with it."""

    name: str
    word: str  # how tables and reports print it
    failed: bool  # the cell ran and failed (compare: newly failing / fixed)
    done: bool  # a resumed run keeps the row instead of running the cell again
    doc: str = ""


OK, OOM, ERROR, TIMEOUT, SKIPPED = "ok", "oom", "error", "timeout", "skipped"
STATUS_TABLE: tuple[Status, ...] = (
    Status(OK, "ok", failed=False, done=True, doc="measured"),
    Status(OOM, "OOM", failed=True, done=True, doc="out of memory: a re-run would fail the same way"),
    Status(ERROR, "error", failed=True, done=False, doc="an exception or a dead worker"),
    Status(TIMEOUT, "timeout", failed=True, done=False, doc="no result in time: the worker was killed"),
    Status(SKIPPED, "skipped", failed=False, done=False, doc="not run: this build cannot run the cell"),
)
STATUSES: tuple[str, ...] = tuple(s.name for s in STATUS_TABLE)
FAILED_STATUSES: tuple[str, ...] = tuple(s.name for s in STATUS_TABLE if s.failed)
# Statuses a resumed run keeps (does not re-run) by default.
DONE_STATUSES: frozenset[str] = frozenset(s.name for s in STATUS_TABLE if s.done)
STATUS_WORDS: dict[str, str] = {s.name: s.word for s in STATUS_TABLE}

# How a column with `nonfinite` writes (and readers accept) a measured NaN or infinity.
NONFINITE_WORDS: tuple[str, ...] = ("nan", "inf", "-inf")
NONFINITE_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.nonfinite)
