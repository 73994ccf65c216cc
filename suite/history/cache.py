"""The change points of each series, kept in the store beside its rows, keyed by a digest of the
series' values: a series that has not changed since they were found is not searched again.

`history report`, `history verdict` and `view()` compute a series' change points only when the
store holds none for its values (`ChangeCache.detect`), and then keep them: one entry per series
and figure (its track and metric), replaced when the series changes. The key is a digest of the
values the rule is given (the figure's usable nights, in order) together with the rule's settings,
this module's version and those of the libraries the rule runs on (ruptures, SciPy, NumPy), so an
entry is used only for the very values and rule it was found for: the answer is the rule's own,
cached or not. A DuckDB store keeps them in the table `history_change_points`, a Parquet store in
`_change_points.parquet` at its root; a store that cannot be written (another writer holds it, a
read-only copy) is read and not written, and the answer is the same.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import astuple, dataclass, field
from functools import cache
from importlib import metadata

import numpy as np
import pyarrow as pa

from suite.history.changes import Rule, Shift, detect

CACHE_TABLE = "history_change_points"
CACHE_FILE = "_change_points.parquet"
CACHE_VERSION = 1  # bump when detect() may answer differently for the same values and rule
CACHE_SCHEMA = pa.schema([("series", pa.string()), ("digest", pa.string()), ("shifts", pa.string())])


@cache
def _versions() -> str:
    found = []
    for name in ("ruptures", "scipy", "numpy"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} ?")
    return ", ".join(found)


def salt(rule: Rule) -> bytes:
    """What an entry's key holds beside the values: the rule, this module's and the libraries'
    versions."""
    return f"{CACHE_VERSION}; {astuple(rule)!r}; {_versions()}\0".encode()


def encode(shifts: list[Shift]) -> str:
    """Shifts as JSON (floats as repr writes them: read back exactly)."""
    return json.dumps(
        [[int(s.at), int(s.start), int(s.end), s.change, s.low, s.high, s.p_value] for s in shifts]
    )


def decode(text: str) -> list[Shift]:
    return [
        Shift(int(a), int(b), int(c), float(d), float(e), float(f), float(g))
        for a, b, c, d, e, f, g in json.loads(text)
    ]


@dataclass
class ChangeCache:
    """The store's entries (digest -> shifts as JSON) and those found now, to be kept."""

    rule: Rule
    stored: Mapping[str, str] = field(default_factory=dict)
    fresh: dict[str, tuple[str, str]] = field(default_factory=dict)  # digest -> (series, shifts)
    hits: int = 0

    def __post_init__(self) -> None:
        self._salt = salt(self.rule)

    def digest(self, values: np.ndarray) -> str:
        data = np.ascontiguousarray(values, dtype=np.float64).tobytes()
        return hashlib.blake2b(self._salt + data, digest_size=16).hexdigest()

    def detect(self, series: str, values: np.ndarray) -> list[Shift]:
        """`changes.detect(values, rule)`, from the store where it holds these values' answer."""
        key = self.digest(values)
        found = self.stored.get(key)
        if found is None and key in self.fresh:
            found = self.fresh[key][1]
        if found is not None:
            self.hits += 1
            return decode(found)
        shifts = detect(values, self.rule)
        self.fresh[key] = (series, encode(shifts))
        return shifts

    def table(self) -> pa.Table:
        """The entries found now (one per series: the last), to be kept."""
        latest = {series: (key, shifts) for key, (series, shifts) in self.fresh.items()}
        return pa.table(
            {
                "series": list(latest),
                "digest": [key for key, _ in latest.values()],
                "shifts": [shifts for _, shifts in latest.values()],
            },
            schema=CACHE_SCHEMA,
        )
