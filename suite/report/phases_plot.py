"""The stacked-bar picture of a compile-phases table (suite.report.tables.phases): per row, the
first compiled call's seconds by phase (torch's accounting), what is left of compile_s beside
them (hatched), compile_s marked, and the CUDA graphs recorded after the first call (outside
compile_s) in a hatched bar of their own beyond it. PNG, matplotlib Agg, no pyplot state.
"""

from __future__ import annotations

from pathlib import Path

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from suite.measure.phases import OTHER, PHASE_COLUMNS, PHASES
from suite.report.study import Study
from suite.report.tables.phases import PHASE_LABELS, Entry, Group, entries, group_name
from suite.report.tables.table import Table
from suite.results import STATUS_WORDS

COLORS: dict[str, str] = {
    "dynamo": "#1f77b4",
    "pre_aot": "#aec7e8",
    "aot": "#ff7f0e",
    "lowering": "#2ca02c",
    "codegen": "#98df8a",
    "kernels": "#d62728",
    "autotune": "#9467bd",
    "cudagraphs": "#8c564b",
}
OTHER_COLOR = "#7f7f7f"
LATER_COLOR = "#e377c2"
FAIL_COLOR = "#b00020"
BAR = 0.6


def plot_phases(study: Study, g: Group, rows: list[Entry], path: Path) -> Path:
    """One horizontal stacked bar per row of the group; returns `path`."""
    fig = Figure(figsize=(11, 2.2 + 0.45 * len(rows)), layout="constrained")
    ax = fig.add_subplot()
    labels = []
    for y, e in enumerate(rows):
        m = e.m
        labels.append(f"{e.label} · bs {e.batch_size}")
        if not m.ok or m.compile_s is None:
            why = STATUS_WORDS[m.status] if not m.ok else "no compile time"
            ax.text(0, y, f" {why}", va="center", color=FAIL_COLOR, fontsize=8)
            continue
        left = 0.0
        shown = [(name, m.more.get(column)) for name, column, _ in PHASES]
        if all(v is None for _, v in shown):
            note = str(m.more.get("phase_note") or "no phases")
            ax.text(0, y, f" {note}", va="center", color=FAIL_COLOR, fontsize=7)
        for name, seconds in shown:
            if seconds:
                ax.barh(y, seconds, BAR, left=left, color=COLORS[name])
                left += seconds
        other = m.more.get(OTHER)
        if other is not None and other > 0:
            ax.barh(y, other, BAR, left=left, color="white", edgecolor=OTHER_COLOR, hatch="///")
        later = (m.more.get("cudagraph_record_s") or 0.0) - (m.more.get("phase_cudagraphs_s") or 0.0)
        if later > 0:
            ax.barh(y, later, BAR, left=m.compile_s, color="white", edgecolor=LATER_COLOR, hatch="xx")
        ax.plot([m.compile_s, m.compile_s], [y - BAR / 2 - 0.08, y + BAR / 2 + 0.08], color="black", lw=1.5)
    ax.set_yticks(range(len(rows)), labels, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds of the first compiled call", fontsize=9)
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    handles = [Patch(color=COLORS[n], label=PHASE_LABELS[n]) for n, _, _ in PHASES]
    handles.append(
        Patch(
            facecolor="white", edgecolor=OTHER_COLOR, hatch="///", label="other (outside torch's accounting)"
        )
    )
    handles.append(
        Patch(
            facecolor="white",
            edgecolor=LATER_COLOR,
            hatch="xx",
            label="CUDA graphs recorded after the first call",
        )
    )
    handles.append(Line2D([], [], color="black", lw=1.5, label="compile_s"))
    fig.legend(handles=handles, loc="outside lower center", ncols=4, fontsize=8)
    fig.suptitle(
        f"Where the compile goes · {g.gpu.label} · {study.torch_label(g.build)} · mode {g.mode}\n"
        f"setup: {g.setup.label}",
        fontsize=10,
    )
    fig.savefig(path, dpi=110)
    return path


def phase_plots(study: Study, tables: list[Table], folder: Path) -> dict[str, list[Path]]:
    """Every compile-phases table's picture, written to `folder`, by the table it belongs to; none
    for a group whose rows have no phase at all (an older CSV, a build without the accounting)."""
    names = {t.name for t in tables if t.section == "compile phases"}
    out: dict[str, list[Path]] = {}
    for g, rows in entries(study).items():
        name = group_name(study, "compile-phases", g)
        if name in names and any(e.m.more.get(c) is not None for e in rows for c in PHASE_COLUMNS):
            stem = name.removeprefix("compile-phases__")
            out[name] = [plot_phases(study, g, rows, folder / f"{stem}__compile-phases.png")]
    return out
