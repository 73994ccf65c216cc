"""The `ahead` schedule's rules, estimate and row figures (no worker runs: its end-to-end test is
tests/e2e/test_schedule_e2e.py)."""

from __future__ import annotations

import io
import os
import re
import time
from dataclasses import replace
from pathlib import Path

from suite.cli import main
from suite.run.launch import WorkerResult
from suite.run.progress import Progress
from suite.run.schedule import tagged
from suite.spec import cost, expand, load_matrix
from suite.spec.schedule import (
    AHEAD,
    FORK,
    SERIAL,
    SPAWN,
    compiled_ahead,
    forks,
    groups_of,
    pool_size,
    processes_of,
    shareable,
    timing_order,
    waves,
)

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


def test_the_estimate_pays_start_up_once_per_process_and_compiles_in_waves() -> None:
    cells = _full()
    serial = cost.estimate_schedule(cells, "cuda", SERIAL)
    assert abs(serial.total_s - sum(cost.estimate_seconds(c) for c in cells)) < 1e-6
    one, many = (cost.estimate_schedule(cells, "cuda", AHEAD, n) for n in (1, 16))
    # a compile keeps 1.3 cores busy: one process per 2 cores, so 16 cores compile 8 at once
    assert (one.pool, many.pool, many.cores) == (1, 8, 16)
    assert many.timing_s == one.timing_s and many.compile_s < one.compile_s / 6
    # a wider pool than the cores allow (--compile-pool): its compiles share the cores, and take longer
    crowded = cost.estimate_schedule(cells, "cuda", AHEAD, 16, pool=16)
    jobs = cost.estimate_schedule(cells, "cuda", AHEAD, 32, pool=16)
    assert crowded.pool == 16 and abs(crowded.compile_s - 1.3 * jobs.compile_s) < 1e-6
    # one core: every cell's own work, less what the eager cells that share a process do not do
    # again: the start-up, the idle reading, the energy blocks (the compiled sibling's row has them)
    eager = [c for c in cells if c.mode == "eager"]
    rates = cost.GPU_RATES
    saved = len(eager) * (rates.startup_s + rates.energy_idle_s + rates.energy_s)
    assert abs(one.total_s - (serial.total_s - saved)) < 1e-6
    assert many.total_s < serial.total_s


def test_forked_processes_pay_the_imports_once(capsys) -> None:
    """`ahead` forks its shared processes from a zygote, on a CPU and on a GPU: the estimate pays
    the imports (preload_s) once, each process the rest of its start-up; serial and spawn runs
    spawn, and every row says how its process started."""
    assert forks(AHEAD, FORK, "cpu") and forks(AHEAD, FORK, "cuda") and not forks(SERIAL, FORK, "cpu")
    assert not forks(AHEAD, SPAWN, "cpu") and not forks(AHEAD, SPAWN, "cuda")
    # a pair's runner (serial, one process per cell) forks its processes alike
    assert forks(SERIAL, FORK, "cpu", paired=True) and not forks(SERIAL, SPAWN, "cpu", paired=True)
    cells = _full()
    spawned, forked = (cost.estimate_schedule(cells, "cpu", AHEAD, 2, fork=f) for f in (False, True))
    groups = groups_of(list(enumerate(cells)))
    processes = sum(len(processes_of(g)) for g in groups if shareable(g[0][1]))
    saved = (processes - 1) * cost.CPU_RATES.preload_s
    assert cost.CPU_RATES.preload_s > 0 and abs(spawned.total_s - forked.total_s - saved) < 1e-6
    got = tagged(WorkerResult([{"compile_s": 1.0}], 1.0, "log", start=FORK), AHEAD, 1).rows
    assert got[0]["process_start"] == FORK
    assert tagged(WorkerResult([{}], 1.0, "log"), SERIAL).rows[0]["process_start"] == SPAWN
    args = [
        "plan",
        "--matrix",
        str(GUIDE),
        "--profile",
        "full",
        "--device",
        "cpu",
        "--models",
        "ViT",
        "--cores",
        "2",
    ]
    assert main(args) == 0 and "(up to 1 processes at once, forked)" in capsys.readouterr().out
    assert main([*args, "--process-start", "spawn"]) == 0
    assert "at once), then" in capsys.readouterr().out


def test_processes_start_with_a_compiled_cell_and_take_the_eager_cells_of_its_batch_size() -> None:
    cells = [c for c in _full() if c.model.name == "ResNet"]
    group = groups_of(list(enumerate(cells)))[0]
    procs = processes_of(group)
    assert sorted(ic for p in procs for ic in p) == sorted(group)
    assert all(compiled_ahead(p[0][1]) and not any(compiled_ahead(c) for _, c in p[1:]) for p in procs)
    for proc in procs:
        assert {c.batch_size for _, c in proc} == {proc[0][1].batch_size}
    eager_only = [ic for ic in group if ic[1].mode == "eager"]
    assert processes_of(eager_only) == [eager_only] and processes_of([]) == []


