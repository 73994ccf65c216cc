"""What a nox session was asked: its own flags, parsed with argparse out of its posargs (what is
left goes on to `python -m suite ...`, or is refused where a session takes nothing else); the
benchmark sessions' flags (`BenchArgs`) and the run folder they merge; `nox -s merge`'s run
folders. Bad values are one line naming the flag (a UsageError: exit status 2), as for the
suite's own verbs."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from suite.errors import UsageError
from suite.spec import BuildSpec

if TYPE_CHECKING:
    from suite.sessions.runner import Runner

_NEEDS_VALUE = re.compile(r"argument (\S+): expected one argument")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors: a flag without its value says so, naming the flag."""

    def error(self, message: str) -> NoReturn:
        missing = _NEEDS_VALUE.match(message)
        if missing:
            raise UsageError(missing[1], "needs a value")
        raise UsageError("posargs", message)


def take(args: list[str], values: Sequence[str] = (), switches: Sequence[str] = ()) -> dict[str, Any]:
    """Parse the session's flags (`--flag VALUE` or `--flag=VALUE`; `--switch`) out of `args`,
    leaving the rest in `args`, in order. Returns each flag's value by its name (`--run-id`):
    None for a flag not given, True or False for a switch."""
    parser = _Parser(prog="nox", add_help=False, allow_abbrev=False)
    for flag in values:
        parser.add_argument(flag, dest=flag, default=None)
    for flag in switches:
        parser.add_argument(flag, dest=flag, action="store_true")
    parsed, rest = parser.parse_known_args(list(args))
    args[:] = rest
    return vars(parsed)


def refuse_rest(args: Sequence[str], session: str, takes: str) -> None:
    """A session that passes nothing on: any argument left is one line naming the session."""
    if args:
        raise UsageError(session, f"unknown arguments {' '.join(args)} (takes {takes})")


@dataclass
class BenchArgs:
    """The session's own flags, taken out of posargs; the rest goes to `python -m suite run`."""

    builds: str | None
    run_id: str
    out: Path
    offline: bool
    no_merge: bool
    sharded: bool
    suite_args: list[str]
    device: str | None = None  # --device, None: the session's default
    shard: str = ""  # --shard i/n (it stays in suite_args too)
    session: str = ""  # which session made the run (its prefix: stable, nightly, local)
    run_id_given: bool = True  # --run-id given (False: the id above is a new one)
    separate: bool = False  # --separate: each build's runs apart, not timed side by side (a pair)


# Checks a build's selection flags before anything is built (the noxfile runs `suite plan`).
SelectionCheck = Callable[[BuildSpec, BenchArgs], None]


def bench_args(posargs: Sequence[str], prefix: str, root: Path) -> BenchArgs:
    args = list(posargs)
    shard = take(list(args), values=["--shard"])["--shard"]  # looked at, not taken: `suite run` needs it
    flags = take(
        args,
        values=["--build", "--run-id", "--out", "--device"],
        switches=["--offline", "--no-merge", "--separate"],
    )
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_id = flags["--run-id"] or f"{prefix}-{stamp}"
    out = Path(flags["--out"] or root / "results").resolve()
    sharded = shard is not None
    return BenchArgs(
        flags["--build"], run_id, out, flags["--offline"], flags["--no-merge"], sharded, args,
        flags["--device"], shard or "", prefix, flags["--run-id"] is not None, flags["--separate"],
    )  # fmt: skip


def merge_target(runner: Runner, bench: BenchArgs) -> str | None:
    """The run folder to merge after the benchmark, or None (one shard, or --no-merge)."""
    run_dir = bench.out / bench.run_id
    if bench.sharded or bench.no_merge:
        why = "one shard; the workflow's merge job joins them" if bench.sharded else "--no-merge"
        runner.log(f"raw CSVs: {run_dir}/raw/ (not merged: {why})")
        return None
    return str(run_dir)


MERGE_VALUE_FLAGS = ("-o", "--out", "--matrix", "--reference")  # `suite merge` flags with a value


def merge_args(posargs: Sequence[str], results: Path) -> tuple[list[str], bool]:
    """`nox -s merge -- [RUN_DIR...] [-o OUT] [--offline]`: the arguments of `suite merge` and
    whether to install nothing. The run folders are checked before anything is installed (a
    missing one: one line, exit 2); without one, the newest run under `results`."""
    args = list(posargs)
    offline = take(args, switches=["--offline"])["--offline"]
    rest = list(args)
    take(rest, values=MERGE_VALUE_FLAGS)  # what is left: the run folders (and merge's switches)
    inputs = [a for a in rest if not a.startswith("-")]
    for name in inputs:
        if not Path(name).exists():
            raise UsageError(name, "no such run folder or CSV file")
    return (args if inputs else [newest_run(results), *args]), offline


def newest_run(results: Path) -> str:
    """The run folder under `results` whose raw CSVs were written last (none: bad input, exit 2)."""
    runs = [p for p in results.glob("*/raw") if any(p.glob("*.csv"))]
    if not runs:
        raise UsageError(f"{results}", "no run folder with raw CSVs here; give one: nox -s merge -- RUN_DIR")
    newest = max(runs, key=lambda raw: max(f.stat().st_mtime for f in raw.glob("*.csv")))
    return str(newest.parent)
