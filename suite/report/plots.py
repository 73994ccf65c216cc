"""The guide's plots, per GPU, build, batch size and compile mode (PNG, matplotlib Agg):
duration without and with compile for each model, and the % improvement.

Host side only. Figures are built with `matplotlib.figure.Figure` (no pyplot state), so
plotting works headless and in tests. Every figure says where it ran (GPU), on what (torch
build), at which batch size and mode, and its axes carry units.
"""

from __future__ import annotations

import textwrap
from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import ScalarFormatter

from suite.report.measurement import Measurement, paired_durations
from suite.report.reference import Reference
from suite.report.study import EAGER, Study
from suite.report.tables.cells import DAGGER, TRAIN, improvement_pct
from suite.report.tables.compile_vs_eager import CompileGroup
from suite.results import STATUS_WORDS

EAGER_COLOR = "#9aa5b1"
COMPILED_COLOR = "#1f77b4"
SLOWER_COLOR = "#ff7f0e"
GUIDE_COLOR = "#d62728"
FAIL_COLOR = "#b00020"
LOG_SCALE_RATIO = 30  # durations spanning more than this factor get a log axis
DPI = 110
NOTE_WIDTH = 110  # characters of a line of notes under a plot
DURATION_BAR = 0.38  # height of each of a model's two duration bars
CI_FLOOR_PCT = -100.0  # a CI reaching below -100% (2x slower) is cut there


@dataclass(frozen=True)
class _Row:
    task: str
    model: str
    eager: Measurement | None
    compiled: Measurement | None
    name: str = ""  # Task/Model as the tables show it (custom configurations name their base)

    @property
    def flagged(self) -> bool:
        c = self.compiled
        return c is not None and c.ok and c.accuracy_failed

    @property
    def label(self) -> str:
        return (self.name or f"{self.task}/{self.model}") + (f" {DAGGER}" if self.flagged else "")


def _rows(study: Study, g: CompileGroup) -> list[_Row]:
    rows = []
    for task, model in study.models:
        eager = study.get(g.key(task, model, EAGER))
        compiled = study.get(g.key(task, model))
        if eager is not None or compiled is not None:
            rows.append(_Row(task, model, eager, compiled, study.model_label(task, model)))
    return rows


def _figure(study: Study, g: CompileGroup, what: str, n_rows: int) -> tuple[Figure, Axes]:
    fig = Figure(figsize=(10, 2.4 + 0.5 * n_rows), layout="constrained")
    ax = fig.add_subplot()
    fig.suptitle(
        f"{what}\n{g.gpu.label} · {study.torch_label(g.build)} · batch size {g.batch_size} · "
        f"mode {g.mode}\nsetup: {g.setup.label}",
        fontsize=10,
    )
    ax.grid(axis="x", alpha=0.3)
    ax.set_axisbelow(True)
    return fig, ax


def annotate_failure(ax: Axes, y: float, m: Measurement | None, prefix: str = "") -> None:
    """A failed or missing cell: its status as text at the axis start, never a bar."""
    text = "not measured" if m is None or m.ok else STATUS_WORDS[m.status]
    ax.text(
        0.01, y, prefix + text, va="center", fontsize=8, color=FAIL_COLOR, transform=ax.get_yaxis_transform()
    )


def _xlabel(ax: Axes, label: str, rows: list[_Row], extra: list[str]) -> None:
    notes = [
        *extra,
        *([f"{DAGGER} compiled output failed the accuracy check"] if any(r.flagged for r in rows) else []),
    ]
    lines = textwrap.wrap("; ".join(notes), NOTE_WIDTH)  # a figure's width, not a page's
    ax.set_xlabel("\n".join([label, *lines]), fontsize=9)


def duration_scale(study: Study, g: CompileGroup) -> tuple[float, float, bool] | None:
    """The x range (and whether it is logarithmic) of every duration plot of `g`'s GPU, setup
    and batch size, whatever the build and mode: two builds' plots can be compared by eye.
    None when no such plot has a duration."""
    values: list[float] = []
    for k in study.keys_where(gpu=g.gpu, setup=g.setup, batch_size=g.batch_size):
        if k.mode == EAGER:
            continue
        eager = study.get(k.at(mode=EAGER))
        d = paired_durations(eager, study.cells[k])
        values += [v for v in (d.eager_ms, d.eager_high, d.compiled_ms, d.compiled_high) if v]
        values += [v for v in (d.eager_low, d.compiled_low) if v and v > 0]
    if not values:
        return None
    lo, hi = min(values), max(values)
    if hi / lo > LOG_SCALE_RATIO:
        return lo / 1.5, hi * 3.0, True  # room for the labels right of the longest bar
    return 0.0, hi * 1.18, False


