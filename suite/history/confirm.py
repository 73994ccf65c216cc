"""A change point measured again before anyone is told: the last good and the first bad nightly of
the cell run back to back on one machine, judged by the gate's rule (suite.compare.rule.judge),
kept in the store, and only a change the measurement agrees with gets an issue.

A change point (suite.history.series) is found on nights run days apart, on whatever machine the
night had: its step may be the machine's. So an issue waits for a confirmation: both nightlies'
images built, then the cell run in each, one right after the other (`nox -s confirm`,
suite.sessions.bisect), and the two runs handed to `python -m suite history confirm --change ID
--good-run RUN --bad-run RUN`, which checks they are the change's nightlies on one machine of the change's
GPU, judges them here and keeps the result. It *agrees* with a change when the gate judges the
first bad nightly's run a failing change of the last good one's (a regression, less speed-up, a
slower compile, ...) and the change's figure moved the same way; else it disagrees (or, where a
run did not give a usable row, it did not run). A confirmation is of a pair of nightlies of one
cell (its track, the last good and first bad nightly's dates: `change_id`), whatever figure moved.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pandas as pd

from suite.compare.rule import FAILING_VERDICTS, Rule, judge
from suite.compare.settings import differences, settings_of
from suite.errors import UsageError
from suite.history.ingest import gpu_label, torch_date
from suite.history.series import TRACK_KEY, is_regression, matrix_scenario
from suite.report.load import load
from suite.report.measurement import measurement_of

AGREES, DISAGREES, NOT_RUN, AWAITING = "agrees", "disagrees", "not run", "awaiting"


def day_text(value: object) -> str:
    """A date as YYYY-MM-DD, or "" for none."""
    return "" if value is None or pd.isna(value) else f"{pd.Timestamp(value):%Y-%m-%d}"


def change_id(change: Mapping[str, Any]) -> str:
    """A change's pair of nightlies of one cell: its track, its last good and first bad dates."""
    parts = [str(change[k]) for k in TRACK_KEY]
    parts += [day_text(change["last_good_date"]), day_text(change["first_bad_date"])]
    return hashlib.sha256("\x1f".join(parts).encode()).hexdigest()[:16]


def _num(value: object) -> float | None:
    try:
        x = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


@dataclass(frozen=True)
class Measured:
    """One run's row of the cell: what ran, where, and its figures (the issue shows them)."""

    run: str
    torch_version: str
    torch_git: str
    gpu: str
    gpu_uuid: str
    started_at: str
    status: str
    health: str
    median_ms: float | None
    median_ci_low_ms: float | None
    median_ci_high_ms: float | None
    speedup: float | None
    speedup_ci_low: float | None
    speedup_ci_high: float | None
    compile_s: float | None

    @staticmethod
    def of(run: Path, r: Any) -> Measured:
        return Measured(
            str(run), str(r.torch_version), str(r.torch_git), gpu_label(str(r.device), str(r.gpu_name)),
            str(getattr(r, "gpu_uuid", "") or ""), str(r.started_at), str(r.status),
            str(getattr(r, "health", "") or ""), _num(r.median_ms), _num(r.ci95_low_ms),
            _num(r.ci95_high_ms), _num(r.speedup), _num(r.speedup_ci95_low), _num(r.speedup_ci95_high),
            _num(r.compile_s),
        )  # fmt: skip


@dataclass(frozen=True)
class Confirmation:
    """The pair measured again: the gate's verdict of the bad run against the good one, and both."""

    change_id: str
    judged: str  # bad (a failing verdict) | good | not run
    verdict: str
    good: Measured | None
    bad: Measured | None
    measured_at: str

    def __post_init__(self) -> None:
        if self.judged not in ("bad", "good", NOT_RUN):
            raise ValueError(f"judged {self.judged!r}")

    def change(self, metric: str) -> float | None:
        """The figure's relative move from the good run to the bad one (None where either lacks it)."""
        if self.good is None or self.bad is None:
            return None
        a, b = getattr(self.good, metric), getattr(self.bad, metric)
        return b / a - 1 if a and b is not None else None

    def outcome(self, metric: str, change_pct: float) -> str:
        """agrees: the gate fails the bad run and the figure moved as the change did."""
        if self.judged == NOT_RUN:
            return NOT_RUN
        moved = self.change(metric)
        same_way = moved is not None and moved * change_pct > 0
        return AGREES if self.judged == "bad" and same_way else DISAGREES

    def json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> Confirmation:
        data = json.loads(text)
        for side in ("good", "bad"):
            data[side] = Measured(**data[side]) if data[side] else None
        return Confirmation(**data)


