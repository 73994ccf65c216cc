"""`python -m suite VERB ...`: plan, run, crosscheck, env; and the host-side merge and compare
(and mark: the container sessions' rows for cells that did not run).

Bad input never produces a traceback: every UsageError (and argparse's own errors)
becomes one line on stderr, `suite <verb>: error: <where>: <what>`, and exit status 2; so
does a verb run in a Python without what it needs (torch for `env`, pandas for `merge`).
A reader that stops early (`suite plan | head`) ends the verb quietly, with 141 (128 +
SIGPIPE, as other Unix tools).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path

from suite.cli.args import (
    DEFAULT_MATRIX,
    DEFAULT_REFERENCE,
    Parser,
    add_cores_arg,
    add_run_args,
    add_schedule_args,
    add_selection_args,
)
from suite.cli.bench import cmd_env, cmd_plan, cmd_run
from suite.cli.crosscheck import cmd_crosscheck
from suite.cli.history import add_html_verb
from suite.cli.history_store import add_history_parser
from suite.cli.mark import add_mark_args, cmd_mark
from suite.cli.pair import add_pair_args, cmd_pair
from suite.cli.repeat import cmd_coverage, cmd_repeat
from suite.cli.report import cmd_calibrate, cmd_compare, cmd_merge
from suite.cli.values import (
    compile_threshold,
    count,
    crosscheck_budget,
    held_out,
    noise_z,
    run_noise_pct,
    threshold,
)
from suite.errors import UsageError
from suite.gpustudy.cli import add_parser as add_gpu_study
from suite.redact import RedactingStream
from suite.run.crosscheck import DEFAULT_BUDGET_S, DEFAULT_ROUNDS, MIN_ROUNDS


def add_medians_only_flag(p: argparse.ArgumentParser) -> None:
    """compare's and calibrate's `--medians-only`: leave the kept samples aside."""
    p.add_argument(
        "--medians-only",
        action="store_true",
        help="judge every median from the two CIs, even where both runs kept their samples",
    )


def add_noise_flags(p: argparse.ArgumentParser) -> None:
    """compare's and calibrate's between-run noise for rows that carry none (docs/intervals.md)."""
    p.add_argument(
        "--run-noise-pct",
        type=run_noise_pct,
        default=None,
        help="the machine's between-run noise of a median, percent, for rows that carry none (runs from "
        "before rows carried it): their medians are then judged against it instead of the noise floor",
    )
    p.add_argument(
        "--speedup-noise-pct",
        type=run_noise_pct,
        default=None,
        help="the same for the paired speed-up: a fall in it must then also clear --noise-z of it",
    )


def build_parser() -> Parser:
    parser = Parser(prog="suite", description="torch.compile benchmark suite for HF vision models")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)

    p = sub.add_parser("plan", help="list the cells of a profile without running them")
    add_selection_args(p)
    add_schedule_args(p)
    add_cores_arg(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "run", help="measure every cell; append rows to <out>/<run-id>/raw/<build>__<device>.csv"
    )
    add_selection_args(p)
    add_run_args(p)
    add_schedule_args(p)
    p.add_argument(
        "--pair",
        default=None,
        metavar="SOCKET",
        help="time each cell side by side with another build's runner, whose coordinator listens on "
        "SOCKET (`suite pair` and the paired bench sessions start both; docs/pairs.md)",
    )
    p.add_argument("--pair-role", choices=("base", "new"), default=None, help="this build's side of the pair")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "pair",
        help="two builds timed side by side in alternating rounds on this device; each cell's paired "
        "ratios and verdict (exit 1 if a cell is slower)",
    )
    add_selection_args(p)
    add_run_args(p)
    add_pair_args(p)
    p.set_defaults(func=cmd_pair)

    p = sub.add_parser(
        "crosscheck",
        help="time a few cells with the suite and independently (torch.utils.benchmark, CUDA events)",
    )
    add_selection_args(p)
    p.add_argument(
        "--rounds",
        type=count("--rounds"),
        default=DEFAULT_ROUNDS,
        help="at most this many rounds of suite loop + independent timers, alternating (default: "
        "%(default)s); a round times --iterations calls of each function (default: one block of the "
        "loop, 5)",
    )
    p.add_argument(
        "--budget-s",
        type=crosscheck_budget,
        default=DEFAULT_BUDGET_S,
        help="rounds go on until they have taken this many seconds a timed function (at least "
        f"{MIN_ROUNDS} rounds, at most --rounds), so a slow model ends in minutes and a fast one gets "
        "its rounds; the report says how many rounds each took and why it stopped (default: %(default)s)",
    )
    p.set_defaults(func=cmd_crosscheck)

    p = sub.add_parser(
        "repeat", help="run the same cells N times back to back; print each cell's spread of medians"
    )
    add_selection_args(p)
    p.add_argument("--times", type=count("--times"), default=3, help="repetitions (default: %(default)s)")
    add_schedule_args(p, default="serial")
    p.add_argument(
        "--hold-out",
        type=held_out,
        default=0,
        help="coverage: keep the last N repetitions out of the between-run noise and test them against "
        "it (default: %(default)s)",
    )
    p.set_defaults(func=cmd_repeat)

    p = sub.add_parser(
        "coverage", help="the coverage table of a finished repeat's intervals (and the machine's noise)"
    )
    p.add_argument("folder", type=Path, help="a repeat's run folder (its rep-<i>/ folders)")
    p.add_argument("--hold-out", type=held_out, default=0, help="the last N repetitions held out")
    p.set_defaults(func=cmd_coverage)

    p = sub.add_parser("env", help="print the environment (torch, CUDA, GPU, driver, versions)")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--json", action="store_true", help="one JSON line (machine-readable)")
    p.set_defaults(func=cmd_env)

    p = sub.add_parser(
        "merge", help="tables (Markdown + CSV), plots and an index page from raw CSVs of one or more runs"
    )
    p.add_argument("inputs", nargs="+", type=Path, help="run folders (their raw/*.csv) or raw CSV files")
    p.add_argument(
        "-o", "--out", type=Path, default=None, help="write tables/ and plots/ here (default: the run folder)"
    )
    p.add_argument(
        "--matrix", type=Path, default=None, help=f"for the builds' kinds (default: {DEFAULT_MATRIX})"
    )
    p.add_argument(
        "--reference",
        type=Path,
        default=DEFAULT_REFERENCE,
        help="the guide's figures as CSV (default: %(default)s)",
    )
    p.add_argument("--no-plots", action="store_true", help="tables only")
    p.add_argument("--strict", action="store_true", help="exit 2 if any row or file would be skipped")
    p.set_defaults(func=cmd_merge)

    p = sub.add_parser(
        "compare",
        help="regressions between two runs, like with like; exit 1 if a cell regressed, 2 if no cell "
        "was comparable",
    )
    p.add_argument("base", type=Path, help="the base run folder (or one raw CSV)")
    p.add_argument("new", type=Path, help="the new run folder (or one raw CSV)")
    p.add_argument(
        "--threshold",
        type=threshold,
        default=None,
        help="slow-down (median, or paired speed-up) that counts, as a fraction (default: 0.05)",
    )
    p.add_argument(
        "--compile-threshold",
        type=compile_threshold,
        default=None,
        help="compile-time growth that counts (and 1 s or more), as a fraction (default: 0.25)",
    )
    p.add_argument(
        "--noise-z",
        type=noise_z,
        default=None,
        help="a slower median must also clear this many robust standard deviations of the two runs' "
        "drift, measured on their matched cells; 0: the threshold alone (default: 4)",
    )
    add_noise_flags(p)
    add_medians_only_flag(p)
    p.add_argument(
        "--separate",
        action="store_true",
        help="judge every cell as two separate runs, also those timed side by side in one pair session "
        "(default: those by the pair's rule, docs/pairs.md)",
    )
    p.add_argument("-o", "--output", type=Path, default=None, help="write the Markdown report here")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser(
        "calibrate", help="compare's false-positive and detection rates, from A/A runs and slowed runs"
    )
    p.add_argument("--aa", nargs="+", type=Path, required=True, help="two or more runs of the same cells")
    p.add_argument(
        "--slowed", nargs="*", type=Path, default=[], help="runs made with SUITE_FAULT=slow:<factor>"
    )
    add_noise_flags(p)
    add_medians_only_flag(p)
    p.add_argument("-o", "--output", type=Path, default=None, help="write the Markdown report here too")
    p.set_defaults(func=cmd_calibrate)

    # `history ingest | report | verdict | ...` and `history html` (docs/history.md, docs/pages.md)
    add_html_verb(add_history_parser(sub))
    add_gpu_study(sub, Parser)  # docs/gpu-study.md

    p = sub.add_parser(
        "mark", help="record cells as skipped or error, with the reason, without running them (nox)"
    )
    add_selection_args(p)
    add_mark_args(p)
    p.set_defaults(func=cmd_mark)
    return parser


CLOSED_OUTPUT = 141  # 128 + SIGPIPE: what a Unix tool reports when its reader went away


def verbs(parser: argparse.ArgumentParser) -> tuple[str, ...]:
    """The verbs the parser registered (what an error line names), never a list kept by hand."""
    subs = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return tuple(name for action in subs for name in action.choices)


def printable(text: str) -> str:
    """One line whatever the input held: control characters (a newline in a file name, a
    key) are shown escaped."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one verb with stdout and stderr redacted (suite.redact): no line the suite
    prints, error messages and tracebacks included, carries a token."""
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = RedactingStream(out), RedactingStream(err)
    try:
        code = _main(argv)
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        return code
    except BrokenPipeError:
        _discard_output(out)
        return CLOSED_OUTPUT
    finally:
        sys.stdout, sys.stderr = out, err


def _discard_output(out: object) -> None:
    """The reader of stdout went away (`| head`): whatever is still buffered for it goes
    nowhere, so the interpreter's last flush cannot fail with a traceback of its own."""
    try:
        fd = out.fileno()  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):  # not a real file (a test's StringIO)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.argv = list(argv if argv is not None else sys.argv[1:])  # as typed (`pair` hands it on)
        return int(args.func(args) or 0)
    except UsageError as exc:
        verb = next((a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")), "")
        verb = verb if verb in verbs(parser) else ""
        print(f"suite{' ' + verb if verb else ''}: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("suite: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output went away: not a bug (main ends quietly)
        raise
    except Exception:  # a bug: the traceback helps, but it passes the redaction too
        traceback.print_exc()
        print("suite: internal error (a bug in the suite; the traceback above says where)", file=sys.stderr)
        return 3
