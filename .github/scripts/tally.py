"""What a shard, or a whole night, measured, for the run's summary page (bench-nightly.yml): its
cells by outcome (ok; skipped, with why; out of memory; failed: error or timeout), each cell by the
row the suite keeps (an ok row, else the latest), and whether the cells that measured nothing
(skipped and out of memory) are more than the share BENCH_MAX_UNMEASURED_PCT allows.

A failed cell fails its bench job already (a re-run may finish it); skipped and OOM cells are
answers a re-run repeats, so a night could stay green while measuring little: above the share,
the job fails too, so a person looks. Standard library only (the suite's own CSV reader).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType

DEFAULT_MAX_UNMEASURED_PCT = 10.0  # BENCH_MAX_UNMEASURED_PCT's default
FAILED = ("error", "timeout")


class Refused(ValueError):
    """A setting that cannot be used, in one line."""


def suite_results() -> ModuleType:
    """The suite's CSV contract (standard library only), from this checkout."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    import suite.results as results

    return results


@dataclass
class Tally:
    """Cells by outcome; `skipped` by the first line of why."""

    ok: int = 0
    oom: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)

    @property
    def total(self) -> int:
        return self.ok + self.oom + self.failed + sum(self.skipped.values())

    @property
    def unmeasured(self) -> int:
        return self.oom + sum(self.skipped.values())

    def add(self, row: Mapping[str, str]) -> None:
        status = row.get("status", "")
        if status == "ok":
            self.ok += 1
        elif status == "oom":
            self.oom += 1
        elif status in FAILED:
            self.failed += 1
        elif status == "skipped":
            said = (row.get("error") or "").strip()
            self.skipped[said.splitlines()[0][:160] if said else "(no reason given)"] += 1

    def __iadd__(self, other: Tally) -> Tally:
        self.ok, self.oom, self.failed = self.ok + other.ok, self.oom + other.oom, self.failed + other.failed
        self.skipped.update(other.skipped)
        return self

    def share(self) -> float:
        """Skipped and OOM cells, percent of all (0 with no cell)."""
        return 100.0 * self.unmeasured / self.total if self.total else 0.0


def kept_rows(files: Iterable[Path]) -> list[dict[str, str]]:
    """Each cell's kept row (the suite's rule) over the files; an unreadable file is passed over
    (the strict merge names it)."""
    results = suite_results()
    kept = []
    for path in files:
        try:
            rows = results.read_rows(path).rows
        except (OSError, ValueError):
            continue
        chosen, _ = results.one_per_cell(rows, results.KEY_COLUMNS)
        kept += [{**rows[i], "file": path.name} for i in chosen]
    return kept


def tally(files: Iterable[Path]) -> Tally:
    counted = Tally()
    for row in kept_rows(files):
        counted.add(row)
    return counted


def max_share(text: str) -> float:
    """BENCH_MAX_UNMEASURED_PCT: a percent, 0 to 100 (empty: the default)."""
    text = text.strip().rstrip("%")
    try:
        value = float(text) if text else DEFAULT_MAX_UNMEASURED_PCT
    except ValueError:
        raise Refused(f"BENCH_MAX_UNMEASURED_PCT: {text!r} is not a percent") from None
    if not 0 <= value <= 100:
        raise Refused(f"BENCH_MAX_UNMEASURED_PCT: {value:g} is not between 0 and 100")
    return value


def counts_cell(t: Tally) -> list[str]:
    """A table row's cells: ok, skipped, OOM, failed, all."""
    return [str(t.ok), str(sum(t.skipped.values())), str(t.oom), str(t.failed), str(t.total)]


def table(rows: Sequence[tuple[str, Tally | None]]) -> list[str]:
    """One line per shard (None: it delivered no row) and the night's total."""
    lines = ["| shard | ok | skipped | out of memory | failed | cells |", "| --- " * 6 + "|"]
    total = Tally()
    for name, counted in rows:
        if counted is None:
            lines.append(f"| {name} | | | | | none delivered |")
            continue
        total += counted
        lines.append("| " + " | ".join([name, *counts_cell(counted)]) + " |")
    if len(rows) > 1:
        lines.append("| " + " | ".join(["**the night**", *(f"**{c}**" for c in counts_cell(total))]) + " |")
    return lines


def why_lines(t: Tally) -> list[str]:
    """The skipped cells by why, most first."""
    if not t.skipped:
        return []
    return ["", "Skipped, by why:", ""] + [f"- {n} cell(s): {why}" for why, n in t.skipped.most_common()]


def verdict_line(t: Tally, limit: float, where: str) -> tuple[str, bool]:
    """Whether skipped + OOM are over the share, in one line; True when over."""
    share = t.share()
    over = t.total > 0 and share > limit
    said = (f"{t.unmeasured} of {t.total} cell(s) of {where} measured nothing (skipped or out of memory), "
            f"{share:.0f}%: {'over' if over else 'within'} BENCH_MAX_UNMEASURED_PCT={limit:g}%")  # fmt: skip
    return said, over
