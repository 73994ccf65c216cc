"""`python -m suite pair --base BUILD --new BUILD [selection]`: two builds timed side by side on
this machine's device (suite.run.pair), then each paired cell's ratios and verdict
(suite.run.pairrule). One build against itself (`--base B --new B`) is an A/A pair: its new side
writes to `<run-id>-new`, so that the two sides' rows never share a file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from suite.cli import values
from suite.errors import UsageError
from suite.results import read_rows
from suite.run import pairrule
from suite.run.pair import SOCKET_NAME, Coordinator, Side, run_pair
from suite.run.runner import new_run_id
from suite.spec.pair_protocol import BASE, NEW

# the pair's own flags, which its runners do not take: (flag, takes a value)
OWN_FLAGS: dict[str, bool] = {
    "--base": True,
    "--new": True,
    "--python-base": True,
    "--python-new": True,
    "--new-env": True,
    "--timing-cpus": True,
    "--run-id": True,
    "--exit-zero": False,
}


def add_pair_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--base",
        default=None,
        help="the build the other is measured against (default: this Python's, detected)",
    )
    p.add_argument(
        "--new",
        default=None,
        help="the build measured (default: this Python's; the same as --base: an A/A pair)",
    )
    p.add_argument(
        "--python-base", default=sys.executable, help="the base build's Python (default: this one)"
    )
    p.add_argument("--python-new", default=sys.executable, help="the new build's Python (default: this one)")
    p.add_argument(
        "--new-env",
        action="append",
        default=[],
        type=values.env_setting,
        help="KEY=VALUE for the new build's runner only (e.g. SUITE_FAULT=slow:1.05:ResNet, a planted "
        "slow-down that the pair must catch); repeatable",
    )
    p.add_argument(
        "--exit-zero",
        action="store_true",
        help="exit 0 whatever the verdicts (a check that reports, not a gate; default: 1 if one is slower)",
    )
    p.add_argument(
        "--timing-cpus",
        type=values.cpu_list,
        default=None,
        help="the CPUs both builds' workers are pinned to while they time, e.g. 0-3 (default: every CPU "
        "both may use)",
    )


def runner_args(argv: Sequence[str]) -> list[str]:
    """The selection flags of `pair`'s command line, for each runner's `suite run`."""
    out: list[str] = []
    skip = False
    for arg in argv[1:]:  # argv[0] is the verb
        if skip:
            skip = False
            continue
        flag = arg.split("=", 1)[0]
        if flag in OWN_FLAGS:
            skip = OWN_FLAGS[flag] and "=" not in arg
            continue
        out.append(arg)
    return out


def cmd_pair(args: argparse.Namespace) -> int:
    if args.build is not None:
        raise UsageError("--build", "a pair takes --base and --new, not --build")
    run_id = args.run_id or new_run_id()
    new_id = f"{run_id}-new" if args.base == args.new else run_id
    rest = runner_args(args.argv)
    coordinator = Coordinator(Path(args.out) / run_id / SOCKET_NAME, args.timing_cpus)

    def side(role: str, build: str, python: str, rid: str, env: dict[str, str]) -> Side:
        pair = ["--pair", str(coordinator.path), "--pair-role", role, "--schedule", "serial"]
        return Side(
            role, [python, "-m", "suite", "run", "--build", build, "--run-id", rid, *pair, *rest], env
        )

    sides = [
        side(BASE, args.base, args.python_base, run_id, {}),
        side(NEW, args.new, args.python_new, new_id, dict(args.new_env)),
    ]
    base, new = args.base or "this Python's build", args.new or "this Python's build"
    print(f"pair {coordinator.pair_id}: {base} (base) against {new} (new)", file=sys.stderr, flush=True)
    codes = run_pair(coordinator, sides)
    if any(code == 2 for code in codes.values()):
        return 2
    regressed = _summary(Path(args.out) / new_id, coordinator.pair_id)
    failed = [f"{role} exited {code}" for role, code in codes.items() if code not in (0, 2)]
    if failed:
        print(f"pair: {'; '.join(failed)}", file=sys.stderr)
        return 3
    return 1 if regressed and not args.exit_zero else 0


def _summary(run_dir: Path, pair_id: str) -> int:
    """Each paired cell of the new build's rows: its ratios and verdict; how many regressed."""
    rows = [
        row
        for csv in sorted((run_dir / "raw").glob("*.csv"))
        for row in read_rows(csv).rows
        if row.get("pair_id") == pair_id and row.get("pair_role") == NEW
    ]
    judged = [(row, pairrule.PairFigures.of(row.get)) for row in rows]
    print(f"\nrule: {pairrule.RULE_NAME}")
    print("| cell | rounds | latency | speed-up | compile | verdict |")
    print("|---|---:|---|---|---:|---|")
    regressed = 0
    for row, figures in judged:
        cell = f"{row['model']} bs={row['batch_size']} {row['mode']}"
        if figures is None:
            print(f"| {cell} | | | | | not paired ({row.get('status')}) |")
            continue
        v = pairrule.judge(figures)
        regressed += v.regressed
        lat, speed = figures.ratios.get("latency"), figures.ratios.get("speedup")
        compile_ratio = figures.compile_time_ratio
        print(
            f"| {cell} | {figures.rounds} | {lat.text() if lat else ''} | {speed.text() if speed else ''} | "
            f"{'' if compile_ratio is None else f'{compile_ratio:.2f}x'} | {v.verdict} |"
        )
    paired = sum(f is not None for _, f in judged)
    print(f"\n{paired} cell(s) paired, {regressed} slower by the pair's rule")
    return regressed
