"""`python -m suite gpu-study plan | call N | finish`: the GPU study of issue 30 in three calls of
a lent GPU machine (docs/gpu-study.md). `plan` and `call` run on the machine's own Python (the
standard library, PyYAML, and the suite's verbs in children); `finish` runs on the host that fetched
the calls' files, with pandas and matplotlib (suite.gpustudy.finish)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from suite.errors import UsageError
from suite.spec import load_matrix
from suite.spec.cost import format_duration
from suite.gpustudy.plan import CALLS, DEFAULT_BUDGET_S, DEFAULT_MATRIX, DEFAULT_REFERENCE, GPU, TINY, call_of, plan_call

DEFAULT_WORK = Path(".gpu-study") / "work"


def add_parser(sub: argparse._SubParsersAction, parser_class: type) -> None:  # type: ignore[type-arg]
    p = sub.add_parser("gpu-study", help="the GPU study in three calls of a lent machine (docs/gpu-study.md)")
    verbs = p.add_subparsers(dest="study_verb", required=True, parser_class=parser_class)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--tiny", action="store_true", help="the same steps on shrunk models, on the CPU (the test)"
        )
        q.add_argument(
            "--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)"
        )

    q = verbs.add_parser("plan", help="each call's steps, cells and estimated time")
    common(q)
    q.set_defaults(func=cmd_plan)
    q = verbs.add_parser("call", help="run call N: its steps under a deadline, outputs packed in --out")
    q.add_argument("number", type=int, choices=[c.number for c in CALLS], metavar="N", help="1, 2 or 3")
    common(q)
    q.add_argument("--out", type=Path, required=True, help="where the packed outputs go (the tool's $OUT)")
    q.add_argument("--work", type=Path, default=DEFAULT_WORK, help="the run folders (default: %(default)s)")
    q.add_argument(
        "--budget-s",
        type=float,
        default=None,
        help=f"stop the steps this many seconds after the start (default: {DEFAULT_BUDGET_S[GPU]:g}; "
        "with --tiny: none); 0: no deadline",
    )
    q.add_argument(
        "--resume-from",
        type=Path,
        default=None,
        help="a folder with an earlier attempt's callN.tar.gz (or the file): resume on a fresh machine",
    )
    q.set_defaults(func=cmd_call)
    q = verbs.add_parser("finish", help="host side: unpack the calls' files, merge, write the results README")
    q.add_argument(
        "inputs",
        nargs="+",
        type=Path,
        help="the calls' files (callN.tar.gz, .json, .log), or folders of them",
    )
    q.add_argument(
        "-o", "--out", type=Path, default=None, help="default: results/<date>-<gpu>-torch<version>"
    )
    q.add_argument(
        "--reference", type=Path, default=DEFAULT_REFERENCE, help="the guide's figures (default: %(default)s)"
    )
    q.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)")
    q.add_argument("--no-plots", action="store_true", help="tables only")
    q.set_defaults(func=cmd_finish)


def _variant(args: argparse.Namespace) -> str:
    return TINY if args.tiny else GPU


def cmd_plan(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    variant = _variant(args)
    total = 0.0
    for call in CALLS:
        planned = plan_call(matrix, call, variant, DEFAULT_REFERENCE)
        seconds = sum(p.seconds for p in planned)
        total += seconds
        print(f"call {call.number}: {call.title}: estimated {format_duration(seconds)}")
        for p in planned:
            print(
                f"  {p.step.verb} {p.step.run_id}: {p.step.what}: {len(p.cells)} cell(s), "
                f"{format_duration(p.seconds)}"
            )
            for cell in p.cells:
                print(f"    {cell.label}")
    budget = DEFAULT_BUDGET_S[variant]
    print(
        f"estimated {format_duration(total)} in all (suite/spec/cost.py"
        + (", each forward call at least the guide's A100 eager time)" if variant == GPU else ")")
        + (f"; each call stops its steps {format_duration(budget)} after its start" if budget else "")
    )
    return 0


def cmd_call(args: argparse.Namespace) -> int:
    from suite.gpustudy.call import run_call
    from suite.gpustudy.packing import check_shape

    matrix = load_matrix(args.matrix)
    variant = _variant(args)
    call = call_of(args.number)
    budget = DEFAULT_BUDGET_S[variant] if args.budget_s is None else args.budget_s
    if not 0 <= budget < 10**6:
        raise UsageError("--budget-s", f"must be a number of seconds >= 0, got {args.budget_s}")
    planned = plan_call(matrix, call, variant, DEFAULT_REFERENCE)
    report = run_call(call, variant, planned, args.work.resolve(), args.out, budget, args.resume_from)
    problems = check_shape(args.out)
    for problem in problems:
        print(f"gpu-study: warning: {args.out}: {problem}", file=sys.stderr)
    return 0 if report.complete() and not problems else 1


def cmd_finish(args: argparse.Namespace) -> int:
    from suite.gpustudy.finish import finish, require_host

    require_host(plots=not args.no_plots)  # before anything is written: one line, exit 2
    folder = finish(args.inputs, args.out, args.reference, args.matrix, plots=not args.no_plots)
    print(f"written to {folder} (README.md, tables/, plots/, the calls' run folders)", file=sys.stderr)
    return 0
