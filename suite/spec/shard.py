"""`--shard i/n`: split a plan's cells into n disjoint parts of about equal expected cost.

Each machine of a fan-out (one GitHub Actions job per GPU type x shard) expands the same
profile and then keeps only its own part, so the split must come out the same
everywhere: it depends only on the cells (their identity and their cost estimate from
`suite.spec.cost`), never on their input order, hash seeds or the machine. Greedy longest-
processing-time: cells from most to least expensive, each to the shard with the least
estimated cost so far (the lower shard number on a tie). The compile-heavy cells come
first and so land one per shard before any shard gets a second one.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from suite.errors import UsageError
from suite.spec.cost import estimate_seconds
from suite.spec.model import Cell

_SHARD_RE = re.compile(r"^(\d+)/(\d+)$")
MAX_SHARDS = 1024  # far above any fan-out (a GitHub Actions matrix has at most 256 jobs)


@dataclass(frozen=True)
class Shard:
    """Part `index` (1-based) of `count`."""

    index: int
    count: int

    @staticmethod
    def parse(text: str) -> Shard:
        """`i/n` with 1 <= i <= n, else a UsageError naming --shard."""
        match = _SHARD_RE.match(text.strip())
        if not match:
            raise UsageError("--shard", f"{text!r} is not i/n (e.g. 2/4: the second of four parts)")
        index, count = int(match[1]), int(match[2])
        if not 1 <= count <= MAX_SHARDS:
            raise UsageError("--shard", f"{text!r}: the number of shards must be between 1 and {MAX_SHARDS}")
        if not 1 <= index <= count:
            raise UsageError("--shard", f"{text!r}: the shard number must be between 1 and {count}")
        return Shard(index, count)

    @property
    def label(self) -> str:
        """`i/n`, as the CSV's shard column and runner.run_cells take it."""
        return f"{self.index}/{self.count}"


def _identity(cell: Cell) -> tuple[str, str, int, str, str, tuple[int, ...]]:
    """What tells two cells of one plan apart (the key `matrix.expand` de-duplicates on);
    the build is left out so that `plan` (build not yet detected) agrees with `run`."""
    return (cell.model.name, cell.scenario, cell.batch_size, cell.mode, cell.dynamic, cell.batch_sizes)


def assign(
    cells: Sequence[Cell], count: int, cost: Callable[[Cell], float] = estimate_seconds
) -> list[list[int]]:
    """All `count` shards as ascending indices into `cells` (some shards are empty when
    there are fewer cells than shards)."""
    if count < 1:
        raise ValueError(f"count must be >= 1, got {count}")
    costs = [cost(c) for c in cells]
    order = sorted(range(len(cells)), key=lambda i: (-costs[i], _identity(cells[i])))
    loads = [0.0] * count
    shards: list[list[int]] = [[] for _ in range(count)]
    for i in order:
        target = min(range(count), key=lambda s: (loads[s], s))
        shards[target].append(i)
        loads[target] += costs[i]
    return [sorted(shard) for shard in shards]


def select(cells: Sequence[Cell], shard: Shard) -> list[Cell]:
    """The cells of one shard, in plan order."""
    return [cells[i] for i in assign(cells, shard.count)[shard.index - 1]]