def test_waves_hold_the_longest_first_at_most_width_each() -> None:
    assert waves([3, 9, 1, 5, 7], 2, key=lambda j: j) == [[9, 7], [5, 3], [1]]
    assert waves([2, 1], 0, key=lambda j: j) == [[2], [1]] and waves([], 4, key=lambda j: j) == []


def test_a_wave_is_one_compile_per_two_cores_unless_the_user_names_it(capsys) -> None:
    """A compile keeps 1.3 cores busy (suite.spec.schedule): two at once on 2 cores stretched each
    compile_s 1.2-1.6 x, so 2 cores compile one at a time; --compile-pool overrides, and every
    row with a compile time says how many compiled at once."""
    assert [pool_size(n) for n in (1, 2, 3, 16)] == [1, 1, 1, 8]
    assert pool_size(2, 2) == 2 and pool_size(16, 3) == 3
    rows = [{"compile_s": 12.5}, {"compile_s": ""}, {"status": "error"}]
    got = tagged(WorkerResult(rows, 1.0, "log"), AHEAD, 2).rows
    assert [r.get("compile_wave") for r in got] == [2, None, None]
    assert {r["schedule"] for r in got} == {AHEAD}
    args = ["plan", "--matrix", str(GUIDE), "--profile", "full", "--device", "cuda", "--cores", "16"]
    assert main([*args, "--compile-pool", "16"]) == 0
    assert "(up to 16 processes at once, forked)" in capsys.readouterr().out
    assert main([*args, "--compile-pool", "0"]) == 2
    assert "--compile-pool: must be from 1 to 4096, got 0" in capsys.readouterr().err
    assert main([*args, "--compile-pool", "2", "--schedule", "serial"]) == 2
    assert "--compile-pool: applies to --schedule ahead only" in capsys.readouterr().err


