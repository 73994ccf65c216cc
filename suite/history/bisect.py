"""The first bad nightly of one cell: a binary search over the nightly dates the index still holds.

`nox -s bisect -- --cell "ResNet,4,reduce-overhead" --good 2026-12-02 --bad 2026-12-09` builds the
nightly build's image for a date (the container machinery of `nox -s build`, with the build's
TORCH_NIGHTLY_DATE set to that date), runs that one cell in it (`suite run` in the container, as
`bench-nightly` does), and judges it with the gate's own rule (suite.compare.rule.judge) against
the good date's run. It first runs both ends: if the gate does not find the regression between
them, it stops there (exit 1). Then, while the index holds a date strictly between the last good
and the first bad one, it tries the middle one (the earlier of two middles) and moves that end.
A date whose image cannot be built, whose cell does not run, or whose verdict is only `suspect`
(an unhealthy machine) is skipped and the search goes on over the others, as `git bisect skip`
does. It stops when no untried date is left between the two: at most ceil(log2(n + 1)) runs
beside the two ends for n dates between them, plus the skipped ones.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from pathlib import Path
from types import ModuleType
from typing import NoReturn

from suite.compare.rule import FAILING_VERDICTS, SUSPECT, Rule, judge
from suite.errors import UsageError
from suite.report.load import load
from suite.report.study import Measurement, measurement_of
from suite.results import slug
from suite.run import containers, docker, images
from suite.run.session import Runner
from suite.spec import BuildSpec, load_matrix

ROOT = Path(__file__).resolve().parents[2]
BAD, GOOD, SKIP = "bad", "good", "skip"
COMPARE_URL = "https://github.com/pytorch/pytorch/compare/{good}...{bad}"


@dataclass(frozen=True)
class Cell:
    model: str
    batch_size: int
    mode: str

    @staticmethod
    def parse(text: str) -> Cell:
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 3 or not all(parts) or not parts[1].isdigit() or int(parts[1]) < 1:
            raise UsageError(
                "--cell", f'{text!r} is not "<model>,<batch size>,<mode>" (e.g. "ResNet,4,default")'
            )
        return Cell(parts[0], int(parts[1]), parts[2])

    @property
    def label(self) -> str:
        return f"{self.model} bs{self.batch_size} {self.mode}"


@dataclass
class Bisection:
    """The search itself, no docker: which date to try next, what each outcome does, when to stop."""

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
        return math.ceil(math.log2(len(self.between()) + 1))


@dataclass(frozen=True)
class Tried:
    """One date's run of the cell: its measurement, and the torch that ran."""

    measurement: Measurement
    torch_version: str
    torch_git: str


Measure = Callable[[date], Tried | None]


def outcome(good: Tried, tried: Tried | None, rule: Rule) -> tuple[str, str]:
    """bad / good / skip, and the gate's verdict that says so."""
    if tried is None:
        return SKIP, "did not run"
    verdict = judge(good.measurement, tried.measurement, rule.threshold, rule)[0]
    if verdict == SUSPECT:
        return SKIP, verdict
    return (BAD if verdict in FAILING_VERDICTS else GOOD), verdict


@dataclass(frozen=True)
class Result:
    reproduced: bool
    last_good: date
    first_bad: date
    runs: dict[date, Tried | None]
    verdicts: list[tuple[date, str, str]]  # (date, outcome, gate verdict), in the order tried

    def commits(self) -> str:
        good, bad = self.runs.get(self.last_good), self.runs.get(self.first_bad)
        if good and bad and good.torch_git and bad.torch_git and good.torch_git != bad.torch_git:
            return COMPARE_URL.format(good=good.torch_git, bad=bad.torch_git)
        return ""


def bisect(
    dates: Sequence[date], good: date, bad: date, measure: Measure, rule: Rule, log: Callable[[str], None]
) -> Result:
    """Run the ends, then the search; every date tried is logged with its verdict."""
    on_index = set(dates)
    for flag, day in (("--good", good), ("--bad", bad)):
        if day not in on_index:
            held = f"{min(on_index)} to {max(on_index)}" if on_index else "nothing"
            raise UsageError(
                flag, f"{day} is not on the nightly index (it holds {held}; it keeps about 60 days)"
            )
    search = Bisection(list(dates), good, bad)
    runs: dict[date, Tried | None] = {good: measure(good), bad: measure(bad)}
    verdicts = []
    if runs[good] is None or runs[bad] is None:
        which = "--good" if runs[good] is None else "--bad"
        raise UsageError(
            which, f"the cell did not run on {good if runs[good] is None else bad}: nothing to compare"
        )
    reference = runs[good]
    assert reference is not None
    result, verdict = outcome(reference, runs[bad], rule)
    verdicts.append((bad, result, verdict))
    log(f"{good} (good) against {bad}: {verdict}")
    if result != BAD:
        return Result(False, good, bad, runs, verdicts)
    log(f"{len(search.between())} nightlies between them: at most {search.most_runs()} more runs")
    while (day := search.next()) is not None:
        runs[day] = measure(day)
        result, verdict = outcome(reference, runs[day], rule)
        search.record(day, result)
        verdicts.append((day, result, verdict))
        log(
            f"{day}: {result} ({verdict}); {len(search.between())} "
            f"left between {search.good} and {search.bad}"
        )
    return Result(True, search.good, search.bad, runs, verdicts)


