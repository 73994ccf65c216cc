"""The regression gate's rule (suite.compare.rule): a paired speed-up that fell is judged on any machine,
a slower median only where both runs were healthy (else "suspect", not counted), compile time
with its own threshold and floor; and the CLI's defaults are the rule's."""

from __future__ import annotations

import math
import statistics
from dataclasses import replace
from pathlib import Path

import pytest
from support.rows import cell
from support.rows import write_by_build as write

from suite.cli import build_parser, main
from suite.compare.rule import COMPILE_REGRESSION, LESS_SPEEDUP, REGRESSION, SUSPECT, UNCHANGED, Rule, judge
from suite.report.measurement import Measurement

BASE = Measurement(
    "ok", "", 10, 10, 9.9, 10.1, 2.0, 1.95, 2.05, "pass", None, "x", compile_s=10.0, health="ok"
)


def test_a_paired_speed_up_that_fell_fails_even_on_a_busy_machine() -> None:
    # compiled 25% slower against its own eager calls: 2.0 / 1.6 = 1.25, interval [1.95 / 1.65, 2.05 / 1.55]
    new = replace(BASE, speedup=1.6, speedup_low=1.55, speedup_high=1.65, health="busy")
    verdict, *_ = judge(BASE, new, 0.05)
    assert verdict == LESS_SPEEDUP
    # within the noise of the two intervals: not judged a change
    noisy = replace(BASE, speedup=1.8, speedup_low=1.5, speedup_high=2.1)
    assert judge(BASE, noisy, 0.05)[0] == UNCHANGED


def test_a_slower_median_on_an_unhealthy_machine_is_suspect_not_a_regression() -> None:
    slower = replace(BASE, median_ms=12, ci_low_ms=11.9, ci_high_ms=12.1)
    assert judge(BASE, slower, 0.05)[0] == REGRESSION
    for side in ("base", "new"):
        b, n = (
            (replace(BASE, health="busy"), slower)
            if side == "base"
            else (BASE, replace(slower, health="steal"))
        )
        assert judge(b, n, 0.05)[0] == SUSPECT
    # a row without health figures (an older CSV) is judged as before
    assert judge(replace(BASE, health=""), replace(slower, health=""), 0.05)[0] == REGRESSION


@pytest.mark.parametrize(
    ("base_s", "new_s", "verdict"),
    [
        (10.0, 14.0, COMPILE_REGRESSION),  # +40% and +4 s
        (10.0, 12.0, UNCHANGED),  # +20%: under the 25% threshold
        (0.5, 1.2, UNCHANGED),  # +140% but 0.7 s: under the floor
        (None, 14.0, UNCHANGED),  # eager cells have no compile time
    ],
)
def test_compile_time_has_its_own_threshold_and_floor(base_s, new_s, verdict) -> None:
    assert judge(replace(BASE, compile_s=base_s), replace(BASE, compile_s=new_s), 0.05)[0] == verdict


def test_a_slower_compile_on_an_unhealthy_machine_is_suspect() -> None:
    assert judge(BASE, replace(BASE, compile_s=20.0, health="busy"), 0.05)[0] == SUSPECT


def test_the_cli_defaults_are_the_rules(capsys) -> None:
    help_text = " ".join(
        build_parser()._subparsers._group_actions[0].choices["compare"].format_help().split()
    )
    rule = Rule()
    assert f"as a fraction (default: {rule.threshold})" in help_text
    assert f"as a fraction (default: {rule.compile_threshold})" in help_text
    assert f"and {rule.compile_floor_s:g} s or more" in help_text
    assert f"the threshold alone (default: {rule.noise_z:g})" in help_text


def test_compare_exits_0_on_suspects_and_1_on_less_speed_up(tmp_path: Path) -> None:
    base = write(tmp_path / "base", [cell("ViT", 10, 9.9, 10.1, speedup=2.0, speedup_ci95_low=1.95,
                                          speedup_ci95_high=2.05, health="ok")])  # fmt: skip
    busy = write(tmp_path / "busy", [cell("ViT", 14, 13.9, 14.1, speedup=2.0, speedup_ci95_low=1.95,
                                          speedup_ci95_high=2.05, health="busy")])  # fmt: skip
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(busy), "-o", str(report)]) == 0
    text = report.read_text()
    assert "**OK: 0 failing change(s)" in text and "1 suspect (unhealthy machine, not counted)" in text
    assert "## Suspect: slower, but timed on an unhealthy machine in either run" in text
    assert "| ok / busy |" in text
    lost = write(tmp_path / "lost", [cell("ViT", 10, 9.9, 10.1, speedup=1.6, speedup_ci95_low=1.55,
                                          speedup_ci95_high=1.65, health="busy")])  # fmt: skip
    assert main(["compare", str(base), str(lost), "-o", str(report)]) == 1
    text = report.read_text()
    assert "## Less speed-up (compiled slower against its own eager calls" in text
    assert "| 2.00x -> 1.60x (1.250 [1.182, 1.323]) |" in text


def _run(folder: Path, scale: float, health: str = "ok") -> Path:
    """Two cells of one model: eager, and default with its paired speed-up; compiled calls
    `scale` times as long (the slow fault)."""
    return write(
        folder,
        [
            cell("ViT", 10, 9.9, 10.1, mode="eager", health=health),
            cell(
                "ViT",
                5 * scale,
                4.95 * scale,
                5.05 * scale,
                speedup=2 / scale,
                speedup_ci95_low=1.95 / scale,
                speedup_ci95_high=2.05 / scale,
                compile_s=10.0,
                health=health,
            ),
        ],
    )


