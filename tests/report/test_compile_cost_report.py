"""The compile-cost and dynamic-shapes tables and the amortization plot, from hand-made raw CSVs:
every figure where it belongs, an empty one with its reason, a partly warm one marked, a
skipped setting explained, the break-even columns of the compile-vs-eager table, the plot
rendered with its break-even points."""

from __future__ import annotations

from pathlib import Path

import pytest

from suite.report.amortization import lines_of
from suite.report.load import load
from suite.report.publish import run_merge
from suite.report.study import Study
from suite.results import RowWriter

CPU = "AMD EPYC"
TORCH = {"stable": "2.0.1+cu117", "current": "2.13.0+cpu"}
NOTE_2_13 = (
    "cold: FX graph 0/1 hit (1 miss), AOTAutograd 0/1 hit (1 miss); mega-cache saved (2 artifacts, 284 KiB); "
    "warm: FX graph 1/1 hit, AOTAutograd 1/1 hit; mega-cache: loaded 2 artifacts (284 KiB) in 0.50 s, "
    "FX graph 1/1 hit, AOTAutograd 1/1 hit"
)
NOTE_2_0 = (
    "cold: kernels only (torch 2.0.1+cu117 has no FX graph or AOTAutograd cache); mega-cache: torch "
    "2.0.1+cu117 has no torch.compiler.save_cache_artifacts; warm: kernels only (torch 2.0.1+cu117 has no "
    "FX graph or AOTAutograd cache)"
)


def row(build: str, model: str, bs: int, mode: str, status: str = "ok", **measured: object) -> dict:
    return {
        "run_id": "t",
        "build": build,
        "device": "cpu",
        "gpu_name": CPU,
        "task": "Image Classification",
        "model": model,
        "model_id": model.lower(),
        "weights": "random",
        "batch_size": bs,
        "mode": mode,
        "dtype": "float32",
        "scenario": "inference",
        "status": status,
        "error": "" if status == "ok" else f"{status}: why",
        "torch_version": TORCH[build],
        "started_at": "2026-01-01T00:00:00+00:00",
        **measured,
    }


def timed(median: float, eager: float | None = None) -> dict:
    out: dict = {
        "mean_ms": median,
        "median_ms": median,
        "ci95_low_ms": median * 0.9,
        "ci95_high_ms": median * 1.1,
    }
    if eager is not None:
        out.update(eager_median_ms=eager, speedup=eager / median, speedup_ci95_low=1.0, speedup_ci95_high=9.0)
    return out


def dyn(build: str, setting: str, bs: int, compile_s: float, recompiles: int, median: float, **more) -> dict:
    fields = {**timed(median, 2 * median), "compile_s": compile_s, "recompiles": recompiles, **more}
    return {**row(build, "ViT", bs, "default", **fields), "scenario": "dynamic-batch", "dynamic": setting}


ROWS = [
    row("current", "ViT", 1, "eager", **timed(12.0), eager_first_result_s=4.0),
    row(
        "current", "ViT", 1, "default",
        **timed(2.0, 12.0), compile_s=30.0, recompiles=0, compile_warm_s=5.0, compile_megacache_s=8.0,
        eager_first_result_s=4.5, first_result_s=34.5, breakeven_calls=3000.0, breakeven_calls_warm=500.0,
        compile_note=NOTE_2_13,
    ),
    # compiled slower: no break-even; its warm process missed a cache
    row(
        "current", "ResNet", 1, "default",
        **timed(3.0, 2.0), compile_s=20.0, compile_warm_s=15.0, eager_first_result_s=3.0,
        first_result_s=23.0, compile_note="cold: FX graph 0/2 hit (2 miss); warm: FX graph 1/2 hit (1 miss); "
        "mega-cache: torch saved no artifacts",
    ),
    row("stable", "ViT", 1, "eager", **timed(11.0)),
    row(
        "stable", "ViT", 1, "default",
        **timed(2.0, 11.0), compile_s=40.0, compile_warm_s=20.0, eager_first_result_s=5.0,
        first_result_s=45.0, breakeven_calls=40 / 0.009, breakeven_calls_warm=20 / 0.009,
        compile_note=NOTE_2_0,
    ),
    row("stable", "DETR", 1, "default", status="error"),
    dyn("current", "static", 1, 30.0, 0, 2.0), dyn("current", "static", 4, 18.0, 1, 3.0),
    dyn("current", "static", 16, 16.0, 1, 9.0),
    dyn("current", "auto", 1, 31.0, 0, 2.0), dyn("current", "auto", 4, 15.0, 1, 3.1),
    dyn("current", "auto", 16, 0.1, 0, 9.5),
    dyn("current", "marked", 1, 30.5, 0, 2.0), dyn("current", "marked", 4, 15.5, 1, 3.1),
    dyn("current", "marked", 16, 0.0, 0, 9.4),
    dyn("stable", "static", 1, 37.0, 0, 2.0), dyn("stable", "static", 4, 29.0, 1, 3.0),
    dyn("stable", "static", 16, 27.0, 1, 9.0),
    dyn("stable", "auto", 1, 39.0, 0, 2.0, compile_note="torch 2.0.1+cu117 has no automatic dynamic shapes "
        "(its default is dynamic=False): auto compiles as static does; at 1: first compile"),
    dyn("stable", "auto", 4, 26.0, 1, 3.0), dyn("stable", "auto", 16, 28.0, 1, 9.0),
    *[
        {**row("stable", "ViT", bs, "default", status="skipped"), "scenario": "dynamic-batch",
         "dynamic": "marked", "error": "torch 2.0.1+cu117 has no torch._dynamo.mark_dynamic"}
        for bs in (1, 4, 16)
    ],
]  # fmt: skip


