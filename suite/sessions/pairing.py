"""The bench sessions' pair: which two builds are timed side by side (suite.run.pair), and the
flags each one's runner then takes. By default `bench-local` and `bench-nightly` pair the base
build (the earlier kind: stable, then release, then nightly) with the other, when exactly two
builds run; `--separate` runs them one after the other as before. Standard library only."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from suite.run.pair import SOCKET_NAME
from suite.spec import BuildSpec
from suite.spec.pair_protocol import BASE, NEW
from suite.spec.vocab import BASE_ORDER


@dataclass(frozen=True)
class PairPlan:
    """The two builds of a pair, by role."""

    base: BuildSpec
    new: BuildSpec

    def role(self, build: BuildSpec) -> str:
        return BASE if build.name == self.base.name else NEW

    def __contains__(self, build: object) -> bool:
        return isinstance(build, BuildSpec) and build.name in (self.base.name, self.new.name)


def plan(builds: Sequence[BuildSpec], separate: bool) -> tuple[PairPlan | None, str]:
    """The pair of `builds`, or None and why not (said in the session's log)."""
    if separate:
        return None, "--separate: each build runs apart, one after the other"
    if len(builds) != 2:
        return None, f"{len(builds)} build(s) to run: a pair needs exactly two"
    rank = {kind: i for i, kind in enumerate(BASE_ORDER)}
    base, new = sorted(builds, key=lambda b: rank.get(b.kind, len(rank)))  # stable first on a tie of kinds
    return PairPlan(base, new), ""


def socket_path(run_dir: Path, slot: str = "") -> Path:
    """Where a pair's coordinator listens: in the run folder, which the containers see mounted."""
    return run_dir / (SOCKET_NAME if not slot else f".pair-{slot}.sock")


def runner_flags(socket: Path | str, role: str) -> list[str]:
    """What a paired runner's `suite run` takes beyond its selection."""
    return ["--pair", str(socket), "--pair-role", role, "--schedule", "serial"]
