"""`python -m suite VERB ...`: plan, run, env; and the host-side merge and compare.

Bad input never produces a traceback: every UsageError (and argparse's own errors)
becomes one line on stderr, `suite <verb>: error: <where>: <what>`, and exit status 2.
"""

from __future__ import annotations

import argparse
import re
import shlex
import sys
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from suite.errors import UsageError
from suite.redact import RedactingStream

DEFAULT_MATRIX = Path(__file__).resolve().parent.parent / "matrix.yaml"
DEFAULT_REFERENCE = DEFAULT_MATRIX.parent / "results" / "reference"
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors and exit status 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError("", message)

    def parse_args(self, args=None, namespace=None):  # type: ignore[no-untyped-def,override]
        """As argparse's, but unknown arguments are quoted: an empty one must show."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(f"unrecognized arguments: {' '.join(shlex.quote(a) for a in extras)}")
        return parsed


def _csv_list(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _int_list(flag: str) -> Callable[[str], tuple[int, ...]]:
    def parse(text: str) -> tuple[int, ...]:
        items = _csv_list(text)
        if not items:
            raise UsageError(flag, "needs at least one value")
        out = []
        for item in items:
            if not item.isdigit() or int(item) < 1:
                raise UsageError(flag, f"{item!r} is not a positive integer")
            out.append(int(item))
        return tuple(out)

    return parse


def _choice_list(flag: str, choices: Sequence[str]) -> Callable[[str], tuple[str, ...]]:
    def parse(text: str) -> tuple[str, ...]:
        items = _csv_list(text)
        if not items:
            raise UsageError(flag, "needs at least one value")
        for item in items:
            if item not in choices:
                raise UsageError(flag, f"{item!r} is not one of: {', '.join(choices)}")
        return tuple(items)

    return parse


def _positive(flag: str, kind: type, minimum: int = 0) -> Callable[[str], float]:
    """A number > 0 (and >= minimum when one is given), finite."""

    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise UsageError(flag, f"{text!r} is not a{'n integer' if kind is int else ' number'}") from None
        if not value > 0 or value != value or value == float("inf"):
            raise UsageError(flag, f"must be > 0, got {text}")
        if value < minimum:
            raise UsageError(
                flag, f"must be >= {minimum} (a median and its interval need samples), got {text}"
            )
        return value

    return parse


def _run_id(text: str) -> str:
    if not RUN_ID_RE.match(text):
        raise UsageError("--run-id", f"{text!r}: use letters, digits, '.', '_' or '-' (max 100)")
    return text


def _shard(text: str) -> object:
    from suite.shard import Shard

    return Shard.parse(text)


def add_selection_args(p: argparse.ArgumentParser) -> None:
    """The flags shared by `plan` and `run`."""
    from suite.matrix import DEVICES, MODES, SCENARIOS, WEIGHTS

    p.add_argument("--matrix", type=Path, default=DEFAULT_MATRIX, help="matrix file (default: %(default)s)")
    p.add_argument(
        "--profile", default=None, help="profile of the matrix (default: smoke without a GPU, full with one)"
    )
    p.add_argument(
        "--build", default=None, help="build label; must match the running torch (default: detected)"
    )
    p.add_argument(
        "--models", type=_csv_list, default=None, help="comma list of display names or hub ids (any case)"
    )
    p.add_argument("--batch-sizes", type=_int_list("--batch-sizes"), default=None, help="e.g. 1,4")
    p.add_argument(
        "--modes",
        type=_choice_list("--modes", MODES),
        default=None,
        help=f"comma list of: {', '.join(MODES)}",
    )
    p.add_argument(
        "--scenarios",
        type=_choice_list("--scenarios", SCENARIOS),
        default=None,
        help=f"comma list of: {', '.join(SCENARIOS)}",
    )
    p.add_argument(
        "--device", choices=DEVICES, default="auto", help="where to run (default: auto = cuda if present)"
    )
    p.add_argument(
        "--weights", choices=WEIGHTS, default=None, help="pretrained (hub) or random (offline, from configs)"
    )
    p.add_argument(
        "--iterations",
        type=_positive("--iterations", int, minimum=2),
        default=None,
        help="timed iterations per cell",
    )
    p.add_argument(
        "--warmup", type=_positive("--warmup", int), default=None, help="warm-up iterations per cell"
    )
    p.add_argument(
        "--timeout",
        type=_positive("--timeout", float),
        default=None,
        help="seconds per cell before it is killed",
    )
    p.add_argument(
        "--image", default=None, help="photo to feed: a URL or a local path (default: the guide's COCO image)"
    )
    p.add_argument("--out", type=Path, default=Path("results"), help="results folder (default: %(default)s)")
    p.add_argument(
        "--run-id",
        type=_run_id,
        default=None,
        help="run folder name; reuse one to resume (default: a UTC timestamp)",
    )
    p.add_argument(
        "--shard",
        type=_shard,
        default=None,
        metavar="I/N",
        help="only part I of N (1-based), balanced by estimated cost; the same on every machine",
    )


def _min_free(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError("--min-free-mb", f"{text!r} is not a number") from None
    if not 0 <= value < float("inf"):
        raise UsageError("--min-free-mb", f"must be a number >= 0, got {text}")
    return value


def add_run_args(p: argparse.ArgumentParser) -> None:
    """The flags of `run` alone: how a resume treats failed cells, the disk check."""
    from suite.runner import DEFAULT_MIN_FREE_MB

    p.add_argument(
        "--keep-failed",
        action="store_true",
        help="on resume, keep the cells recorded as error/timeout/skipped (default: run them again)",
    )
    p.add_argument(
        "--min-free-mb",
        type=_min_free,
        default=DEFAULT_MIN_FREE_MB,
        help="no cell starts with less free space than this where results go (default: %(default)s; 0: off)",
    )


def _filters(args: argparse.Namespace) -> object:
    from suite.matrix import Filters, ImageSpec

    overrides: dict[str, object] = {}
    if args.weights:
        overrides["weights"] = args.weights
    if args.iterations:
        overrides["iterations"] = int(args.iterations)
    if args.warmup:
        overrides["warmup"] = int(args.warmup)
    if args.timeout:
        overrides["timeout_s"] = float(args.timeout)
    if args.image:
        is_url = args.image.startswith(("http://", "https://"))
        overrides["image"] = ImageSpec(url=args.image if is_url else "", path="" if is_url else args.image)
        if not is_url and not Path(args.image).is_file():
            raise UsageError("--image", f"{args.image}: no such file")
    return Filters(
        models=tuple(args.models) if args.models is not None else None,
        batch_sizes=args.batch_sizes,
        modes=args.modes,
        scenarios=args.scenarios,
        overrides=overrides,
    )


def _selected(args: argparse.Namespace, cells: list, profile: str) -> list:
    """The cells, or a UsageError naming the filter flags when they select none."""
    if cells:
        return cells
    given = [
        flag
        for flag, value in (
            ("--models", args.models),
            ("--batch-sizes", args.batch_sizes),
            ("--modes", args.modes),
            ("--scenarios", args.scenarios),
        )
        if value is not None
    ]
    raise UsageError(
        "/".join(given) or "--profile",
        f"no cell of profile {profile!r} is selected (`suite plan --profile {profile}` lists them)",
    )


def _default_profile(args: argparse.Namespace, device_type: str | None) -> str:
    if args.profile:
        return args.profile
    return "full" if device_type == "cuda" else "smoke"


def cmd_plan(args: argparse.Namespace) -> int:
    from suite.cost import estimate_seconds, format_duration
    from suite.matrix import expand, load_matrix
    from suite.shard import assign

    matrix = load_matrix(args.matrix)
    profile = _default_profile(args, "cuda" if args.device == "cuda" else None)
    build = args.build or "(detected at run time)"
    if args.build and args.build not in matrix.builds:
        raise UsageError(
            "--build", f"{args.build!r} is not a build of {matrix.path} (known: {', '.join(matrix.builds)})"
        )
    cells = _selected(args, expand(matrix, profile, build, _filters(args)), profile)
    costs = [estimate_seconds(c) for c in cells]
    print(f"profile {profile}: {len(cells)} cell(s), build {build}")
    shown = range(len(cells))
    if args.shard:
        shards = assign(cells, args.shard.count)
        shown = shards[args.shard.index - 1]
        print(
            f"shard {args.shard.label}: {len(shown)} of the {len(cells)} cell(s), "
            f"estimated {format_duration(sum(costs[i] for i in shown))}"
            + ("" if shown else " (empty: more shards than cells; `run` does nothing and exits 0)")
        )
    print(
        f"{'#':>4}  {'task':<20} {'model':<18} {'bs':>3}  {'mode':<16} {'scenario':<9} "
        f"{'weights':<10} {'dtype':<8} {'iters':>5} {'est':>8}"
    )
    for i in shown:
        c, s = cells[i], cells[i].settings
        print(
            f"{i + 1:>4}  {c.model.task:<20} {c.model.name:<18} {c.batch_size:>3}  {c.mode:<16} "
            f"{c.scenario:<9} {s.weights + (' (shrunk)' if s.shrink else ''):<10} {s.dtype:<8} "
            f"{s.iterations:>5} {format_duration(costs[i]):>8}"
        )
    total = sum(costs)
    print(f"estimated total {format_duration(total)} (suite/cost.py: a rough model; the ratios count)")
    if args.shard:
        loads = [sum(costs[i] for i in shard) for shard in shards]
        mean = total / len(shards)
        print(
            "estimated per shard: "
            + ", ".join(
                f"{k}/{len(shards)} {format_duration(load)}{' (this one)' if k == args.shard.index else ''}"
                for k, load in enumerate(loads, 1)
            )
            + f"; largest/mean {max(loads) / mean if mean else 1.0:.2f}"
        )
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from suite import runner
    from suite.matrix import expand, load_matrix
    from suite.shard import select

    matrix = load_matrix(args.matrix)
    filters = _filters(args)
    if args.build and args.build not in matrix.builds:
        raise UsageError(
            "--build", f"{args.build!r} is not a build of {matrix.path} (known: {', '.join(matrix.builds)})"
        )
    # validate the selection before probing (cheap, and no model is built either way)
    guess = _default_profile(args, None)
    planned = expand(matrix, guess, args.build or "?", filters)
    if args.profile:  # without one, the probe decides (smoke on CPU, full on a GPU)
        _selected(args, planned, guess)
    runner.check_writable(args.out)
    runner.check_free_space(args.out, args.min_free_mb)
    environment = runner.probe(args.device)
    profile = _default_profile(args, environment.device_type)
    build = runner.resolve_build(matrix, args.build, environment)
    cells = _selected(args, expand(matrix, profile, build, filters), profile)
    run_id = args.run_id or runner.new_run_id()
    shard = ""
    if args.shard:
        planned = len(cells)
        cells = select(cells, args.shard)
        shard = args.shard.label
        if not cells:
            print(
                f"run {run_id}: shard {shard} is empty ({planned} cell(s) over {args.shard.count} "
                "shards): nothing to run",
                file=sys.stderr,
            )
            return 0
    report = runner.run_cells(
        cells,
        environment,
        args.out,
        run_id,
        shard,
        keep_failed=args.keep_failed,
        min_free_mb=args.min_free_mb,
        banner=f"run {run_id}: profile {profile}, build {build}, {len(cells)} cell(s)"
        f"{f' (shard {shard})' if shard else ''} on "
        f"{environment.gpu_name} ({environment.device_type}), torch {environment.torch_version}",
    )
    counts = ", ".join(f"{n} {s}" for s, n in sorted(report.statuses.items())) or "nothing new"
    print(f"done: {counts}; {report.resumed} already recorded -> {report.csv}", file=sys.stderr)
    return 0


def cmd_env(args: argparse.Namespace) -> int:
    from suite import env as envmod
    from suite import runner

    if args.json:
        return runner.env_json_main(args.device)
    try:
        environment = envmod.collect(args.device)
    except RuntimeError as exc:
        raise UsageError("--device", str(exc)) from None
    print(envmod.render(environment))
    return 0


def _threshold(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise UsageError("--threshold", f"{text!r} is not a number") from None
    if not 0 <= value < 1:
        raise UsageError("--threshold", f"must be a fraction in [0, 1), e.g. 0.05 for 5%, got {text}")
    return value


def _warn(verb: str, lines: Sequence[str]) -> None:
    for line in lines:
        print(f"suite {verb}: warning: {line}", file=sys.stderr)


def cmd_merge(args: argparse.Namespace) -> int:
    from suite.merge import default_out, find_csvs
    from suite.publish import run_merge

    find_csvs(args.inputs)  # missing inputs are reported before anything else
    out = args.out or default_out(args.inputs)
    if out is None:
        raise UsageError("-o", "the inputs are not one run folder: say where to write with -o OUT")
    if out.exists() and not out.is_dir():
        raise UsageError("-o", f"{out} is a file, not a folder")
    try:
        result = run_merge(
            args.inputs,
            out,
            matrix=args.matrix or DEFAULT_MATRIX,
            matrix_explicit=args.matrix is not None,
            reference_dir=args.reference,
            plots=not args.no_plots,
            strict=args.strict,
        )
    except OSError as exc:
        raise UsageError(str(exc.filename or out), f"cannot read or write: {exc.strerror or exc}") from None
    report = result.loaded.report()
    print(f"suite merge: {report[0]}", file=sys.stderr)
    _warn("merge", report[1:])
    print(
        f"suite merge: {len(result.tables)} table(s), {len(result.plots)} plot(s) -> {result.index}",
        file=sys.stderr,
    )
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    from suite.compare import compare, render, verdict_line
    from suite.merge import load

    base, new = load([args.base]), load([args.new])
    _warn(
        "compare",
        [f"base: {line}" for line in base.report()[1:]] + [f"new: {line}" for line in new.report()[1:]],
    )
    result = compare(base, new, args.threshold)
    text = render(result, [args.base], [args.new], base, new)
    if args.output:
        try:
            args.output.parent.mkdir(parents=True, exist_ok=True)
            args.output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UsageError("-o", f"cannot write {args.output}: {exc.strerror or exc}") from None
        print(f"suite compare: {verdict_line(result)} -> {args.output}", file=sys.stderr)
    else:
        print(text, end="")
    return 1 if result.failed else 0


def build_parser() -> Parser:
    parser = Parser(prog="suite", description="torch.compile benchmark suite for HF vision models")
    sub = parser.add_subparsers(dest="verb", required=True, parser_class=Parser)

    p = sub.add_parser("plan", help="list the cells of a profile without running them")
    add_selection_args(p)
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "run", help="measure every cell; append rows to <out>/<run-id>/raw/<build>__<device>.csv"
    )
    add_selection_args(p)
    add_run_args(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "crosscheck",
        help="time a few cells with the suite and independently (torch.utils.benchmark, CUDA events)",
    )
    add_selection_args(p)
    p.set_defaults(func=lambda a: __import__("suite.crosscheck", fromlist=["x"]).cmd_crosscheck(a))

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

    p = sub.add_parser("compare", help="regressions between two runs; exit 1 if a cell regressed")
    p.add_argument("base", type=Path, help="the base run folder (or one raw CSV)")
    p.add_argument("new", type=Path, help="the new run folder (or one raw CSV)")
    p.add_argument(
        "--threshold",
        type=_threshold,
        default=0.05,
        help="slow-down that counts, as a fraction (default: %(default)s = 5%%)",
    )
    p.add_argument("-o", "--output", type=Path, default=None, help="write the Markdown report here")
    p.set_defaults(func=cmd_compare)
    return parser


VERBS = ("plan", "run", "crosscheck", "env", "merge", "compare")


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
        return _main(argv)
    finally:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        sys.stdout, sys.stderr = out, err


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        return int(args.func(args) or 0)
    except UsageError as exc:
        verb = next((a for a in (argv if argv is not None else sys.argv[1:]) if not a.startswith("-")), "")
        verb = verb if verb in VERBS else ""
        print(f"suite{' ' + verb if verb else ''}: error: {printable(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("suite: interrupted", file=sys.stderr)
        return 130
    except Exception:  # a bug: the traceback helps, but it passes the redaction too
        traceback.print_exc()
        print("suite: internal error (a bug in the suite; the traceback above says where)", file=sys.stderr)
        return 3
