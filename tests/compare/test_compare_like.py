"""Like with like: compare judges a cell only where both rows were measured under the same
settings (suite.compare.settings), lists the others as not comparable, exits 2 when nothing was
judged; and judges a median from both runs' kept samples where they kept them."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest
from support.rows import cell
from support.rows import write_by_build as write

from suite.cli import main
from suite.compare.comparison import Samples, compare
from suite.compare.rule import REGRESSION, SETTINGS_DIFFER, UNCHANGED
from suite.compare.samples import sampled_ratio
from suite.compare.settings import differences, settings_of, stop_rule_of, unrecorded
from suite.report.load import load
from suite.results import samples as samples_file
from suite.results.columns import SETTING_COLUMNS
from suite.results.rows import stop_rule_text
from suite.stats import median, median_ci

SET = {"compile_cache": "cold", "malloc": "system", "torch_threads": 8, "stop_rule": "fixed, 100 calls"}


def test_the_settings_group_is_the_contracts() -> None:
    for name in ("compile_cache", "malloc", "processes", "stop_rule", "warmup", "torch_threads"):
        assert name in SETTING_COLUMNS
    assert "median_ms" not in SETTING_COLUMNS and "build" not in SETTING_COLUMNS
    assert stop_rule_text("fixed", 300, 10, 1.0, 300.0) == "fixed, 300 calls"
    assert stop_rule_text("ci", 300, 500, 2.5, 60.0) == "ci 2.5%, 300-300 calls, 60 s"


def test_values_are_compared_as_written_whatever_their_type() -> None:
    a = settings_of({"status": "ok", "warmup": "2", "tolerance": "0.001", "compile_cache": "run"})
    b = settings_of({"status": "ok", "warmup": 2.0, "tolerance": 0.001, "compile_cache": "run"})
    assert a == b and a["processes"] == "1"  # an ok row's empty processes: one
    assert not differences(a, b)
    c = {**b, "compile_cache": "cold", "malloc": "steady"}
    assert [d.text() for d in differences(a, c)] == ["compile_cache run -> cold"]
    assert unrecorded(a, c) == ("malloc",)  # one row records it: not checked, counted


@pytest.mark.parametrize(
    ("row", "rule"),
    [
        ({"stop_rule": "ci 1%, 10-300 calls, 300 s", "stop_reason": "ci"}, "ci 1%, 10-300 calls, 300 s"),
        ({"stop_reason": "fixed", "iterations": 300, "processes": 3, "status": "ok"}, "fixed, 100 calls"),
        ({"stop_reason": "max_calls", "iterations": 10, "status": "ok"}, "ci (limits unrecorded)"),
        ({"iterations": "10", "status": "ok"}, "fixed, 10 calls"),  # before the stopping rule
        ({"status": "error"}, ""),
    ],
)
def test_the_stopping_rule_of_older_rows(row: dict, rule: str) -> None:
    assert stop_rule_of(row) == rule


def test_a_ci_rule_whose_limits_were_not_recorded_is_not_a_difference() -> None:
    old = settings_of({"stop_reason": "ci", "status": "ok"})
    new = settings_of({"stop_rule": "ci 1%, 10-300 calls, 300 s", "status": "ok"})
    assert not differences(old, new)
    assert [d.text() for d in differences(settings_of({"stop_rule": "fixed, 10 calls"}), old)] == [
        "stop_rule fixed, 10 calls -> ci (limits unrecorded)"
    ]
    assert differences(new, settings_of({"stop_rule": "ci 2%, 10-300 calls, 300 s"}))


def test_aa_runs_that_differ_in_one_setting_are_not_judged_and_exit_2(tmp_path: Path, capsys) -> None:
    """The same figures, one slower by 40%: under another allocator nothing is judged, the setting
    is named, and the exit status is not 'no regression'."""
    rows = [cell(m, 10.0, 9.9, 10.1, **SET) for m in ("ViT", "BeiT")]
    base = write(tmp_path / "base", rows)
    new = write(tmp_path / "new", [{**r, "malloc": "steady", "median_ms": 14.0} for r in rows])
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(new), "-o", str(report)]) == 2
    err = capsys.readouterr().err
    assert "NOTHING COMPARED: all 2 cell(s) in both runs were measured under other settings" in err
    assert "malloc system -> steady (2 cell(s))" in err
    text = report.read_text()
    assert "## Not comparable: the settings differ (base -> new; not judged, never a regression): 2" in text
    assert "| malloc system -> steady | 10.000 [9.900, 10.100] | 14.000 [9.900, 10.100] |" in text
    assert "## Regressions" not in text


def test_only_the_cells_alike_are_judged(tmp_path: Path) -> None:
    """One cell ran under another compile cache: listed, not judged, not in the exit status; the
    others are judged as before."""
    rows = [cell(m, 10.0, 9.9, 10.1, **SET) for m in ("ViT", "BeiT", "DETR")]
    base = write(tmp_path / "base", rows)
    moved = [{**rows[0], "compile_cache": "run", "median_ms": 30.0, "compile_s": 90}, *rows[1:]]
    cmp = compare(load([base]), load([write(tmp_path / "new", moved)]), 0.05)
    verdicts = {c.key[1]: c.verdict for c in cmp.changes}
    assert verdicts == {"ViT": SETTINGS_DIFFER, "BeiT": UNCHANGED, "DETR": UNCHANGED}
    assert not cmp.failed and not cmp.nothing_judged and len(cmp.judged) == 2
    assert cmp.differing_settings() == {"compile_cache": (1, ("cold -> run",))}
    assert main(["compare", str(base), str(tmp_path / "new")]) == 0


def test_no_cell_in_common_is_not_a_pass(tmp_path: Path, capsys) -> None:
    base = write(tmp_path / "base", [cell("ViT", 10.0, 9.9, 10.1)])
    new = write(tmp_path / "new", [cell("BeiT", 10.0, 9.9, 10.1)])
    assert main(["compare", str(base), str(new)]) == 2
    assert "NOTHING COMPARED: no cell in both runs (1 only in base, 1 only in new)" in capsys.readouterr().err


def _kept(folder: Path, rows: list[dict], calls: list[list[float]]) -> Path:
    """A run whose rows' figures come from their samples, kept beside the CSV."""
    done = []
    for r, ms in zip(rows, calls, strict=True):
        lo, hi = median_ci(ms)
        done.append(
            {**r, "median_ms": median(ms), "mean_ms": median(ms), "ci95_low_ms": lo, "ci95_high_ms": hi}
        )
    write(folder, done)
    for r in done:
        path = samples_file.samples_path(folder / "raw" / f"{r['build']}__cuda.csv")
        samples_file.append(path, samples_file.of_row(r, 0, True, {"compiled": calls[done.index(r)]}))
    return folder