# --- the real thing: the nightly index, the images, the container run -------------------------


def _nightly_pin() -> ModuleType:
    """containers/nightly_pin.py (a script the images run too): the index's dates."""
    spec = importlib.util.spec_from_file_location("nightly_pin", ROOT / "containers" / "nightly_pin.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("nightly_pin", module)
    spec.loader.exec_module(module)
    return module


def index_dates(build: BuildSpec) -> list[date]:
    """The dates with both a torch and a torchvision nightly of the build's lines."""
    pin = _nightly_pin()
    try:
        _, both = pin.usable_dates(
            build.index_url, build.torch, build.build_args["TORCHVISION_VERSION"], build.python
        )
    except pin.PinError as exc:
        raise UsageError(f"builds.{build.name}.index_url", str(exc)) from None
    return sorted(datetime.strptime(d, "%Y%m%d").date() for d in both)


class _Failed(Exception):
    pass


def _runner() -> Runner:
    def error(message: str) -> NoReturn:
        raise _Failed(message)

    return Runner(
        run=lambda *a, **k: None,
        log=lambda m: print(f"suite history bisect: {m}", file=sys.stderr),
        error=error,
    )


def container_measure(
    build: BuildSpec, cell: Cell, profile: str, device: str, out: Path, subs: images.Substitutes
) -> Measure:
    """Build the image of a date (if missing) and run the cell in it; None when either fails."""
    matrix = load_matrix(ROOT / "matrix.yaml")
    runner = _runner()
    hf_cache = containers.hf_cache_dir().resolve()

    def measure(day: date) -> Tried | None:
        spec = replace(build, build_args={**build.build_args, "TORCH_NIGHTLY_DATE": f"{day:%Y%m%d}"})
        run_id = f"bisect-{slug(cell.label)}-{day:%Y%m%d}"
        opts = docker.run_options(out.resolve(), run_id, hf_cache, False, device, "")
        try:
            tag = containers.ensure_image(runner, matrix, spec, ROOT, containers.Build(subs=subs))
            containers.prepare_mounts(runner, opts)
            args = ["--profile", profile, "--models", cell.model, "--batch-sizes", str(cell.batch_size)]
            cmd = docker.suite_run_command(spec, opts, tag, [*args, "--modes", cell.mode])
            if containers.run_docker(cmd, runner).returncode != 0:
                raise _Failed(f"the container exited with an error on {day}")
            frame = load([out / run_id]).frame
        except (_Failed, UsageError) as exc:
            runner.log(f"{day}: skipped ({exc})")
            return None
        rows = frame[
            (frame["model"] == cell.model)
            & (frame["batch_size"] == cell.batch_size)
            & (frame["mode"] == cell.mode)
        ]
        if rows.empty:
            runner.log(f"{day}: skipped (no row of {cell.label} in {out / run_id})")
            return None
        row = next(rows.itertuples(index=False))
        return Tried(measurement_of(row), str(row.torch_version), str(row.torch_git))

    return measure


def run_bisect(args: argparse.Namespace) -> int:
    cell = Cell.parse(args.cell)
    matrix = load_matrix(ROOT / "matrix.yaml")
    build = matrix.builds.get(args.build)
    if build is None or build.kind != "nightly" or "TORCH_NIGHTLY_DATE" not in build.build_args:
        raise UsageError(
            "--build", f"{args.build!r} is not a nightly build of matrix.yaml pinned by TORCH_NIGHTLY_DATE"
        )
    rule = Rule() if args.threshold is None else replace(Rule(), threshold=args.threshold)
    docker.check_docker()
    if args.device == "cuda":
        docker.check_gpu()
    measure = container_measure(
        build, cell, args.profile, args.device, args.out, images.Substitutes(local_bases=args.local_bases)
    )
    log = _runner().log
    result = bisect(index_dates(build), args.good, args.bad, measure, rule, log)
    if not result.reproduced:
        print(
            f"not reproduced: the gate finds no regression of {cell.label} from {args.good} to {args.bad} "
            f"({result.verdicts[0][2]}); nothing to bisect"
        )
        return 1
    good, bad = result.runs[result.last_good], result.runs[result.first_bad]
    print(f"first bad nightly of {cell.label} ({build.name}): {result.first_bad}"
          + (f" (torch {bad.torch_version}, {bad.torch_git})" if bad else ""))  # fmt: skip
    print(
        f"last good: {result.last_good}"
        + (f" (torch {good.torch_version}, {good.torch_git})" if good else "")
    )
    print(f"commits: {result.commits() or 'unknown (a torch git SHA is missing)'}")
    print("tried: " + ", ".join(f"{d} {o} ({v})" for d, o, v in result.verdicts))
    return 0
