"""The `ahead` schedule's rules, estimate and row figures (no worker runs: its end-to-end test is
tests/e2e/test_schedule_e2e.py)."""

from __future__ import annotations

import io
import re
from dataclasses import replace
from pathlib import Path

from suite.cli import main
from suite.run.launch import WorkerResult
from suite.run.progress import Progress
from suite.run.schedule import _with_cold
from suite.spec import cost, expand, load_matrix
from suite.spec.schedule import AHEAD, SERIAL, compiled_ahead, groups_of, shareable, timing_order

GUIDE = Path(__file__).resolve().parents[1] / "data" / "guide-matrix.yaml"


def _full() -> list:
    return expand(load_matrix(GUIDE), "full", "nightly")


def test_groups_hold_one_model_and_alternate_eager_and_compiled() -> None:
    cells = _full()
    groups = groups_of(list(enumerate(cells)))
    assert sum(len(g) for g in groups) == len(cells)
    for group in groups:
        assert len({c.model.name for _, c in group}) == 1
        sizes = [c.batch_size for _, c in group]
        assert sizes == sorted(sizes)
        firsts = [next(c.mode for _, c in group if c.batch_size == b) for b in sorted(set(sizes))]
        # eager first at the first batch size, compiled first at the next, and so on
        assert [m == "eager" for m in firsts] == [i % 2 == 0 for i in range(len(firsts))]
    assert len(groups) == len({c.model.name for c in cells})


def test_cells_with_processes_of_their_own_are_not_shared() -> None:
    cell = _full()[1]
    assert shareable(cell) and compiled_ahead(cell) == (cell.mode != "eager")
    for settings in ({"processes": 2}, {"compile_cost": True}):
        other = replace(cell, settings=replace(cell.settings, **settings))
        assert not shareable(other) and not compiled_ahead(other)
    run_cache = replace(cell, settings=replace(cell.settings, compile_cache="run"))
    assert shareable(run_cache) and not compiled_ahead(run_cache)
    other_malloc = replace(cell, settings=replace(cell.settings, malloc="steady"))
    assert len(groups_of([(0, cell), (1, other_malloc)])) == 2  # the allocator differs: two processes


def test_timing_order_is_stable_for_one_size() -> None:
    cells = [c for c in _full() if c.model.name == "ViT" and c.batch_size == 1]
    ordered = timing_order(list(enumerate(cells)))
    assert ordered[0][1].mode == "eager" and len(ordered) == len(cells)


def test_the_estimate_pays_start_up_once_per_model_and_compiles_in_parallel() -> None:
    cells = _full()
    serial = cost.estimate_schedule(cells, "cuda", SERIAL)
    assert abs(serial.total_s - sum(cost.estimate_seconds(c) for c in cells)) < 1e-6
    one, many = (cost.estimate_schedule(cells, "cuda", AHEAD, n) for n in (1, 16))
    assert many.timing_s == one.timing_s and many.compile_s < one.compile_s / 8
    assert many.total_s < serial.total_s
    assert cost.makespan([3.0, 4.0, 2.0, 3.0], 2) == 6.0 and cost.makespan([5.0], 4) == 5.0


def test_plan_shows_the_schedule_and_the_full_study_goal(capsys) -> None:
    args = ["plan", "--matrix", str(GUIDE), "--profile", "full", "--device", "cuda", "--cores", "16"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"schedule ahead on 16 core\(s\): compile \d:\d\d:\d\d .* x serial's", out), out
    assert "goal for the guide's whole study on one GPU with 16 cores: 0:09:00" in out


def test_a_row_takes_its_cold_figures_from_its_compile_process() -> None:
    timed = {"status": "ok", "error": "", "compile_s": 2.0, "median_ms": 5.0, "eager_median_ms": 10.0}
    cold = {"status": "ok", "error": "", "compile_s": 30.0, "first_result_s": 40.0, "phase_note": "x"}
    cold["compile_note"] = "cold: FX graph 0/1 hit (1 miss)"
    result = _with_cold(WorkerResult([dict(timed)], 4.0, "l"), WorkerResult([cold], 35.0, "c"))
    got = result.fields
    assert got["compile_s"] == 30.0 and got["warm_compile_s"] == 2.0 and got["first_result_s"] == 40.0
    assert got["breakeven_calls"] == 6000  # 30 s / 5 ms saved per call
    assert result.wall_s == 39.0 and result.ahead_s == 35.0
    failed = _with_cold(
        WorkerResult([dict(timed)], 4.0, "l"), WorkerResult([{"status": "error", "error": "boom"}], 1.0, "c")
    )
    assert (
        failed.fields["compile_s"] == 2.0
        and "compile ahead ended error (boom)" in failed.fields["compile_note"]
    )


def test_progress_under_ahead_scales_the_timing_left() -> None:
    cells = [c for c in _full() if c.model.name == "ViT"][:3]
    stream = io.StringIO()
    progress = Progress.of(cells, AHEAD)
    progress.stream = stream
    first = progress.cost(cells[0])
    progress.finish(cells[0], {"status": "error", "error": "x"}, wall=2 * first + 50.0, ahead_s=50.0)
    line = stream.getvalue()
    assert "(+ 50.0 s compiling ahead)" in line
    eta = re.search(r"ETA (\d+):(\d\d):(\d\d)", line)
    seconds = int(eta[1]) * 3600 + int(eta[2]) * 60 + int(eta[3])
    assert abs(seconds - 2 * (progress.cost(cells[1]) + progress.cost(cells[2]))) <= 1


def test_the_pool_runs_every_job_and_hands_back_a_failure() -> None:
    import pytest

    from suite.run.schedule import run_pool

    assert run_pool({i: (lambda i=i: i * 2) for i in range(5)}, 2) == {i: i * 2 for i in range(5)}
    assert run_pool({}, 2) == {}

    def boom() -> int:
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        run_pool({0: lambda: 1, 1: boom}, 3)
