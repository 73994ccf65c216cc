"""The guide's plots, per GPU, build, batch size and compile mode (PNG, matplotlib Agg):
duration without and with compile for each model, and the % improvement.

Host side only. Figures are built with `matplotlib.figure.Figure` (no pyplot state), so
plotting works headless and in tests. Every figure says where it ran (GPU), on what (torch
build), at which batch size and mode, and its axes carry units.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import ScalarFormatter

from suite.report.reference import Reference
from suite.report.study import EAGER, Measurement, Study
from suite.report.tables.cells import DAGGER, TRAIN, improvement_pct
from suite.report.tables.compile_vs_eager import CompileGroup
from suite.results import STATUS_WORDS

EAGER_COLOR = "#9aa5b1"
COMPILED_COLOR = "#1f77b4"
SLOWER_COLOR = "#ff7f0e"
GUIDE_COLOR = "#d62728"
FAIL_COLOR = "#b00020"
LOG_SCALE_RATIO = 30  # durations spanning more than this factor get a log axis
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
        eager = study.get(g.build, g.gpu, g.setup, task, model, g.batch_size, EAGER)
        compiled = study.get(g.build, g.gpu, g.setup, task, model, g.batch_size, g.mode)
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


def _failed(ax: Axes, y: float, m: Measurement | None, prefix: str = "") -> None:
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
    ax.set_xlabel(label + ("\n" + "; ".join(notes) if notes else ""), fontsize=9)


def plot_duration(study: Study, g: CompileGroup, path: Path) -> Path:
    """Grouped horizontal bars: mean duration without and with compile, per model."""
    rows = _rows(study, g)
    fig, ax = _figure(study, g, "Inference duration without and with torch.compile", len(rows))
    height = 0.38
    values = [m.mean_ms for r in rows for m in (r.eager, r.compiled) if m is not None and m.ok and m.mean_ms]
    log = bool(values) and max(values) / min(values) > LOG_SCALE_RATIO
    for i, r in enumerate(rows):
        bars = (
            (-height / 2, r.eager, EAGER_COLOR, "no compile: "),
            (height / 2, r.compiled, COMPILED_COLOR, "compile: "),
        )
        for offset, m, color, name in bars:
            if m is not None and m.ok and m.mean_ms is not None:
                ax.barh(i + offset, m.mean_ms, height=height, color=color)
                ax.text(m.mean_ms, i + offset, f" {m.mean_ms:.3f}", va="center", fontsize=8)
            else:
                _failed(ax, i + offset, m, name)
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first model on top; fixed even with no bar
    if log:
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(ScalarFormatter())
    if values:
        ax.margins(x=0.12)
    else:  # every cell failed: no scale to show
        ax.set_xticks([])
    _xlabel(
        ax,
        f"mean duration per {'training step' if g.setup.scenario == TRAIN else 'inference'} "
        f"(ms{', log scale' if log else ''}; shorter is better)",
        rows,
        [],
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
    fig.savefig(path, dpi=110)
    return path


def whisker(pct: float, lo: float, hi: float) -> tuple[float, float, bool]:
    """The CI whisker around a bar at `pct`: cut at CI_FLOOR_PCT, but never above the bar's
    own end (a compiled cell over 2x slower than eager has its bar below the floor)."""
    floor = min(CI_FLOOR_PCT, pct)
    return (max(lo, floor), max(hi, pct), lo < floor)


def plot_improvement(study: Study, g: CompileGroup, reference: Reference, path: Path) -> Path:
    """Horizontal bars: % improvement from the paired speed-up, with its 95% CI; the guide's
    figure as a marker where it has one for the same GPU class."""
    rows = _rows(study, g)
    fig, ax = _figure(study, g, "% improvement with torch.compile", len(rows))
    kind = study.kind(g.build)
    xs, cut, guide_seen = [0.0], False, False
    for i, r in enumerate(rows):
        m = r.compiled
        if m is not None and m.ok and m.speedup is not None:
            pct = improvement_pct(m.speedup)
            lo, hi, was_cut = whisker(
                pct,
                improvement_pct(m.speedup_low) if m.speedup_low else pct,
                improvement_pct(m.speedup_high) if m.speedup_high else pct,
            )
            cut = cut or was_cut
            ax.barh(i, pct, height=0.6, color=COMPILED_COLOR if pct >= 0 else SLOWER_COLOR)
            whiskers = [[max(0.0, pct - lo)], [max(0.0, hi - pct)]]  # matplotlib refuses negative ones
            ax.errorbar(pct, i, xerr=whiskers, fmt="none", ecolor="black", capsize=3, lw=1)
            ax.text(hi, i, f"  {pct:.1f}%", va="center", fontsize=8)
            xs += [lo, hi, pct]
        else:
            _failed(ax, i, m, "speed-up: ")
        guide = (
            None
            if not g.setup.guide_like  # the guide measured float32 inference of the real models
            else reference.lookup(g.gpu.name, kind, g.mode, g.batch_size, r.task, r.model)
        )
        if guide is not None and not guide.erratum and guide.speedup is not None:
            gp = improvement_pct(guide.speedup)
            ax.plot([gp], [i], marker="D", color=GUIDE_COLOR, markersize=6, linestyle="none")
            xs.append(gp)
            guide_seen = True
    ax.set_yticks(range(len(rows)), [r.label for r in rows])
    ax.set_ylim(len(rows) - 0.5, -0.5)  # first model on top; fixed even with no bar
    ax.axvline(0, color="black", lw=0.8)
    span = max(xs) - min(xs) or 10.0
    ax.set_xlim(min(xs) - 0.05 * span, max(xs) + 0.18 * span)
    notes = ["negative: compiled is slower"] + (["CI cut at -100%"] if cut else [])
    _xlabel(
        ax, "% improvement with torch.compile (time saved; paired medians; whiskers: 95% CI)", rows, notes
    )
    handles = [Patch(color=COMPILED_COLOR, label="ours: (1 - 1/speed-up) x 100")]
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
    fig.legend(handles=handles, loc="outside lower center", ncols=2, fontsize=8)
    fig.savefig(path, dpi=110)
    return path


def plot_group(study: Study, g: CompileGroup, reference: Reference, folder: Path, stem: str) -> list[Path]:
    """Both plots of one compile-vs-eager group; returns their paths."""
    return [
        plot_duration(study, g, folder / f"{stem}__duration.png"),
        plot_improvement(study, g, reference, folder / f"{stem}__improvement.png"),
    ]