def _duration_bar(ax: Axes, y: float, ms: float, low: float | None, high: float | None, color: str) -> None:
    ax.barh(y, ms, height=DURATION_BAR, color=color)
    if low is not None and high is not None and low <= ms <= high:
        ax.errorbar(ms, y, xerr=[[ms - low], [high - ms]], fmt="none", ecolor="black", capsize=2, lw=0.8)
    ax.text(max(ms, high or ms), y, f" {ms:.3f}", va="center", fontsize=8)


def plot_duration(study: Study, g: CompileGroup, path: Path) -> Path:
    duration_figure(study, g).savefig(path, dpi=DPI)
    return path


def duration_figure(study: Study, g: CompileGroup) -> Figure:
    """Grouped horizontal bars per model: the median duration without and with compile, both
    from the compiled cell's interleaved calls (the pair its speed-up is the ratio of, so this
    plot and the improvement plot agree), with their 95% CIs, on the scale every build of
    this GPU and batch size shares."""
    rows = _rows(study, g)
    step = "training step" if g.setup.scenario == TRAIN else "inference"
    fig, ax = _figure(study, g, f"Median {step} duration without and with torch.compile", len(rows))
    unpaired = no_eager_ci = False
    for i, r in enumerate(rows):
        d = paired_durations(r.eager, r.compiled)
        unpaired = unpaired or (not d.paired and d.eager_ms is not None and d.compiled_ms is not None)
        no_eager_ci = no_eager_ci or (d.paired and d.eager_low is None)
        sides = (
            (
                -DURATION_BAR / 2,
                d.eager_ms,
                d.eager_low,
                d.eager_high,
                d.source_eager,
                EAGER_COLOR,
                "no compile: ",
            ),
            (
                DURATION_BAR / 2,
                d.compiled_ms,
                d.compiled_low,
                d.compiled_high,
                d.source_compiled,
                COMPILED_COLOR,
                "compile: ",
            ),
        )
        for offset, ms, low, high, source, color, name in sides:
            if ms is not None:
                _duration_bar(ax, i + offset, ms, low, high, color)
            else:
                annotate_failure(ax, i + offset, source, name)
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first model on top; fixed even with no bar
    scale = duration_scale(study, g)
    if scale is None:  # every cell failed: no scale to show
        ax.set_xticks([])
    else:
        lo, hi, log = scale
        if log:
            ax.set_xscale("log")
            ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.set_xlim(lo, hi)
    notes = [
        "both bars: the compiled cell's interleaved calls",
        f"one scale for every build and mode at batch size {g.batch_size} on this GPU",
    ]
    if unpaired:
        notes.append("a row without the paired eager median: each cell's own")
    if no_eager_ci:
        notes.append("eager bars without a whisker: this CSV has no CI for the paired eager median")
    log_note = ", log scale" if scale is not None and scale[2] else ""
    _xlabel(
        ax, f"median duration per {step} (ms{log_note}; shorter is better; whiskers: 95% CI)", rows, notes
    )
    fig.legend(
        handles=[
            Patch(color=EAGER_COLOR, label="no compile (eager)"),
            Patch(color=COMPILED_COLOR, label=f"torch.compile (mode {g.mode})"),
        ],
        loc="outside lower center",
        ncols=2,
        fontsize=8,
    )
    return fig


def whisker(pct: float, lo: float, hi: float) -> tuple[float, float, bool]:
    """The CI whisker around a bar at `pct`: cut at CI_FLOOR_PCT, but never above the bar's
    own end (a compiled cell over 2x slower than eager has its bar below the floor)."""
    floor = min(CI_FLOOR_PCT, pct)
    return (max(lo, floor), max(hi, pct), lo < floor)


def gain_label(speedup: float) -> str:
    """A bar's label: the % improvement, or for a compiled cell over 2x slower (below the
    plot's -100% floor) the factor, which reads better than a % far below -100."""
    pct = improvement_pct(speedup)
    if pct >= CI_FLOOR_PCT:
        return f"{pct:.1f}%"
    slower = 1 / speedup
    return (
        f"{speedup:.2f}x ({slower:.0f}x slower)" if slower >= 10 else f"{speedup:.2f}x ({slower:.1f}x slower)"
    )


def plot_improvement(study: Study, g: CompileGroup, reference: Reference, path: Path) -> Path:
    improvement_figure(study, g, reference).savefig(path, dpi=DPI)
    return path


