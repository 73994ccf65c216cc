"""The aot-inductor mode (docs/aot-inductor.md): one tiny ResNet cell exported, packaged, loaded
and timed through the worker, its accuracy against eager; a torch without AOTInductor packaging
gives a skipped row with the reason."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from suite.spec import load_matrix
from suite.spec.expand import expand

TINY = Path(__file__).resolve().parent / "data" / "tiny-matrix.yaml"


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
