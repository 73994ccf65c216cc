"""The store's rows as series: one point per (series, night), and the change points of each.

A series is one cell on one GPU and build line: (gpu, build_line, build, model, task, batch size,
mode, dtype, scenario), as docs/history.md and the pages' contract (docs/pages.md) name them. The
model's name carries what else sets a row apart ("ViT (smoke, random weights)"), the scenario its
dynamic setting. Change points are looked for along a build's whole track (its series joined
across build lines), so a nightly that moves from 2.x to 2.y keeps its history, and a change at
that move is found and named with both lines' nights.

A point's `date` is where it stands on the x axis: for a nightly build, the nightly's own date
(`torch_date`: the date the run installed, not the night it ran), else the run's date; both are
kept (`nightly_date`, `run_date`). So the nights of a series, its change points' last good and
first bad nights and the `since` / `until` filters all speak of nightlies where there are some.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import date

import duckdb
import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from suite.errors import UsageError
from suite.history.cache import ChangeCache
from suite.history.changes import Rule, Shift, detect
from suite.results import OK
from suite.results.series_key import CHANGE_COLUMNS, SERIES_KEY

TRACK_KEY: tuple[str, ...] = tuple(k for k in SERIES_KEY if k != "build_line")
METRICS: tuple[str, ...] = ("median_ms", "speedup", "compile_s")
HEALTHY = ("", "ok")
COMPARE_URL = "https://github.com/pytorch/pytorch/compare/{good}...{bad}"
# The filters view() and `history report` take: the point columns of the series key.
FILTERS: tuple[str, ...] = SERIES_KEY

_SUFFIX = """CASE
        WHEN coalesce(variant, '') <> '' AND weights = 'random' THEN ' (' || variant || ', random weights)'
        WHEN coalesce(variant, '') <> '' THEN ' (' || variant || ')'
        WHEN weights = 'random' THEN ' (random weights)'
        ELSE '' END"""
# Like with like (suite.compare.settings): nights measured under another compile cache, allocator
# or number of processes are another series, named by the setting where it is not the default
# (so a series' name stays as it was where nothing was set apart). A failed row that recorded none
# of them stays in the default's series; other settings are the verdict's gate's to check.
_SETTINGS = """concat_ws(', ',
        CASE WHEN compile_cache = 'run' THEN 'compile cache run' END,
        CASE WHEN malloc = 'steady' THEN 'malloc steady' END,
        CASE WHEN TRY_CAST(processes AS INTEGER) > 1 THEN CAST(processes AS INTEGER) || ' processes' END)"""


def matrix_scenario(text: str) -> str:
    """The matrix's scenario of a series' scenario text ("inference (auto) [malloc steady]")."""
    return text.split(" [")[0].split(" (")[0]


_POINTS_SQL = f"""
SELECT
    gpu, build_line, build, model || {_SUFFIX} AS model, task, batch_size, mode, dtype,
    scenario || CASE WHEN coalesce(dynamic, '') <> '' THEN ' (' || dynamic || ')' ELSE '' END
        || CASE WHEN {_SETTINGS} <> '' THEN ' [' || {_SETTINGS} || ']' ELSE '' END AS scenario,
    CAST(coalesce(torch_date, date) AS TIMESTAMP) AS date, run_id,
    coalesce(torch_version, '') AS torch_version,
    coalesce(torch_git, '') AS torch_git, coalesce(run_page, '') AS run_page, status,
    coalesce(health, '') AS health,
    median_ms, ci95_low_ms AS median_ci_low_ms, ci95_high_ms AS median_ci_high_ms,
    speedup, speedup_ci95_low AS speedup_ci_low, speedup_ci95_high AS speedup_ci_high,
    CASE WHEN mode = 'eager' THEN NULL ELSE compile_s END AS compile_s,
    night_id, build_kind, model AS model_name, coalesce(variant, '') AS variant, weights,
    coalesce(run_dir, '') AS run_dir, ingested_at,
    CAST(date AS TIMESTAMP) AS run_date, CAST(torch_date AS TIMESTAMP) AS nightly_date