def _row(run: Path, change: Mapping[str, Any]) -> Any | None:
    """The run's row of the change's cell (None: the run has none, or no readable CSV)."""
    try:
        frame = load([run]).frame
    except UsageError:
        return None
    scenario = matrix_scenario(str(change["scenario"]))
    rows = frame[
        (frame["build"] == change["build"])
        & (frame["model"] == change["model_name"])
        & (frame["batch_size"] == int(change["batch_size"]))
        & (frame["mode"] == change["mode"])
        & (frame["dtype"] == change["dtype"])
        & (frame["scenario"] == scenario)
    ]
    return next(rows.itertuples(index=False), None)


def _check(which: str, m: Measured, change: Mapping[str, Any], day: object) -> None:
    """A run of the change's nightly on its GPU, or one line saying which it is not."""
    if m.gpu != change["gpu"]:
        raise UsageError(m.run, f"ran on {m.gpu}, not on the change's GPU ({change['gpu']})")
    ran = torch_date(m.torch_version)
    if day_text(day) and (ran is None or f"{ran:%Y-%m-%d}" != day_text(day)):
        raise UsageError(m.run, f"ran torch {m.torch_version}, not the {which} nightly of {day_text(day)}")


def judge_pair(
    change: Mapping[str, Any],
    good_run: Path,
    bad_run: Path | None,
    rule: Rule | None = None,
    now: datetime | None = None,
) -> Confirmation:
    """The two runs judged: the good end must have run (else one line); both on one machine of the
    change's GPU (its name, and its UUID where both rows have one), each its nightly."""
    rule = rule or Rule()
    stamp = (now or datetime.now(timezone.utc)).isoformat(timespec="seconds")
    cid = change_id(change)
    good_row = _row(good_run, change)
    bad_row = _row(bad_run, change) if bad_run is not None else None
    if good_row is None:
        raise UsageError(str(good_run), f"no row of the change's cell ({change['model_name']} "
                         f"bs{change['batch_size']} {change['mode']}): nothing to compare with")  # fmt: skip
    good = Measured.of(good_run, good_row)
    _check("last good", good, change, change["last_good_date"])
    if bad_run is None or bad_row is None:
        return Confirmation(cid, NOT_RUN, "the first bad nightly did not run", good, None, stamp)
    bad = Measured.of(bad_run, bad_row)
    _check("first bad", bad, change, change["first_bad_date"])
    if good.gpu_uuid and bad.gpu_uuid and good.gpu_uuid != bad.gpu_uuid:
        raise UsageError(str(bad_run), f"ran on GPU {bad.gpu_uuid}, the good run on {good.gpu_uuid}: "
                         "a confirmation measures both on one machine")  # fmt: skip
    apart = differences(settings_of(good_row._asdict()), settings_of(bad_row._asdict()))
    if apart:  # like with like (suite.compare.settings): another setting confirms nothing
        why = "not comparable: " + "; ".join(d.text() for d in apart)
        return Confirmation(cid, "good", why, good, bad, stamp)
    verdict = judge(measurement_of(good_row), measurement_of(bad_row), rule.threshold, rule)[0]
    return Confirmation(cid, "bad" if verdict in FAILING_VERDICTS else "good", verdict, good, bad, stamp)


Measure = Callable[[date], Path | None]  # a nightly's date -> its run folder (None: not run)


