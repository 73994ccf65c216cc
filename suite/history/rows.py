"""An input's rows as the history reads them: a grid of the values as written (the contract's
columns in order, "" where a file lacks one; what a file has beyond them kept per row), its
number columns parsed once, and the grid typed into the store's Arrow columns (a value that is
not a number refuses the input; a column an older suite's CSV lacks is NULL), with each row's
key, extras as JSON and digest. suite.history.ingest reads the inputs into these.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from suite.errors import UsageError
from suite.report.load import parse_numbers
from suite.results import BY_NAME, CELL_COLUMNS, NONFINITE_COLUMNS, NONFINITE_WORDS, TEXT

# the columns a run may state its resolved nightly's date in (the version's date otherwise)
NIGHTLY_DATE_COLUMNS: tuple[str, ...] = ("torch_nightly_date", "nightly_date")
NUMBER_NAMES: tuple[str, ...] = tuple(name for name, c in BY_NAME.items() if c.kind != TEXT)
NAMES: tuple[str, ...] = tuple(BY_NAME)
NUMBER_AT = [i for i, name in enumerate(NAMES) if BY_NAME[name].kind != TEXT]
TEXT_AT = [i for i, name in enumerate(NAMES) if BY_NAME[name].kind == TEXT]
CELL_AT = [NAMES.index(c) for c in CELL_COLUMNS]
NAME_AT = {name: i for i, name in enumerate(NAMES)}
NUMBER_POS = {name: j for j, name in enumerate(NUMBER_NAMES)}
NIGHT_AT = [NAMES.index(c) for c in ("run_id", "build", "device", "gpu_name")]


def _numbers(text: np.ndarray, sources: Sequence[str], value: np.ndarray) -> dict[str, pa.Array]:
    """Every number column of the contract as Arrow values (null: empty); `value`: `text` parsed
    (suite.report.load.parse_numbers). The merge's reader has checked the contract's and the
    measured columns; the rest are checked here, as strictly: a value that is not a number
    refuses the input."""
    empty = text == ""
    out = {}
    for j, name in enumerate(NUMBER_NAMES):
        column, t, v, e = BY_NAME[name], text[:, j], value[:, j], empty[:, j]
        bad = ~e & ~np.isfinite(v)
        if name in NONFINITE_COLUMNS:
            bad &= ~np.isin(t, NONFINITE_WORDS)
        if column.kind == "int":
            with np.errstate(invalid="ignore"):
                bad |= ~e & np.isfinite(v) & (v != np.round(v))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            what = "a whole number" if column.kind == "int" else "a number"
            raise UsageError(sources[i], f"field {name}: {t[i][:40]!r} is not {what}; nothing was stored")
        if column.kind == "int":
            out[name] = pa.array(np.where(e, 0, v).astype(np.int64), mask=e, type=pa.int64())
        else:
            out[name] = pa.array(v, mask=e, type=pa.float64())
    return out


class Header:
    """Where a file's (or a row's) columns are: NAMES' positions (-1: absent), the extras."""

    def __init__(self, header: Sequence[str]) -> None:
        at = {name: i for i, name in enumerate(header) if name != "source"}  # a dict keeps the last
        self.at = at
        self.names = [at.get(name, -1) for name in NAMES]
        self.missing = {name for name in NAMES if name not in at}
        self.extras = sorted((name, i) for name, i in at.items() if name not in BY_NAME)


@dataclass(frozen=True)
class Block:
    """Rows read under one header: each row's file:line and its values as written (stripped),
    one row of `values` (object strings, the header's columns) each."""

    header: Header
    sources: list[str]
    values: np.ndarray

    def contract(self) -> np.ndarray:
        """The rows' values in NAMES' order, "" where the header has no such column."""
        if not self.header.missing:
            return self.values[:, self.header.names]
        padded = np.empty((len(self.values), self.values.shape[1] + 1), dtype=object)
        padded[:, :-1] = self.values
        padded[:, -1] = ""  # where NAMES' position is -1
        return padded[:, self.header.names]

    def extras(self) -> list[str]:
        """Each row's columns this suite does not know, as JSON ("" if none)."""
        if not self.header.extras:
            return [""] * len(self.values)
        pairs = self.header.extras
        return [json.dumps({name: v[i] for name, i in pairs}, sort_keys=True) for v in self.values.tolist()]


class Rows:
    """An input's rows as written: `grid`, each row's values in NAMES' order (object strings, ""
    where its file has no such column); the number columns parsed once (`number`)."""

    def __init__(self, blocks: Sequence[Block]) -> None:
        self.blocks = list(blocks)
        parts = [b.contract() for b in self.blocks]
        self.grid: np.ndarray = parts[0] if len(parts) == 1 else np.concatenate(parts)
        self.sources = [s for b in self.blocks for s in b.sources]
        self._numbers: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.grid)

    def column(self, name: str) -> np.ndarray:
        return self.grid[:, NAME_AT[name]]

    @property
    def numbers(self) -> np.ndarray:
        """The number columns (NUMBER_NAMES) parsed: NaN where empty or not a number."""
        if self._numbers is None:
            self._numbers = parse_numbers(self.grid[:, NUMBER_AT])
        return self._numbers

    def number(self, name: str) -> np.ndarray:
        return self.numbers[:, NUMBER_POS[name]]

    def named(self, name: str) -> np.ndarray:
        """A column by name, the contract's or one a file has beyond it ("" where absent)."""
        if name in NAME_AT:
            return self.column(name)
        parts = [
            b.values[:, b.header.at[name]] if name in b.header.at else np.full(len(b.values), "", object)
            for b in self.blocks
        ]
        return np.concatenate(parts) if parts else np.empty(0, object)

    def stated_nightly(self) -> np.ndarray:
        """Each row's nightly date as the run stated it ("" where it did not)."""
        out = np.full(len(self), "", object)
        for name in reversed(NIGHTLY_DATE_COLUMNS):
            values = self.named(name)
            out = np.where(values != "", values, out)
        return out


def block(header: Header, sources: list[str], values: list[list[str]]) -> Block:
    grid = np.empty((len(values), len(values[0]) if values else 0), dtype=object)
    grid[:] = values
    return Block(header, sources, grid)


def typed(rows: Rows, order: np.ndarray) -> pa.Table:
    """The rows (in `order`) as the store's contract columns typed, each row's extras as JSON,
    its key and its digest."""
    grid = rows.grid[order]
    sources = [rows.sources[i] for i in order]
    data: dict[str, pa.Array] = _numbers(grid[:, NUMBER_AT], sources, rows.numbers[order])
    block_of = np.repeat(np.arange(len(rows.blocks)), [len(b.values) for b in rows.blocks])[order]
    for i in TEXT_AT:  # a column the CSV lacks (an older suite's): NULL, not empty
        name = NAMES[i]
        lacking = [k for k, b in enumerate(rows.blocks) if name in b.header.missing]
        column = grid[:, i]
        if lacking:
            column = column.copy()
            column[np.isin(block_of, lacking)] = None
        data[name] = pa.array(column, pa.string())
    extras = [e for b in rows.blocks for e in b.extras()]
    extras = [extras[i] for i in order]
    data["extra"] = pa.array(extras, pa.string())
    data["row_key"] = pa.array(["\x1f".join(cell) for cell in grid[:, CELL_AT].tolist()], pa.string())
    digests = [
        hashlib.sha256("\x1f".join([*v, extra]).encode()).hexdigest()[:20]
        for v, extra in zip(grid.tolist(), extras, strict=True)
    ]
    data["row_digest"] = pa.array(digests, pa.string())
    return pa.table(data)
