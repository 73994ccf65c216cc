"""End to end: a custom configuration of matrix.yaml (ViT-6-layers: ViT with half its depth)
run beside its base under the custom-smoke profile, inference and a training step, then merged:
its rows say what it is, and the tables list it under its own name next to ViT."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import suite_cli

from suite.results import read_rows

MODELS = "ViT,ViT-6-layers"
# one module-scoped run: under xdist its tests stay on one worker (tests/conftest.py)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("custom")]


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("custom")
    common = ["run", "--profile", "custom-smoke", "--device", "cpu", "--out", str(out), "--run-id", "custom"]
    # every cell eager; one compiled (CI time: a compile is half a minute here)
    passes = (
        ["--models", MODELS, "--modes", "eager", "--scenarios", "inference,train"],
        ["--models", "ViT-6-layers", "--modes", "default", "--scenarios", "inference", "--keep-failed"],
    )
    for extra in passes:
        proc = suite_cli(*common, *extra)
        assert proc.returncode == 0, proc.stderr[-3000:]
    proc = suite_cli("merge", str(out / "custom"), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    return out / "custom"


def test_rows_of_the_custom_configuration(run: Path) -> None:
    (csv_path,) = (run / "raw").glob("*.csv")
    rows = read_rows(csv_path).rows
    assert [(r["model"], r["scenario"], r["mode"]) for r in rows] == [
        ("ViT", "inference", "eager"),
        ("ViT", "train", "eager"),
        ("ViT-6-layers", "inference", "eager"),
        ("ViT-6-layers", "train", "eager"),
        ("ViT-6-layers", "inference", "default"),
    ]
    assert all(r["status"] == "ok" for r in rows), [(r["model"], r["error"]) for r in rows]
    custom = [r for r in rows if r["model"] == "ViT-6-layers"]
    base = [r for r in rows if r["model"] == "ViT"]
    assert {(r["model_id"], r["variant"], r["weights"]) for r in custom} == {
        ("vit (config)", "smoke, custom of ViT", "random")
    }
    assert {r["variant"] for r in base} == {"smoke"}
    # the override survived the shrinking: 6 layers at the smoke width, against the base's 2
    # (embeddings and the 1000-way head are shared, so not 3x; 4 more layers of width 64)
    assert float(custom[0]["params_m"]) > 1.5 * float(base[0]["params_m"])
    compiled = next(r for r in custom if r["mode"] == "default")
    assert compiled["accuracy"] == "pass" and float(compiled["speedup"]) > 0


def test_tables_show_it_under_its_own_name_beside_its_base(run: Path) -> None:
    tables = run / "tables"
    (vs_eager,) = tables.glob("compile-vs-eager__*__bs1__default*.md")
    rows = [line for line in vs_eager.read_text().splitlines() if line.startswith("| Image")]
    base = rows[0].split(" | ")
    # eager only: its own cell's duration, marked ‡ (no paired compiled run to take it from), and §
    # where the machine was busy while it ran
    duration, marks = base[1].split(" ", 1) if " " in base[1] else (base[1], "")
    assert base[0] == "| Image Classification/ViT" and "‡" in marks and base[2] == "—"
    assert float(duration) > 0
    assert rows[1].startswith("| Image Classification/ViT-6-layers (custom of ViT) | ")
    assert "—" not in rows[1], "the custom configuration has eager, compiled and a speed-up"
    (memory,) = tables.glob("peak-memory__*.md")
    text = memory.read_text()
    header = "| Task/Model | Batch Size | params (M) | inference eager (MB) | inference default (MB) | "
    assert header + "train eager (MB) |" in text
    assert "| Image Classification/ViT-6-layers (custom of ViT) | 1 |" in text
    index = (tables / "tables.md").read_text()
    assert "ViT-6-layers (custom of ViT)" in index