FROM history
"""


def points(con: duckdb.DuckDBPyConnection, filters: Mapping[str, object] | None = None) -> pd.DataFrame:
    """One row per (series, night), in series then night order; `filters`: a column of FILTERS
    (or `since` / `until`, dates) to a value or a list of values."""
    where, params = [], []
    for name, value in (filters or {}).items():
        if value is None:
            continue
        if name in ("since", "until"):
            where.append(f"date {'>=' if name == 'since' else '<='} ?")
            params.append(pd.Timestamp(value).to_pydatetime())
            continue
        if name not in FILTERS:
            raise UsageError(
                name, f"not a filter of the history (one of: {', '.join(FILTERS)}, since, until)"
            )
        values = list(value) if isinstance(value, list | tuple | set) else [value]
        marks = ", ".join("?" for _ in values)
        if name == "model":  # the display name ("ViT (smoke)") or the matrix's ("ViT")
            where.append(f"(model IN ({marks}) OR model_name IN ({marks}))")
            params += [str(v) for v in values] * 2
            continue
        where.append(f"{name} IN ({marks})")
        params += [int(v) if name == "batch_size" else str(v) for v in values]
    sql = f"SELECT * FROM ({_POINTS_SQL})" + (f" WHERE {' AND '.join(where)}" if where else "")
    try:
        # through Arrow: half the cost of .df() (the string columns)
        table = con.sql(sql, params=params).to_arrow_table()
    except duckdb.Error as exc:
        raise UsageError("history", f"cannot read the store ({str(exc).splitlines()[0]})") from None
    # in series then night order: the rows sorted here, by their ranks (sort_order), in pandas
    order = sort_order(table, (*TRACK_KEY, "date", "run_date", "ingested_at", "run_id"))
    frame = table.to_pandas().take(order)
    frame["batch_size"] = frame["batch_size"].astype("int64")
    for col in ("date", "run_date", "nightly_date"):
        frame[col] = frame[col].astype("datetime64[ns]")
    for col in ("median_ms", "median_ci_low_ms", "median_ci_high_ms", "speedup", "speedup_ci_low",
                "speedup_ci_high", "compile_s"):  # fmt: skip
        frame[col] = frame[col].astype(float)
    return frame.reset_index(drop=True)


def sort_order(table: pa.Table, keys: Sequence[str]) -> np.ndarray:
    """The rows' positions in the order of `ORDER BY keys` (each ascending, NULLs last, text by
    its bytes, as DuckDB orders them), ties in the table's order: each key's distinct values are
    sorted (a few hundred, not a row each) and the rows by their ranks (a third of DuckDB's sort
    of a year of points by eight text columns)."""
    ranks = []
    for key in reversed(keys):
        column = pc.dictionary_encode(table.column(key).combine_chunks())
        distinct = column.dictionary.to_numpy(zero_copy_only=False)
        rank = np.empty(len(distinct) + 1, dtype=np.int64)
        rank[np.argsort(distinct, kind="stable")] = np.arange(len(distinct))
        rank[-1] = len(distinct)  # NULL
        ranks.append(rank[column.indices.fill_null(len(distinct)).to_numpy()])
    return np.lexsort(ranks) if ranks and len(table) else np.arange(len(table))


def usable_mask(pts: pd.DataFrame, metric: str) -> np.ndarray:
    """The nights a metric is judged on: ok, a positive figure, and for latency and compile time a
    healthy machine (the gate does not judge the others either; the paired speed-up cancels a busy
    machine)."""
    values = pts[metric].to_numpy(float)
    with np.errstate(invalid="ignore"):
        keep = (pts["status"] == OK).to_numpy(bool) & (values > 0)
    if metric != "speedup":
        keep &= pts["health"].isin(HEALTHY).to_numpy()
    return keep


def usable(track: pd.DataFrame, metric: str) -> pd.DataFrame:
    return track[usable_mask(track, metric)]


@dataclass(frozen=True)
class Found:
    """A change point with the nights around it (their positions in the points frame)."""

    metric: str
    shift: Shift
    good: int  # the last night of the old level
    bad: int  # the first night of the new level
    confirmed: bool


def direction(metric: str, change: float) -> str:
    if metric == "speedup":
        return "larger" if change > 0 else "smaller"
    return "slower" if change > 0 else "faster"


def is_regression(metric: str, change: float) -> bool:
    return direction(metric, change) in ("slower", "smaller")


def groups(pts: pd.DataFrame, key: Sequence[str]) -> list[np.ndarray]:
    """The row positions of each group, in the frame's order (points come sorted by track, date)."""
    if pts.empty:
        return []
    return list(pts.groupby(list(key), sort=False, dropna=False).indices.values())


def series_name(key: Sequence[object], metric: str) -> str:
    """A track's figure, named (the change points' cache keeps one entry per name)."""
    return "\x1f".join([*(str(k) for k in key), metric])


def find_changes(pts: pd.DataFrame, rule: Rule, cache: ChangeCache | None = None) -> list[Found]:
    """Every change point of every track and metric; positions refer to `pts`. `cache`: the
    store's change points (suite.history.cache), for `rule`: a series it holds is not searched."""
    if cache is not None and cache.rule != rule:
        raise ValueError("the cache holds another rule's change points")
    out = []
    tracks = pts.groupby(list(TRACK_KEY), sort=False, dropna=False).indices if len(pts) else {}
    for metric in METRICS:
        mask = usable_mask(pts, metric)
        values = pts[metric].to_numpy(float)
        for key, rows in tracks.items():
            nights = rows[mask[rows]]
            if len(nights) < rule.min_nights:
                continue
            figures = values[nights]
            found = (
                detect(figures, rule) if cache is None else cache.detect(series_name(key, metric), figures)
            )
            for shift in found:
                out.append(
                    Found(
                        metric, shift, int(nights[shift.at - 1]), int(nights[shift.at]), shift.confirmed(rule)
                    )
                )
    return out


