"""The run page's data, read off what the merge already built: its tables (each cell's durations,
speed-up, compile cost and guide figure, as `suite.report.tables` computed them) and its study
(each cell's status, error and health). Nothing here recomputes a figure of a table.

Host side only. The page's script (static/run.js) draws this object; its keys are this
module's contract with that script (docs/pages.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite import __version__
from suite.report.load import Loaded
from suite.report.pages.run_problems import health_flags, problems
from suite.report.reference import GuideFigure, Reference
from suite.report.study import EAGER, CellKey, Gpu, Setup, Study
from suite.report.tables.cellformat import md_cell
from suite.report.tables.cells import (
    DOUBLE_DAGGER,
    FAILURE_WORDS,
    LEGEND,
    Dur,
    Gain,
    Qty,
    improvement_pct,
)
from suite.report.tables.table import Column, Table
from suite.results import STATUS_WORDS

MISSING = "missing"  # a cell with no row at all (its job failed, or its shard's rows were lost)


@dataclass(frozen=True)
class RunReport:
    """What the merge built that the page shows."""

    loaded: Loaded
    study: Study
    kinds_note: str
    tables: Sequence[Table]
    reference: Reference
    plot_links: dict[str, list[Path]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not any(t.section == "summary" for t in self.tables):
            raise ValueError("the merge's tables lack the summary")


# --- one table value as JSON ------------------------------------------------------------------


def dur_json(d: Dur) -> dict[str, Any]:
    return {"ms": d.ms, "lo": d.low, "hi": d.high, "word": d.word, "marks": d.marks}


def gain_json(g: object) -> dict[str, Any] | None:
    """A speed-up or ratio: its factor, CI, % and marks; a failure's word; None: not measured."""
    if g is None:
        return None
    if isinstance(g, str):
        return {"word": g}
    assert isinstance(g, Gain)
    return {
        "x": g.factor,
        "lo": g.low,
        "hi": g.high,
        "pct": g.pct,
        "accuracy_failed": g.flagged,
        "unhealthy": g.unhealthy,
    }


def qty_json(q: object) -> dict[str, Any] | None:
    """A number of a row (seconds, calls): its value, or the failure's word, or what empty means."""
    if not isinstance(q, Qty):
        return None
    word = STATUS_WORDS[q.m.status] if q.m is not None and not q.m.ok else ""
    return {"v": q.value, "word": word, "text": q.text, "mark": q.mark}


def guide_json(f: object) -> dict[str, Any] | None:
    if not isinstance(f, GuideFigure):
        return None
    return {
        "table": f.table,
        "build": f.build,
        "x": f.speedup,
        "pct": None if f.speedup is None else improvement_pct(f.speedup),
        "eager_ms": f.eager_ms,
        "compiled_ms": f.compiled_ms,
        "erratum": f.erratum,
        "oom": f.speedup is None and not f.erratum,
    }


def _value(table: Table, row: list[object], csv: str) -> object:
    """A row's value in the column of that CSV name (None if the table has no such column)."""
    for column, value in zip(table.columns, row, strict=True):
        if column.csv == csv:
            return value
    return None


def _of_kind(table: Table, kind: str) -> list[int]:
    return [i for i, c in enumerate(table.columns) if c.kind == kind]


def _key(context: dict[str, object], **override: object) -> CellKey:
    """The study's key of a table row (its CSV-only context columns name the cell)."""
    c = {**context, **override}
    return CellKey(
        build=str(c["build"]),
        gpu=Gpu(str(c["device"]), str(c["GPU"])),
        setup=Setup(
            str(c["dtype"]),
            str(c["scenario"]),
            str(c["weights"]),
            str(c["variant"]),
            str(c.get("malloc", "")),
            str(c.get("TF32", "")),
        ),
        task=str(c["task"]),
        model=str(c["model"]),
        batch_size=int(c["batch size"]),  # type: ignore[call-overload]
        mode=str(c["mode"]),
    )


# --- the sections -----------------------------------------------------------------------------


