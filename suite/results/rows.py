"""What the CSV contract does with a row: how each value is written (`format_value`,
`format_cell`: a measured NaN stays `nan`; `one_line`: redacted, one line; the `stop_rule`
column's text), the raw CSV's file name, a row's resume key and which row of a cell is kept
when there are several (`one_per_cell`: the merge's and the resume's rule). The columns and
statuses themselves: suite.results.columns. Imported inside the containers: standard library
only.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from suite.redact import redact
from suite.results.columns import KEY_COLUMNS, NONFINITE_COLUMNS, OK


def stop_rule_text(rule: str, calls: int, min_calls: int, ci_target_pct: float, max_s: float) -> str:
    """The `stop_rule` column: a fixed rule by its calls, a CI rule by its target and limits."""
    if rule == "fixed":
        return f"fixed, {calls} calls"
    return f"{rule} {ci_target_pct:g}%, {min(min_calls, calls)}-{calls} calls, {max_s:g} s"


_SLUG_RE = re.compile(r"[^a-z0-9.]+")


def slug(text: str) -> str:
    """A file-name-safe lower-case token ("NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3")."""
    return _SLUG_RE.sub("-", text.lower()).strip("-") or "unknown"


def raw_csv_name(build: str, device: str, shard: str = "") -> str:
    """`<build>__<device>.csv`, plus `__shard-i-of-n` for a sharded run (`__shard-i-of-n-k-of-m`
    for part k of m of shard i of n: one container per GPU on a machine of a fan-out)."""
    name = f"{slug(build)}__{slug(device)}"
    if shard:
        parts = [part.split("/") for part in shard.split(",")]
        name += "__shard-" + "-".join(f"{i}-of-{n}" for i, n in parts)
    return name + ".csv"


def format_value(value: object) -> str:
    """Plain text for a CSV cell: empty for None/NaN, short floats, one-line strings."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return ""
        return f"{value:.6g}" if abs(value) < 1e6 else f"{value:.1f}"
    return one_line(str(value))


def format_cell(column: str, value: object) -> str:
    """`format_value`, but a `nonfinite` column's NaN or infinity reads `nan`, `inf`: compiled
    outputs that turned NaN must not read as "not measured"."""
    if column in NONFINITE_COLUMNS and isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return format_value(value)


def one_line(text: str, limit: int = 300) -> str:
    """Collapse whitespace so a reason never breaks the row; cap its length. Secrets are
    redacted first (suite.redact), so a cut can never leave half a token behind."""
    flat = " ".join(redact(text).split())
    return flat if len(flat) <= limit else flat[: limit - 3] + "..."


def key_of(row: Mapping[str, object]) -> tuple[str, ...]:
    """The resume key of a row (or of a cell's row-to-be), as strings."""
    return tuple(format_value(row.get(col)) for col in KEY_COLUMNS)


def one_per_cell(
    rows: Sequence[Mapping[str, object]], columns: Sequence[str]
) -> tuple[list[int], list[tuple[int, int]]]:
    """Which row of a cell to keep when it has several (the same cell in two runs, a row
    recorded twice): an ok row beats a failed one, then the later `started_at`, then the
    later row. The merge (suite.report.load, cells across runs) and the resume
    (suite.run.resume, cells of one raw CSV) both decide with this; `columns` say what one
    cell is. Returns the kept rows' indices in input order, and (dropped, kept instead)
    index pairs in the order of the rule (least preferred first)."""

    def rank(i: int) -> tuple[bool, str, int]:
        return rows[i].get("status") == OK, str(rows[i].get("started_at") or ""), i

    best: dict[tuple[object, ...], int] = {}
    for i, row in enumerate(rows):
        key = tuple(row.get(c) for c in columns)
        if key not in best or rank(i) > rank(best[key]):
            best[key] = i
    kept = sorted(best.values())
    winner = {i: best[tuple(row.get(c) for c in columns)] for i, row in enumerate(rows)}
    dropped = sorted((i for i in winner if winner[i] != i), key=rank)
    return kept, [(i, winner[i]) for i in dropped]