def confirm_command(bad: pd.Series, good_day: date, bad_day: date, good_run: str) -> str:
    """What reproduces the change: bisect over the nightlies between the two nights for a nightly
    build; else the cell run again, compared with the last good night's run."""
    cell = f"{bad['model_name']},{bad['batch_size']},{bad['mode']}"
    if bad["build_kind"] == "nightly":
        return (
            f'nox -s bisect -- --cell "{cell}" --good {good_day:%Y-%m-%d} --bad {bad_day:%Y-%m-%d} '
            f"--build {bad['build']}"
        )
    return (
        f"python -m suite run --build {bad['build']} --models {bad['model_name']} "
        f"--batch-sizes {bad['batch_size']} --modes {bad['mode']} --run-id confirm && "
        f"python -m suite compare {good_run} results/confirm"
    )


# what a change row carries of its two nights beside the contract: the runs that measured them
# (the x axis is the nightly's date for a nightly build: the run's own date is kept here) and
# whether both are dated nightlies (a change between two nightlies can be measured again)
NIGHT_EXTRAS: tuple[str, ...] = (
    "last_good_run", "first_bad_run", "last_good_run_date", "first_bad_run_date", "last_good_run_dir",
    "first_bad_run_dir", "nightly", "model_name", "build_kind",
)  # fmt: skip


def nights_of(good: pd.Series, bad: pd.Series) -> dict[str, object]:
    return {
        "last_good_run": good["run_id"],
        "first_bad_run": bad["run_id"],
        "last_good_run_date": good["run_date"],
        "first_bad_run_date": bad["run_date"],
        "last_good_run_dir": good["run_dir"],
        "first_bad_run_dir": bad["run_dir"],
        "nightly": bool(pd.notna(good["nightly_date"]) and pd.notna(bad["nightly_date"])),
        "model_name": bad["model_name"],
        "build_kind": bad["build_kind"],
    }


def change_rows(pts: pd.DataFrame, found: Sequence[Found]) -> pd.DataFrame:
    rows = []
    for f in found:
        good, bad, s = pts.iloc[f.good], pts.iloc[f.bad], f.shift
        good_git, bad_git = str(good["torch_git"] or ""), str(bad["torch_git"] or "")
        same = not (good_git and bad_git and good_git != bad_git)
        url = "" if same else COMPARE_URL.format(good=good_git, bad=bad_git)
        good_run = good["run_dir"] or f"results/{good['run_id']}"
        rows.append(
            {
                **{k: bad[k] for k in SERIES_KEY},
                "metric": f.metric,
                "last_good_date": good["date"],
                "first_bad_date": bad["date"],
                "last_good_git": good_git,
                "first_bad_git": bad_git,
                "commit_range_url": url,
                "change_pct": 100 * s.change,
                "change_ci_low_pct": 100 * s.low,
                "change_ci_high_pct": 100 * s.high,
                "direction": direction(f.metric, s.change),
                "confirm_command": confirm_command(bad, good["date"], bad["date"], good_run),
                "confirmed": f.confirmed,
                "p_value": s.p_value,
                "last_good_torch": good["torch_version"],
                "first_bad_torch": bad["torch_version"],
                "last_good_build_line": good["build_line"],
                **nights_of(good, bad),
            }
        )
    frame = pd.DataFrame(rows, columns=[*CHANGE_COLUMNS, "confirmed", "p_value", "last_good_torch",
                                        "first_bad_torch", "last_good_build_line",
                                        *NIGHT_EXTRAS])  # fmt: skip
    frame["nightly"] = frame["nightly"].astype(bool)
    for col in ("last_good_date", "first_bad_date", "last_good_run_date", "first_bad_run_date"):
        frame[col] = frame[col].astype("datetime64[ns]")
    for col in ("change_pct", "change_ci_low_pct", "change_ci_high_pct", "p_value"):
        frame[col] = frame[col].astype(float)
    frame["batch_size"] = frame["batch_size"].astype("int64")
    frame["confirmed"] = frame["confirmed"].astype(bool)
    return frame


def all_changes(
    pts: pd.DataFrame, rule: Rule | None = None, cache: ChangeCache | None = None
) -> pd.DataFrame:
    """Every change point of every track (confirmed and pending), in track then date order;
    `cache`: as find_changes takes it."""
    rule = rule or (cache.rule if cache is not None else Rule())
    found = sorted(find_changes(pts, rule, cache), key=lambda f: (f.bad, METRICS.index(f.metric)))
    return change_rows(pts, found)
