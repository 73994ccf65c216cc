"""The aot-inductor mode (docs/aot-inductor.md): one tiny ResNet cell exported, packaged, loaded
and timed through the worker, its accuracy against eager; a torch without AOTInductor packaging
gives a skipped row with the reason."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from suite.spec import load_matrix
from suite.spec.expand import expand

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


def _cell() -> object:
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyResNet"]
    return replace(cell, mode="aot-inductor", settings=replace(cell.settings, iterations=3))


def test_a_torch_without_aoti_skips_with_the_reason(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    import torch._inductor

    from suite.measure import worker

    monkeypatch.delattr(torch._inductor, "aoti_compile_and_package", raising=False)
    row = worker.run(_cell(), "cpu")
    assert row["status"] == "skipped"
    assert row["error"] == (
        f"torch {torch.__version__} has no torch._inductor.aoti_compile_and_package: no AOTInductor packages"
    )


@pytest.mark.slow  # the package's C++ compile: a minute or more on a 2-core CPU
def test_an_aot_inductor_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    import torch._inductor

    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        pytest.skip(f"torch {torch.__version__} has no AOTInductor packaging")
    from suite.measure import worker

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "inductor"))
    row = worker.run(_cell(), "cpu")
    assert row["status"] == "ok", row.get("error")
    assert row["accuracy"] == "pass" and row["max_abs_diff"] <= 1e-3
    assert row["aot_packages"] == 1 and row["aot_package_mb"] > 0
    assert row["aot_export_s"] > 0 and row["aot_compile_s"] > 0 and row["aot_load_s"] > 0
    # the first call's time over an eager call's holds the export, the package and the load
    assert row["compile_s"] >= 0.5 * (row["aot_export_s"] + row["aot_compile_s"])
    assert row["median_ms"] > 0 and row["speedup"] > 0


def test_the_package_against_the_jit() -> None:
    pd = pytest.importorskip("pandas")
    from suite.report.tables.aot import aot_tables, lead_calls

    assert lead_calls(10.0, 5.0, 5.0) == "always" and lead_calls(-1.0, 6.0, 5.0) == "never"
    assert lead_calls(10.0, 6.0, 5.0) == "10,000 calls"  # 10 s ahead, 1 ms slower a call
    assert lead_calls(-1.0, 4.0, 5.0) == "ahead after 1,000 calls"
    base = {"device": "cuda", "gpu_name": "H100", "build": "b", "dtype": "float32", "scenario": "inference"}
    base |= {"task": "Image Classification", "model": "ResNet", "batch_size": 1, "status": "ok", "error": ""}
    rows = [
        {**base, "mode": "aot-inductor", "median_ms": 2.0, "aot_load_s": 0.5, "aot_package_mb": 100.0}
        | {"aot_export_s": 3.0, "aot_compile_s": 40.0},
        {**base, "mode": "default", "median_ms": 1.5, "compile_s": 50.0, "compile_warm_s": 10.5},
    ]
    (table,) = aot_tables(pd.DataFrame(rows))
    pkg = "100.00 MB, built in 43.0 s"
    assert table.rows[0][2:] == [pkg, "0.500", "0.500 / 10.50", "2 / 1.5", "— / —", "20,000 calls"]
    # with the rows' first calls and paired speed-ups: the package's start is its first call less
    # the build (0.7 s), per call it is 2/1.0 - 2/1.25 = 0.4 ms slower, whatever the medians say
    rows[0] |= {"compile_s": 43.7, "speedup": 1.0, "median_ms": 3.0}
    rows[1] |= {"speedup": 1.25, "eager_median_ms": 2.0}
    (table,) = aot_tables(pd.DataFrame(rows))
    assert table.rows[0][4:] == ["0.700 / 10.50", "3 / 1.5", "1.00x / 1.25x", "24,500 calls"]
