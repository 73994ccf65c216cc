"""One GitHub issue per regressed cell, through `gh`: opened at the cell's first regression held
and confirmed by measuring it again (suite.history.confirm: the caller passes only those),
updated (a comment, and the body) when another one is found; never one per night.

An issue is found again by a marker in its body that names the cell's track (GPU, build, model,
batch size, mode, dtype, scenario), and a change already told by a marker of its own (figure and
first bad date), so a re-run of the same night adds nothing.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pandas as pd

from suite.errors import UsageError, last_line
from suite.history.confirm import Confirmation, day_text
from suite.history.report import FIGURE, change_table
from suite.history.series import TRACK_KEY

LABEL = "bench-regression"
Gh = Callable[[list[str], str | None], str]  # (arguments, stdin) -> stdout


def gh_cli(repo: str | None) -> Gh:
    """The real `gh`: its failure is one line (exit 2), with gh's own last line."""

    def run(args: list[str], stdin: str | None) -> str:
        cmd = ["gh", *args, *(["--repo", repo] if repo and args[0] in ("issue", "label") else [])]
        try:
            proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=120, check=False)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise UsageError("gh", f"cannot run it ({exc})") from None
        if proc.returncode != 0:
            raise UsageError("gh " + " ".join(args[:2]), last_line(proc.stderr, "failed"))
        return proc.stdout

    return run


@dataclass(frozen=True)
class CellIssue:
    key: str
    title: str
    changes: pd.DataFrame

    @property
    def marker(self) -> str:
        return f"<!-- suite-history-cell: {self.key} -->"

    @staticmethod
    def change_marker(r: object) -> str:
        return f"<!-- suite-history-change: {r.metric} {pd.Timestamp(r.first_bad_date):%Y-%m-%d} -->"  # type: ignore[attr-defined]

    def body(self) -> str:
        first = self.changes.iloc[0]
        lines = [
            f"The nightly history found {len(self.changes)} confirmed regression(s) of "
            f"**{first['model']}** at batch size {first['batch_size']} under `{first['mode']}` "
            f"({first['dtype']}, {first['scenario']}) on **{first['gpu']}**, build `{first['build']}`.",
            "",
            *change_table(self.changes),
            "",
            *self.measured(),
            "Opened by `python -m suite history verdict --issues` or `history confirm --issues` "
            "(docs/history.md) only once the last good and first bad nightly, measured again back to "
            "back on one machine, agreed with the change; it updates this issue when it finds another "
            "change of this cell. Each row's last column is the command that bisects it.",
            "",
            self.marker,
            *(self.change_marker(r) for r in self.changes.itertuples()),
        ]
        return "\n".join(lines) + "\n"

    def measured(self) -> list[str]:
        """Both measurements of each confirmation (the last good and the first bad nightly)."""
        if "confirmation" not in self.changes.columns:
            return []
        confs = list({c.change_id: c for c in self.changes["confirmation"] if c is not None}.values())
        if not confs:
            return []
        return [
            "Measured again, back to back on one machine (the gate's verdict of the first bad against "
            "the last good):",
            "",
            *measurement_table(confs, self.changes),
            "",
        ]


def cell_issues(regressions: pd.DataFrame) -> list[CellIssue]:
    out = []
    for key, rows in regressions.groupby(list(TRACK_KEY), sort=False, dropna=False):
        digest = hashlib.sha256("\x1f".join(map(str, key)).encode()).hexdigest()[:16]
        r = rows.iloc[0]
        figures = ", ".join(sorted({FIGURE[m] for m in rows["metric"]}))
        title = f"Regression: {r['model']} bs{r['batch_size']} {r['mode']} on {r['gpu']} ({r['build']})"
        title += f": {figures}"
        out.append(CellIssue(digest, title, rows.sort_values("first_bad_date")))
    return out


def sync_issues(regressions: pd.DataFrame, gh: Gh) -> list[str]:
    """Open or update one issue per cell of `regressions`; what was done, one line each."""
    if regressions.empty:
        return ["no regression confirmed by measuring it again: no issue opened or updated"]
    gh(
        [
            "label",
            "create",
            LABEL,
            "--color",
            "B60205",
            "--description",
            "the nightly history found it",
            "--force",
        ],
        None,
    )
    listed = gh(
        [
            "issue",
            "list",
            "--label",
            LABEL,
            "--state",
            "open",
            "--limit",
            "500",
            "--json",
            "number,title,body",
        ],
        None,
    )
    try:
        open_issues = json.loads(listed or "[]")
    except json.JSONDecodeError:
        raise UsageError("gh issue list", "did not answer JSON") from None
    done = []
    for issue in cell_issues(regressions):
        existing = next((i for i in open_issues if issue.marker in (i.get("body") or "")), None)
        if existing is None:
            gh(
                ["issue", "create", "--title", issue.title, "--label", LABEL, "--body-file", "-"],
                issue.body(),
            )
            done.append(f"opened: {issue.title}")
            continue
        new = [r for r in issue.changes.itertuples() if issue.change_marker(r) not in existing["body"]]
        if not new:
            done.append(f"#{existing['number']} already tells every change of {issue.title}")
            continue
        comment = "\n".join(
            [
                f"{len(new)} more confirmed change(s) of this cell:",
                "",
                *change_table(pd.DataFrame(new).drop(columns="Index")),
            ]
        )
        gh(["issue", "comment", str(existing["number"]), "--body-file", "-"], comment + "\n")
        gh(["issue", "edit", str(existing["number"]), "--body-file", "-"], issue.body())
        done.append(f"#{existing['number']} updated: {issue.title}")
    return done


def _fig(value: float | None, low: float | None = None, high: float | None = None, unit: str = "") -> str:
    if value is None:
        return "—"
    ci = f" [{low:.4g}, {high:.4g}]" if low is not None and high is not None else ""
    return f"{value:.4g}{unit}{ci}"


def measurement_table(confirmations: Sequence[Confirmation], changes: pd.DataFrame) -> list[str]:
    """Both measurements of each confirmation, for an issue: what ran, where, and its figures."""
    lines = [
        "| nightly | torch | git | GPU | started | status | median ms [CI] | paired speed-up [CI] "
        "| compile s | the gate |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    days = {
        r.change_id: (day_text(r.last_good_date), day_text(r.first_bad_date)) for r in changes.itertuples()
    }
    for conf in confirmations:
        good_day, bad_day = days.get(conf.change_id, ("", ""))
        for label, day, m in (("last good", good_day, conf.good), ("first bad", bad_day, conf.bad)):
            if m is None:
                lines.append(f"| {label} {day} | — | — | — | — | did not run | — | — | — | {conf.verdict} |")
                continue
            lines.append(
                f"| {label} {day} | {m.torch_version} | {m.torch_git[:10] or '?'} | {m.gpu} | {m.started_at} "
                f"| {m.status}{'' if m.health in ('', 'ok') else ' § ' + m.health} "
                f"| {_fig(m.median_ms, m.median_ci_low_ms, m.median_ci_high_ms)} "
                f"| {_fig(m.speedup, m.speedup_ci_low, m.speedup_ci_high, 'x')} | {_fig(m.compile_s)} "
                f"| {conf.verdict if label == 'first bad' else ''} |"
            )
    return lines
