"""The mixed-resolution scenario (docs/mixed-resolution.md): the sizes a model is served at, the
inputs resized, and one real cell on a tiny ViT whose recompiles dynamo counts (dynamo's `eager`
backend stands in for inductor: the graphs and guards are dynamo's, the cost of a compile is not
what is tested)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from suite.errors import UsageError
from suite.spec import load_matrix
from suite.spec.expand import Filters, expand

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


def test_sizes_are_scaled_aligned_and_distinct() -> None:
    from suite.measure.scenarios.mixed_resolution import sizes_for

    assert sizes_for((224, 224), (1.0, 0.75, 1.25), 16) == [
        (224, 224),
        (160, 160),
        (288, 288),
    ]  # 168 rounds to 160
    assert sizes_for((800, 1066), (1.0, 0.75, 0.6), 32) == [(800, 1056), (608, 800), (480, 640)]
    assert sizes_for((32, 32), (1.0, 0.9, 2.0), 32) == [(32, 32), (64, 64)]  # 0.9 rounds back to 32


def test_cells_per_dynamic_setting_and_bad_scales(tmp_path: Path) -> None:
    matrix = load_matrix(TINY)
    cells = expand(matrix, "tiny", "t", Filters(scenarios=("mixed-resolution",)))
    assert cells == []  # the tiny profile is eager only: nothing to compile
    text = TINY.read_text().replace("modes: [eager]", "modes: [eager, default]")
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("timeout_s: 120}", "timeout_s: 120, resolution_scales: [1.0, 2.0]}"))
    cells = expand(
        load_matrix(path), "tiny", "t", Filters(scenarios=("mixed-resolution",), models=("TinyViT",))
    )
    assert [(c.mode, c.dynamic) for c in cells] == [("default", d) for d in ("static", "auto", "marked")]
    assert cells[0].settings.resolution_scales == (1.0, 2.0)
    path.write_text(text.replace("timeout_s: 120}", "timeout_s: 120, resolution_scales: [1.0]}"))
    with pytest.raises(UsageError, match=r"profiles\.tiny\.settings\.resolution_scales: needs two"):
        load_matrix(path)


def test_a_tiny_vit_recompiles_once_for_a_new_size(monkeypatch: pytest.MonkeyPatch) -> None:
    torch = pytest.importorskip("torch")
    import suite.measure.scenarios.mixed_resolution as mixed
    from suite.measure import worker

    monkeypatch.setattr(mixed, "compile_model", lambda m, mode, **o: torch.compile(m, backend="eager", **o))
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyViT"]
    settings = replace(cell.settings, iterations=2, resolution_scales=(1.0, 2.0))
    torch._dynamo.reset()
    row = worker.run(
        replace(cell, scenario="mixed-resolution", mode="default", dynamic="static", settings=settings), "cpu"
    )
    assert row["status"] == "ok", row.get("error")
    assert row["mixed_sizes"] == "32x32>64x64>32x32"
    assert row["recompiles"] == 1 and row["mixed_max_abs_diff"] == 0.0  # 64x64 compiled; back at 32: cached
    assert row["mixed_note"].startswith("64x64: 1 graph(s)") and "32x32: 0 graph(s)" in row["mixed_note"]
    assert row["mixed_compile_s"] >= 0 and row["mixed_cudagraph_records"] == 0
    for name in ("mixed_p50_ms", "mixed_p99_ms", "fixed_p50_ms", "fixed_p99_ms", "mixed_eager_p50_ms"):
        assert row[name] > 0
    assert row["mixed_p50_ms"] <= row["mixed_p99_ms"] and row["fixed_p50_ms"] <= row["fixed_p99_ms"]


def test_the_table_has_a_row_per_setting() -> None:
    pd = pytest.importorskip("pandas")
    from suite.report.tables.mixed_resolution import mixed_resolution_tables

    base = {"device": "cpu", "gpu_name": "CPU", "build": "b", "dtype": "float32", "mode": "default"}
    base |= {"scenario": "mixed-resolution", "task": "Image Classification", "model": "ViT", "batch_size": 1}
    ok = {"status": "ok", "error": "", "compile_s": 2.0, "recompiles": 1, "mixed_compile_s": 1.5}
    ok |= {"mixed_sizes": "32x32>64x64>32x32", "mixed_cudagraph_records": 0, "fixed_p50_ms": 1.0}
    ok |= {"fixed_p99_ms": 2.0, "mixed_p50_ms": 3.0, "mixed_p99_ms": 4.0}
    rows = [
        {**base, **ok, "dynamic": "marked"},
        {**base, **ok, "dynamic": "static"},
        {**base, "dynamic": "auto", "status": "skipped", "error": "no mark_dynamic", "mixed_sizes": ""},
    ]
    (table,) = mixed_resolution_tables(pd.DataFrame(rows))
    assert [r[2] for r in table.rows] == ["static", "auto", "marked"]
    assert table.rows[0][3:10] == ["2.00", "1", "1.50", "0", "1 / 2", "3 / 4", "—"]
    assert table.rows[1][3].startswith("skipped: no mark_dynamic")
