"""The night's verdict, as the nightly workflow writes it into the job summary: each night of the
run (a build on a GPU) judged by the gate (suite.compare.rule: the same rule, thresholds and noise
floor as `python -m suite compare`) against the same build's previous night in the store and
against the stable build of the same run, then the change points of the last nights and the trend
of every series the run measured.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from suite.compare.comparison import CellChange, Comparison, compare
from suite.compare.rule import FAILING_VERDICTS, Rule
from suite.errors import UsageError
from suite.history.changes import Rule as ChangeRule
from suite.history.confirm import AGREES, AWAITING, DISAGREES, NOT_RUN, annotate, kept, to_file
from suite.history.ingest import Night, read_run
from suite.history.report import cell_name, change_table, trend_table
from suite.history.series import all_changes, is_regression, points
from suite.history.store import open_store
from suite.history.trends import trends
from suite.report.load import NUMERIC_COLUMNS, Loaded
from suite.results import BY_NAME
from suite.run import pairrule
from suite.spec.vocab import BASE_ORDER, is_base_of

RECENT_DAYS = 14  # change points whose first bad night is this recent are the night's news


@dataclass(frozen=True)
class NightVerdict:
    night: Night
    previous: str  # the night it was compared with ("" if none)
    against_previous: Comparison | None
    against_stable: Comparison | None


@dataclass(frozen=True)
class Verdict:
    markdown: str
    nights: tuple[NightVerdict, ...]
    regressions: pd.DataFrame  # regressions of the last RECENT_DAYS held and measured again: agreeing
    held: pd.DataFrame  # every regression of the last RECENT_DAYS held, whatever measuring it again said

    @property
    def failed(self) -> bool:
        return any(v.against_previous is not None and v.against_previous.failed for v in self.nights)

    def slower(self) -> list[Slower]:
        """Every night's cells beyond the rule against its night before (slower_beyond_rule)."""
        return [s for v in self.nights for s in slower_beyond_rule(v)]


def loaded_night(con: duckdb.DuckDBPyConnection, night_id: str, label: str) -> Loaded:
    """A stored night as the gate reads a run (suite.report.load's typed frame)."""
    columns = ", ".join(f'"{c}"' for c in BY_NAME)
    stored = con.execute(f"SELECT {columns} FROM history WHERE night_id = ?", [night_id]).df()

    def typed(col: str) -> pd.Series:
        if col == "batch_size":
            return stored[col].astype(int)
        if col in NUMERIC_COLUMNS:
            return stored[col].astype(float)
        return stored[col].fillna("").astype(str) if BY_NAME[col].kind == "text" else stored[col]

    # one frame made at once: 150 columns replaced one by one fragment it (pandas warns)
    columns_of = {col: typed(col) for col in stored.columns}
    frame = pd.DataFrame({**columns_of, "source": [label] * len(stored)}, index=stored.index)
    return Loaded(frame, (), len(frame), (), 0, 0, ())


def previous_night(con: duckdb.DuckDBPyConnection, night: Night) -> tuple[str, str] | None:
    """The same build's latest night on the same GPU before this one: (night_id, its label)."""
    found = con.execute(
        "SELECT night_id, run_id, date FROM history WHERE build = ? AND device = ? AND gpu_name = ? "
        "AND date < ? GROUP BY ALL ORDER BY date DESC, run_id DESC LIMIT 1",
        [night.build, night.device, night.gpu_name, night.date],
    ).fetchone()
    return (found[0], f"{found[1]} ({found[2]:%Y-%m-%d})") if found else None


def base_night(nights: list[Night], kinds: dict[str, str], night: Night) -> Night | None:
    """The night of this run that `night` is judged against: on the same GPU, of the nearest
    kind before its own in `spec.model.BASE_ORDER` (a nightly against the release when the run
    has one, else the stable build). A stored kind reads "nightly 2.16": its first word counts."""
    own = kinds[night.night_id].split(" ")[0]
    bases = [
        n
        for n in nights
        if n.gpu == night.gpu and n is not night and is_base_of(kinds[n.night_id].split(" ")[0], own)
    ]
    return max(bases, key=lambda n: BASE_ORDER.index(kinds[n.night_id].split(" ")[0]), default=None)


