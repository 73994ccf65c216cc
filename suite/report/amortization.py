"""The amortization plot, per GPU, setup, build, batch size and compile mode: the time n
inferences take, compile included, against n, for eager, compiled after a cold compile and
after a warm one (and a mega-cache one where measured), one panel per model, with the
break-even points marked (PNG, matplotlib Agg, no pyplot state).

Time of n calls: eager n x its median; compiled the compile seconds + n x its median (the
paired medians of the compiled cell's process, as `breakeven_calls` uses): the lines cross at
the break-even. Both axes are logarithmic, so a compile of minutes and calls of milliseconds
show on one picture.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from suite.report.measurement import Measurement
from suite.report.study import Study
from suite.report.tables.cells import TRAIN
from suite.report.tables.compile_cost import CostGroup, table_name
from suite.report.tables.compile_vs_eager import CompileGroup, compile_groups
from suite.report.tables.table import gpu_stem, group_stem
from suite.results import STATUS_WORDS
from suite.stats import breakeven_calls

EAGER_COLOR = "#6b7785"
COLD_COLOR = "#1f77b4"
WARM_COLOR = "#2ca02c"
MEGA_COLOR = "#9467bd"
FAIL_COLOR = "#b00020"
COLUMNS = 4
# the compiled lines, in the order of the row's figures compile_s, compile_warm_s, compile_megacache_s
LEGEND: tuple[tuple[str, str, str], ...] = (
    ("compiled: cold compile", COLD_COLOR, "-"),
    ("compiled: warm compile", WARM_COLOR, "--"),
    ("compiled: mega-cache", MEGA_COLOR, ":"),
)
# a label stays readable where a line runs under it
LABEL_BOX = {"boxstyle": "round,pad=0.15", "facecolor": "white", "edgecolor": "none", "alpha": 0.85}
MIN_WIDTH_IN = 10.0  # the title and the legend need this much, even for one panel
# where each line's break-even label goes (points from the marker): cold up-left; mega-cache
# down-right; warm, whose point is lower (it compiles fastest), further down-right, so that labels
# of nearby points (warm and mega-cache often are, cold and mega-cache on torch without a
# working mega-cache) do not overlap
LABEL_OFFSETS: tuple[tuple[tuple[int, int], str], ...] = (
    ((-5, 6), "right"),
    ((5, -22), "left"),
    ((5, -12), "left"),
)


@dataclass(frozen=True)
class Lines:
    """One panel's lines: (label, compile seconds, ms per call, color, style)."""

    eager_ms: float
    compiled_ms: float
    compiles: tuple[tuple[str, float, str, str], ...]

    def breakeven(self, compile_s: float) -> float | None:
        return breakeven_calls(compile_s, self.eager_ms, self.compiled_ms)


def lines_of(m: Measurement) -> Lines | None:
    """The lines of a compiled cell's row; None when it has no paired medians."""
    if not m.ok or m.eager_median_ms is None or m.median_ms is None or m.compile_s is None:
        return None
    figures = (m.compile_s, m.compile_warm_s, m.compile_megacache_s)
    compiles = tuple(
        (label, s, color, style)
        for (label, color, style), s in zip(LEGEND, figures, strict=True)
        if s is not None
    )
    return Lines(m.eager_median_ms, m.median_ms, compiles)


