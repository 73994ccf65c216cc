"""The dynamic-batch scenario's recompiles, in this process: the tiny ViT of
tests/data/compile-cost-matrix.yaml served 2, 4, 8, then 2 again under static, auto and marked,
with dynamo's `eager` backend standing in for inductor (the graphs and guards, and so the
recompiles, are dynamo's; what a compile costs is not what is tested here). The CLI's path for
these cells, with inductor, is tests/e2e/test_compile_cost_e2e.py's (`marked`)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from suite.spec import load_matrix
from suite.spec.expand import Filters, expand

MATRIX = Path(__file__).resolve().parents[1] / "data" / "compile-cost-matrix.yaml"
SIZES = (2, 4, 8)


@pytest.fixture(scope="module")
def served() -> dict[str, dict[int, dict]]:
    """Each setting's rows by batch size."""
    torch = pytest.importorskip("torch")
    import suite.measure.cell as parts
    from suite.measure import worker

    cells = expand(load_matrix(MATRIX), "cost", "t", Filters(scenarios=("dynamic-batch",)))
    assert sorted(c.dynamic for c in cells) == ["auto", "marked", "static"]
    real = parts.compile_model
    parts.compile_model = lambda m, mode, **o: torch.compile(m, backend="eager", **o)
    try:
        got = {}
        for cell in cells:
            torch._dynamo.reset()
            result = worker.run(replace(cell, settings=replace(cell.settings, iterations=2)), "cpu")
            rows = result.get("rows") or [result]  # a skipped setting: one row, its reason
            got[cell.dynamic] = {r.get("batch_size", 0): {**result, **r} for r in rows}
    finally:
        parts.compile_model = real
    return got


def recompiles(served: dict[str, dict[int, dict]], setting: str) -> list[int]:
    by_size = served[setting]
    assert all(by_size[b]["status"] == "ok" for b in SIZES), [by_size[b].get("error") for b in SIZES]
    return [int(by_size[b]["recompiles"]) for b in SIZES]


def test_batch_sizes_that_change_recompile_as_each_setting_says(served) -> None:
    """2 first, then 4, 8 and 2 again: static compiles a graph per size; auto a symbolic one when the
    second size comes, which serves 8 too; marked a symbolic one from the start. Coming back to 2
    recompiles nothing."""
    import torch

    assert recompiles(served, "static") == [0, 1, 1]
    for setting, by_size in served.items():
        for size, r in by_size.items():
            if r["status"] == "ok":
                assert r["accuracy"] == "pass", (setting, size, r)
                assert r["compile_s"] >= 0 and r["median_ms"] > 0
                assert "back at 2: 0 graph(s) compiled" in r["compile_note"] or size != 2, r
    if tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 1):
        assert recompiles(served, "auto") == [0, 1, 0]
        assert recompiles(served, "marked") == [0, 0, 0]
    else:  # torch 2.0.1: no automatic dynamic shapes, no mark_dynamic
        assert recompiles(served, "auto") == [0, 1, 1]
        assert "auto compiles as static does" in served["auto"][2]["compile_note"]
        assert {r["status"] for r in served["marked"].values()} == {"skipped"}
        assert all("has no torch._dynamo.mark_dynamic" in r["error"] for r in served["marked"].values())