def confirm(change: Mapping[str, Any], measure: Measure, rule: Rule | None = None) -> Confirmation:
    """Measure the last good and the first bad nightly, back to back, and judge them (the caller
    supplies the measuring: containers in `nox -s confirm`, a fake in the tests)."""
    good_day = pd.Timestamp(change["last_good_date"]).date()
    bad_day = pd.Timestamp(change["first_bad_date"]).date()
    good_run = measure(good_day)
    bad_run = measure(bad_day)
    if good_run is None:
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        why = "the last good nightly did not run"
        return Confirmation(change_id(change), NOT_RUN, why, None, None, stamp)
    return judge_pair(change, good_run, bad_run, rule)


def annotate(changes: pd.DataFrame, kept: Mapping[str, Confirmation]) -> pd.DataFrame:
    """The changes with `change_id`, `remeasured` (agrees, disagrees, not run, awaiting; "" where
    no measurement can tell: not two dated nightlies, or the same torch) and its confirmation."""
    out = changes.copy()
    ids = [change_id(r) for r in out.to_dict("records")] if len(out) else []
    out["change_id"] = pd.Series(ids, index=out.index, dtype=object)
    states, found = [], []
    for cid, r in zip(ids, out.itertuples(index=False), strict=True):
        conf = kept.get(cid)
        found.append(conf)
        if conf is not None:
            states.append(conf.outcome(r.metric, r.change_pct))
        elif confirmable(r):
            states.append(AWAITING)
        else:
            states.append("")
    out["remeasured"] = pd.Series(states, index=out.index, dtype=object)
    out["confirmation"] = pd.Series(found, index=out.index, dtype=object)
    return out


def confirmable(r: Any) -> bool:
    """Two dated nightlies with different torch: what can be measured again."""
    return bool(r.nightly) and day_text(r.last_good_date) != day_text(r.first_bad_date)


def to_file(changes: pd.DataFrame) -> pd.DataFrame:
    """The regressions an issue may be opened for: held (`confirmed`) and measured again, agreeing."""
    if changes.empty:
        return changes
    regressing = [is_regression(m, c) for m, c in zip(changes["metric"], changes["change_pct"], strict=True)]
    keep = changes["confirmed"].to_numpy(bool) & pd.Series(regressing, index=changes.index).to_numpy(bool)
    keep &= (changes["remeasured"] == AGREES).to_numpy(bool)
    return changes[keep]


def awaiting(changes: pd.DataFrame, since: object = None) -> pd.DataFrame:
    """The held regressions no measurement has told yet, or whose nightly did not run (tried
    again), whose first bad nightly is from `since` on (`history confirm --list`)."""
    if changes.empty:
        return changes
    regressing = [is_regression(m, c) for m, c in zip(changes["metric"], changes["change_pct"], strict=True)]
    keep = changes["confirmed"].to_numpy(bool) & pd.Series(regressing, index=changes.index).to_numpy(bool)
    keep &= changes["remeasured"].isin((AWAITING, NOT_RUN)).to_numpy(bool)
    if since is not None:
        keep &= (changes["first_bad_date"] >= pd.Timestamp(since)).to_numpy(bool)
    return changes[keep]


def listing(changes: pd.DataFrame) -> list[str]:
    """One JSON line per pair of nightlies awaiting: what `nox -s confirm` measures."""
    out: dict[str, str] = {}
    for r in changes.itertuples(index=False):
        out.setdefault(r.change_id, json.dumps({
            "change": r.change_id, "cell": f"{r.model_name},{r.batch_size},{r.mode}", "dtype": r.dtype,
            "scenario": matrix_scenario(str(r.scenario)), "build": r.build, "gpu": r.gpu,
            "good": day_text(r.last_good_date), "bad": day_text(r.first_bad_date),
        }))  # fmt: skip
    return list(out.values())


def kept(store: Any, con: Any) -> dict[str, Confirmation]:
    """The confirmations a store keeps (suite.history.store.Store), by change id."""
    out = {}
    for cid, text in store.confirmation_records(con).items():
        try:
            out[cid] = Confirmation.from_json(text)
        except (ValueError, TypeError, KeyError) as exc:
            raise UsageError(f"{store.url}: confirmation {cid}", f"unreadable ({exc})") from None
    return out
