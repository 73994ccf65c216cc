"""`python -m suite gpu-study plan | call [N] | finish`: the GPU study in calls of a GPU held for
a short window (docs/gpu-study.md). `plan` and `call` run on the machine's own Python (the standard
library, PyYAML, and the suite's verbs in children); `finish` runs on the host that fetched the
calls' files, with pandas, pyarrow and matplotlib (suite.gpustudy.finish)."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from suite.errors import UsageError
from suite.gpustudy.estimate import (
    STUDY_CORES,
    Planner,
    budget_of,
    cut_into_calls,
    plan_call,
    plan_step,
    time_parts,
)
from suite.gpustudy.plan import (
    CALL_FILES,
    CALL_LIMIT_S,
    CHECKS,
    DEFAULT_DEADLINE_S,
    DEFAULT_MATRIX,
    DEFAULT_REFERENCE,
    GPU,
    MAX_FILES,
    RESERVE_S,
    STEP_OVERHEAD_S,
    TINY,
    call_of,
)
from suite.spec import load_matrix
from suite.spec.cost import format_duration
from suite.spec.model import Matrix

# Outside the checkout: a checkout copied afresh for each call replaces what is in it, while a
# machine still held keeps what its last call left outside it.
DEFAULT_WORK = Path(tempfile.gettempdir()) / "suite-gpu-study"
# What a window runs first (docs/gpu-study.md): one command, given FIRST_CALL_TIMEOUT_S seconds,
# from the checkout's root, OUT the folder whose files are brought back.
FIRST_CALL_TIMEOUT_S = 540
FIRST_CALL = (
    'nvidia-smi -q > "$OUT/nvidia-smi.txt" 2>&1; PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 '
    f'python3 -m suite gpu-study call --deadline-s {FIRST_CALL_TIMEOUT_S - 10} --out "$OUT"'
)


def _deadline(text: str) -> float:
    value = float(text)
    if not 0 <= value <= 3600:
        raise argparse.ArgumentTypeError(f"seconds from 0 to 3600, got {text}")
    return value


def add_parser(sub: argparse._SubParsersAction, parser_class: type) -> None:  # type: ignore[type-arg]
    p = sub.add_parser(
        "gpu-study", help="the GPU study in calls of a GPU held for a short window (docs/gpu-study.md)"
    )
    verbs = p.add_subparsers(dest="study_verb", required=True, parser_class=parser_class)

    def common(q: argparse.ArgumentParser) -> None:
        q.add_argument(
            "--tiny", action="store_true", help="the same steps on shrunk models, on the CPU (the test)"
        )
        q.add_argument(
            "--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)"
        )
        q.add_argument(
            "--deadline-s",
            type=_deadline,
            default=None,
            help=f"the seconds the call is given in all: the command's own limit in the window (default: "
            f"{CALL_LIMIT_S:g}; with --tiny: none); the steps stop {RESERVE_S:g} s before it",
        )
        q.add_argument(
            "--budget-s",
            type=_deadline,
            default=None,
            help="the steps' own budget, instead of --deadline-s's",
        )

    q = verbs.add_parser("plan", help="the study's steps, cells and estimates, and what each call reaches")
    common(q)
    q.add_argument(
        "--cores",
        type=int,
        default=None,
        help=f"the GPU machine's cores the schedule is estimated for (default: {STUDY_CORES}; with "
        "--tiny: this machine's)",
    )
    q.add_argument(
        "--against",
        nargs="+",
        type=Path,
        default=None,
        metavar="DIR",
        help="the files of calls that ran (callN.json, their tarballs): each step that ran to its end "
        "against this commit's estimate of it, and each cell's compile and timing against theirs",
    )
    q.set_defaults(func=cmd_plan)
    q = verbs.add_parser(
        "call", help="run the steps not done yet, until the deadline; outputs packed in --out"
    )
    q.add_argument(
        "number",
        type=int,
        nargs="?",
        default=None,
        metavar="N",
        help="the call's number, its files' names (default: one more than the calls in --work)",
    )
    common(q)
    q.add_argument(
        "--out",
        type=Path,
        required=True,
        help="where the packed outputs go: the folder whose files are brought back",
    )
    q.add_argument(
        "--work", type=Path, default=None, help=f"the run folders (default: {DEFAULT_WORK}/gpu, or /tiny)"
    )
    q.add_argument(
        "--resume-from",
        type=Path,
        default=None,
        help="a folder with an earlier call's callN.tar.gz (or the file): resume on a fresh machine",
    )
    q.set_defaults(func=cmd_call)
    q = verbs.add_parser("finish", help="host side: the calls' files into a results folder and its README")
    q.add_argument(
        "inputs", nargs="+", type=Path, help="the calls' files, or folders of them (every attempt)"
    )
    q.add_argument(
        "-o", "--out", type=Path, default=None, help="default: results/<date>-<gpu>-torch<version>"
    )
    q.add_argument(
        "--reference", type=Path, default=DEFAULT_REFERENCE, help="the guide's figures (default: %(default)s)"
    )
    q.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)")
    q.add_argument("--analysis", type=Path, default=None, help="the README's hand-written section (Markdown)")
    q.add_argument(
        "--beside",
        type=Path,
        default=None,
        help="an earlier study's results folder: the cells both measured, side by side, in the README",
    )
    q.add_argument("--no-plots", action="store_true", help="tables only")
    q.set_defaults(func=cmd_finish)


def _variant(args: argparse.Namespace) -> str:
    return TINY if args.tiny else GPU


def budget(args: argparse.Namespace) -> float:
    """The steps' budget: --budget-s, else --deadline-s (or the variant's default) less the reserve."""
    if args.budget_s is not None:
        return float(args.budget_s)
    deadline = DEFAULT_DEADLINE_S[_variant(args)] if args.deadline_s is None else args.deadline_s
    return budget_of(deadline)


def cmd_plan(args: argparse.Namespace) -> int:
    matrix = load_matrix(args.matrix)
    variant = _variant(args)
    planner = Planner.of(variant, DEFAULT_REFERENCE, args.cores)
    if args.against:
        return _against(args.against, matrix, variant, planner)
    planned = plan_call(matrix, call_of(1), variant, DEFAULT_REFERENCE, planner=planner)
    for i, p in enumerate(planned, 1):
        print(
            f"step {i}: {p.step.verb} {p.step.run_id}: {p.step.what}: {len(p.cells)} cell(s), "
            f"{format_duration(p.seconds)}"
        )
        for cell in p.cells:
            print(f"    {cell.label}")
    total = sum(p.seconds for p in planned)
    seconds = budget(args)
    overlapped = [
        plan_step(matrix, replace(p.step, extra=(*p.step.extra, "--overlap")), variant, planner)
        if p.step.verb == "run" and "--overlap" not in p.step.extra
        else p
        for p in planned
    ]
    print(
        f"estimated {format_duration(total)} in all on {planner.cores} cores (suite/gpustudy/estimate.py"
        + (
            ": per call the committed GPU studies' time, else at least the guide's A100 eager time"
            if variant == GPU
            else ""
        )
        + f"; {format_duration(STEP_OVERHEAD_S)} a step for its start-up)"
    )
    print(
        f"with every run step under --overlap (the next wave compiling beside the timing; not the "
        f"default until measured: docs/gpu-study.md): {format_duration(sum(p.seconds for p in overlapped))}"
    )
    print(time_parts(planned, planner, checks=len(CHECKS)).line())
    if not seconds:
        print("no deadline: one call runs every step")
        return 0
    print(f"each call's steps stop {format_duration(seconds)} after its start; from a fresh machine:")
    for cut in cut_into_calls(planned, seconds):
        reached = "; ".join(f"{p.step.run_id} ({len(cells)} of {len(p.cells)})" for p, cells in cut.steps)
        print(f"  call {cut.number}: {format_duration(cut.seconds)}: {reached}")
    files = [f.format(n=1) for f in CALL_FILES]
    print(
        f"files back from call 1: {', '.join(files)}, nvidia-smi.txt ({len(files) + 1}, at most {MAX_FILES})"
    )
    if variant == GPU:
        print(
            f"the first call of a window, a command given {FIRST_CALL_TIMEOUT_S} s from the checkout's "
            f"root (OUT: the folder whose files come back): {FIRST_CALL}"
        )
    return 0


def _against(folders: list[Path], matrix: Matrix, variant: str, planner: Planner) -> int:
    """`plan --against`: the calls' steps and cells against this commit's estimates."""
    from suite.gpustudy import calibrate
    from suite.gpustudy.packing import unpack

    reports = calibrate.reports_in(folders)
    if not reports:
        raise UsageError("--against", f"no callN.json in {', '.join(map(str, folders))}")
    pairs = calibrate.step_pairs(reports, calibrate.estimated_by(matrix, variant, planner))
    with tempfile.TemporaryDirectory() as tmp:
        for i, archive in enumerate(sorted(p for f in folders for p in f.rglob("call*.tar.gz"))):
            unpack(archive, Path(tmp) / str(i))  # the later archive's folders hold the earlier's rows
        latest = sorted(Path(tmp).glob("*"), key=lambda p: int(p.name))
        logs = [
            p.read_text(encoding="utf-8", errors="replace") for f in folders for p in f.rglob("call*.log")
        ]
        # the run folders: the last tarball's, else beside the calls' files (a results folder)
        roots = latest[-1:] or [f for folder in folders for f in (folder, folder.parent)]
        pairs += _cell_pairs(roots, reports, matrix, variant, planner, logs)
    print("\n".join(calibrate.table(pairs)))
    print("")
    for line in calibrate.summary(pairs):
        print(line)
    return 0


def _cell_pairs(
    roots: list[Path], reports: list[dict], matrix: Matrix, variant: str, planner: Planner, logs: list[str]
) -> list:
    """Each ok cell's parts in the run folders under the first of `roots` that has them, against
    this commit's estimates."""
    from suite.gpustudy import calibrate
    from suite.gpustudy.done import rows_in
    from suite.gpustudy.estimate import plan_step

    pairs = []
    for run_id, step in calibrate.steps_run(reports).items():
        folder = next((root for root in roots if (root / run_id / "raw").is_dir()), None)
        if step.verb == "run" and folder is not None:
            planned = plan_step(matrix, step, variant, planner)
            pairs += calibrate.cell_pairs(
                rows_in(folder / run_id), planned, planner, calibrate.ahead_in_logs(logs)
            )
    return pairs


