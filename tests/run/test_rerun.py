"""Rerun intervals (docs/intervals.md): where another run's median of a cell should fall,
from the row's CI and the machine's between-run noise (`run_noise_pct`, per device type); the
coverage of a repeat's intervals with that noise estimated from the other repetitions; compare
judging a median against it. Synthetic runs drawn from the model the interval assumes, and the
same runs with the between-run part left out, so each check fails if the formula is wrong."""

from __future__ import annotations

import math
import random
from dataclasses import replace
from pathlib import Path

import pytest
from support.rows import cell as row_of
from support.rows import write_by_build

from suite.cli import main
from suite.compare.rule import LESS_SPEEDUP, REGRESSION, UNCHANGED, Rule, judge
from suite.report.measurement import Measurement
from suite.results import RowWriter
from suite.run import rerun
from suite.run.coverage import Series, Tally, measure, pct, render
from suite.run.repeat import CellSpread, collect
from suite.spec.load import load_matrix
from suite.spec.settings import RunNoise, SettingError, Settings
from suite.stats import between_run_variance, log_se, rerun_interval, z_of

ROOT = Path(__file__).resolve().parents[2]


def runs(n: int, tau: float, se: float, seed: int, level: float = 100.0) -> list[tuple[float, float, float]]:
    """n runs of one cell: (median, CI low, CI high); each run's level moves by N(0, tau) on the
    log scale, its median by N(0, se) more, and its 95% CI has half-width z * se."""
    rng = random.Random(seed)
    z = z_of(0.95)
    out = []
    for _ in range(n):
        m = level * math.exp(rng.gauss(0, tau) + rng.gauss(0, se))
        out.append((m, m * math.exp(-z * se), m * math.exp(z * se)))
    return out


def test_the_rerun_interval_is_the_ci_widened_by_both_runs_noise() -> None:
    z = z_of(0.95)
    assert z == pytest.approx(1.959964, abs=1e-6)
    lo, hi = 100 * math.exp(-z * 0.01), 100 * math.exp(z * 0.01)
    assert log_se(lo, hi) == pytest.approx(0.01)
    # no between-run noise: sqrt(2) times the CI (the other run's median has an error of its own)
    r_lo, r_hi = rerun_interval(100, lo, hi, 0.0)
    assert math.log(r_hi / 100) == pytest.approx(math.sqrt(2) * z * 0.01)
    assert r_lo * r_hi == pytest.approx(100 * 100)
    # a 5% between-run noise dominates a 1% sampling error
    _, wide = rerun_interval(100, lo, hi, 0.05)
    assert math.log(wide / 100) == pytest.approx(z * math.sqrt(2 * (0.01**2 + 0.05**2)))
    with pytest.raises(ValueError):
        log_se(0, 1)


def test_the_between_run_variance_is_what_the_medians_spread_beyond_their_own_errors() -> None:
    estimates = [between_run_variance(runs(30, 0.05, 0.005, seed)) for seed in range(40)]
    assert math.sqrt(sum(estimates) / len(estimates)) == pytest.approx(0.05, rel=0.1)
    # runs that spread no more than their errors say: no between-run noise
    assert between_run_variance([(100, 90, 110), (101, 91, 111), (99, 89, 109)]) == 0.0
    with pytest.raises(ValueError):
        between_run_variance([(100, 99, 101)])


def spreads(seed: int, tau: float, cells: int = 4, reps: int = 11) -> list[CellSpread]:
    out = []
    for c in range(cells):
        got = runs(reps, tau, 0.004, seed * 100 + c)
        key = {"model": f"M{c}", "batch_size": "1", "mode": "eager"}
        out.append(
            CellSpread(key, tuple(m for m, _, _ in got), (), (), (), tuple((lo, hi) for _, lo, hi in got))
        )
    return out


def test_coverage_of_the_ci_is_low_and_of_the_rerun_interval_near_95_percent() -> None:
    # 20 repeats of 4 cells x 11 repetitions, a 5% between-run noise and 0.4% sampling errors, as on
    # a shared CPU: the CI of the median almost never holds a rerun's median; the rerun interval,
    # its noise taken from the other repetitions only, holds it about 95% of the time
    ci = rr = held = pairs = held_pairs = 0
    for seed in range(20):
        measured, t2 = measure([Series.medians(c) for c in spreads(seed, 0.05)], hold_out=1)
        assert t2 is not None and 0.02 < math.sqrt(t2) < 0.09
        for cc in measured:
            ci += cc.ci.hits
            rr += cc.held_pairs.hits
            pairs += cc.ci.pairs
            held += cc.held_out.hits
            held_pairs += cc.held_out.pairs
            assert cc.ci.pairs == cc.held_pairs.pairs == 90 and cc.held_out.pairs == 20
            assert cc.rows.pairs == 0  # the rows carry no rerun interval
    assert ci / pairs < 0.25
    assert 0.90 <= rr / pairs <= 0.98
    assert 0.88 <= held / held_pairs <= 0.99
    # without the between-run part (tau 0) the same intervals would cover only the sampling error
    hits = total = 0
    for s in spreads(0, 0.05):
        bounds = [rerun_interval(m, lo, hi, 0.0) for m, (lo, hi) in zip(s.medians, s.intervals, strict=True)]
        for i, m in enumerate(s.medians):
            for j, (lo, hi) in enumerate(bounds):
                if i != j:
                    total, hits = total + 1, hits + (lo <= m <= hi)
    assert hits / total < 0.3


