"""How a table cell's value reads (suite.report.tables.cells says what a cell holds): in
Markdown, `md_cell`, and in the CSV, `csv_cells` (plain numbers in their own columns, failures
as words); one small function per kind of column, in a table of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from suite.report import moved
from suite.report.reference import GuideFigure
from suite.report.tables.cells import (
    DAGGER,
    GUIDE_ERRATUM,
    NOT_MEASURED,
    SECTION,
    Dur,
    Dyn,
    Gain,
    Mb,
    Ms,
    Qty,
    improvement_pct,
)
from suite.results import OOM, STATUS_WORDS


def fmt_ms(value: float) -> str:
    return f"{value:.3f}"


def fmt_factor(gain: Gain) -> str:
    text = f"{gain.factor:.2f}x"
    if gain.low is not None and gain.high is not None:
        text += f" [{gain.low:.2f}, {gain.high:.2f}]"
    return text


def _ms_md(value: Ms) -> str:
    if value.m is None:
        return NOT_MEASURED
    if not value.m.ok:
        return STATUS_WORDS[value.m.status]
    assert value.m.mean_ms is not None
    mark = f" {DAGGER}" if value.compiled and value.m.accuracy_failed else ""
    return fmt_ms(value.m.mean_ms) + mark


def _dur_md(value: Dur) -> str:
    if value.ms is None:
        return value.word or NOT_MEASURED
    return fmt_ms(value.ms) + (f" {value.marks}" if value.marks else "")


def _gain_md(value: Gain | str | None) -> str:
    if value is None:
        return NOT_MEASURED
    if isinstance(value, str):
        return value
    marks = (DAGGER if value.flagged else "") + (SECTION if value.unhealthy else "")
    return f"{value.pct:.1f}% · {fmt_factor(value)}" + (f" {marks}" if marks else "")


def _mb_md(value: Mb) -> str:
    if value.m is None:
        return NOT_MEASURED
    if not value.m.ok:
        return STATUS_WORDS[value.m.status]
    return NOT_MEASURED if value.m.peak_mem_mb is None else f"{value.m.peak_mem_mb:.0f}"


def _qty_md(value: Qty) -> str:
    if value.m is not None and not value.m.ok:
        return STATUS_WORDS[value.m.status]
    if value.value is None:
        return value.text or NOT_MEASURED
    return f"{value.value:,.{value.digits}f}{value.mark}"


def _factor_md(value: moved.Factor | str | None) -> str:
    """A ratio with its interval (suite.report.moved), or a failure word."""
    if value is None:
        return NOT_MEASURED
    return value if isinstance(value, str) else moved.fmt(value)


def _guide_md(value: GuideFigure | None) -> str:
    if value is None:
        return NOT_MEASURED
    if value.erratum:
        return GUIDE_ERRATUM
    if value.speedup is None:
        return STATUS_WORDS[OOM]  # the guide ran out of memory there
    return f"{improvement_pct(value.speedup):.1f}% · {value.speedup:.2f}x"


# A column's kind -> how its value reads in Markdown (a kind not here: str(value)).
MD_CELLS: dict[str, Callable[[Any], str]] = {
    "ms": _ms_md,
    "dur": _dur_md,
    "gain": _gain_md,
    "mb": _mb_md,
    "dyn": lambda value: _dyn_md(value),
    "qty": _qty_md,
    "factor": _factor_md,
    "guide": _guide_md,
}


_TYPES: dict[str, type | tuple[type, ...]] = {
    "ms": Ms, "dur": Dur, "mb": Mb, "dyn": Dyn, "qty": Qty, "gain": (Gain, str, type(None)),
    "guide": (GuideFigure, type(None)),
}  # fmt: skip


def md_cell(kind: str, value: object) -> str:
    """How a value reads in Markdown."""
    if kind not in MD_CELLS:
        return str(value)
    assert isinstance(value, _TYPES.get(kind, object))
    return MD_CELLS[kind](value)


def _ms_csv(name: str, value: Ms) -> dict[str, object]:
    m = value.m
    if m is None:
        return {name: ""}
    return {name: m.mean_ms if m.ok else STATUS_WORDS[m.status]}


def _dur_csv(name: str, value: Dur) -> dict[str, object]:
    return {name: value.ms if value.ms is not None else value.word}


def _mb_csv(name: str, value: Mb) -> dict[str, object]:
    m = value.m
    if m is None:
        return {name: ""}
    return {name: (m.peak_mem_mb if m.peak_mem_mb is not None else "") if m.ok else STATUS_WORDS[m.status]}


def _qty_csv(name: str, value: Qty) -> dict[str, object]:
    if value.m is not None and not value.m.ok:
        return {name: STATUS_WORDS[value.m.status]}
    # plain numbers: "never" stays in the Markdown (the note says so); the CSV column stays numeric
    return {name: "" if value.value is None else round(value.value, 4)}


def _gain_csv(name: str, value: object) -> dict[str, object]:
    pre = f"{name} " if name else ""
    out: dict[str, object] = {f"{pre}{c}": "" for c in ("improvement %", "speed-up", "CI low", "CI high")}
    if isinstance(value, str):
        out[f"{pre}speed-up"] = value
    elif isinstance(value, Gain):
        out[f"{pre}improvement %"] = round(value.pct, 2)
        out[f"{pre}speed-up"] = round(value.factor, 4)
        out[f"{pre}CI low"] = "" if value.low is None else round(value.low, 4)
        out[f"{pre}CI high"] = "" if value.high is None else round(value.high, 4)
    return out


def _factor_csv(name: str, value: object) -> dict[str, object]:
    out: dict[str, object] = {name: "", f"{name} CI low": "", f"{name} CI high": ""}
    if isinstance(value, str):
        out[name] = value
    elif isinstance(value, moved.Factor):
        out[name] = round(value.value, 4)
        out[f"{name} CI low"] = "" if value.low is None else round(value.low, 4)
        out[f"{name} CI high"] = "" if value.high is None else round(value.high, 4)
    return out


def _guide_csv(name: str, value: object) -> dict[str, object]:
    out: dict[str, object] = {
        f"{name} without torch.compile": "", f"{name} with torch.compile": "", f"{name} speed-up": ""
    }  # fmt: skip
    if not isinstance(value, GuideFigure):
        return out
    if value.erratum:
        out[f"{name} speed-up"] = GUIDE_ERRATUM
    elif value.speedup is None:
        out.update({k: STATUS_WORDS[OOM] for k in out})
    else:
        out[f"{name} without torch.compile"] = value.eager_ms
        out[f"{name} with torch.compile"] = value.compiled_ms
        out[f"{name} speed-up"] = round(value.speedup, 4)
    return out


# A column's kind -> its CSV columns: plain numbers in their own columns, failures as words
# (a kind not here: the value in the one column).
CSV_CELLS: dict[str, Callable[[str, Any], dict[str, object]]] = {
    "ms": _ms_csv,
    "dur": _dur_csv,
    "mb": _mb_csv,
    "dyn": lambda name, value: _dyn_csv(name, value),
    "qty": _qty_csv,
    "gain": _gain_csv,
    "factor": _factor_csv,
    "guide": _guide_csv,
}


def csv_cells(name: str, kind: str, value: object) -> dict[str, object]:
    """How a value reads in the CSV: plain numbers in their own columns, failures as words."""
    if kind not in CSV_CELLS:
        return {name: value}
    if kind in ("ms", "dur", "mb", "dyn", "qty"):
        assert isinstance(value, _TYPES[kind])
    return CSV_CELLS[kind](name, value)


def _dyn_md(value: Dyn) -> str:
    """`18.0 s · 1 · 1.047 ms · 33.89x` (compile, recompiles, compiled median, speed-up), or totals."""
    m = value.m
    if m is None:
        if value.total_s is None:
            return NOT_MEASURED
        graphs = "" if value.total_recompiles is None else f" · {value.total_recompiles:.0f}"
        return f"{value.total_s:.1f} s{graphs}"
    if not m.ok:
        return STATUS_WORDS[m.status]
    parts = [
        NOT_MEASURED if m.compile_s is None else f"{m.compile_s:.1f} s",
        NOT_MEASURED if m.recompiles is None else f"{m.recompiles:.0f}",
        NOT_MEASURED if m.median_ms is None else fmt_ms(m.median_ms) + " ms",
        NOT_MEASURED if m.speedup is None else f"{m.speedup:.2f}x",
    ]
    return " · ".join(parts) + (f" {DAGGER}" if m.accuracy_failed else "")


def _dyn_csv(name: str, value: Dyn) -> dict[str, object]:
    m = value.m
    out: dict[str, object] = {f"{name} {c}": "" for c in ("compile s", "recompiles", "median ms", "speed-up")}
    if m is None:
        out[f"{name} compile s"] = "" if value.total_s is None else round(value.total_s, 4)
        out[f"{name} recompiles"] = "" if value.total_recompiles is None else value.total_recompiles
    elif not m.ok:
        out[f"{name} median ms"] = STATUS_WORDS[m.status]
    else:
        for col, v in (
            ("compile s", m.compile_s),
            ("recompiles", m.recompiles),
            ("median ms", m.median_ms),
            ("speed-up", m.speedup),
        ):
            out[f"{name} {col}"] = "" if v is None else round(v, 4)
    return out