def compile_cells(report: RunReport) -> list[dict[str, Any]]:
    """One record per row of the compile-vs-eager tables (inference and training)."""
    study = report.study
    out = []
    for table in report.tables:
        if table.section not in ("compile vs eager", "train compile vs eager"):
            continue
        guide_header = next((c.md.removeprefix("guide: ") for c in table.columns if c.kind == "guide"), "")
        for context, row in zip(table.context, table.rows, strict=True):
            key = _key(context)
            compiled = study.cells.get(key)
            eager = study.cells.get(_key(context, mode=EAGER))
            e_dur, c_dur = (row[i] for i in _of_kind(table, "dur")[:2])
            assert isinstance(e_dur, Dur) and isinstance(c_dur, Dur)
            means = [row[i] for i in _of_kind(table, "ms")]
            out.append(
                {
                    "gpu": key.gpu.label,
                    "setup": key.setup.label,
                    "build": key.build,
                    "kind": study.kind(key.build),
                    "task": key.task,
                    "model": key.model,
                    "label": study.model_label(key.task, key.model),
                    "bs": key.batch_size,
                    "mode": key.mode,
                    "table": table.name,
                    "eager": dur_json(e_dur),
                    "compiled": dur_json(c_dur),
                    "paired": DOUBLE_DAGGER not in e_dur.marks,
                    "speedup": gain_json(_value(table, row, "")),
                    "compile_s": qty_json(_value(table, row, "compile s")),
                    "breakeven": qty_json(_value(table, row, "break-even calls")),
                    "guide": guide_json(_value(table, row, "guide")),
                    "guide_table": guide_header,
                    "means": [md_cell("ms", m) for m in means],
                    "status": compiled.status if compiled is not None else MISSING,
                    "error": compiled.error if compiled is not None else "",
                    "eager_status": eager.status if eager is not None else MISSING,
                    "eager_error": eager.error if eager is not None else "",
                    "health": health_flags(compiled) or health_flags(eager),
                    "accuracy": compiled.accuracy if compiled is not None else "",
                }
            )
    return out


def build_comparisons(report: RunReport) -> list[dict[str, Any]]:
    """The stable-vs-other tables as chart data: both builds' speed-ups and the other build
    against the stable one, without and with compile, per model and batch size."""
    out = []
    for table in (t for t in report.tables if t.section == "stable vs nightly"):
        gains = _of_kind(table, "gain")
        base, other = table.columns[gains[0]].csv, table.columns[gains[1]].csv
        rule = next((i for i, c in enumerate(table.columns) if c.csv.endswith(": rule")), None)
        rows = [
            {
                **_row_head(context, row),
                "base_speedup": gain_json(row[gains[0]]),
                "other_speedup": gain_json(row[gains[1]]),
                "eager_ratio": gain_json(row[gains[2]]),
                "compiled_ratio": gain_json(row[gains[3]]),
                # which rule judged the two builds: "separate", or the pair's verdict
                "rule": str(row[rule] or "") if rule is not None else "",
            }
            for context, row in zip(table.context, table.rows, strict=True)
        ]
        out.append(_chart(table, rows, ("mode",), base=base, other=other))
    return out


def mode_comparisons(report: RunReport) -> list[dict[str, Any]]:
    """The modes tables as chart data: each compile mode's paired speed-up, side by side."""
    out = []
    for table in (t for t in report.tables if t.section == "compile modes"):
        gains = _of_kind(table, "gain")
        modes = [table.columns[i].csv for i in gains]
        rows = [
            {
                **_row_head(context, row),
                "speedups": {m: gain_json(row[i]) for m, i in zip(modes, gains, strict=True)},
            }
            for context, row in zip(table.context, table.rows, strict=True)
        ]
        out.append(_chart(table, rows, ("build",), modes=modes))
    return out


COST_COLUMNS: tuple[tuple[str, str], ...] = (
    ("cold", "compile cold s"),
    ("warm", "compile warm s"),
    ("megacache", "compile mega-cache s"),
    ("first_eager", "first result eager s"),
    ("first_compiled", "first result compiled s"),
    ("breakeven", "break-even calls"),
    ("breakeven_warm", "break-even warm calls"),
)


