"""Like with like: the settings two rows of one cell were measured under, and where they differ.

A cell is matched across runs on its key (suite.results.CELL_COLUMNS); what else changes its
figures (the compile cache, the allocator, the processes, the stopping rule, the warm-up, the
threads, the image, ...) is the settings group of the CSV contract (`SETTING_COLUMNS`, from the
`setting` flag of suite.results.columns.TABLE). Two rows are comparable when every setting that
both record is the same; a setting one of them does not record (a CSV from before the column, a
timing setting emptied on a failed row) cannot tell them apart and is only counted, so the report
can say which settings it could not check. `compare`, `calibrate` and the history all decide with
`differences`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from suite.results import OK
from suite.results.columns import SETTING_COLUMNS

STOP_RULE = "stop_rule"
CI_WORDS = ("ci", "max_calls", "max_seconds")  # stop_reason under the CI rule
MISSING = ("", "nan", "<na>", "none", "nat")
CI_UNRECORDED = "ci (limits unrecorded)"  # an older row's CI rule: its target and limits unknown


@dataclass(frozen=True)
class SettingDiff:
    """One setting two rows of a cell differ in: its column, base's value, new's."""

    name: str
    base: str
    new: str

    def text(self) -> str:
        return f"{self.name} {self.base} -> {self.new}"


def _text(value: object) -> str:
    """A value as one comparable string: empty for None / NaN / "", numbers in one form
    ("2", "2.0" and 2 alike; 0.001 and "0.001" alike)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    text = str(value).strip()
    if text.lower() in MISSING:  # pandas' NA and NaN, as a frame or a store gives them
        return ""
    try:
        number = float(text)
    except ValueError:
        return text
    return str(int(number)) if number.is_integer() else f"{number:.6g}"


def stop_rule_of(row: Mapping[str, object]) -> str:
    """The stopping rule a row was timed under: its `stop_rule` column, else what older rows
    say of it: `stop_reason` fixed with its calls per process, a CI reason as CI_UNRECORDED, and
    an ok row from before the stopping rule (no `stop_reason`) as fixed with its `iterations`.
    "" where nothing says."""
    text = _text(row.get(STOP_RULE))
    if text:
        return text
    reason = _text(row.get("stop_reason"))
    if reason in CI_WORDS:
        return CI_UNRECORDED
    iterations = _text(row.get("iterations"))
    if not iterations or (not reason and _text(row.get("status")) != OK):
        return ""
    processes = int(_text(row.get("processes")) or "1")
    per_process = int(float(iterations)) // max(processes, 1)
    return f"fixed, {per_process} calls" if reason in ("fixed", "") else ""


def settings_of(row: Mapping[str, object]) -> dict[str, str]:
    """Every setting of a row (a CSV row, a typed frame row, a stored night's), "" where not
    recorded. An ok row's empty `processes` is 1 (the column is empty with one process)."""
    out = {name: stop_rule_of(row) if name == STOP_RULE else _text(row.get(name)) for name in SETTING_COLUMNS}
    if not out.get("processes") and _text(row.get("status")) == OK:
        out["processes"] = "1"
    return out


def _same(name: str, base: str, new: str) -> bool:
    if base == new:
        return True
    # a CI rule whose limits an older row did not record is the same rule as far as it says
    unknown = CI_UNRECORDED in (base, new)
    return name == STOP_RULE and unknown and base.split(" ")[0] == new.split(" ")[0] == "ci"


def differences(base: Mapping[str, str], new: Mapping[str, str]) -> tuple[SettingDiff, ...]:
    """The settings both rows record with different values (`settings_of` of each)."""
    return tuple(
        SettingDiff(name, base[name], new[name])
        for name in SETTING_COLUMNS
        if base.get(name) and new.get(name) and not _same(name, base[name], new[name])
    )


def unrecorded(base: Mapping[str, str], new: Mapping[str, str]) -> tuple[str, ...]:
    """The settings exactly one of the rows records: they could not be checked."""
    return tuple(name for name in SETTING_COLUMNS if bool(base.get(name)) != bool(new.get(name)))