def next_number(work: Path) -> int:
    """One more than the calls whose summary is in `work` (the earlier calls of a machine still held)."""
    numbers = [
        int(m.group(1)) for p in work.glob("call*.json") if (m := re.fullmatch(r"call(\d+)\.json", p.name))
    ]
    return max(numbers, default=0) + 1


def cmd_call(args: argparse.Namespace) -> int:
    from suite.gpustudy.call import Where, run_call
    from suite.gpustudy.packing import check_shape

    matrix = load_matrix(args.matrix)
    variant = _variant(args)
    work = (args.work or DEFAULT_WORK / variant).resolve()
    number = args.number if args.number is not None else next_number(work)
    call = call_of(number)
    seconds = budget(args)
    planner = Planner.of(variant, DEFAULT_REFERENCE, os.cpu_count())
    planned = plan_call(matrix, call, variant, DEFAULT_REFERENCE, planner=planner)
    command = f"python -m suite gpu-study call {number}" + (" --tiny" if args.tiny else "")
    command += f" --budget-s {seconds:g}" + (f" --deadline-s {args.deadline_s:g}" if args.deadline_s else "")
    command += ' --out "$OUT"'
    report = run_call(
        call,
        variant,
        planned,
        Where(work, args.out, args.resume_from, command=command, planner=planner),
        seconds,
    )
    problems = check_shape(args.out)
    if len([p for p in args.out.rglob("*") if p.is_file()]) > MAX_FILES:
        problems.append(f"more than {MAX_FILES} files (the study's own limit, to leave room)")
    for problem in problems:
        print(f"gpu-study: warning: {args.out}: {problem}", file=sys.stderr)
    return 0 if report.complete() and not problems else 1


def cmd_finish(args: argparse.Namespace) -> int:
    from suite.gpustudy.finish import FinishArgs, finish, require_host

    require_host(plots=not args.no_plots)  # before anything is written: one line, exit 2
    spec = FinishArgs(
        tuple(args.inputs),
        args.out,
        args.reference,
        args.matrix,
        not args.no_plots,
        args.analysis,
        args.beside,
    )
    folder = finish(spec)
    print(f"written to {folder} (README.md, tables/, plots/, calls/, the run folders)", file=sys.stderr)
    return 0