def _panel(ax: Axes, title: str, m: Measurement | None, per: str) -> None:
    ax.set_title(title, fontsize=8)
    lines = lines_of(m) if m is not None else None
    if lines is None:
        why = "not measured" if m is None else (STATUS_WORDS[m.status] if not m.ok else "no paired medians")
        ax.text(0.5, 0.5, why, ha="center", va="center", color=FAIL_COLOR, transform=ax.transAxes, fontsize=9)
        ax.set_xticks([])
        ax.set_yticks([])
        return
    points = [b for _, c, _, _ in lines.compiles if (b := lines.breakeven(c)) is not None]
    top = max([100.0, *(10 * p for p in points)])
    n = [top ** (i / 199) for i in range(200)]  # 1 .. top, evenly on the log axis
    ax.plot(n, [x * lines.eager_ms / 1000.0 for x in n], color=EAGER_COLOR, lw=1.5)
    for i, (_, compile_s, color, style) in enumerate(lines.compiles):
        ax.plot(n, [compile_s + x * lines.compiled_ms / 1000.0 for x in n], color=color, ls=style, lw=1.5)
        point = lines.breakeven(compile_s)
        if point is not None:
            ax.plot([point], [point * lines.eager_ms / 1000.0], "o", color=color, ms=5, zorder=3)
            (dx, dy), ha = LABEL_OFFSETS[i % len(LABEL_OFFSETS)]
            ax.annotate(
                f"{point:,.0f}",
                (point, point * lines.eager_ms / 1000.0),
                textcoords="offset points",
                xytext=(dx, dy),
                ha=ha,
                fontsize=7,
                color=color,
                bbox=LABEL_BOX,
            )
    if not points:
        ax.text(  # bottom right: clear of the flat compiled lines and of eager's, which starts low left
            0.97,
            0.05,
            f"compiled not faster per {per}:\nnever pays off",
            ha="right",
            va="bottom",
            fontsize=7,
            color=FAIL_COLOR,
            transform=ax.transAxes,
            bbox=LABEL_BOX,
        )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.grid(which="major", alpha=0.3)
    ax.tick_params(labelsize=7)


def plot_amortization(study: Study, g: CompileGroup, path: Path) -> Path:
    """One panel per model of the group; returns `path`."""
    per = "training step" if g.setup.scenario == TRAIN else "inference"
    models = [(task, model) for task, model in study.models if study.get(g.key(task, model)) is not None]
    cols = min(COLUMNS, max(1, len(models)))
    rows = math.ceil(len(models) / cols)
    fig = Figure(figsize=(max(MIN_WIDTH_IN, 3.2 * cols), 2.6 * rows + 1.6), layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False)
    cells = [study.get(g.key(task, model)) for task, model in models]
    for i, (ax, (task, model), m) in enumerate(zip(axes.flat, models, cells, strict=False)):
        _panel(ax, study.model_label(task, model), m, per)
        if i >= len(models) - cols:  # the bottom panel of its column
            ax.set_xlabel(f"{per}s n (log)", fontsize=8)
        if i % cols == 0:
            ax.set_ylabel("seconds (log)", fontsize=8)
    for ax in list(axes.flat)[len(models) :]:
        ax.set_axis_off()
    fig.suptitle(
        f"When does torch.compile pay off? Time of n {per}s, compile included\n"
        f"{g.gpu.label} · {study.torch_label(g.build)} · batch size {g.batch_size} · mode {g.mode} · "
        f"setup: {g.setup.label}",
        fontsize=10,
    )
    drawn_lines = [one for m in cells if m is not None and (one := lines_of(m))]
    drawn = {label for one in drawn_lines for label, *_ in one.compiles}
    handles = [Line2D([], [], color=EAGER_COLOR, lw=1.5, label="eager: n x median")]
    handles += [
        Line2D([], [], color=color, lw=1.5, ls=style, label=f"{label} + n x median")
        for label, color, style in LEGEND
        if label in drawn
    ]
    if any(one.breakeven(c) is not None for one in drawn_lines for _, c, *_ in one.compiles):
        handles.append(
            Line2D(
                [], [], color="black", marker="o", ls="none", label=f"break-even: {per}s until compiling pays"
            )
        )
    fig.legend(handles=handles, loc="outside lower center", ncols=3, fontsize=8)
    fig.savefig(path, dpi=110)
    return path


def amortization_plots(study: Study, folder: Path) -> dict[str, list[Path]]:
    """Every group's plot, written to `folder`, by the compile-cost table it belongs to."""
    out: dict[str, list[Path]] = {}
    for g in compile_groups(study):  # the compile-vs-eager tables' groups
        cost = CostGroup(g.gpu, g.setup, g.build, g.mode)
        stem = group_stem(study, gpu_stem(g.gpu), g.build, g.mode, setup=g.setup)
        path = plot_amortization(study, g, folder / f"{stem}__amortization-bs{g.batch_size}.png")
        out.setdefault(table_name(study, cost), []).append(path)
    return out
