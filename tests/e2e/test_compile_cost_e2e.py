"""End to end on this CPU, with a tiny ViT (tests/data/compile-cost-matrix.yaml): a compiled cell
with its warm and mega-cache processes, and the dynamic-batch cell serving 2, 4, 8, then 2
again under `marked` (one compile; static's and auto's recompiles, five compiles more here, are
tests/measure/test_dynamic_batch.py's, in-process on dynamo's eager backend). Run in whatever
environment pytest runs in: the current build (`nox -s tests`) and torch 2.0.1 (`nox -s
tests-stable`), each checked for what it can and cannot do. No timing is asserted (the machine
is shared): only what the figures must be made of, which caches were hit, and which graphs
dynamo compiled."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import num

from suite.results import key_of, read_rows

REPO = Path(__file__).resolve().parents[2]
MATRIX = REPO / "tests" / "data" / "compile-cost-matrix.yaml"
SIZES = ("2", "4", "8")
# one module-scoped run: under xdist its tests stay on one worker (else each worker that takes
# one of them makes the run again: 175 s more of CI under `-n 3`)
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("compile-cost")]


def torch_version() -> tuple[int, int]:
    import torch

    major, minor = torch.__version__.split(".")[:2]
    return int(major), int(minor)


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, str]]:
    out = tmp_path_factory.mktemp("cost")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "run", "--matrix", str(MATRIX), "--profile", "cost",
           "--device", "cpu", "--out", str(out), "--run-id", "e2e", "--min-free-mb", "0",
           "--dynamic", "marked"]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=3000, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (csv_path,) = (out / "e2e" / "raw").glob("*.csv")
    result = read_rows(csv_path)
    assert result.repaired == 0 and result.skipped == 0
    return result.rows


def one(rows: list[dict[str, str]], mode: str) -> dict[str, str]:
    (row,) = [r for r in rows if r["scenario"] == "inference" and r["mode"] == mode]
    return row


def test_one_row_per_cell_and_batch_size(rows) -> None:
    assert len(rows) == 2 + 3
    assert len({key_of(r) for r in rows}) == len(rows)
    dynamic = sorted((r["dynamic"], r["batch_size"]) for r in rows if r["scenario"] == "dynamic-batch")
    assert dynamic == sorted(("marked", b) for b in SIZES)


def test_the_compiled_cell_has_every_compile_cost_figure_its_build_can_give(rows) -> None:
    r = one(rows, "default")
    assert r["status"] == "ok", r["error"]
    compile_s, eager_first = num(r, "compile_s"), num(r, "eager_first_result_s")
    assert compile_s > 0 and eager_first > 0
    assert num(r, "first_result_s") == pytest.approx(eager_first + compile_s, rel=1e-4)
    saved_s = (num(r, "eager_median_ms") - num(r, "median_ms")) / 1000
    if saved_s > 0:
        assert num(r, "breakeven_calls") == pytest.approx(compile_s / saved_s, rel=1e-3)
    else:
        assert r["breakeven_calls"] == ""  # compiling is not faster: it never pays off
    warm = num(r, "compile_warm_s")
    assert warm >= 0
    assert r["breakeven_calls_warm"] == "" or num(r, "breakeven_calls_warm") == pytest.approx(
        warm / saved_s, rel=1e-3
    )
    note = r["compile_note"]
    # where the warm compile went: torch's accounting in that process, in phase_note
    assert re.search(r"warm compile, largest phases: \w+ [\d.]+ s", r["phase_note"]), r["phase_note"]
    if torch_version() >= (2, 7):  # FX graph + AOTAutograd caches on by default; a mega-cache
        assert re.search(r"cold: FX graph 0/(\d+) hit", note), note  # cold really was cold
        hits = re.search(r"warm: FX graph (\d+)/(\d+) hit", note)
        assert hits and hits[1] == hits[2] != "0", note  # and the warm one really warm
        assert num(r, "compile_megacache_s") >= 0
        assert re.search(r"mega-cache: loaded \d+ artifacts .* FX graph (\d+)/\1 hit", note), note
    if torch_version() < (2, 1):  # torch 2.0.1: compiled kernels only, no mega-cache
        assert r["compile_megacache_s"] == "", note
        assert "has no torch.compiler.save_cache_artifacts" in note
        assert "warm: kernels only" in note


def test_the_eager_cell_has_its_first_result(rows) -> None:
    r = one(rows, "eager")
    assert num(r, "eager_first_result_s") > 0
    assert r["first_result_s"] == r["compile_warm_s"] == r["breakeven_calls"] == ""


def test_a_marked_batch_size_compiles_once_and_serves_every_size(rows) -> None:
    """Marked symbolic from the start: 2 compiles, 4 and 8 and 2 again recompile nothing, each
    size's row its own, its accuracy checked (torch 2.0.1, without mark_dynamic: skipped rows)."""
    marked = {r["batch_size"]: r for r in rows if r["dynamic"] == "marked"}
    if torch_version() < (2, 1):
        assert {r["status"] for r in marked.values()} == {"skipped"}
        assert all("has no torch._dynamo.mark_dynamic" in r["error"] for r in marked.values())
        return
    assert all(marked[b]["status"] == "ok" for b in SIZES), [marked[b]["error"] for b in SIZES]
    assert [int(marked[b]["recompiles"]) for b in SIZES] == [0, 0, 0]
    first = num(marked["2"], "compile_s")  # the symbolic graph; the sizes after it compile nothing new
    assert first > 0 and all(num(marked[b], "compile_s") < first for b in ("4", "8"))
    for r in marked.values():
        assert r["accuracy"] == "pass", r
        assert num(r, "compile_s") >= 0 and num(r, "median_ms") > 0
    assert "back at 2: 0 graph(s) compiled" in marked["2"]["compile_note"]


def test_merge_keeps_every_row(rows, tmp_path: Path) -> None:
    """What the run wrote passes the merge's checks: none of its rows is set aside (a size that a
    symbolic graph serves compiles in 0 s, and pays off after 0 calls)."""
    pytest.importorskip("pandas")  # host side: not in the stable build's virtualenv
    from suite.report.load import load
    from suite.results import RowWriter

    with RowWriter(tmp_path / "raw" / "e2e.csv") as writer:
        for r in rows:
            writer.append(r)
    loaded = load([tmp_path])
    assert loaded.skipped == () and len(loaded.frame) == len(rows)