def test_a_median_is_judged_from_the_kept_samples(tmp_path: Path) -> None:
    """A 2.5% slow-down: the CIs composed end to end include 1, the samples' bootstrap does not."""
    rng = random.Random(0)
    base_ms = [10 * (1 + rng.gauss(0, 0.03)) for _ in range(60)]
    new_ms = [1.025 * 10 * (1 + rng.gauss(0, 0.03)) for _ in range(60)]
    rows = [cell("ViT", None, None, None, **SET)]
    base = _kept(tmp_path / "base", rows, [base_ms])
    new = _kept(tmp_path / "new", rows, [new_ms])
    rule_args = ["--threshold", "0.01"]
    assert main(["compare", str(base), str(new), *rule_args, "--medians-only"]) == 0
    assert main(["compare", str(base), str(new), *rule_args, "-o", str(tmp_path / "r.md")]) == 1
    text = (tmp_path / "r.md").read_text()
    assert "except for the 1 cell(s) whose samples both runs kept" in text
    from suite.compare.samples import groups_of
    from suite.report.samples import read_beside

    b, n = load([base]), load([new])
    samples = Samples(groups_of(read_beside(b.files)), groups_of(read_beside(n.files)))
    (change,) = compare(b, n, 0.01, samples=samples).changes
    assert change.sampled and change.verdict == REGRESSION
    composed = compare(b, n, 0.01).changes[0]
    assert composed.verdict == UNCHANGED and composed.low < 1 < change.low
    assert change.high - change.low < composed.high - composed.low


def test_the_samples_bootstrap() -> None:
    rng = np.random.default_rng(1)
    same = [rng.normal(10, 0.3, 200)]
    alike = sampled_ratio(same, [rng.normal(10, 0.3, 200)])
    assert alike is not None and alike.low < 1 < alike.high
    assert sampled_ratio(same, [same[0] * 1.1]) == sampled_ratio(same, [same[0] * 1.1])  # seeded
    several = sampled_ratio(
        [rng.normal(10, 0.3, 50) for _ in range(3)], [rng.normal(12, 0.3, 40) for _ in range(2)]
    )
    assert several is not None and several.base_calls == 150 and several.new_calls == 80
    assert 1.1 < several.low < several.ratio < several.high < 1.3
    assert sampled_ratio([], same) is None


REPO = Path(__file__).resolve().parents[2]
SMOKE_21 = REPO / "results" / "2026-11-21-cpu-amd-epyc-smoke"  # compile_cache: run
SMOKE_25 = REPO / "results" / "2026-11-25-cpu-amd-epyc-smoke"  # compile_cache: cold


