"""The first bad nightly of one cell: a binary search over the nightly dates the index still holds.

The search alone, with the standard library (`nox -s bisect` drives it: suite.sessions.bisect
builds and runs each date, suite.history.judge judges it). It first runs both ends and asks the
gate (suite.compare.rule, `python -m suite compare`'s rule) whether the cell regressed from the
good date to the bad one: if not, it stops there ("not reproduced"). Then, while the index holds a
date strictly between the last good and the first bad one that is not skipped, it tries the middle
one (the earlier of two middles), judged against the good end's run: a failing verdict makes it
the new first bad, any other the new last good. A date whose image cannot be built or whose cell
does not run, or whose verdict is only `suspect` (an unhealthy machine), is skipped, as `git
bisect skip` does. It stops when no untried date is left between the two: at most
ceil(log2(n + 1)) runs beside the two ends for n dates between them, plus one per skipped date.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path

from suite.errors import UsageError

BAD, GOOD, SKIP = "bad", "good", "skip"
COMPARE_URL = "https://github.com/pytorch/pytorch/compare/{good}...{bad}"


@dataclass(frozen=True)
class Cell:
    model: str
    batch_size: int
    mode: str

    def __post_init__(self) -> None:
        if not self.model or not self.mode or self.batch_size < 1:
            raise UsageError("--cell", f"{self} is not a cell (a model, a batch size >= 1 and a mode)")

    @staticmethod
    def parse(text: str) -> Cell:
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 3 or not all(parts) or not parts[1].isdigit() or int(parts[1]) < 1:
            raise UsageError(
                "--cell", f'{text!r} is not "<model>,<batch size>,<mode>" (e.g. "ResNet,4,default")'
            )
        return Cell(parts[0], int(parts[1]), parts[2])

    @property
    def text(self) -> str:
        return f"{self.model},{self.batch_size},{self.mode}"

    @property
    def label(self) -> str:
        return f"{self.model} bs{self.batch_size} {self.mode}"


@dataclass
class Bisection:
    """Which date to try next, what each outcome does, when to stop."""

    dates: list[date]  # every date the index holds (any order)
    good: date
    bad: date
    skipped: set[date] = field(default_factory=set)
    tried: list[tuple[date, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.good < self.bad:
            raise UsageError("--good", f"{self.good} must be before --bad {self.bad}")
        self.dates = sorted(set(self.dates))

    def between(self) -> list[date]:
        """The dates still to decide: strictly between the last good and the first bad, not skipped."""
        return [d for d in self.dates if self.good < d < self.bad and d not in self.skipped]

    def next(self) -> date | None:
        left = self.between()
        return left[(len(left) - 1) // 2] if left else None

    def record(self, day: date, outcome: str) -> None:
        if outcome not in (BAD, GOOD, SKIP):
            raise ValueError(outcome)
        self.tried.append((day, outcome))
        if outcome == BAD:
            self.bad = day
        elif outcome == GOOD:
            self.good = day
        else:
            self.skipped.add(day)

    def most_runs(self) -> int:
        """Runs still needed at most if no date is skipped."""
        return math.ceil(math.log2(len(self.between()) + 1))


@dataclass(frozen=True)
class Judged:
    """One date's run of the cell judged against the good end's: bad / good / skip, the gate's
    verdict, and the torch that ran."""

    outcome: str
    verdict: str
    torch_version: str = ""
    torch_git: str = ""

    def __post_init__(self) -> None:
        if self.outcome not in (BAD, GOOD, SKIP):
            raise ValueError(f"outcome {self.outcome!r}")

    def json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Judged:
        """The last line of `python -m suite history judge`'s output."""
        return Judged(**json.loads(text.strip().splitlines()[-1]))


Measure = Callable[[date], Path | None]  # a date -> its run folder (None: not built or not run)
Judge = Callable[[Path, Path | None], Judged]  # (good end's run, this date's run) -> the verdict


@dataclass(frozen=True)
class Result:
    reproduced: bool
    last_good: date
    first_bad: date
    judged: dict[date, Judged]  # the good end judged against itself: its torch
    order: list[date]  # the dates in the order run (the two ends first)

    def commits(self) -> str:
        good, bad = self.judged.get(self.last_good), self.judged.get(self.first_bad)
        if good and bad and good.torch_git and bad.torch_git and good.torch_git != bad.torch_git:
            return COMPARE_URL.format(good=good.torch_git, bad=bad.torch_git)
        return ""

    def lines(self, cell: Cell, build: str) -> list[str]:
        def torch(day: date) -> str:
            j = self.judged.get(day)
            return (
                f" (torch {j.torch_version}, {j.torch_git or 'git SHA unknown'})"
                if j and j.torch_version
                else ""
            )

        tried = ", ".join(f"{d} {self.judged[d].outcome} ({self.judged[d].verdict})" for d in self.order[1:])
        if not self.reproduced:
            return [
                "not reproduced: the gate finds no regression of "
                f"{cell.label} ({build}) from {self.last_good} "
                f"to {self.first_bad} ({self.judged[self.first_bad].verdict}); nothing to bisect"
            ]
        unknown = [
            d for d in self.order if self.last_good < d < self.first_bad and self.judged[d].outcome == SKIP
        ]
        return [
            f"first bad nightly of {cell.label} ({build}): {self.first_bad}{torch(self.first_bad)}"
            + (f" or one of {', '.join(map(str, unknown))}, which could not be judged" if unknown else ""),
            f"last good: {self.last_good}{torch(self.last_good)}",
            f"commits: {self.commits() or 'unknown (a torch git SHA is missing)'}",
            f"tried: {tried}",
        ]


def on_index(dates: Sequence[date], good: date, bad: date) -> None:
    held = set(dates)
    for flag, day in (("--good", good), ("--bad", bad)):
        if day not in held:
            span = f"{min(held)} to {max(held)}" if held else "no date"
            raise UsageError(
                flag, f"{day} is not on the nightly index (it holds {span}; it keeps about 60 days)"
            )


def bisect(
    dates: Sequence[date], good: date, bad: date, measure: Measure, judge: Judge, log: Callable[[str], None]
) -> Result:
    """Run the ends, then the search; every date run is logged with its verdict."""
    on_index(dates, good, bad)
    search = Bisection(list(dates), good, bad)
    good_run, bad_run = measure(good), measure(bad)
    if good_run is None:
        raise UsageError("--good", f"the cell did not run on {good}: nothing to compare with")
    judged = {good: judge(good_run, good_run), bad: judge(good_run, bad_run)}
    order = [good, bad]
    log(f"{good} (good) against {bad}: {judged[bad].verdict}")
    if judged[bad].outcome != BAD:
        return Result(False, good, bad, judged, order)
    log(f"{len(search.between())} nightlies between them: at most {search.most_runs()} more runs")
    while (day := search.next()) is not None:
        judged[day] = judge(good_run, measure(day))
        order.append(day)
        search.record(day, judged[day].outcome)
        left = len(search.between())
        log(
            f"{day}: {judged[day].outcome} ({judged[day].verdict}); "
            f"{left} left between {search.good} and {search.bad}"
        )
    return Result(True, search.good, search.bad, judged, order)