@pytest.fixture(scope="module")
def merged(tmp_path_factory: pytest.TempPathFactory) -> Path:
    run = tmp_path_factory.mktemp("run")
    with RowWriter(run / "raw" / "all__cpu.csv") as writer:
        for r in ROWS:
            writer.append(r)
    out = tmp_path_factory.mktemp("out")
    run_merge([run], out, None, False, run / "no-reference")
    return out


def md(merged: Path, name: str) -> str:
    return (merged / "tables" / f"{name}.md").read_text()


def line(text: str, start: str) -> list[str]:
    (found,) = [row for row in text.splitlines() if row.startswith(start)]
    return [cell.strip() for cell in found.strip("|").split("|")]


def test_the_compile_cost_table_per_build_and_mode(merged: Path) -> None:
    current = md(merged, "compile-cost__cpu-amd-epyc__current__default")
    assert line(current, "| Image Classification/ViT |") == [
        "Image Classification/ViT", "1", "30.0", "5.0", "8.0", "4.5", "34.5", "3,000", "500"
    ]  # fmt: skip
    # slower when compiled: it never breaks even; a warm process that missed a cache is marked
    assert line(current, "| Image Classification/ResNet |") == [
        "Image Classification/ResNet", "1", "20.0", "15.0*", "—", "3.0", "23.0", "never", "never"
    ]  # fmt: skip
    assert "never where compiling is not faster" in current
    assert "* its process missed or bypassed a cache" in current
    assert "Empty mega-cache: torch saved no artifacts" in current
    stable = md(merged, "compile-cost__cpu-amd-epyc__stable__default")
    assert line(stable, "| Image Classification/ViT |")[2:5] == ["40.0", "20.0", "—"]
    assert line(stable, "| Image Classification/DETR |")[2:] == ["error"] * 7  # a failure reads as such
    assert "Empty mega-cache: torch 2.0.1+cu117 has no torch.compiler.save_cache_artifacts" in stable
    assert "Warm: kernels only (torch 2.0.1+cu117 has no FX graph or AOTAutograd cache)." in stable


def test_the_compile_cost_csv_has_plain_numbers(merged: Path) -> None:
    import pandas as pd

    frame = pd.read_csv(merged / "tables" / "compile-cost__cpu-amd-epyc__current__default.csv")
    vit = frame[frame["model"] == "ViT"].iloc[0]
    assert (vit["compile cold s"], vit["compile warm s"], vit["break-even calls"]) == (30.0, 5.0, 3000.0)
    resnet = frame[frame["model"] == "ResNet"].iloc[0]
    assert resnet["cache missed (warm, mega-cache)"] == "warm"
    assert pd.isna(resnet["break-even calls"])  # "never" is the Markdown's word; the CSV stays numeric


def test_compile_vs_eager_gains_compile_time_and_break_even(merged: Path) -> None:
    table = md(merged, "compile-vs-eager__cpu-amd-epyc__current__bs1__default")
    assert "| compile (s) | break-even (calls) |" in table
    vit = line(table, "| Image Classification/ViT |")
    assert vit[-2:] == ["30.0", "3,000"]


