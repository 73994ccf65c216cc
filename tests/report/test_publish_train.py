"""`suite merge` for the train scenario and custom configurations: hand-made raw CSVs whose
training tables, peak-memory tables and custom-configuration rows are checked cell by cell."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest
from support.rows import write_one_csv

from suite.cli import main
from suite.report.load import load
from suite.report.reference import Reference
from suite.report.study import Study, custom_base, setup_variant
from suite.report.tables.cells import TRAIN_LEGEND
from suite.report.tables.compile_vs_eager import compile_groups, compile_vs_eager
from suite.report.tables.memory import MEMORY_NOTE, peak_memory
from suite.report.tables.summary import summary_table

H100 = "NVIDIA H100 80GB HBM3"
TASKS = {"ViT": "Image Classification", "vit-6-layers": "Image Classification", "OwlViT": "Object Detection"}


def row(model: str, bs: int, mode: str, scenario: str, status: str = "ok", **measured: object) -> dict:
    return {
        "run_id": "t",
        "build": "current",
        "device": "cuda",
        "gpu_name": H100,
        "task": TASKS[model],
        "model": model,
        "model_id": "vit (config)" if model == "vit-6-layers" else model.lower(),
        "weights": "random",
        "batch_size": bs,
        "mode": mode,
        "dtype": "float32",
        "scenario": scenario,
        "status": status,
        "error": "" if status == "ok" else f"{status}: why",
        "variant": "custom of ViT" if model == "vit-6-layers" else "",
        "torch_version": "2.13.0+cu128",
        "started_at": "2026-01-01T00:00:00+00:00",
        **measured,
    }


def eager(model, bs, scenario, mean, mem, params=86.6):
    lo, hi = mean * 0.98, mean * 1.02
    return row(
        model, bs, "eager", scenario, mean_ms=mean, median_ms=mean, ci95_low_ms=lo, ci95_high_ms=hi,
        peak_mem_mb=mem, params_m=params,
    )  # fmt: skip


def compiled(cell, mean, mem, s, accuracy="pass", params=86.6):
    """`cell`: (model, batch size, mode, scenario)."""
    lo, hi = mean * 0.98, mean * 1.02
    return row(
        *cell, mean_ms=mean, median_ms=mean, ci95_low_ms=lo, ci95_high_ms=hi,
        speedup=s, speedup_ci95_low=s - 0.05, speedup_ci95_high=s + 0.05, accuracy=accuracy,
        peak_mem_mb=mem, params_m=params, eager_median_ms=mean * s,  # the pair, as the worker writes it
    )  # fmt: skip


H100_CSV = "current__cuda-h100.csv"  # the run's one raw CSV
ROWS = [
    # inference, batch 1
    eager("ViT", 1, "inference", 4.0, 400),
    compiled(("ViT", 1, "default", "inference"), 2.0, 420, 2.0),
    eager("vit-6-layers", 1, "inference", 2.2, 230, params=43.1),
    compiled(("vit-6-layers", 1, "default", "inference"), 1.1, 240, 2.0, params=43.1),
    # train, batch 1 and 4; the custom configuration's compiled step fails the loss check
    eager("ViT", 1, "train", 30.0, 1500),
    compiled(("ViT", 1, "default", "train"), 20.0, 1400, 1.5),
    compiled(("ViT", 1, "reduce-overhead", "train"), 15.0, 1900, 2.0),
    eager("vit-6-layers", 1, "train", 16.0, 800, params=43.1),
    compiled(("vit-6-layers", 1, "default", "train"), 12.0, 760, 4 / 3, accuracy="fail", params=43.1),
    eager("ViT", 4, "train", 100.0, 4100),
    row("ViT", 4, "default", "train", "oom"),
    row("OwlViT", 1, "eager", "train", "skipped"),
    row("OwlViT", 1, "default", "train", "skipped"),
]


@pytest.fixture
def run(tmp_path: Path) -> Path:
    return write_one_csv(tmp_path / "run", ROWS, H100_CSV)


@pytest.fixture
def study(run: Path) -> Study:
    return Study(load([run]).frame, {"current": "release"})


def by_name(study: Study):
    return {t.name: t for t in (compile_vs_eager(study, g, Reference.load()) for g in compile_groups(study))}


def test_variant_splits_into_setup_and_base() -> None:
    assert (setup_variant("smoke, custom of ViT"), custom_base("smoke, custom of ViT")) == ("smoke", "ViT")
    assert (setup_variant("custom of ViT"), custom_base("custom of ViT")) == ("", "ViT")
    assert (setup_variant("smoke"), custom_base("smoke")) == ("smoke", "")
    assert (setup_variant(""), custom_base("")) == ("", "")


def test_training_gets_its_own_compile_vs_eager_tables(study: Study) -> None:
    tables = by_name(study)
    stem = "nvidia-h100-80gb-hbm3__current"
    assert sorted(tables) == [
        f"compile-vs-eager__{stem}__bs1__default__float32-inference-random-weights",
        f"train-compile-vs-eager__{stem}__bs1__default__float32-train-random-weights",
        f"train-compile-vs-eager__{stem}__bs1__reduce-overhead__float32-train-random-weights",
        f"train-compile-vs-eager__{stem}__bs4__default__float32-train-random-weights",
    ]
    t = tables[f"train-compile-vs-eager__{stem}__bs1__default__float32-train-random-weights"]
    assert t.section == "train compile vs eager"
    assert t.title == f"Training step · {H100} · current (torch 2.13.0+cu128) · batch size 1 · mode default"
    assert t.subtitle == "Build kind: release. Setup: float32, train, random weights."
    custom = "Image Classification/vit-6-layers (custom of ViT)"
    assert t.markdown_rows() == [
        ["Image Classification/ViT", "30.000", "20.000", "33.3% · 1.50x [1.45, 1.55]"],
        [custom, "16.000", "12.000 †", "25.0% · 1.33x [1.28, 1.38] †"],
        ["Object Detection/OwlViT", "skipped", "skipped", "skipped"],
    ]
    md = t.markdown()
    assert TRAIN_LEGEND in md and "median per training step" in md
    assert "first compiled step's loss differs from the eager loss" in md  # the dagger's note
    assert "median per inference" not in md
    oom = tables[f"train-compile-vs-eager__{stem}__bs4__default__float32-train-random-weights"]
    assert oom.markdown_rows() == [["Image Classification/ViT", "100.000 ‡", "OOM", "OOM"]]  # no pair


def test_inference_table_keeps_its_shape_and_the_custom_sits_beside_its_base(study: Study) -> None:
    t = by_name(study)[
        "compile-vs-eager__nvidia-h100-80gb-hbm3__current__bs1__default__float32-inference-random-weights"
    ]
    assert t.section == "compile vs eager" and t.title.startswith(H100)
    assert t.markdown_rows() == [
        ["Image Classification/ViT", "4.000", "2.000", "50.0% · 2.00x [1.95, 2.05]"],
        ["Image Classification/vit-6-layers (custom of ViT)", "2.200", "1.100", "50.0% · 2.00x [1.95, 2.05]"],
    ]  # fmt: skip
    frame = t.frame()
    assert list(frame["model"]) == ["ViT", "vit-6-layers"]  # the CSV keeps the plain name
    assert "median per inference" in t.markdown()


def test_peak_memory_per_model_and_batch_size_inference_and_train(study: Study) -> None:
    (t,) = peak_memory(study)
    assert t.name == "peak-memory__nvidia-h100-80gb-hbm3__current"
    assert t.section == "peak memory" and t.notes == [MEMORY_NOTE]
    assert t.subtitle == "Build kind: release. Setup: float32, random weights."
    assert [c.md for c in t.columns] == [
        "Task/Model",
        "Batch Size",
        "params (M)",
        "inference eager (MB)",
        "inference default (MB)",
        "train eager (MB)",
        "train default (MB)",
        "train reduce-overhead (MB)",
    ]
    assert t.markdown_rows() == [
        ["Image Classification/ViT", "1", "86.60", "400", "420", "1500", "1400", "1900"],
        ["Image Classification/ViT", "4", "86.60", "—", "—", "4100", "OOM", "—"],
        ["Image Classification/vit-6-layers (custom of ViT)", "1", "43.10", "230", "240", "800", "760", "—"],
        ["Object Detection/OwlViT", "1", "—", "—", "—", "skipped", "skipped", "—"],
    ]
    frame = t.frame()
    assert list(frame.columns[-5:]) == [
        "inference eager peak MB",
        "inference default peak MB",
        "train eager peak MB",
        "train default peak MB",
        "train reduce-overhead peak MB",
    ]
    assert frame.loc[1, "train eager peak MB"] == 4100 and frame.loc[1, "train default peak MB"] == "OOM"
    assert frame.loc[1, "inference eager peak MB"] == "" and frame.loc[2, "params (M)"] == 43.1


def test_smoke_and_full_models_get_separate_memory_tables(tmp_path: Path) -> None:
    smoke = [{**r, "variant": ", ".join(p for p in ("smoke", r["variant"]) if p)} for r in ROWS[:4]]
    study = Study(
        load([write_one_csv(tmp_path / "run", ROWS[:4] + smoke, H100_CSV)]).frame, {"current": "release"}
    )
    tables = peak_memory(study)
    assert [t.name for t in tables] == [
        "peak-memory__nvidia-h100-80gb-hbm3__current__float32-random-weights",
        "peak-memory__nvidia-h100-80gb-hbm3__current__float32-random-weights-smoke-models",
    ]
    assert tables[1].markdown_rows()[1][0] == "Image Classification/vit-6-layers (custom of ViT)"


def test_summary_separates_train_from_inference(study: Study) -> None:
    setups = {r[4] for r in summary_table(study).rows}
    assert setups == {"float32, inference, random weights", "float32, train, random weights"}


def test_merge_cli_writes_training_and_memory_tables(run: Path, capsys) -> None:
    assert main(["merge", str(run), "--no-plots"]) == 0
    tables = run / "tables"
    names = sorted(p.name for p in tables.glob("*.md"))
    assert "peak-memory__nvidia-h100-80gb-hbm3__current.md" in names
    assert sum(n.startswith("train-compile-vs-eager__") for n in names) == 3
    index = (tables / "tables.md").read_text()
    assert "## Training step: compile vs eager" in index and "## Peak memory per model" in index
    assert TRAIN_LEGEND in index
    with open(tables / "peak-memory__nvidia-h100-80gb-hbm3__current.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [r["model"] for r in rows] == ["ViT", "ViT", "vit-6-layers", "OwlViT"]


def test_merge_plots_training_groups(run: Path) -> None:
    assert main(["merge", str(run)]) == 0
    plots = sorted(p.name for p in (run / "plots").glob("train__*.png"))
    assert len(plots) == 6  # duration + improvement for each of the 3 training groups


def test_an_inference_only_run_says_there_is_no_training_table(tmp_path: Path) -> None:
    run = write_one_csv(tmp_path / "run", ROWS[:4], H100_CSV)
    assert main(["merge", str(run), "--no-plots"]) == 0
    index = (run / "tables" / "tables.md").read_text()
    assert "No compiled training cell in the inputs" in index
    assert TRAIN_LEGEND not in index


def test_a_compiled_cell_slower_than_half_still_plots(tmp_path: Path) -> None:
    """A speed-up below 0.5x is an improvement below -100%, where the CI is cut: no crash."""
    slow = [eager("ViT", 1, "train", 10.0, 900), compiled(("ViT", 1, "default", "train"), 25.0, 950, 0.4)]
    run = write_one_csv(tmp_path / "run", slow, H100_CSV)
    assert main(["merge", str(run)]) == 0
    assert len(list((run / "plots").glob("train__*.png"))) == 2
