"""`python -m suite history VERB ...`: the results store and what it answers (docs/history.md).

    history ingest RUN_DIR... [--store URL]      a run's rows into the history (twice: nothing added)
    history report [--store URL] [filters]       trends and change points per series
    history verdict RUN_DIR [--store URL]        the nightly's verdict (the workflow's job summary)
    history judge GOOD_RUN RUN --cell M,BS,MODE    one cell by the gate's rule (what `nox -s bisect` asks)
    history confirm --list | --change ID --good-run R [--bad-run R] [--issues]
                                                 a change's nightlies measured again (`nox -s confirm`)
    history calibrate [--repeats DIR...]         the change-point rule's error rates on real noise
    history migrate [--store URL]                bring a store to this suite's schema

Host side: DuckDB, pyarrow, pandas, ruptures (`nox -s history -- VERB ...` installs them).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

from suite.cli.args import DEFAULT_MATRIX, Parser
from suite.cli.needs import needs
from suite.cli.values import threshold
from suite.errors import UsageError

HISTORY = ("duckdb", "pyarrow", "pandas", "ruptures", "scipy", "fsspec", "numpy")
HISTORY_HINT = (
    "use `nox -s history -- VERB ...` (it keeps a virtualenv with them in .nox/history), or "
    "`pip install -e '.[history]'` (duckdb, pyarrow, pandas, ruptures, scipy, fsspec) into this one"
)
STORE_HELP = (
    "the history: a DuckDB file (default: results/history.duckdb; any path ending in .duckdb), or a "
    "folder or fsspec URL (file://, s3://bucket/prefix, hf://datasets/org/name, memory://) for Parquet"
)
FILTER_FLAGS = ("gpu", "build", "build-line", "model", "batch-size", "mode", "dtype", "scenario")


def day(text: str) -> date:
    """A date flag: YYYY-MM-DD (or YYYYMMDD, the nightlies' own spelling)."""
    for fmt in ("%Y-%m-%d", "%Y%m%d"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    raise UsageError("", f"{text!r} is not a date like 2026-12-03")


def _store_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--store", default=None, help=STORE_HELP)


def add_history_parser(sub: argparse._SubParsersAction) -> argparse._SubParsersAction:  # type: ignore[type-arg]
    """`history` and the store's verbs; returns its verbs' subparsers (the pages' `history html`,
    docs/pages.md, joins them there)."""
    history = sub.add_parser("history", help="the results store: ingest runs, trends, change points, bisect")
    verbs = history.add_subparsers(dest="history_verb", metavar="VERB", required=True, parser_class=Parser)
    add_store_verbs(verbs)
    return verbs


def add_store_verbs(verbs: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """The store's verbs under `history`: ingest, report, verdict, judge, calibrate, migrate."""
    p = verbs.add_parser("ingest", help="put runs' rows into the history (a run twice adds nothing)")
    p.add_argument("inputs", nargs="+", type=Path, help="run folders (their raw/*.csv) or raw CSV files")
    _store_arg(p)
    p.add_argument(
        "--date", type=day, default=None, help="the night's date (default: its earliest started_at)"
    )
    p.add_argument("--run-page", default="", help="a link to the run's page, kept with its nights")
    p.add_argument(
        "--allow-partial",
        action="store_true",
        help="accept a torn last row (a runner killed mid-write) and ingest the rest; any other problem "
        "still refuses the input",
    )
    p.add_argument(
        "--matrix", type=Path, default=None, help=f"for the builds' kinds (default: {DEFAULT_MATRIX})"
    )
    p.set_defaults(func=cmd_ingest)

    p = verbs.add_parser("report", help="trends and change points per series (Markdown)")
    _store_arg(p)
    _filter_args(p)
    p.add_argument("--changes-only", action="store_true", help="the change points, not every series' trend")
    p.add_argument("-o", "--output", type=Path, default=None, help="write the report here (default: stdout)")
    p.set_defaults(func=cmd_report)

    p = verbs.add_parser(
        "verdict", help="a night against the night before and against stable, for the summary"
    )
    p.add_argument("run", type=Path, help="the night's run folder (already ingested)")
    _store_arg(p)
    p.add_argument(
        "-o", "--output", type=Path, default=None, help="append the Markdown here (default: stdout)"
    )
    p.add_argument(
        "--issues", action="store_true", help="open or update one GitHub issue per regressed cell (gh)"
    )
    p.add_argument(
        "--repo", default=None, help="OWNER/NAME for gh (default: gh's own, GITHUB_REPOSITORY in Actions)"
    )
    p.add_argument(
        "--slower",
        type=Path,
        default=None,
        help="also write the cells beyond the rule against their night before here (JSON: the run's summary)",
    )
    p.set_defaults(func=cmd_verdict)

    p = verbs.add_parser(
        "judge", help="one cell of a run against a good run, by the gate's rule (nox -s bisect)"
    )
    p.add_argument("good", type=Path, help="the good night's run folder")
    p.add_argument("new", type=Path, help="the run folder to judge")
    p.add_argument(
        "--cell", required=True, help='"<model>,<batch size>,<mode>", e.g. "ResNet,4,reduce-overhead"'
    )
    p.add_argument("--threshold", type=threshold, default=None, help="the gate's threshold (default: 0.05)")
    p.set_defaults(func=cmd_judge)

    p = verbs.add_parser(
        "confirm",
        help="a change point's two nightlies measured again: judged, kept; issues only where they agree",
    )
    _store_arg(p)
    p.add_argument("--list", action="store_true", help="the regressions awaiting one (JSON lines)")
    p.add_argument("--change", default=None, help="the change's id (from --list, the report or the verdict)")
    p.add_argument("--good-run", type=Path, default=None, help="the last good nightly's run, again")
    p.add_argument("--bad-run", type=Path, default=None, help="the first bad nightly's (none: not run)")
    p.add_argument("--threshold", type=threshold, default=None, help="the gate's threshold (default: 0.05)")
    p.add_argument("--issues", action="store_true", help="then the confirmed ones' issues (gh)")
    p.add_argument("--repo", default=None, help="OWNER/NAME for gh")
    p.set_defaults(func=cmd_confirm)

    p = verbs.add_parser("calibrate", help="the change-point rule's false-alarm and detection rates")
    p.add_argument("--repeats", nargs="+", type=Path, default=None, help="folders of `suite repeat` runs")
    p.add_argument("--histories", type=int, default=200, help="histories per case (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("-o", "--output", type=Path, default=None, help="write the Markdown report here too")
    p.set_defaults(func=cmd_calibrate)

    p = verbs.add_parser("migrate", help="bring a store to this suite's schema version")
    _store_arg(p)
    p.set_defaults(func=cmd_migrate)


def _filter_args(p: argparse.ArgumentParser) -> None:
    for flag in FILTER_FLAGS:
        p.add_argument(f"--{flag}", default=None, help="comma list")
    p.add_argument("--since", type=day, default=None, help="nights from this date on")
    p.add_argument("--until", type=day, default=None, help="nights up to this date")


def _filters(args: argparse.Namespace) -> dict[str, object]:
    out: dict[str, object] = {}
    for flag in FILTER_FLAGS:
        value = getattr(args, flag.replace("-", "_"))
        if value is not None:
            items = [v.strip() for v in value.split(",") if v.strip()]
            if not items:
                raise UsageError(f"--{flag}", "needs at least one value")
            if flag == "batch-size" and not all(i.isdigit() for i in items):
                raise UsageError("--batch-size", f"{value!r} is not a list of whole numbers")
            out[flag.replace("-", "_")] = items
    out["since"], out["until"] = args.since, args.until
    return out


def _write(text: str, output: Path | None, append: bool = False) -> None:
    if output is None:
        print(text, end="")
        return
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        with open(output, "a" if append else "w", encoding="utf-8") as fh:
            fh.write(text)
    except OSError as exc:
        raise UsageError("-o", f"cannot write {output}: {exc.strerror or exc}") from None


def cmd_ingest(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.history.ingest import read_run
        from suite.history.store import open_store

    store = open_store(args.store)
    read = read_run(
        args.inputs,
        matrix=args.matrix or DEFAULT_MATRIX,
        matrix_explicit=args.matrix is not None,
        night_date=args.date,
        run_page=args.run_page,
        allow_partial=args.allow_partial,
    )
    for note in read.notes:
        print(f"suite history: note: {note}", file=sys.stderr)
    results = store.ingest(read.nights)
    for result in results:
        print(f"suite history: {result.line}", file=sys.stderr)
    added = sum(r.added + r.replaced for r in results)
    print(f"suite history: {len(results)} night(s), {added} row(s) written -> {store.url}", file=sys.stderr)
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.history.changes import Rule
        from suite.history.confirm import annotate, kept
        from suite.history.report import render
        from suite.history.series import all_changes, points
        from suite.history.store import open_store
        from suite.history.trends import trends

    store = open_store(args.store)
    rule = Rule()
    con = store.connect()
    try:
        pts = points(con, _filters(args))
        cache = store.change_cache(con, rule)  # the change points of series that have not changed
        confirmations = kept(store, con)
    finally:
        con.close()
    changes = annotate(all_changes(pts, rule, cache), confirmations)
    trend = trends(pts, changes) if not args.changes_only else trends(pts.iloc[:0], changes)
    _write(render(store.url, pts, changes, trend, rule, trends_too=not args.changes_only), args.output)
    store.keep_changes(cache)  # for the next reader; a store that cannot be written now is left as it is
    return 0


def cmd_verdict(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.automation.issues import gh_cli, sync_issues
        from suite.history.verdict import verdict

    result = verdict(args.run, args.store)
    _write(result.markdown, args.output, append=True)
    if args.slower is not None:
        slower = {"run": str(args.run), "slower": [s.as_json() for s in result.slower()]}
        _write(json.dumps(slower, indent=1) + "\n", args.slower)
    if args.issues:
        for line in sync_issues(result.regressions, gh_cli(args.repo)):
            print(f"suite history: {line}", file=sys.stderr)
    return 0


def cmd_judge(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.compare.rule import Rule
        from suite.history.bisect import Cell
        from suite.history.judge import judge_runs

    for path in (args.good, args.new):
        if not path.exists():
            raise UsageError(str(path), "no such file or folder")
    rule = Rule() if args.threshold is None else replace(Rule(), threshold=args.threshold)
    print(judge_runs(args.good, args.new, Cell.parse(args.cell), rule).json())
    return 0


def cmd_confirm(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        import pandas as pd

        from suite.automation.issues import gh_cli, sync_issues
        from suite.compare.rule import Rule
        from suite.history.confirm import awaiting, judge_pair, listing, to_file
        from suite.history.verdict import RECENT_DAYS

    if args.list == (args.change is not None):
        raise UsageError("history confirm", "give --list, or --change ID with --good-run (and --bad-run)")
    store, changes, newest = _annotated(args.store)
    if args.list:  # the window the verdict files issues for (and the nightly index still holds)
        since = None if newest is None else newest - pd.Timedelta(days=RECENT_DAYS)
        for line in listing(awaiting(changes, since)):
            print(line)
        return 0
    rows = changes[changes["change_id"] == args.change]
    if rows.empty:
        raise UsageError("--change", f"{args.change!r} is not a change point of {store.url} (see --list)")
    if args.good_run is None:
        raise UsageError("--good-run", "required with --change: the last good nightly's run folder")
    for path in (args.good_run, args.bad_run):
        if path is not None and not path.exists():
            raise UsageError(str(path), "no such file or folder")
    rule = Rule() if args.threshold is None else replace(Rule(), threshold=args.threshold)
    conf = judge_pair(rows.iloc[0].to_dict(), args.good_run, args.bad_run, rule)
    store.keep_confirmation_record(conf.change_id, conf.json())
    states = {r.metric: conf.outcome(r.metric, r.change_pct) for r in rows.itertuples()}
    told = ", ".join(f"{m} {s}" for m, s in states.items())
    print(f"suite history: change {conf.change_id}: the gate says {conf.verdict!r}; {told}", file=sys.stderr)
    print(conf.json())
    if args.issues:
        _, changes, newest = _annotated(args.store)
        recent = changes[changes["first_bad_date"] >= newest - pd.Timedelta(days=RECENT_DAYS)]
        for line in sync_issues(to_file(recent), gh_cli(args.repo)):
            print(f"suite history: {line}", file=sys.stderr)
    return 0


def _annotated(where: str | None) -> tuple[Any, Any, Any]:
    """The store, every change point of it with what measuring it again said, its newest night."""
    from suite.history.changes import Rule as ChangeRule
    from suite.history.confirm import annotate, kept
    from suite.history.series import all_changes, points
    from suite.history.store import open_store

    store = open_store(where)
    rule = ChangeRule()
    con = store.connect()
    try:
        pts = points(con, {})
        cache = store.change_cache(con, rule)
        confirmations = kept(store, con)
    finally:
        con.close()
    changes = all_changes(pts, rule, cache)
    store.keep_changes(cache)
    return store, annotate(changes, confirmations), (pts["date"].max() if len(pts) else None)


def cmd_calibrate(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.history.calibrate import DEFAULT_REPEATS, report

    if args.histories < 10:
        raise UsageError("--histories", "at least 10 per case")
    text = report(args.repeats or list(DEFAULT_REPEATS), args.histories, args.seed)
    print(text, end="")
    if args.output:
        _write(text, args.output)
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    with needs("history", HISTORY, HISTORY_HINT):
        from suite.history.schema import SCHEMA_VERSION
        from suite.history.store import open_store

    store = open_store(args.store)
    before = store.migrate()
    print(f"suite history: {store.url}: schema version {before} -> {SCHEMA_VERSION}", file=sys.stderr)
    return 0