def cost_groups(report: RunReport) -> list[dict[str, Any]]:
    """The compile-cost tables as chart data: compile seconds (cold, warm, mega-cache) and the
    calls after which compiling pays off, per model and batch size."""
    out = []
    for table in (t for t in report.tables if t.section == "compile cost"):
        rows = [
            {
                **_row_head(context, row),
                **{name: qty_json(_value(table, row, csv)) for name, csv in COST_COLUMNS},
            }
            for context, row in zip(table.context, table.rows, strict=True)
        ]
        plots = [_plot_link(p) for p in report.plot_links.get(table.name, [])]
        out.append(_chart(table, rows, ("build", "mode"), plots=plots))
    return out


def _row_head(context: dict[str, Any], row: Sequence[Any]) -> dict[str, Any]:
    """What every chart's row starts with: its task, its label (the table's first cell), its
    batch size."""
    return {"task": context["task"], "label": row[0], "bs": context["batch size"]}


def _chart(table: Table, rows: list[dict[str, Any]], shared: Sequence[str], **extra: Any) -> dict[str, Any]:
    """A table as one chart's data: its title, name and GPU, the `shared` context its rows have
    in common (their first row's), what else the chart needs, and its rows."""
    first = table.context[0] if table.context else {}
    head = {"title": table.title, "name": table.name, "gpu": _gpu_label(first)}
    return {**head, **{key: first.get(key, "") for key in shared}, **extra, "rows": rows}


def _gpu_label(context: dict[str, object]) -> str:
    return Gpu(str(context.get("device", "")), str(context.get("GPU", ""))).label if context else ""


def _plot_link(path: Path) -> str:
    """A plot's link from tables/ (the page's folder): ../plots/[amortization/]<file>."""
    return (
        f"../plots/{path.parent.name}/{path.name}" if path.parent.name != "plots" else f"../plots/{path.name}"
    )


def table_json(table: Table, plot_links: dict[str, list[Path]]) -> dict[str, Any]:
    """A table as the page shows it: the Markdown cells, as `tables.md` has them, and its files."""
    shown: list[Column] = [c for c in table.columns if c.markdown]
    return {
        "section": table.section,
        "name": table.name,
        "title": table.title,
        "subtitle": table.subtitle,
        "columns": [c.md for c in shown],
        "numeric": [c.kind != "text" for c in shown],
        "rows": table.markdown_rows(),
        "notes": table.notes,
        "plots": [_plot_link(p) for p in plot_links.get(table.name, [])],
    }


def run_data(report: RunReport) -> dict[str, Any]:
    """Everything static/run.js draws."""
    study, loaded = report.study, report.loaded
    runs = sorted({str(r) for r in loaded.frame["run_id"]}) if "run_id" in loaded.frame else []
    cells = compile_cells(report)
    return {
        "meta": {
            "title": "torch.compile benchmark: " + (", ".join(runs) or "merged results"),
            "runs": runs,
            "suite_version": __version__,
            "inputs": [str(f) for f in loaded.files],
            "read": loaded.report(),
            "kinds_note": report.kinds_note,
            "builds": [
                {"name": b, "kind": study.kind(b), "torch": study.torch.get(b, [])} for b in study.builds
            ],
            "gpus": [g.label for g in study.gpus],
            "setups": [s.label for s in study.setups],
            "legend": LEGEND,
            "failure_words": list(FAILURE_WORDS),
            "guide_figures": len(report.reference.figures),
        },
        "filters": {
            "tasks": list(dict.fromkeys(t for t, _ in study.models)),
            "batch_sizes": study.batch_sizes,
            "modes": [m for m in study.modes if m != EAGER],
        },
        "models": [{"task": t, "model": m, "label": study.model_label(t, m)} for t, m in study.models],
        "cells": cells,
        "builds_vs": build_comparisons(report),
        "modes_vs": mode_comparisons(report),
        "cost": cost_groups(report),
        "problems": problems(report.study),
        "tables": [table_json(t, report.plot_links) for t in report.tables],
    }