def improvement_figure(study: Study, g: CompileGroup, reference: Reference) -> Figure:
    """Horizontal bars: % improvement from the paired speed-up, with its 95% CI; the guide's
    figure as a marker where it has one for the same GPU class. Nothing is drawn below -100%
    (compiled 2x slower): a bar below it is cut there, hatched, and labelled with its factor
    (`0.04x (25x slower)`); a whisker reaching below it is cut there too."""
    rows = _rows(study, g)
    fig, ax = _figure(study, g, "% improvement with torch.compile", len(rows))
    kind = study.kind(g.build)
    xs, cut, clipped, guide_seen, colors = [0.0], False, False, False, set()
    left_labels = False
    for i, r in enumerate(rows):
        m = r.compiled
        if m is not None and m.ok and m.speedup is not None:
            pct = improvement_pct(m.speedup)
            shown = max(pct, CI_FLOOR_PCT)  # the bar as drawn
            lo, hi, was_cut = whisker(
                shown,
                improvement_pct(m.speedup_low) if m.speedup_low else shown,
                improvement_pct(m.speedup_high) if m.speedup_high else shown,
            )
            cut = cut or was_cut
            clipped = clipped or shown > pct
            color = COMPILED_COLOR if pct >= 0 else SLOWER_COLOR
            colors.add(color)
            ax.barh(i, shown, height=0.6, color=color, hatch="//" if shown > pct else None, edgecolor="white")
            whiskers = [[max(0.0, shown - lo)], [max(0.0, hi - shown)]]  # matplotlib refuses negative ones
            ax.errorbar(shown, i, xerr=whiskers, fmt="none", ecolor="black", capsize=3, lw=1)
            if pct >= 0:  # beyond the whisker, away from the zero line
                ax.text(hi, i, f"  {gain_label(m.speedup)}", va="center", ha="left", fontsize=8)
            else:
                ax.text(lo, i, f"{gain_label(m.speedup)}  ", va="center", ha="right", fontsize=8)
                left_labels = True
            xs += [lo, hi, shown]
        else:
            annotate_failure(ax, i, m, "speed-up: ")
        guide = (
            None
            if not g.setup.guide_like  # the guide measured float32 inference of the real models
            else reference.lookup(g.gpu.name, kind, g.mode, g.batch_size, r.task, r.model)
        )
        if guide is not None and not guide.erratum and guide.speedup is not None:
            gp = max(improvement_pct(guide.speedup), CI_FLOOR_PCT)
            ax.plot([gp], [i], marker="D", color=GUIDE_COLOR, markersize=6, linestyle="none")
            xs.append(gp)
            guide_seen = True
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first model on top; fixed even with no bar
    ax.axvline(0, color="black", lw=0.8)
    span = max(xs) - min(xs) or 10.0
    # room for the labels: right of the positive bars, left of the negative ones
    ax.set_xlim(min(xs) - (0.3 if left_labels else 0.05) * span, max(xs) + 0.18 * span)
    notes = ["negative: compiled is slower"]
    notes += ["bars cut at -100% (2x slower), hatched: the label gives the factor"] if clipped else []
    notes += ["CI\u00a0cut\u00a0at\u00a0-100%"] if cut else []  # one line, unbroken
    _xlabel(
        ax, "% improvement with torch.compile (time saved; paired medians; whiskers: 95% CI)", rows, notes
    )
    handles = []
    if COMPILED_COLOR in colors or not colors:
        handles.append(Patch(color=COMPILED_COLOR, label="ours, compiled faster: (1 - 1/speed-up) x 100"))
    if SLOWER_COLOR in colors:
        handles.append(Patch(color=SLOWER_COLOR, label="ours, compiled slower"))
    if guide_seen:
        table = reference.table_for(g.gpu.name, kind, g.mode, g.batch_size)
        handles.append(
            Line2D(
                [],
                [],
                marker="D",
                color=GUIDE_COLOR,
                linestyle="none",
                label=f"guide's table '{table}' (means)",
            )
        )
    fig.legend(handles=handles, loc="outside lower center", ncols=len(handles), fontsize=8)
    return fig


def plot_group(study: Study, g: CompileGroup, reference: Reference, folder: Path, stem: str) -> list[Path]:
    """Both plots of one compile-vs-eager group; returns their paths."""
    return [
        plot_duration(study, g, folder / f"{stem}__duration.png"),
        plot_improvement(study, g, reference, folder / f"{stem}__improvement.png"),
    ]
