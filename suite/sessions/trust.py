"""The sessions that check the suite's own figures (benchmarks, not part of `nox -s tests`):
`crosscheck` (the timing loop against independent timers), `repeat` (the spread of medians
over back-to-back runs), `gate` (compare's false-positive and detection rates) and
`overlap-aa` (whether timing beside the next wave's compile moves the figures). Each runs
in a build's pinned virtualenv (suite.sessions.venv; `--build B`, default `current`) on this
machine's device, with defaults for the full-size ResNet-50 and ViT-B/16 at batch 1 (random
weights: each checkpoint's own architecture, offline); arguments after `--` are added after
the defaults, so they override them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path

from suite.sessions.posargs import take
from suite.sessions.runner import Runner, load, pick_builds, run_suite
from suite.sessions.venv import build_venv

DEFAULT_BUILD = "current"
FULL_SIZE = ["--profile", "full", "--weights", "random", "--models", "ResNet,ViT", "--batch-sizes", "1"]
CROSSCHECK = [*FULL_SIZE, "--modes", "eager,default", "--iterations", "5", "--rounds", "50"]
REPEAT = [*FULL_SIZE, "--modes", "eager,default", "--iterations", "100", "--times", "3"]
# The gate's rates: A/A runs of the smoke cells (every architecture compiled: smoke-compiled), and
# runs whose compiled calls are 20% slower;
# 100 timed calls a cell instead of the profile's 10 (nearly free: compiling is the cost), so
# that a cell's CI is narrow enough for a 20% slow-down to show. Without the compile-cost
# processes (compare judges compile_s, which the cell's own process measures, not their figures):
# they would triple the compiled cells' time.
GATE = ["--profile", "smoke-compiled", "--iterations", "100", "--no-compile-cost"]
GATE_AA = [*GATE, "--times", "3"]
GATE_SLOWED = [*GATE, "--times", "2"]
SLOW_FAULT = "slow:1.2"
# The rerun intervals' coverage: the same full-size cells 11 times (10, and one held out), once with one
# process per cell and once with COVERAGE_PROCESSES; each repetition's median against the others'
# 95% intervals, and the machine's between-run noise to set as run_noise_pct. The fixed count, so
# both k time the same calls per process. `-- --models ... --times N --hold-out H` narrow it.
COVERAGE = [
    *FULL_SIZE, "--modes", "eager,default", "--iterations", "100", "--stop-rule", "fixed",
    "--no-compile-cost",
]  # fmt: skip
COVERAGE_TIMES = "11"
# Compiles beside the timing (`run --overlap`) against phases apart: the same cells, runs of each
# alternating, waves of one compile, so that every wave but the last is timed beside the next
# one's compile (on a 2-core machine: the timed process on one core, the compile on the other).
OVERLAP_AA = [
    "--profile", "smoke", "--models", "ViT,ResNet,DETR,Segformer", "--iterations", "100",
    "--no-compile-cost", "--compile-pool", "1",
]  # fmt: skip
OVERLAP_PAIRS = 3
COVERAGE_HOLD_OUT = "1"
COVERAGE_PROCESSES = (1, 3)


# Pairs (docs/pairs.md): an A/A pair of the smoke cells with every architecture compiled (25 cells),
# its 13 compiled cells with the new side's compiled calls slowed by PAIR_SLOW (10%: past the
# rule's 0.95x, so a pair that catches it must also be narrow; the fault slows compiled calls
# only, so the eager cells are left out), and an A/A pair of the full-size ResNet-50 and ViT-B/16
# at batch 1; then `compare` of each (both rules on the same rows). 150 calls a function: 30 rounds
# at most (a shrunk model's round is cheap: its settling dominates).
PAIR_SMOKE = ["--profile", "smoke-compiled", "--iterations", "150", "--no-compile-cost"]
PAIR_FULL = [*FULL_SIZE, "--modes", "eager,default", "--no-compile-cost"]
PAIR_SLOWED = [*PAIR_SMOKE, "--modes", "default,reduce-overhead"]
PAIR_SLOW = "slow:1.1"


def _python(runner: Runner, posargs: Sequence[str], root: Path) -> tuple[str, str, list[str]]:
    """The build's virtualenv Python, the build's name, and the arguments left."""
    args = list(posargs)
    (build,) = pick_builds(load(root), take(args, values=["--build"])["--build"], [DEFAULT_BUILD])
    return str(build_venv(runner, build, root)), build.name, args


def crosscheck(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    python, build, args = _python(runner, posargs, root)
    run_suite(runner, [python, "-m", "suite", "crosscheck", "--build", build, *CROSSCHECK, *args])


def repeat(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    python, build, args = _python(runner, posargs, root)
    run_suite(runner, [python, "-m", "suite", "repeat", "--build", build, *REPEAT, *args])


def coverage(runner: Runner, posargs: Sequence[str], root: Path) -> list[Path]:
    """`repeat` of the coverage cells for each k of COVERAGE_PROCESSES (each its own run folder,
    `<out>/<run-id>-k<k>/repeat.md` with its coverage table); returns those reports."""
    python, build, args = _python(runner, posargs, root)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    flags = take(args, values=["--run-id", "--out", "--times", "--hold-out"])
    run_id = flags["--run-id"] or f"coverage-{stamp}"
    out = Path(flags["--out"] or root / "results")
    times = [
        "--times",
        flags["--times"] or COVERAGE_TIMES,
        "--hold-out",
        flags["--hold-out"] or COVERAGE_HOLD_OUT,
    ]
    reports = []
    for k in COVERAGE_PROCESSES:
        one = f"{run_id}-k{k}"
        base = [python, "-m", "suite", "repeat", "--build", build, "--out", str(out), "--run-id", one]
        run_suite(runner, [*base, *COVERAGE, *times, "--processes", str(k), *args])
        reports.append(out / one / "repeat.md")
    return reports


def gate(runner: Runner, posargs: Sequence[str], root: Path, host_python: str = sys.executable) -> Path:
    """A/A runs, then slowed runs (SUITE_FAULT=slow:1.2), then `calibrate` on them (in the host
    Python, which has pandas); returns the calibration report."""
    python, build, args = _python(runner, posargs, root)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    flags = take(args, values=["--run-id", "--out"])
    run_id = flags["--run-id"] or f"gate-{stamp}"
    out = Path(flags["--out"] or root / "results")
    base = [python, "-m", "suite", "repeat", "--build", build, "--out", str(out)]
    run_suite(runner, [*base, *GATE_AA, "--run-id", run_id, *args])
    slowed = f"{run_id}-slowed"
    run_suite(runner, [*base, *GATE_SLOWED, "--run-id", slowed, *args], {"SUITE_FAULT": SLOW_FAULT})
    report = out / run_id / "calibration.md"
    aa = sorted(str(p) for p in (out / run_id).glob("rep-*"))
    slow = sorted(str(p) for p in (out / slowed).glob("rep-*"))
    cmd = [host_python, "-m", "suite", "calibrate", "--aa", *aa, "--slowed", *slow, "-o", str(report)]
    run_suite(runner, cmd)
    return report


def pairs(
    runner: Runner, posargs: Sequence[str], root: Path, host_python: str = sys.executable
) -> list[Path]:
    """`nox -s pairs`: the pair's A/A and planted slow-down checks on this machine (PAIR_*), each
    pair then compared (both rules); returns the reports (`<out>/<run-id>-<what>.md`)."""
    python, build, args = _python(runner, posargs, root)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    flags = take(args, values=["--run-id", "--out"])
    run_id = flags["--run-id"] or f"pairs-{stamp}"
    out = Path(flags["--out"] or root / "results")
    reports = []
    for what, selection, env in (
        ("aa", PAIR_SMOKE, []),
        ("slowed", PAIR_SLOWED, ["--new-env", f"SUITE_FAULT={PAIR_SLOW}"]),
        ("full", PAIR_FULL, []),
    ):
        one = f"{run_id}-{what}"
        pair = [python, "-m", "suite", "pair", "--base", build, "--new", build, "--python-base", python]
        pair += ["--python-new", python, "--run-id", one, "--out", str(out), *env, *selection, *args]
        _run_allowing_regressions(runner, pair)
        report = out / f"{one}.md"
        _run_allowing_regressions(
            runner,
            [
                host_python,
                "-m",
                "suite",
                "compare",
                str(out / one),
                str(out / f"{one}-new"),
                "-o",
                str(report),
            ],
        )
        reports.append(report)
    return reports


def _run_allowing_regressions(runner: Runner, cmd: list[str]) -> None:
    """A verb whose exit 1 (a cell slower) is a figure of the check, not its failure."""
    import subprocess

    from suite.run.environ import child_env

    runner.log(" ".join(cmd))
    code = subprocess.run(cmd, env=child_env(), check=False).returncode
    if code not in (0, 1):
        raise SystemExit(code)


def overlap_aa(runner: Runner, posargs: Sequence[str], root: Path, host_python: str = sys.executable) -> Path:
    """Runs with the phases apart and with `--overlap`, alternating (OVERLAP_PAIRS pairs, `--pairs
    N`), then `calibrate` with the apart runs as its A/A and the overlap runs in the place of its
    slowed ones: an overlap run's cells flagged against the apart runs no more often than the A/A's
    own is what lets the overlap become the default. The apart runs pin each timed process as the
    overlap does (`--pin-timing`: the same cores, on a CPU the same threads), so that the compiles
    beside it are all that differs. Returns the report."""
    python, build, args = _python(runner, posargs, root)
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    flags = take(args, values=["--run-id", "--out", "--pairs"])
    run_id = flags["--run-id"] or f"overlap-aa-{stamp}"
    out = Path(flags["--out"] or root / "results")
    base = [python, "-m", "suite", "run", "--build", build, "--out", str(out), *OVERLAP_AA]
    apart, beside = [], []
    for i in range(1, int(flags["--pairs"] or OVERLAP_PAIRS) + 1):
        for runs, extra, kind in ((apart, "--pin-timing", "apart"), (beside, "--overlap", "overlap")):
            one = f"{run_id}-{kind}-{i}"
            run_suite(runner, [*base, extra, "--run-id", one, *args])
            runs.append(str(out / one))
    report = out / f"{run_id}-calibration.md"
    run_suite(
        runner,
        [host_python, "-m", "suite", "calibrate", "--aa", *apart, "--slowed", *beside, "-o", str(report)],
    )
    return report