def _judged(comparison: Comparison | None) -> str:
    if comparison is None:
        return "—"
    apart = len(comparison.not_comparable)
    differ = ", ".join(
        f"{name} {' / '.join(pairs)}" for name, (_, pairs) in comparison.differing_settings().items()
    )
    if comparison.nothing_judged:  # like with like only (suite.compare.settings): nothing to judge
        return f"**not comparable**: all {apart} cells measured under other settings ({differ}); none judged"
    failing = [c for c in comparison.changes if c.verdict in FAILING_VERDICTS]
    floor = comparison.noise.bound(comparison.rule.noise_z)
    parts = [f"**{len(failing)} failing**" if failing else "no regression"]
    parts.append(f"{comparison.count('improvement')} faster, {len(comparison.judged)} cells")
    if apart:
        parts.append(f"{apart} not comparable ({differ}), not judged")
    parts.append(f"noise floor {floor:.1%}" if floor else "no noise floor (< 8 healthy cells)")
    return "; ".join(parts)


PAIR_CONFIRMED = "regression: slower two nights in a row"
PAIR_AWAITING = "slower tonight: awaiting the next night's pair"


def paired_slower(v: NightVerdict) -> list[tuple[CellChange, str]]:
    """The night's cells timed side by side with its base build and slower by the pair's rule
    (suite.run.pairrule), each with its state: a regression once the night before, paired too,
    was slower as well (two consecutive nights), else awaiting the next night."""
    if v.against_stable is None:
        return []
    before = {c.key: c.base for c in v.against_previous.changes} if v.against_previous else {}
    out = []
    for c in v.against_stable.changes:
        if not c.paired or c.verdict not in FAILING_VERDICTS:
            continue
        prev = before.get(c.key)
        twice = prev is not None and prev.pair is not None and pairrule.judge(prev.pair).regressed
        out.append((c, PAIR_CONFIRMED if twice else PAIR_AWAITING))
    return out


@dataclass(frozen=True)
class Slower:
    """A cell of the night judged beyond the rule against the same build's night before: it
    awaits a confirmation (the change-point rule over the nights, then a measurement again)."""

    night: str  # "<build> on <gpu>"
    cell: str  # "<model> bs<batch> <mode>"
    verdict: str  # the gate's (suite.compare.rule)
    ratio: float | None  # new / before, of what the verdict judged

    def as_json(self) -> dict[str, object]:
        return {"night": self.night, "cell": self.cell, "verdict": self.verdict, "ratio": self.ratio}


def slower_beyond_rule(v: NightVerdict) -> list[Slower]:
    """The one place that says which of a night's cells are beyond the rule: against its night
    before (the gate's failing verdicts, suite.compare.rule), and where it was timed side by side
    with its base build, against that (the pair's rule: slower tonight awaits the next night, two
    nights in a row are a regression); the verdict's table and the run's summary both read it, so
    a new rule changes both."""
    if v.against_previous is None:
        return []
    cols = v.against_previous.key_columns
    found = []
    for c in v.against_previous.changes:
        if c.verdict not in FAILING_VERDICTS:
            continue
        cell = dict(zip(cols, c.key, strict=True))
        name = f"{cell['model']} bs{cell['batch_size']} {cell['mode']}"
        found.append(Slower(f"{v.night.build} on {v.night.gpu}", name, c.verdict, c.ratio))
    return found


def _failing_lines(v: NightVerdict) -> list[str]:
    return [
        f"| {s.night} | {s.cell} | {s.verdict} | {f'{s.ratio:.3f}' if s.ratio is not None else '—'} |"
        for s in slower_beyond_rule(v)
    ]


def confirmation_lines(held: pd.DataFrame, store: str | Path | None) -> list[str]:
    """The held regressions by what measuring them again said: the confirmed ones (an issue each),
    those a measurement did not confirm, and those awaiting one, with the command that measures."""
    if held.empty:
        return []
    out = []
    for state, what in ((AGREES, "Confirmed regressions (measured again: agrees; an issue each)"),
                        (DISAGREES, "Not confirmed (measured again: disagrees; no issue)"),
                        (NOT_RUN, "Measured again, but a nightly did not run (no issue)")):  # fmt: skip
        rows = held[held["remeasured"] == state]
        if len(rows):
            out += ["", f"{what}: " + ", ".join(sorted({cell_name(r) for r in rows.itertuples()}))]
    waiting = held[held["remeasured"] == AWAITING]
    if len(waiting):
        where = f" --store {store}" if store else ""
        out += ["", "Awaiting a confirmation (no issue until the last good and first bad nightly, measured "
                f"again back to back, agree): `nox -s confirm --{where}` measures them:", ""]  # fmt: skip
        pairs = waiting.drop_duplicates("change_id").itertuples()
        out += [f"- {cell_name(r)} on {r.gpu}: {_day(r.last_good_date)} → {_day(r.first_bad_date)} "
                f"(change {r.change_id})" for r in pairs]  # fmt: skip
    same = held[held["remeasured"] == ""]
    if len(same):
        out += ["", "Not a torch change (the same torch, or not two dated nightlies; no issue): "
                + ", ".join(sorted({cell_name(r) for r in same.itertuples()}))]  # fmt: skip
    return out


