"""The host-side verbs: `merge` (tables and plots) and `compare` (regressions between runs)."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from suite.cli.args import DEFAULT_MATRIX
from suite.cli.needs import COMPARE_HINT, MERGE_HINT, REPORT, needs
from suite.errors import UsageError

if TYPE_CHECKING:  # pandas comes with it: imported where a verb needs it (suite.cli.needs)
    from suite.compare.rule import Rule


def _warn(verb: str, lines: Sequence[str]) -> None:
    for line in lines:
        print(f"suite {verb}: warning: {line}", file=sys.stderr)


def cmd_merge(args: argparse.Namespace) -> int:
    with needs("merge", REPORT, MERGE_HINT):
        from suite.report.load import default_out, find_csvs
        from suite.report.publish import run_merge

        # tables/samples.parquet: a missing pyarrow is one line before anything is written
        importlib.import_module("pyarrow")

    find_csvs(args.inputs)  # missing inputs are reported before anything else
    out = args.out or default_out(args.inputs)
    if out is None:
        raise UsageError("-o", "the inputs are not one run folder: say where to write with -o OUT")
    if out.exists() and not out.is_dir():
        raise UsageError("-o", f"{out} is a file, not a folder")
    try:
        with needs("merge", REPORT, MERGE_HINT):  # matplotlib is imported for the first plot
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
    if result.page is not None:
        print(f"suite merge: the run page -> {result.page}", file=sys.stderr)
    if result.exports:
        more = f" and {len(result.exports) - 1} dynamo-format CSV(s)" if len(result.exports) > 1 else ""
        print(f"suite merge: {result.exports[0]}{more} (docs/merge.md#exports)", file=sys.stderr)
    where = f" -> {result.samples}" if result.samples is not None else ""
    print(f"suite merge: {result.samples_line}{where}", file=sys.stderr)
    return 0


def _compare_rule(args: argparse.Namespace, rule: Rule) -> Rule:
    """The gate's rule: its defaults (the help text names them: tests/compare/test_gate.py checks they
    agree), with the flags given."""
    flags = ("threshold", "compile_threshold", "noise_z", "run_noise_pct", "speedup_noise_pct")
    rule = replace(rule, **{f: getattr(args, f) for f in flags if getattr(args, f) is not None})
    return replace(rule, pairs=False) if getattr(args, "separate", False) else rule


def _report_to(args: argparse.Namespace, text: str) -> None:
    """The report: to -o, else to stdout."""
    if not args.output:
        print(text, end="")
        return
    try:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UsageError("-o", f"cannot write {args.output}: {exc.strerror or exc}") from None


def cmd_compare(args: argparse.Namespace) -> int:
    with needs("compare", REPORT, COMPARE_HINT):
        from suite.compare.comparison import Samples, compare
        from suite.compare.markdown import render, verdict_line
        from suite.compare.rule import Rule
        from suite.compare.samples import groups_of
        from suite.report.load import load
        from suite.report.samples import read_beside, recompute, report_line

    base, new = load([args.base]), load([args.new])
    calls = {"base": read_beside(base.files), "new": read_beside(new.files)}
    # each run's medians recomputed from the samples beside it (said after the verdict)
    found = [(name, recompute(calls[name], x.frame)) for name, x in (("base", base), ("new", new))]
    samples_lines = [f"suite compare: {name}: {report_line(rows)}" for name, rows in found if rows]
    # like with like: where both runs kept a cell's samples, its median is judged from them
    samples = None if args.medians_only else Samples(groups_of(calls["base"]), groups_of(calls["new"]))
    rule = _compare_rule(args, Rule())
    result = compare(base, new, rule.threshold, rule, samples)
    text = render(result, [args.base], [args.new], base, new)
    if result.nothing_judged:  # no cell compared like with like: not a pass; the report says why
        _report_to(args, text)
        raise UsageError(f"{args.base} vs {args.new}", verdict_line(result))
    _warn(
        "compare",
        [f"base: {line}" for line in base.report()[1:]] + [f"new: {line}" for line in new.report()[1:]],
    )
    _report_to(args, text)
    if args.output:
        print(f"suite compare: {verdict_line(result)} -> {args.output}", file=sys.stderr)
    for line in samples_lines:
        print(line, file=sys.stderr)
    return 1 if result.failed else 0


def cmd_calibrate(args: argparse.Namespace) -> int:
    """`calibrate`: the gate's rates from A/A and slowed runs (suite.compare.calibration; pandas)."""
    with needs("calibrate", REPORT, COMPARE_HINT.replace("compare", "calibrate")):
        from suite.compare.calibration import calibration

    for path in [*args.aa, *args.slowed]:
        if not path.exists():
            raise UsageError(str(path), "no such file or folder")
    if len(args.aa) < 2:
        raise UsageError("--aa", "needs two or more runs of the same cells")
    text = calibration(args.aa, args.slowed, args.run_noise_pct, args.speedup_noise_pct, args.medians_only)
    print(text, end="")
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    return 0
