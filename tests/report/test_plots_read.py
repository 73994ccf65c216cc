"""Plots and tables that read right: the improvement plot's legend names every colour,
labels of slower bars sit left of their bar, clear of the zero line, nothing is drawn below
-100% (huge slowdowns read `0.04x (25x slower)`); duration plots show the paired medians with
their CIs on one scale per GPU and batch size; a release is compared with stable under its own
name; `plan`'s columns stay aligned.
"""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest
from matplotlib.colors import to_hex
from matplotlib.patches import Rectangle
from support import REPO as ROOT
from support.rows import A100, At, Speedup, Times, compiled, eager, write_run

from suite.cli import main
from suite.report.load import load
from suite.report.plots import (
    CI_FLOOR_PCT,
    COMPILED_COLOR,
    EAGER_COLOR,
    GUIDE_COLOR,
    SLOWER_COLOR,
    duration_figure,
    gain_label,
    improvement_figure,
)
from suite.report.reference import REFERENCE_DIR, Reference
from suite.report.study import Study, build_kinds
from suite.report.tables.compile_vs_eager import compile_groups
from suite.report.tables.stable_vs import stable_vs_others

MODELS = ("ViT", "DETR")


def paired(build: str, model: str, eager_ms: float, speedup: float, low: float, high: float) -> list[dict]:
    """An eager cell and a compiled one whose interleaved eager median is `eager_ms`."""
    ms = eager_ms / speedup
    return [
        eager(build, A100, model, 1, eager_ms * 1.1, eager_ms * 1.05, eager_ms, eager_ms * 1.1),
        {
            **compiled(
                At(build, A100, model, 1, "default"),
                Times(ms, ms, ms * 0.95, ms * 1.05),
                Speedup(speedup, low, high),
            ),
            "eager_median_ms": eager_ms,
        },
    ]


def study_of(tmp_path: Path, rows: list[dict], builds: tuple[str, ...] = ("stable",)) -> Study:
    loaded = load([write_run(tmp_path / "run", rows)])
    return Study(loaded.frame, build_kinds(list(builds), ROOT / "matrix.yaml", True)[0])


@pytest.mark.parametrize(
    ("speedup", "label"),
    [
        (1.5, "33.3%"),
        (0.6, "-66.7%"),
        (0.5, "-100.0%"),
        (0.3, "0.30x (3.3x slower)"),
        (0.04, "0.04x (25x slower)"),
    ],
)
def test_a_bar_s_label_is_a_percentage_or_for_a_huge_slowdown_a_factor(speedup: float, label: str) -> None:
    assert gain_label(speedup) == label


def test_the_improvement_plot_reads_right(tmp_path: Path) -> None:
    """ViT 27x slower (CI inside), DETR 1.7x slower with a CI from 20x slower to 2x faster."""
    rows = [
        *paired("stable", "ViT", 10.0, 0.0368, 0.03, 0.045),
        *paired("stable", "DETR", 40.0, 0.6, 0.05, 2.0),
    ]
    study = study_of(tmp_path, rows)
    (group,) = compile_groups(study)
    fig = improvement_figure(study, group, Reference.load(REFERENCE_DIR))
    fig.canvas.draw()
    ax = fig.axes[0]
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    # nothing below -100%: bars, whiskers and the axis' data
    assert all(min(b.get_x(), b.get_x() + b.get_width()) >= CI_FLOOR_PCT for b in bars)
    whiskers = [x for c in ax.collections for seg in c.get_segments() for x, _ in seg]
    assert whiskers and min(whiskers) >= CI_FLOOR_PCT
    texts = {t.get_text().strip(): t for t in ax.texts}
    assert "0.04x (27x slower)" in texts and "-66.7%" in texts  # DETR: (1 - 1/0.6) x 100
    assert not [t for t in texts if re.fullmatch(r"-\d{3,}\.\d%", t)]  # no -2618.5%
    # labels of slower bars: right-aligned, left of the bar's end and of its whisker, clear of 0
    zero = ax.transData.transform((0, 0))[0]
    for text in ("0.04x (27x slower)", "-66.7%"):
        box = texts[text].get_window_extent()
        assert texts[text].get_ha() == "right" and box.x1 < zero, text
        assert box.x0 > ax.get_window_extent().x0, f"{text} runs off the axis"
    # a legend entry for every colour drawn
    colors = {to_hex(b.get_facecolor()) for b in bars}
    assert colors == {SLOWER_COLOR}
    (legend,) = fig.legends
    labels = [t.get_text() for t in legend.get_texts()]
    assert labels == ["ours, compiled slower", "guide's table 'A100 (batch size: 1)' (means)"]
    assert {to_hex(line.get_color()) for line in ax.lines if line.get_marker() == "D"} == {GUIDE_COLOR}
    xlabel = ax.get_xlabel()
    assert "bars cut at -100% (2x slower), hatched" in xlabel and "CI\u00a0cut\u00a0at\u00a0-100%" in xlabel