def test_the_coverage_table_names_the_noise_to_set() -> None:
    text = "\n".join(render(spreads(1, 0.05), processes=1, device_type="cpu", hold_out=1))
    assert text.startswith("Coverage of the median with 1 process(es) per cell")
    assert "| model | batch | mode | CI | rerun interval, rows' own |" in text
    assert "| all | | |" in text
    assert "`run_noise_pct: {cpu: " in text and "from all but the last 1 (1 process(es) per cell)" in text


def test_run_noise_pct_is_a_setting_per_device_type(tmp_path: Path, capsys) -> None:
    assert RunNoise(cpu=5.0).tau("cpu") == pytest.approx(math.log(1.05))
    assert RunNoise(cpu=5.0).tau("cuda") is None
    with pytest.raises(SettingError, match="0 to 100"):
        RunNoise(cpu=-1)
    text = (ROOT / "matrix.yaml").read_text()
    assert "run_noise_pct:" in text  # the measured default for this project's CPU
    matrix = load_matrix(ROOT / "matrix.yaml")
    assert matrix.defaults.run_noise.cpu is not None
    # cuda: provisional figures from the first GPU study's rows (matrix.yaml says so)
    assert (matrix.defaults.run_noise.cuda, matrix.defaults.speedup_noise.cuda) == (20.0, 8.0)
    for bad, message in (
        ("{gpu: 5}", "defaults.run_noise_pct.gpu: unknown key 'gpu'"),
        ("{cpu: -1}", "defaults.run_noise_pct.cpu: must be from 0 to 100"),
        ("{cpu: fast}", "defaults.run_noise_pct.cpu: must be a number"),
        ("5", "defaults.run_noise_pct: must be a mapping"),
    ):
        path = tmp_path / "m.yaml"
        path.write_text(text.replace("run_noise_pct: {cpu:", f"run_noise_pct: {bad}  # {{cpu:", 1))
        assert main(["plan", "--matrix", str(path)]) == 2, bad
        assert f"{path}: {message}" in capsys.readouterr().err


def test_an_ok_row_gets_its_rerun_interval_where_the_noise_is_measured() -> None:
    row = {"status": "ok", "median_ms": 100.0, "ci95_low_ms": 99.0, "ci95_high_ms": 101.0}
    noisy = Settings(run_noise=RunNoise(cpu=5.0))
    got = rerun.fields(row, noisy, "cpu")
    assert got["run_noise_pct"] == 5.0
    assert got["rerun95_low_ms"] < 99.0 and got["rerun95_high_ms"] > 101.0
    assert (got["rerun95_low_ms"], got["rerun95_high_ms"]) == rerun_interval(100, 99, 101, math.log(1.05))
    assert rerun.fields(row, noisy, "cuda") == {}  # not measured there
    assert rerun.fields({**row, "status": "error"}, noisy, "cpu") == {}
    assert rerun.fields({**row, "ci95_low_ms": None}, noisy, "cpu") == {}
    # a compiled row's paired speed-up gets its own, with its own noise
    paired = {**row, "speedup": 1.2, "speedup_ci95_low": 1.19, "speedup_ci95_high": 1.21}
    both = rerun.fields(paired, replace(noisy, speedup_noise=RunNoise(cpu=2.0)), "cpu")
    assert both["speedup_noise_pct"] == 2.0
    assert (both["speedup_rerun95_low"], both["speedup_rerun95_high"]) == rerun_interval(
        1.2, 1.19, 1.21, math.log(1.02)
    )
    assert "speedup_noise_pct" not in rerun.fields(paired, noisy, "cpu")


BASE = Measurement("ok", "", 10, 10, 9.9, 10.1, None, None, None, "pass", None, "x", health="ok")


def test_compare_judges_a_median_against_the_runs_between_run_noise() -> None:
    slower = replace(BASE, mean_ms=11.5, median_ms=11.5, ci_low_ms=11.4, ci_high_ms=11.6)
    assert judge(BASE, slower, 0.05)[0] == REGRESSION  # the CIs alone: 15% slower
    noisy = (replace(BASE, run_noise_pct=7.0), replace(slower, run_noise_pct=7.0))
    verdict, _, low, high = judge(*noisy, 0.05, Rule())
    assert verdict == UNCHANGED and low < 1 < high  # within 4 sd of two runs' 7% noise
    quiet = (replace(BASE, run_noise_pct=1.0), replace(slower, run_noise_pct=1.0))
    assert judge(*quiet, 0.05, Rule())[0] == REGRESSION
    # rows from before rows carried their noise carry none: compare --run-noise-pct gives it
    assert judge(BASE, slower, 0.05, Rule(run_noise_pct=7.0))[0] == UNCHANGED


