"""The `ahead` schedule end to end, cheaply (eager cells of the tiny ViT, no compile): the cells of
one model share a timing process, and a cell that crashes that process costs itself alone, its
siblings measured in a fresh process."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from support import REPO, tiny_run_cmd

from suite.results import read_rows
from suite.spec.schedule import timing_cpus
from suite.system.cpus import available, cpu_text


def _run(out: Path, *args: str, cell_fault: str = "") -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, PYTHONPATH=str(REPO), SUITE_FAULT_CELL=cell_fault)
    env.pop("SUITE_FAULT", None)
    cmd = tiny_run_cmd(out, "s", *args)
    cmd[cmd.index("tiny")] = "shared"  # the profile: one model, three batch sizes, eager and default
    return subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)


def _rows(out: Path) -> dict[str, dict[str, str]]:
    (path,) = (out / "s" / "raw").glob("*.csv")
    got = read_rows(path)
    assert got.repaired == 0 and got.skipped == 0, got.problems
    return {r["batch_size"]: r for r in got.rows}


def test_a_crash_in_a_shared_process_costs_its_cell_alone(tmp_path: Path) -> None:
    """Three eager cells in one process; the second segfaults it: its row is an error naming the
    signal, the first was measured before, the third in a fresh process."""
    proc = _run(
        tmp_path,
        "--modes",
        "eager",
        cell_fault="segfault:TinyViT bs=2 eager inference",
    )
    assert proc.returncode == 0, proc.stderr
    rows = _rows(tmp_path)
    assert sorted(rows) == ["1", "2", "3"]
    assert rows["2"]["status"] == "error" and "SIGSEGV" in rows["2"]["error"], rows["2"]
    for size in ("1", "3"):
        assert rows[size]["status"] == "ok" and float(rows[size]["median_ms"]) > 0, rows[size]
    assert {r["schedule"] for r in rows.values()} == {"ahead"}
    # both processes forked from the run's zygote, which the crash of one did not reach
    assert {r["process_start"] for r in rows.values()} == {"fork"}
    # one process for cells 1 and 2, a fresh one for 3: two logs, each named on its rows
    assert rows["1"]["log_file"] == rows["2"]["log_file"] != rows["3"]["log_file"]
    assert proc.stderr.count("in one process") == 2, proc.stderr


def test_overlap_compiles_the_next_wave_while_one_is_timed(tmp_path: Path) -> None:
    """`--overlap` with waves of one: the second wave's compile starts before the first wave's
    timing; every row says `overlap`, and a compiled row how long its process took before its gate
    (compile_ahead_s, part of wall_s)."""
    args = ("--modes", "eager,default", "--batch-sizes", "1,2", "--overlap", "--compile-pool", "1")
    proc = _run(tmp_path, *args)
    assert proc.returncode == 0, proc.stderr
    (path,) = (tmp_path / "s" / "raw").glob("*.csv")
    rows = read_rows(path).rows
    assert len(rows) == 4 and {r["status"] for r in rows} == {"ok"}, rows
    assert {r["schedule"] for r in rows} == {"overlap"}
    log = proc.stderr
    first = log.index("next: a wave of 1")
    second = log.index("next: a wave of 1", first + 1)
    assert second < log.index("\ntiming "), log  # started before the first wave's timing
    compiled = [r for r in rows if r["mode"] == "default"]
    for r in compiled:
        assert 0 < float(r["compile_ahead_s"]) < float(r["wall_s"]), r
    assert all(r["compile_ahead_s"] == "" for r in rows if r["mode"] == "eager")
    # each timed on the timing's own cores, with no more torch threads than those cores
    own = sorted(timing_cpus(available())[0])
    assert {r["timing_cpus"] for r in rows} == {cpu_text(own)}, rows
    assert all(int(r["torch_threads"]) <= len(own) for r in rows), rows