def test_the_dynamic_shapes_table_beside_the_static_cells(merged: Path) -> None:
    current = md(merged, "dynamic-shapes__cpu-amd-epyc__current__default")
    assert "batch sizes 1 → 4 → 16 → 1" in current
    one = line(current, "| Image Classification/ViT | 1 |")
    assert one[2] == "30.0 s · 0 · 2.000 ms · 6.00x"  # the static cell (own process)
    assert one[3:] == [
        "30.0 s · 0 · 2.000 ms · 2.00x",
        "31.0 s · 0 · 2.000 ms · 2.00x",
        "30.5 s · 0 · 2.000 ms · 2.00x",
    ]
    assert line(current, "| Image Classification/ViT | 4 |")[2] == "—"  # no static cell at 4
    total = line(current, "| Image Classification/ViT | all")
    assert total[3:] == ["64.0 s · 2", "46.1 s · 1", "46.0 s · 1"]  # static recompiles more than marked
    stable = md(merged, "dynamic-shapes__cpu-amd-epyc__stable__default")
    assert line(stable, "| Image Classification/ViT | 4 |")[-1] == "skipped"
    assert "Skipped: torch 2.0.1+cu117 has no torch._dynamo.mark_dynamic" in stable
    auto = "torch 2.0.1+cu117 has no automatic dynamic shapes (its default is dynamic=False): auto compiles"
    assert f"{auto} as static does." in stable
    assert "torch specialises batch sizes 0 and 1" in stable


def test_dynamic_rows_stay_out_of_the_guides_tables(merged: Path) -> None:
    names = {p.stem for p in (merged / "tables").glob("*.md")}
    assert not any("dynamic-batch" in n for n in names), names
    index = (merged / "tables" / "tables.md").read_text()
    assert "## What compiling costs" in index and "## Batch sizes that change" in index
    assert "(../plots/amortization/cpu-amd-epyc__current__default__amortization-bs1.png)" in index


def test_the_amortization_plot_draws_the_lines_a_row_has(merged: Path) -> None:
    plots = sorted(p.name for p in (merged / "plots" / "amortization").glob("*.png"))
    assert plots == [
        "cpu-amd-epyc__current__default__amortization-bs1.png",
        "cpu-amd-epyc__stable__default__amortization-bs1.png",
    ]
    assert all((merged / "plots" / "amortization" / p).stat().st_size > 10_000 for p in plots)


def test_the_plot_lines_cross_at_the_break_even(tmp_path: Path) -> None:
    run = tmp_path / "run"
    with RowWriter(run / "raw" / "x.csv") as writer:
        for r in ROWS[:3]:
            writer.append(r)
    study = Study(load([run]).frame, {})
    vit, resnet = (m for k, m in study.cells.items() if k.mode == "default")
    lines = lines_of(vit)
    assert lines is not None
    assert [label for label, *_ in lines.compiles] == [
        "compiled: cold compile", "compiled: warm compile", "compiled: mega-cache"
    ]  # fmt: skip
    for _, compile_s, *_ in lines.compiles:
        n = lines.breakeven(compile_s)
        assert n is not None
        assert n * lines.eager_ms / 1000 == pytest.approx(compile_s + n * lines.compiled_ms / 1000)
    slower = lines_of(resnet)
    assert slower is not None and slower.breakeven(20.0) is None


def test_compare_matches_dynamic_batch_rows_by_their_setting(tmp_path: Path) -> None:
    """Three rows share model, mode and batch size and differ only in `dynamic`: compare must judge
    each against its own setting (marked 3x slower: a regression; static and auto unchanged)."""
    from suite.compare.comparison import compare
    from suite.compare.rule import REGRESSION, UNCHANGED

    def run(name: str, marked_ms: float) -> Path:
        folder = tmp_path / name
        with RowWriter(folder / "raw" / "current__cpu.csv") as writer:
            for setting, median in (("static", 3.0), ("auto", 3.0), ("marked", marked_ms)):
                writer.append(dyn("current", setting, 4, 10.0, 1, median))
        return folder

    cmp = compare(load([run("base", 3.0)]), load([run("new", 9.0)]), 0.05)
    assert not cmp.only_base and not cmp.only_new
    verdicts = {c.key[cmp.key_columns.index("dynamic")]: c.verdict for c in cmp.changes}
    assert verdicts == {"static": UNCHANGED, "auto": UNCHANGED, "marked": REGRESSION}


def test_a_compile_of_zero_seconds_keeps_its_row(tmp_path: Path) -> None:
    """A batch size a symbolic graph already serves compiles nothing (compile_s 0, break-even 0
    calls), as can a warm process whose first compiled call is no slower than an eager one: the
    merge must keep such rows (it once set them aside as corrupt, losing the cell)."""
    run = tmp_path / "run"
    with RowWriter(run / "raw" / "current__cpu.csv") as writer:
        writer.append(dyn("current", "marked", 16, 0.0, 0, 9.4, breakeven_calls=0.0))
        writer.append(
            row(
                "current", "ViT", 1, "default",
                **timed(2.0, 12.0), compile_s=30.0, compile_warm_s=0.0, compile_megacache_s=0.0,
                breakeven_calls=3000.0, breakeven_calls_warm=0.0,
            )
        )  # fmt: skip
    loaded = load([run])
    assert loaded.skipped == () and len(loaded.frame) == 2