def test_compare_reports_cells_judged_on_their_noise(tmp_path: Path, capsys) -> None:
    rows = [row_of(f"M{i}", 10.0, 9.9, 10.1, mode="eager", health="ok", run_noise_pct=7.0) for i in range(3)]
    base = write_by_build(tmp_path / "a", rows)
    new = write_by_build(
        tmp_path / "b",
        [{**r, "median_ms": 11.5, "mean_ms": 11.5, "ci95_low_ms": 11.4, "ci95_high_ms": 11.6} for r in rows],
    )
    out = tmp_path / "cmp.md"
    assert main(["compare", str(base), str(new), "-o", str(out)]) == 0
    assert "3 of 3 cell(s) carry the machine's between-run noise" in out.read_text()
    assert main(["compare", str(base), str(new), "--noise-z", "0"]) == 1  # the threshold alone


def test_the_coverage_verb_reads_a_repeat_folder(tmp_path: Path, capsys) -> None:
    for rep, (m, lo, hi) in enumerate(runs(5, 0.05, 0.004, 3), start=1):
        r = row_of("ViT", m, lo, hi, mode="eager", health="ok")
        r["device"] = "cpu"
        with RowWriter(tmp_path / "cov" / f"rep-{rep}" / "raw" / "current__cpu.csv") as w:
            w.append(r)
    assert len(collect(sorted((tmp_path / "cov").glob("rep-*")))[0].medians) == 5
    assert main(["coverage", str(tmp_path / "cov"), "--hold-out", "1"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("cov: 5 repetitions") and "| ViT | 1 | eager | " in out and "{cpu: " in out
    assert main(["coverage", str(tmp_path / "nothing")]) == 2
    assert "no rep-<i> folders" in capsys.readouterr().err
    assert main(["coverage", str(tmp_path / "cov"), "--hold-out", "-1"]) == 2


def test_a_cell_carries_its_run_noise_to_its_worker() -> None:
    from suite.spec.model import Cell, ModelSpec

    model = ModelSpec(name="M", task="Image Classification", model_type="vit", config={})
    settings = Settings(weights="random", run_noise=RunNoise(cpu=4.5))
    c = Cell(build="b", model=model, batch_size=1, mode="eager", scenario="inference", settings=settings)
    assert Cell.from_json(c.to_json()).settings.run_noise == RunNoise(cpu=4.5)
    with pytest.raises(SettingError, match="cpu/cuda to percent"):
        replace(settings, run_noise={"cpu": 4.5})


def test_a_fallen_speed_up_must_clear_its_between_run_noise() -> None:
    base = replace(BASE, speedup=1.10, speedup_low=1.09, speedup_high=1.11)
    fell = replace(BASE, speedup=0.95, speedup_low=0.94, speedup_high=0.96)  # 1.158x less
    assert judge(base, fell, 0.05)[0] == LESS_SPEEDUP  # the CIs alone
    noisy = (replace(base, speedup_noise_pct=6.0), replace(fell, speedup_noise_pct=6.0))
    assert judge(*noisy, 0.05, Rule())[0] == UNCHANGED  # 4 sd of two runs' 6%: about 40%
    assert judge(*noisy, 0.05, Rule(noise_z=1.0))[0] == LESS_SPEEDUP
    assert judge(base, fell, 0.05, Rule(speedup_noise_pct=6.0))[0] == UNCHANGED  # the fallback
    assert judge(base, fell, 0.05, Rule(noise_z=0, speedup_noise_pct=6.0))[0] == LESS_SPEEDUP


def test_the_committed_coverage_run_gives_the_documented_figures() -> None:
    """docs/intervals.md and matrix.yaml's noise come from this folder: recomputed from its rows."""
    folder = ROOT / "results" / "2026-11-25-cpu-amd-epyc-coverage" / "cov-k1"
    cells = collect([folder / f"rep-{i}" for i in range(1, 12)])
    medians, t2 = measure([Series.medians(c) for c in cells], hold_out=1)
    total = [sum((getattr(m, f) for m in medians), Tally()) for f in ("ci", "held_pairs", "held_out")]
    assert [str(t) for t in total] == ["41 / 360 (11.4%)", "343 / 360 (95.3%)", "70 / 80 (87.5%)"]
    speedups, s2 = measure([Series.speedups(c) for c in cells], hold_out=1)
    assert sum((m.held_pairs for m in speedups), Tally()).hits == 166
    matrix = load_matrix(ROOT / "matrix.yaml").defaults
    assert (pct(t2), pct(s2)) == (f"{matrix.run_noise.cpu}%", f"{matrix.speedup_noise.cpu}%")
