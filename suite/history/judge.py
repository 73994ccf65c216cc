"""One cell of a bisect's run judged against the good end's, by the gate's own rule
(suite.compare.rule.judge: the threshold, the paired speed-up, compile time, failures; with one
cell there is no noise floor, as `compare` has none under 8 cells), and like with like: a row
measured under other settings than the good end's (suite.compare.settings) is skipped, not judged.
`python -m suite history judge`
prints it as one JSON line for `nox -s bisect` (suite.sessions.bisect), which has no pandas.
"""

from __future__ import annotations

from pathlib import Path

from suite.compare.rule import FAILING_VERDICTS, SUSPECT, Rule, judge
from suite.compare.settings import differences, settings_of
from suite.errors import UsageError
from suite.history.bisect import BAD, GOOD, SKIP, Cell, Judged
from suite.report.load import load
from suite.report.measurement import measurement_of


def _row(run: Path, cell: Cell) -> object | None:
    try:
        frame = load([run]).frame
    except UsageError:
        return None
    rows = frame[
        (frame["model"] == cell.model)
        & (frame["batch_size"] == cell.batch_size)
        & (frame["mode"] == cell.mode)
    ]
    return next(rows.itertuples(index=False), None)


def judge_runs(good_run: Path, run: Path | None, cell: Cell, rule: Rule | None = None) -> Judged:
    """bad (a failing verdict), good (any other), skip (no row, or only suspect)."""
    rule = rule or Rule()
    base = _row(good_run, cell)
    if base is None:
        raise UsageError(str(good_run), f"no row of {cell.label}: the good end did not run")
    new = _row(run, cell) if run is not None else None
    if new is None:
        return Judged(SKIP, "did not run")
    apart = differences(settings_of(base._asdict()), settings_of(new._asdict()))  # type: ignore[attr-defined]
    if apart:
        why = "not comparable: " + "; ".join(d.text() for d in apart)
        return Judged(SKIP, why, str(new.torch_version), str(new.torch_git))  # type: ignore[attr-defined]
    verdict = judge(measurement_of(base), measurement_of(new), rule.threshold, rule)[0]
    outcome = SKIP if verdict == SUSPECT else BAD if verdict in FAILING_VERDICTS else GOOD
    return Judged(outcome, verdict, str(new.torch_version), str(new.torch_git))