def test_plan_shows_the_schedule_and_the_full_study_goal(capsys) -> None:
    args = ["plan", "--matrix", str(GUIDE), "--profile", "full", "--device", "cuda", "--cores", "16"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert re.search(r"schedule ahead on 16 core\(s\): compile \d:\d\d:\d\d .* x serial's", out), out
    assert "goal for the guide's whole study on one GPU with 16 cores: 0:09:00" in out
    # not met as the matrix stands (300 fixed calls, a 5 s energy window a cell): the leaner
    # settings' estimate is named beside it
    lean = re.search(r"with --stop-rule ci and SUITE_ENERGY=off \(no energy window\): (\d:\d\d:\d\d)", out)
    total = re.search(r"not met by this estimate of (\d:\d\d:\d\d)", out)
    assert lean and total and lean[1] < total[1], out


def test_plan_leaves_out_the_energy_window_the_workers_will_skip(capsys, monkeypatch) -> None:
    args = ["plan", "--matrix", str(GUIDE), "--profile", "full", "--device", "cuda", "--models", "ViT"]
    assert main(args) == 0
    with_energy = re.search(r"estimated total (\S+)", capsys.readouterr().out)[1]
    monkeypatch.setenv("SUITE_ENERGY", "off")
    assert main(args) == 0
    without = re.search(r"estimated total (\S+)", capsys.readouterr().out)[1]
    cells = [c for c in _full() if c.model.name == "ViT"]
    rates = cost.GPU_RATES  # the idle reading, and the blocks of each function timed
    saved = sum(rates.energy_idle_s + rates.energy_s * (1 if c.mode == "eager" else 2) for c in cells)
    assert (with_energy, without) == tuple(
        cost.format_duration(sum(cost.estimate_seconds(c, "cuda") for c in cells) - k) for k in (0, saved)
    )


def test_progress_under_ahead_scales_the_timing_left() -> None:
    cells = [c for c in _full() if c.model.name == "ViT"][:3]
    stream = io.StringIO()
    progress = Progress.of(cells, AHEAD, cores=4)  # two compiles at once
    progress.stream = stream
    compiled = next(c for c in cells if compiled_ahead(c))
    assert (
        progress.cost(compiled)
        == cost.ahead_timing_seconds(compiled) + cost.compile_process_seconds(compiled) / 2
    )
    first = progress.cost(cells[0])
    progress.finish(cells[0], {"status": "error", "error": "x"}, wall=2 * first + 25.0, ahead_s=50.0)
    line = stream.getvalue()
    assert "(+ 50.0 s compiling ahead)" in line
    eta = re.search(r"ETA (\d+):(\d\d):(\d\d)", line)
    seconds = int(eta[1]) * 3600 + int(eta[2]) * 60 + int(eta[3])
    assert abs(seconds - 2 * (progress.cost(cells[1]) + progress.cost(cells[2]))) <= 1


def test_the_gate_waits_for_its_go_and_hands_over_the_idle_processes(tmp_path: Path, monkeypatch) -> None:
    import threading

    from suite.measure import gate
    from suite.measure.health import other_processes

    monkeypatch.setenv(gate.GATE_ENV, str(tmp_path))
    monkeypatch.setitem(gate._state, "count", 0)
    monkeypatch.setattr(gate, "_cpus", [])
    waited: list[float] = []
    worker = threading.Thread(target=lambda: waited.append(gate.wait()))
    worker.start()
    ready = tmp_path / "ready-0"
    for _ in range(200):
        if ready.exists():
            break
        threading.Event().wait(0.01)
    assert ready.read_text() == str(os.getpid()) and worker.is_alive()  # it waits for its go
    gate.open_gate(tmp_path, 0, [7, 9], [3, 1])
    worker.join(timeout=5)
    assert not worker.is_alive() and waited[0] > 0 and gate.idle_siblings() == {7, 9}
    assert gate.timing_cpus() == [1, 3]  # pinned to time (--overlap, --pin-timing): the CPUs go with the go
    worker = threading.Thread(target=gate.wait)
    worker.start()
    gate.open_gate(tmp_path, 1, [])
    worker.join(timeout=5)
    assert not worker.is_alive() and gate.timing_cpus() == [] and gate.idle_siblings() == set()
    # the processes idle at their gates are not the GPU's other users; another process is
    assert other_processes({1, 7, 9}, 3, 1, frozenset({7, 9})) == 0
    assert other_processes({1, 7, 8}, 3, 1, frozenset({7})) == 1
    assert other_processes({50, 51, 52}, 3, 1, frozenset({7, 9})) == 0  # in a container: by count
    monkeypatch.delenv(gate.GATE_ENV)
    assert gate.wait() == 0.0  # `serial`: no gate


def test_a_process_pinned_to_time_on_a_cpu_gets_one_thread_a_core_and_says_so(monkeypatch) -> None:
    """Pinned at its gate to fewer cores than torch has threads (`--overlap`, `--pin-timing`), a
    CPU worker times with one thread a core (threads sharing a core wait on each other), and its
    row says where and with how many; on a GPU the threads stay and the row says nothing of the
    pin; unpinned, the row says nothing."""
    import torch

    from suite.measure import gate
    from suite.measure.scenarios import base
    from suite.measure.timing import TimingLoop

    before = torch.get_num_threads()
    loop = TimingLoop.on("cpu", 1)
    try:
        torch.set_num_threads(2)
        monkeypatch.setattr(gate, "_cpus", [5])
        base._fit_threads("cuda")
        assert torch.get_num_threads() == 2  # a GPU worker's threads are not the figure's
        base._fit_threads("cpu")
        assert torch.get_num_threads() == 1
        assert base._timed_done(loop, "cpu") == {"timing_cpus": "5", "torch_threads": 1}
        assert base._timed_done(loop, "cuda") == {}  # a GPU's rows stay comparable with unpinned ones
        monkeypatch.setattr(gate, "_cpus", [])
        torch.set_num_threads(2)
        base._fit_threads("cpu")
        assert torch.get_num_threads() == 2 and base._timed_done(loop, "cpu") == {}
    finally:
        torch.set_num_threads(before)


def test_overlap_hides_the_later_waves_compiles_behind_the_timing() -> None:
    """`--overlap`: the first wave compiles alone, each later one while the one before it is timed
    on the cores the timed process is not pinned to: only what the timing does not hide is added,
    and the timing is what it was (the exits no longer waited for)."""
    from suite.spec.schedule import overlap_cores, timing_cpus

    cells = _full()
    apart = cost.estimate_schedule(cells, "cuda", AHEAD, 16)
    beside = cost.estimate_schedule(cells, "cuda", AHEAD, 16, overlap=True)
    assert beside.overlap and beside.pool == pool_size(16 - overlap_cores(16)) == 7
    assert beside.total_s < apart.total_s and beside.compile_s < apart.compile_s / 3
    assert [overlap_cores(n) for n in (1, 2, 3, 4, 16)] == [0, 1, 1, 2, 2]
    assert timing_cpus([3, 0, 1, 2]) == (frozenset({0, 1}), frozenset({2, 3}))
    assert timing_cpus([5]) == (frozenset({5}), frozenset({5}))  # one CPU: shared


def test_a_process_is_pinned_with_all_its_threads() -> None:
    """The timed process moves to its CPUs before its gate opens: every thread it has."""
    import subprocess
    import sys

    from suite.system import cpus as pinning

    cpus = pinning.available()
    assert cpus, "Linux gives every process an affinity"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time; threading.Thread(target=time.sleep, args=(30,)).start(); time.sleep(30)",
        ]
    )
    try:
        time.sleep(0.5)
        assert pinning.pin(child.pid, {cpus[-1]})
        tids = [int(t) for t in os.listdir(f"/proc/{child.pid}/task")]
        assert len(tids) == 2 and all(os.sched_getaffinity(t) == {cpus[-1]} for t in tids)
    finally:
        child.kill()
        child.wait()
    assert not pinning.pin(child.pid, {cpus[0]})  # gone: nothing to pin