def _day(value: object) -> str:
    return f"{pd.Timestamp(value):%Y-%m-%d}"


def verdict(run_dir: Path, store: str | Path | None, rule: Rule | None = None) -> Verdict:
    rule = rule or Rule()
    read = read_run([run_dir], allow_partial=True)
    history = open_store(store)
    change_rule = ChangeRule()
    con = history.connect()
    try:
        stored = {r[0] for r in con.execute("SELECT DISTINCT night_id FROM history").fetchall()}
        missing = [n.label for n in read.nights if n.night_id not in stored]
        if missing:
            raise UsageError(
                str(run_dir), f"not in the history yet ({missing[0]}): `history ingest` it first"
            )
        kinds = dict(con.execute("SELECT DISTINCT night_id, build_kind FROM history").fetchall())
        judged = []
        for night in read.nights:
            this = loaded_night(con, night.night_id, night.label)
            prev = previous_night(con, night)
            against_prev = None
            if prev is not None:
                against_prev = compare(loaded_night(con, prev[0], prev[1]), this, rule.threshold, rule)
            base = base_night(read.nights, kinds, night)
            against_stable = None
            if base is not None:
                against_stable = compare(
                    loaded_night(con, base.night_id, base.label), this, rule.threshold, rule
                )
            judged.append(NightVerdict(night, prev[1] if prev else "", against_prev, against_stable))
        pts = points(
            con,
            {"gpu": sorted({n.gpu for n in read.nights}), "build": sorted({n.build for n in read.nights})},
        )
        cache = history.change_cache(con, change_rule)
        confirmations = kept(history, con)
    finally:
        con.close()
    changes = annotate(all_changes(pts, change_rule, cache), confirmations)
    history.keep_changes(cache)  # the night's series, searched once: the next report reads them
    newest = max(n.date for n in read.nights)
    recent = changes[changes["first_bad_date"] >= pd.Timestamp(newest - timedelta(days=RECENT_DAYS))]
    regressing = [is_regression(m, c) for m, c in zip(recent["metric"], recent["change_pct"], strict=True)]
    held = recent[recent["confirmed"].to_numpy(bool) & np.array(regressing, dtype=bool)]
    regressions = to_file(held)
    series = trends(pts, changes)
    series = series[series["last_run"] == pd.Timestamp(newest)]  # its place may be its nightly's
    md = [f"## History: the verdict of {read.nights[0].run_id if read.nights else run_dir}", ""]
    md += [
        "Each night judged by the gate (`suite compare`'s "
        "rule) against the same build's previous night in the "
        "history, and against this run's base build on the same GPU (a nightly against the "
        "release, any other build against the stable one).",
        "",
        "| night | compared with | vs the night before | vs the base build (this run) |",
        "|---|---|---|---|",
    ]
    for v in judged:
        md.append(f"| {v.night.build} on {v.night.gpu} | {v.previous or 'no earlier night'} | "
                  f"{_judged(v.against_previous)} | {_judged(v.against_stable)} |")  # fmt: skip
    failing = [line for v in judged for line in _failing_lines(v)]
    if failing:
        md += ["", "Cells beyond the rule: against the night before (the gate), and where timed side by side "
               f"with the base build, by the pair's rule ({pairrule.RULE_NAME}; a regression once two "
               "consecutive nights are slower):", "",
               "| night | cell | verdict | new / base |", "|---|---|---|---|", *failing]  # fmt: skip
    md += ["", f"### Change points of the last {RECENT_DAYS} days", ""]
    md += change_table(recent) if len(recent) else ["None."]
    md += confirmation_lines(held, store)
    md += ["", f"### Trends of the {len(series)} series this run measured", ""]
    md += trend_table(series) if len(series) else ["None."]
    return Verdict(
        "\n".join(md) + "\n", tuple(judged), regressions.reset_index(drop=True), held.reset_index(drop=True)
    )