def test_the_improvement_plot_names_both_colours_when_both_show(tmp_path: Path) -> None:
    rows = [*paired("stable", "ViT", 10.0, 1.5, 1.4, 1.6), *paired("stable", "DETR", 40.0, 0.8, 0.7, 0.9)]
    study = study_of(tmp_path, rows)
    (group,) = compile_groups(study)
    fig = improvement_figure(study, group, Reference.load(REFERENCE_DIR))
    bars = [p for p in fig.axes[0].patches if isinstance(p, Rectangle)]
    assert {to_hex(b.get_facecolor()) for b in bars} == {COMPILED_COLOR, SLOWER_COLOR}
    labels = [t.get_text() for t in fig.legends[0].get_texts()]
    assert labels[:2] == ["ours, compiled faster: (1 - 1/speed-up) x 100", "ours, compiled slower"]
    assert "CI cut" not in fig.axes[0].get_xlabel() and "bars cut" not in fig.axes[0].get_xlabel()


def test_duration_plots_show_the_paired_medians_on_one_scale_per_gpu_and_batch_size(tmp_path: Path) -> None:
    rows = [*paired("stable", "ViT", 10.0, 1.25, 1.2, 1.3), *paired("stable", "DETR", 40.0, 2.0, 1.9, 2.1)]
    rows += [{**r, "build": "nightly"} for r in paired("nightly", "ViT", 5.0, 1.1, 1.0, 1.2)]
    study = study_of(tmp_path, rows, ("stable", "nightly"))
    stable, nightly = compile_groups(study)
    figures = {g.build: duration_figure(study, g) for g in (stable, nightly)}
    assert figures["stable"].axes[0].get_xlim() == figures["nightly"].axes[0].get_xlim()
    ax = figures["stable"].axes[0]
    widths = {
        (to_hex(p.get_facecolor()), round(p.get_width(), 6)) for p in ax.patches if isinstance(p, Rectangle)
    }
    # the compiled cell's interleaved pair: eager median 10 and 40 (not the eager cells' 10.5, 42)
    assert widths == {(EAGER_COLOR, 10.0), (COMPILED_COLOR, 8.0), (EAGER_COLOR, 40.0), (COMPILED_COLOR, 20.0)}
    whiskers = sorted(round(x, 6) for c in ax.collections for seg in c.get_segments() for x, _ in seg)
    # the compiled medians' 95% CIs, and the paired eager medians' (test_merge.compiled: +-0.1 ms)
    assert whiskers == [7.6, 8.4, 9.9, 10.1, 19.0, 21.0, 39.9, 40.1]
    assert "median duration per inference" in ax.get_xlabel()
    assert "one scale for every build and mode at batch size 1 on this GPU" in " ".join(
        ax.get_xlabel().split()
    )


def test_a_release_compared_with_stable_is_named_after_it(tmp_path: Path) -> None:
    rows = paired("stable", "ViT", 10.0, 1.25, 1.2, 1.3)
    rows += [{**r, "build": "current", "torch_version": "2.13.0"} for r in rows]
    study = study_of(tmp_path, rows, ("stable", "current"))
    (table,) = stable_vs_others(study)
    assert table.name == "stable-vs-current__nvidia-a100-sxm4-80gb__default"
    assert (
        "nightly" not in table.name and "stable (torch 2.0.1+cu118) vs current (torch 2.13.0)" in table.title
    )
    assert "current: release" in table.subtitle


@pytest.mark.parametrize("profile", ["smoke", "custom", "full"])
def test_plan_columns_stay_aligned(profile: str) -> None:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["plan", "--profile", profile, "--device", "cpu"]) == 0
    lines = out.getvalue().splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:2] == ["#", "task"])
    table = lines[start : start + 1 + int(lines[0].split(": ")[1].split()[0])]
    fields = [[(m.start(), m.end()) for m in re.finditer(r"\S+(?: \S+)*", line)] for line in table]
    header = fields[0]
    right = {0, 3, 8, 9}  # #, bs, iters, est
    for line, spans in zip(table[1:], fields[1:], strict=True):
        assert len(spans) == len(header), line
        for i, ((start_h, end_h), (start_v, end_v)) in enumerate(zip(header, spans, strict=True)):
            assert (end_v == end_h) if i in right else (start_v == start_h), f"column {i}: {line!r}"
    assert any("random (shrunk)" in line for line in table) == (profile == "smoke")