def test_calibrate_counts_false_positives_and_detections(tmp_path: Path, capsys) -> None:
    aa = [_run(tmp_path / f"a{i}", 1.0) for i in (1, 2, 3)]
    slowed = [_run(tmp_path / "s1", 1.2, health="busy")]
    out = tmp_path / "cal.md"
    args = ["calibrate", "--aa", *map(str, aa), "--slowed", *map(str, slowed), "-o", str(out)]
    assert main(args) == 0
    text = out.read_text()
    assert text == capsys.readouterr().out
    # 6 ordered A/A comparisons of 2 cells: nothing flagged; the slowed compiled cell is caught in
    # each of its 3 comparisons, by its paired speed-up (the run was busy: its median is suspect)
    # (2 cells in common: too few to measure a noise floor on, so both rows read the same)
    for floor in ("off", "4 sd: A/A none measured, slowed none measured"):
        assert (
            f"| 5% | {floor} | 25% + 1 s | 0/12 (0.0%) | 0/6 (0.0%) | 0/12 (0.0%) | 3/3 (100.0%) "
            "| less speed-up 3 " in text
        )
    assert "| 3/3 (100.0%) | 0/3 (0.0%) |" in text  # every slowed compare exits 1; eager untouched
    assert "| speed-up base / new (paired) | 1.000 / 1.000 / 1.000 (n=6) |" in text


def test_calibrate_needs_two_aa_runs(tmp_path: Path, capsys) -> None:
    one = _run(tmp_path / "a1", 1.0)
    assert main(["calibrate", "--aa", str(one)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "suite calibrate: error: --aa: needs two or more runs of the same cells"
    )


# --- the runs' noise floor (compare's medians on a drifting machine) ---------------------------


def _drifting(folder: Path, factors: list[float], changed: dict[str, float] | None = None) -> Path:
    """One eager cell per model M0, M1, ...: median 10 ms times the model's drift factor (times a
    real change where `changed` says), each with a tight CI, as a shared VM gives them."""
    changed = changed or {}
    rows = []
    for i, f in enumerate(factors):
        m = 10 * f * changed.get(f"M{i}", 1.0)
        rows.append(cell(f"M{i}", m, 0.995 * m, 1.005 * m, mode="eager", health="ok"))
    return write(folder, rows)


# 12 cells that drift by up to 8% between two runs (spread of logs about 4.4%), nothing changed
DRIFT = [1.0, 1.02, 0.98, 1.04, 0.96, 1.06, 0.94, 1.08, 0.97, 1.03, 1.01, 0.99]


def test_noise_floor_is_the_robust_spread_of_the_log_ratios() -> None:
    from scipy.stats import median_abs_deviation

    from suite.compare.rule import NoiseFloor

    assert NoiseFloor.of(DRIFT[:7]) == NoiseFloor(None, 7)  # too few cells: no floor
    assert NoiseFloor.of(DRIFT[:7]).bound(4) == 0.0
    noise = NoiseFloor.of(DRIFT)
    logs = [math.log(r) for r in DRIFT]
    assert noise.cells == 12
    assert noise.sigma == pytest.approx(median_abs_deviation(logs, scale="normal"), rel=1e-12)
    assert noise.bound(4) == pytest.approx(math.exp(4 * noise.sigma) - 1)
    assert noise.bound(0) == 0.0
    # a change common to every cell moves the center, not the spread
    assert NoiseFloor.of([1.3 * r for r in DRIFT]).sigma == pytest.approx(noise.sigma)
    # one cell of 12 changed by 40% widens it by a third (medians of 12 values are coarse); the
    # standard deviation would more than double
    one = [1.4 * DRIFT[0], *DRIFT[1:]]
    widened = NoiseFloor.of(one).sigma / noise.sigma
    sd_widened = statistics.stdev(math.log(r) for r in one) / statistics.stdev(logs)
    assert widened < 1.4 and sd_widened > 2


def test_an_aa_pair_that_drifted_is_quiet_and_real_changes_still_show(tmp_path: Path) -> None:
    from suite.compare.comparison import compare
    from suite.report.load import load

    base = load([_drifting(tmp_path / "base", [1.0] * 12)])
    aa = load([_drifting(tmp_path / "aa", DRIFT)])
    quiet = compare(base, aa, 0.05)
    assert not quiet.failed and quiet.noise.cells == 12 and quiet.median_bound > 0.05
    # the same pair judged against the threshold alone: the drifting cells read as regressions
    bare = compare(base, aa, 0.05, replace(Rule(), noise_z=0.0))
    assert bare.failed and bare.count(REGRESSION) == 2  # +6% and +8%: beyond 5% (+4% is not)
    # every cell 30% slower: the spread is the drift's, so all 12 are regressions
    slow = compare(base, load([_drifting(tmp_path / "slow", [1.3 * f for f in DRIFT])]), 0.05)
    assert slow.count(REGRESSION) == 12
    # one cell 40% slower among the drifting ones: caught, the floor measured on the others
    one = compare(base, load([_drifting(tmp_path / "one", DRIFT, {"M0": 1.4})]), 0.05)
    assert [c.key[1] for c in one.changes if c.verdict == REGRESSION] == ["M0"]


def test_the_report_says_which_floor_judged_the_medians(tmp_path: Path) -> None:
    base = _drifting(tmp_path / "base", [1.0] * 12)
    aa = _drifting(tmp_path / "aa", DRIFT)
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(aa), "-o", str(report)]) == 0
    text = report.read_text()
    assert "the runs' noise floor" in text and "over the 12 cells ok and healthy in both" in text
    assert main(["compare", str(base), str(aa), "--noise-z", "0", "-o", str(report)]) == 1
    assert "no noise floor (--noise-z 0)" in report.read_text()
    assert main(["compare", str(base), str(aa), "--noise-z", "-1"]) == 2
