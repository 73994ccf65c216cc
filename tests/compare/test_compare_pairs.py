"""Cells timed side by side (a pair) judged by the pair's rule in compare, with the separate runs'
rule beside it; the history's two consecutive nights. Rows made by hand (tests/support/rows)."""

from __future__ import annotations

from pathlib import Path

from support.rows import cell
from support.rows import write_by_build as write

from suite.cli import main
from suite.run import pairrule


def paired(role: str, median: float, pair_id: str = "p1", **ratios: tuple[float, float, float]) -> dict:
    """A compiled row of one pair session; on the new side, its paired ratios (value, low, high)."""
    row = cell("ViT", median, median * 0.99, median * 1.01, speedup=2.0, speedup_ci95_low=1.9,
               speedup_ci95_high=2.1, compile_s=10.0, health="busy", pair_id=pair_id, pair_role=role,
               pair_partner="stable")  # fmt: skip
    if role == "new":
        row["pair_rounds"] = 20
        for name, (value, low, high) in ratios.items():
            row[f"pair_{name}"], row[f"pair_{name}_ci95_low"], row[f"pair_{name}_ci95_high"] = (
                value,
                low,
                high,
            )
    return row


def test_a_paired_cell_slower_beyond_0_95_fails_even_where_the_medians_agree(tmp_path: Path) -> None:
    """The medians of two separate runs cannot tell a 7% slow-down on a busy machine; the pair can."""
    base = write(tmp_path / "base", [paired("base", 10.0)])
    new = write(
        tmp_path / "new", [paired("new", 10.0, latency=(0.93, 0.92, 0.94), speedup=(0.93, 0.92, 0.94))]
    )
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(new), "-o", str(report)]) == 1
    text = report.read_text()
    assert "**REGRESSED: 1 failing change(s) (1 slower" in text
    assert "1.075x [1.064, 1.087] (paired)" in text  # new / base: the paired latency turned over
    assert (
        "## Paired cells, both rules: 1 of 1 failing by the pair's rule, 0 by the separate runs' rule" in text
    )
    assert "| regression | unchanged |" in text  # the two medians alone: nothing to see
    assert "- Rule: 1 cell(s) timed side by side" in text
    assert main(["compare", "--separate", str(base), str(new), "-o", str(report)]) == 0
    assert "every cell judged as two separate runs" in report.read_text()


def test_an_interval_that_reaches_0_95_is_unchanged_and_another_session_is_not_paired(tmp_path: Path) -> None:
    base = write(tmp_path / "base", [paired("base", 10.0)])
    near = write(tmp_path / "near", [paired("new", 10.0, latency=(0.96, 0.94, 0.98))])
    report = tmp_path / "r.md"
    assert main(["compare", str(base), str(near), "-o", str(report)]) == 0
    assert "| unchanged | unchanged |" in report.read_text()
    other = write(tmp_path / "other", [paired("new", 10.0, pair_id="p2", latency=(0.5, 0.4, 0.6))])
    assert main(["compare", str(base), str(other), "-o", str(report)]) == 0  # not one session: medians
    assert "none was timed side by side" in report.read_text()


def test_the_pair_rule_names_each_verdict() -> None:
    def figures(**ratios: tuple[float, float, float]) -> pairrule.PairFigures:
        row = paired("new", 10.0, **ratios)
        got = pairrule.PairFigures.of(row.get)
        assert got is not None
        return got

    assert pairrule.judge(figures(latency=(1.0, 0.97, 1.03))).verdict == pairrule.UNCHANGED
    assert pairrule.judge(figures(throughput=(0.9, 0.85, 0.94))).verdict == pairrule.SLOWER
    assert pairrule.judge(figures(latency=(1.2, 1.1, 1.3))).verdict == pairrule.FASTER
    slow_compile = paired("new", 10.0, latency=(1.0, 0.99, 1.01))
    slow_compile["pair_compile_time_ratio"] = 1.2
    slow_compile["health"] = "ok"
    assert pairrule.judge(pairrule.PairFigures.of(slow_compile.get)).verdict == pairrule.SLOWER_COMPILE  # type: ignore[arg-type]
    # one compile each has no interval: on a machine its health column flags, a slower compile is
    # suspect (not a regression), as compare judges separate runs' compiles
    slow_compile["health"] = "busy,host-varied"
    suspect = pairrule.judge(pairrule.PairFigures.of(slow_compile.get))  # type: ignore[arg-type]
    assert suspect.verdict == pairrule.SUSPECT_COMPILE and not suspect.regressed
    assert "busy,host-varied" in suspect.why[0]
    assert pairrule.PairFigures.of(paired("base", 10.0).get) is None  # the base side carries no ratios


def test_the_stable_vs_table_reads_an_eager_only_cell_by_its_pair(tmp_path: Path) -> None:
    """A cell with no compiled row (the smoke profile's eager-only models) timed side by side:
    its `no compile` ratio is the pair's, not the ratio of two separate medians."""
    from suite.report.load import load
    from suite.report.study import Study
    from suite.report.tables.stable_vs import stable_vs_others

    base = paired("base", 10.0) | {"mode": "eager", "speedup": None, "compile_s": None}
    new = paired("new", 12.5, latency=(0.97, 0.95, 0.99)) | {
        "mode": "eager",
        "build": "nightly",
        "speedup": None,
        "compile_s": None,
    }
    resnet = {"model": "ResNet", "model_id": "resnet"}  # a compiled model, so the table has a mode
    compiled = [
        paired("base", 5.0) | resnet,
        paired("new", 5.0, latency=(1.0, 0.99, 1.01)) | resnet | {"build": "nightly"},
    ]
    folder = write(tmp_path / "run", [base, new, *compiled])
    (table,) = stable_vs_others(Study(load([folder]).frame, {"stable": "stable", "nightly": "nightly"}))
    rows = [r for r in table.rows if "ViT" in str(r[0])]
    assert len(table.rows) == 2 and len(rows) == 1
    cells = dict(zip([c.csv for c in table.columns], rows[0], strict=True))
    assert cells["nightly vs stable: rule"] == "paired: unchanged"
    gain = cells["nightly vs stable without torch.compile"]
    assert (gain.factor, gain.low, gain.high) == (0.97, 0.95, 0.99)  # not 10.0 / 12.5
