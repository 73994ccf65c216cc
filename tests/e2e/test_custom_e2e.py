"""End to end: a custom configuration of matrix.yaml (ViT-6-layers: ViT with half its depth)
under the custom-smoke profile, inference and a training step (`custom_run` in
tests/conftest.py), then merged with its base's rows from the session's smoke run, which
measures ViT already (this run does not again): its rows say what it is, and the tables list it
under its own name next to ViT."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SmokeRun, suite_cli

from suite.measure import models
from suite.results import RowWriter, read_rows
from suite.spec import Settings, load_matrix

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.slow


def test_rows_of_the_custom_configuration(custom_run: Path) -> None:
    (csv_path,) = (custom_run / "raw").glob("*.csv")
    rows = read_rows(csv_path).rows
    assert [(r["model"], r["scenario"], r["mode"]) for r in rows] == [
        ("ViT-6-layers", "inference", "eager"),
        ("ViT-6-layers", "inference", "default"),
        ("ViT-6-layers", "train", "eager"),
    ]
    assert all(r["status"] == "ok" for r in rows), [(r["model"], r["error"]) for r in rows]
    assert {(r["model_id"], r["variant"], r["weights"]) for r in rows} == {
        ("vit (config)", "smoke, custom of ViT", "random")
    }
    # the override survived the shrinking: 6 layers at the smoke width, against the base's 1
    # (embeddings and the 1000-way head are shared, so not 6x), the base counted as built here
    base = models.build_model(
        load_matrix(REPO / "matrix.yaml").models["ViT"], Settings(weights="random", shrink=True)
    )
    assert float(rows[0]["params_m"]) > 1.5 * models.count_params_m(base)
    compiled = next(r for r in rows if r["mode"] == "default")
    assert compiled["accuracy"] == "pass" and float(compiled["speedup"]) > 0


@pytest.fixture(scope="module")
def merged(
    smoke_run: SmokeRun, request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Path:
    """The base (ViT eager and default, as the smoke run measured it) merged beside the custom run.
    In the smoke run's xdist group: by the time the smoke run is done the custom one is too."""
    custom: Path = request.getfixturevalue("custom_run")
    out = tmp_path_factory.mktemp("custom-merged")
    (smoke_csv,) = (smoke_run.folder / "raw").glob("*.csv")
    with RowWriter(out / "base" / "raw" / smoke_csv.name) as writer:
        for row in read_rows(smoke_csv).rows:
            if row["model"] == "ViT" and row["mode"] in ("eager", "default"):
                writer.append(row)
    proc = suite_cli("merge", str(out / "base"), str(custom), "-o", str(out), "--no-plots")
    assert proc.returncode == 0, proc.stderr
    return out


def test_tables_show_it_under_its_own_name_beside_its_base(merged: Path) -> None:
    tables = merged / "tables"
    (vs_eager,) = tables.glob("compile-vs-eager__*__bs1__default*.md")
    rows = [line for line in vs_eager.read_text().splitlines() if line.startswith("| Image")]
    base = rows[0].split(" | ")
    # the base as the smoke run measured it, eager and compiled (§ where the machine was busy)
    assert base[0] == "| Image Classification/ViT" and float(base[1].split(" ")[0]) > 0
    assert float(base[2].split(" ")[0]) > 0
    assert rows[1].startswith("| Image Classification/ViT-6-layers (custom of ViT) | ")
    assert "—" not in rows[1], "the custom configuration has eager, compiled and a speed-up"
    (memory,) = tables.glob("peak-memory__*.md")
    text = memory.read_text()
    header = "| Task/Model | Batch Size | params (M) | inference eager (MB) | inference default (MB) | "
    assert header + "train eager (MB) |" in text
    assert "| Image Classification/ViT-6-layers (custom of ViT) | 1 |" in text
    index = (tables / "tables.md").read_text()
    assert "ViT-6-layers (custom of ViT)" in index