def test_the_committed_smoke_runs_are_not_compared(tmp_path: Path, capsys) -> None:
    """The two committed smoke runs differ in their compile cache (and the stopping rule): no
    "slower compile", every cell listed as not comparable, and neither compare nor the history's
    verdict calls it a regression."""
    report = tmp_path / "r.md"
    assert main(["compare", str(SMOKE_21), str(SMOKE_25), "-o", str(report)]) == 2
    err = capsys.readouterr().err
    assert "compile_cache run -> cold (50 cell(s))" in err
    assert "stop_rule fixed, 10 calls -> ci (limits unrecorded) (49 cell(s))" in err
    text = report.read_text()
    assert "Slower compile (beyond" not in text and "REGRESSED" not in text
    assert "not judged, never a regression): 50" in text

    from suite.history.verdict import verdict

    store = tmp_path / "h.duckdb"
    for run in (SMOKE_21, SMOKE_25):
        assert main(["history", "ingest", str(run), "--store", str(store)]) == 0
    result = verdict(SMOKE_25, store)
    assert not result.failed
    previous = [v.against_previous for v in result.nights]
    assert all(c is not None and c.nothing_judged and not c.failed for c in previous)
    assert result.markdown.count("**not comparable**: all 25 cells measured under other settings") == 2
    assert "compile_cache run -> cold" in result.markdown and "slower compile" not in result.markdown

    # in the history, the warm-cache nights are a series of their own: no change point across them
    from suite.history.series import points
    from suite.history.store import open_store

    con = open_store(store).connect()
    try:
        pts = points(con, {"model": "ResNet (smoke, random weights)", "mode": "default"})
    finally:
        con.close()
    by = dict(zip(pts["date"].dt.day, pts["scenario"], strict=False))
    assert by == {21: "inference [compile cache run]", 25: "inference"}


def test_the_bisect_skips_a_run_measured_under_other_settings(tmp_path: Path) -> None:
    from suite.history.bisect import SKIP, Cell
    from suite.history.judge import judge_runs

    good = write(tmp_path / "good", [cell("ViT", 10.0, 9.9, 10.1, **SET)])
    alike = write(tmp_path / "alike", [cell("ViT", 10.0, 9.9, 10.1, **SET)])
    other = write(tmp_path / "other", [cell("ViT", 20.0, 19.9, 20.1, **{**SET, "torch_threads": 4})])
    vit = Cell.parse("ViT,1,default")
    assert judge_runs(good, alike, vit).verdict == UNCHANGED
    skipped = judge_runs(good, other, vit)
    assert (skipped.outcome, skipped.verdict) == (SKIP, "not comparable: torch_threads 8 -> 4")


def test_calibrate_leaves_out_the_pairs_measured_under_other_settings(tmp_path: Path, capsys) -> None:
    rows = [cell(m, 10.0, 9.9, 10.1, **SET) for m in ("ViT", "BeiT")]
    a = write(tmp_path / "a", rows)
    b = write(tmp_path / "b", [rows[0], {**rows[1], "compile_cache": "run", "median_ms": 30.0}])
    assert main(["calibrate", "--aa", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "- Not comparable: 2 cell compare(s) whose rows' settings differ, not judged" in out
    assert "| 5% | off | 25% + 1 s | 0/2 (0.0%) | 0/2 (0.0%) |" in out


def test_a_compile_measured_beside_others_is_not_judged_against_one_alone(tmp_path: Path) -> None:
    """`ahead --compile-pool 2` on 2 cores stretched a compile_s 35% (docs/measurement.md): a
    compile that ran beside another (compile_wave 2) is shown, not judged, against one alone;
    between rows of the same wave a slower compile still is."""
    rows = [cell(m, 10.0, 9.9, 10.1, compile_s=20.0, compile_wave=1, **SET) for m in ("ViT", "BeiT")]
    base = write(tmp_path / "base", rows)
    crowded = [{**rows[0], "compile_s": 30.0, "compile_wave": 2}, {**rows[1], "compile_s": 30.0}]
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(write(tmp_path / "new", crowded)), "-o", str(report)]) == 1
    text = report.read_text()
    assert "## Slower compile (beyond the compile threshold and floor): 1" in text
    assert "20.0 -> 30.0 (+50%), not judged: compiled 1 -> 2 at once" in text
    older = [{k: v for k, v in r.items() if k != "compile_wave"} for r in rows]  # before the column: alone
    assert main(["compare", str(write(tmp_path / "old", older)), str(base)]) == 0
