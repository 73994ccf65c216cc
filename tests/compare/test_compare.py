"""`suite compare BASE NEW`: the ratio of medians with its interval, regressions exit 1,
improvements are reported without failing, unmatched cells are listed, bad input exits 2."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.rows import cell
from support.rows import write_by_build as write

from suite.cli import main
from suite.compare.rule import (
    ACCURACY_REGRESSION,
    FIXED,
    IMPROVEMENT,
    NEWLY_FAILING,
    NO_INTERVAL,
    NOT_COMPARABLE,
    REGRESSION,
    UNCHANGED,
    judge,
)
from suite.report.measurement import Measurement


def measurement(median, lo, hi, status="ok", accuracy="pass") -> Measurement:
    return Measurement(status, "", median, median, lo, hi, None, None, None, accuracy, None, "x")


@pytest.mark.parametrize(
    ("base", "new", "verdict", "ratio"),
    [
        # 12 / 10 = 1.2, interval [11.8 / 10.2, 12.2 / 9.8] = [1.157, 1.245]: above 1
        (measurement(10, 9.8, 10.2), measurement(12, 11.8, 12.2), REGRESSION, (1.2, 11.8 / 10.2, 12.2 / 9.8)),
        (measurement(10, 9.8, 10.2), measurement(8, 7.9, 8.1), IMPROVEMENT, (0.8, 7.9 / 10.2, 8.1 / 9.8)),
        # slower by 10% but the interval [0.75, 1.625] includes 1: noise, not a regression
        (measurement(10, 8, 12), measurement(11, 9, 13), UNCHANGED, (1.1, 0.75, 13 / 8)),
        # 3% slower and significant, but under the 5% threshold
        (
            measurement(10, 9.99, 10.01),
            measurement(10.3, 10.29, 10.31),
            UNCHANGED,
            (1.03, 10.29 / 10.01, 10.31 / 9.99),
        ),
        (measurement(10, None, None), measurement(12, None, None), NO_INTERVAL, (1.2, None, None)),
        (
            measurement(10, 9.8, 10.2),
            measurement(10, 9.8, 10.2, accuracy="fail"),
            ACCURACY_REGRESSION,
            (1.0, 9.8 / 10.2, 10.2 / 9.8),
        ),
        (measurement(10, 9.8, 10.2), measurement(None, None, None, "oom"), NEWLY_FAILING, (None, None, None)),
        (measurement(None, None, None, "error"), measurement(10, 9.8, 10.2), FIXED, (None, None, None)),
        (
            measurement(10, 9.8, 10.2),
            measurement(None, None, None, "skipped"),
            NOT_COMPARABLE,
            (None, None, None),
        ),
        (
            measurement(None, None, None, "oom"),
            measurement(None, None, None, "oom"),
            NOT_COMPARABLE,
            (None, None, None),
        ),
    ],
)
def test_judge(base: Measurement, new: Measurement, verdict: str, ratio: tuple):
    got, r, lo, hi = judge(base, new, 0.05)
    assert got == verdict
    assert (r, lo, hi) == pytest.approx(ratio)


def test_regression_exits_1_and_is_reported(tmp_path: Path, capsys):
    base = write(tmp_path / "base", [cell("ViT", 10, 9.8, 10.2), cell("BeiT", 20, 19.8, 20.2)])
    new = write(
        tmp_path / "new",
        [cell("ViT", 12, 11.8, 12.2, build="nightly"), cell("BeiT", 20.1, 19.9, 20.3, build="nightly")],
    )
    report = tmp_path / "report.md"
    assert main(["compare", str(base), str(new), "-o", str(report)]) == 1
    text = report.read_text()
    assert "**REGRESSED: 1 failing change(s) (1 slower, 0 newly failing, 0 accuracy)" in text
    assert "## Regressions (slower beyond the threshold and the noise, interval above 1): 1" in text
    assert "| Image Classification/ViT | 1 | default | NVIDIA A100-SXM4-80GB |" in text
    assert "| 10.000 [9.800, 10.200] | 12.000 [11.800, 12.200] | 1.200x [1.157, 1.245] | +20.0% |" in text
    assert "## Unchanged (within the threshold or the noise, or the interval includes 1): 1" in text
    assert "builds may differ" in text  # one build per run: stable vs nightly are matched
    assert capsys.readouterr().err.startswith("suite compare: REGRESSED: 1 failing change(s)")


def test_improvement_is_reported_without_failing(tmp_path: Path, capsys):
    base = write(tmp_path / "base", [cell("ViT", 10, 9.8, 10.2)])
    new = write(tmp_path / "new", [cell("ViT", 8, 7.9, 8.1)])
    assert main(["compare", str(base), str(new)]) == 0
    out = capsys.readouterr().out
    assert "**OK: 0 failing change(s)" in out
    assert "## Improvements (faster beyond the threshold and the noise, interval below 1): 1" in out
    assert "| 0.800x [0.775, 0.827] | -20.0% |" in out


def test_threshold_decides(tmp_path: Path):
    base = write(tmp_path / "base", [cell("ViT", 10, 9.99, 10.01)])
    new = write(tmp_path / "new", [cell("ViT", 10.3, 10.29, 10.31)])
    assert main(["compare", str(base), str(new)]) == 0
    assert main(["compare", str(base), str(new), "--threshold", "0.01"]) == 1


def test_newly_failing_cell_fails_and_unmatched_cells_are_listed(tmp_path: Path):
    base = write(tmp_path / "base", [cell("ViT", 10, 9.8, 10.2), cell("DETR", 30, 29, 31)])
    new = write(
        tmp_path / "new",
        [cell("ViT", None, None, None, status="oom"), cell("ViT", 40, 39, 41, batch_size=4)],
    )
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(new), "-o", str(report)]) == 1
    text = report.read_text()
    assert "## Newly failing (ok in base, OOM / error / timeout in new): 1" in text
    assert "| 10.000 [9.800, 10.200] | OOM | — | — |" in text
    assert "## Only in base: 1\n\n| Task/Model | Batch Size | Mode | GPU | Setup |" in text
    assert "| Image Classification/DETR | 1 | default |" in text
    assert "## Only in new: 1" in text
    assert "| Image Classification/ViT | 4 | default |" in text


def test_runs_with_several_builds_match_by_build(tmp_path: Path):
    rows = [cell("ViT", 10, 9.8, 10.2), cell("ViT", 5, 4.9, 5.1, build="nightly")]
    base = write(tmp_path / "base", rows)
    new = write(
        tmp_path / "new", [rows[0], {**rows[1], "median_ms": 6, "ci95_low_ms": 5.9, "ci95_high_ms": 6.1}]
    )
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(new), "-o", str(report)]) == 1
    text = report.read_text()
    assert "Cells matched on: build, task, model" in text
    assert "| nightly | Image Classification/ViT | 1 | default |" in text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compare", "{base}", "{tmp}/missing"], "{tmp}/missing: no such file or folder"),
        (["compare", "{base}", "{base}", "--threshold", "x"], "--threshold: 'x' is not a number"),
        (["compare", "{base}", "{base}", "--threshold", "5"], "--threshold: must be a fraction in [0, 1)"),
        (["compare", "{base}", "{tmp}/corrupt"], "{tmp}/corrupt/raw/x.csv:2: unknown status 'weird'"),
    ],
)
def test_bad_input_exits_2_with_one_line(tmp_path: Path, capsys, args: list[str], message: str):
    base = write(tmp_path / "base", [cell("ViT", 10, 9.8, 10.2)])
    corrupt = tmp_path / "corrupt" / "raw" / "x.csv"
    corrupt.parent.mkdir(parents=True)
    text = (base / "raw" / "stable__cuda.csv").read_text()
    corrupt.write_text(text.replace(",ok,", ",weird,"))
    assert main([a.format(base=base, tmp=tmp_path) for a in args]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("suite compare: error: ") and message.format(tmp=tmp_path) in err
