"""`--shard i/n`: split a plan's cells into n disjoint parts of about equal expected cost.

Each machine of a fan-out (one GitHub Actions job per GPU type x shard) expands the same
profile and then keeps only its own part, so the split must come out the same
everywhere: it depends only on the cells (their identity and their cost estimate from
`suite.spec.cost`), never on their input order, hash seeds or the machine. Greedy longest-
processing-time: cells from most to least expensive, each to the shard with the least
estimated cost so far (the lower shard number on a tie). The compile-heavy cells come
first and so land one per shard before any shard gets a second one.

A shard of a shard, `i/n,k/m`, is part k of m of the cells of part i of n: a machine that
runs one shard of a fan-out with one container per GPU splits its own part again, whatever
the other machines' GPU counts, so the machines' parts stay disjoint and cover the plan.
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


MAX_DEPTH = 2  # a fan-out's shard, split again over one machine's GPUs


@dataclass(frozen=True)
class Shard:
    """Part `index` (1-based) of `count`: of the whole plan, or of the cells of `within`."""

    index: int
    count: int
    within: Shard | None = None

    @staticmethod
    def parse(text: str) -> Shard:
        """`i/n` (or `i/n,k/m`: part k of m of part i of n) with 1 <= i <= n, else a
        UsageError naming --shard."""
        parts = text.strip().split(",")
        if len(parts) > MAX_DEPTH:
            raise UsageError("--shard", f"{text!r}: at most {MAX_DEPTH} levels (i/n,k/m)")
        shard = None
        for part in parts:
            match = _SHARD_RE.match(part.strip())
            if not match:
                raise UsageError("--shard", f"{text!r} is not i/n (e.g. 2/4: the second of four parts)")
            index, count = int(match[1]), int(match[2])
            if not 1 <= count <= MAX_SHARDS:
                raise UsageError(
                    "--shard", f"{text!r}: the number of shards must be between 1 and {MAX_SHARDS}"
                )
            if not 1 <= index <= count:
                raise UsageError("--shard", f"{text!r}: the shard number must be between 1 and {count}")
            shard = Shard(index, count, shard)
        assert shard is not None
        return shard

    @property
    def label(self) -> str:
        """`i/n` (`i/n,k/m`), as the CSV's shard column and runner.run_cells take it."""
        own = f"{self.index}/{self.count}"
        return f"{self.within.label},{own}" if self.within else own

    def of(self, index: int, count: int) -> Shard:
        """Part `index` of `count` of this shard's cells."""
        return Shard(index, count, self)


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


def siblings(cells: Sequence[Cell], shard: Shard) -> list[list[int]]:
    """The parts that `shard` is one of (its parent's cells split `shard.count` ways), each as
    ascending indices into `cells`."""
    base = list(range(len(cells)))
    if shard.within is not None:
        base = siblings(cells, shard.within)[shard.within.index - 1]
    parts = assign([cells[i] for i in base], shard.count)
    return [[base[j] for j in part] for part in parts]


def select(cells: Sequence[Cell], shard: Shard) -> list[Cell]:
    """The cells of one shard, in plan order."""
    return [cells[i] for i in siblings(cells, shard)[shard.index - 1]]
