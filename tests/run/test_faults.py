"""Faults around real workers and the real CLI: a runner killed mid-cell (its worker must
die with it), a second runner on the same run (a torn CSV row and `--keep-failed`:
tests/run/test_isolation.py, on its run of every fault).

Row counts and duplicates are checked before and after each fault. The tiny matrix
(tests/data/tiny-matrix.yaml, two cells) keeps each run to seconds.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

from support import REPO, tiny_run_cmd

from suite.results import key_of, read_rows


def suite_cmd(out: Path, *args: str) -> list[str]:
    """The tiny matrix's ViT alone: one cell is all a kill needs (a second is a second Python)."""
    return tiny_run_cmd(out, "f", "--models", "TinyViT", *args)


def suite_env(fault: str = "") -> dict[str, str]:
    return dict(os.environ, SUITE_FAULT=fault, PYTHONPATH=str(REPO))


def run(out: Path, *args: str, fault: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        suite_cmd(out, *args),
        capture_output=True,
        text=True,
        env=suite_env(fault),
        cwd=REPO,
        timeout=600,
        check=False,
    )


def csv_of(out: Path) -> Path:
    (path,) = (out / "f" / "raw").glob("*.csv")
    return path


def checked_rows(out: Path) -> dict[str, dict[str, str]]:
    """The run's rows by model: the CSV parses whole, one row per cell, no duplicates."""
    got = read_rows(csv_of(out))
    assert got.repaired == 0 and got.skipped == 0, got.problems
    keys = [key_of(r) for r in got.rows]
    assert len(keys) == len(set(keys)), f"duplicated rows: {keys}"
    return {r["model"]: r for r in got.rows}


def _live() -> dict[int, tuple[list[bytes], int]]:
    """Every live process: its command line and its parent."""
    procs = {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            cmdline = (proc / "cmdline").read_bytes().split(b"\0")
            state, ppid = (proc / "stat").read_text().rsplit(")", 1)[1].split()[:2]
        except OSError:
            continue
        if state != "Z":
            procs[int(proc.name)] = (cmdline, int(ppid))
    return procs


def workers_of(out: Path) -> list[int]:
    """Live worker processes of this run: spawned ones (by the scratch path on their command
    line) and the children of its zygote (suite.measure.zygote, forked: its command line, which
    names the run's log folder), the zygote itself counted with them."""
    procs = _live()
    mine = {pid for pid, (cmd, _) in procs.items() if any(str(out).encode() in a for a in cmd)}
    zygotes = {pid for pid in mine if b"suite.measure.zygote" in procs[pid][0]}
    spawned = {pid for pid in mine if b"suite.measure.worker" in procs[pid][0]}
    forked = {pid for pid, (_, ppid) in procs.items() if ppid in zygotes}
    return sorted(spawned | forked | zygotes)


def wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_runner_killed_mid_cell_takes_its_worker_along_and_a_second_runner_is_refused(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    # TinyViT (the first cell) hangs: the runner is certainly mid-cell when it is killed.
    first = subprocess.Popen(
        suite_cmd(out, "--timeout", "300"),
        env=suite_env("hang:TinyViT"),
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        logs = out / "f" / "logs"
        wait_for(
            lambda: any("cell: TinyViT" in p.read_text() for p in logs.rglob("*.log")),
            180,
            "the first worker to start",
        )
        worker = workers_of(out)
        assert len(worker) == 2, worker  # forked (`ahead` on a CPU): the worker and its zygote

        second = run(out)  # same run id, same CSV
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert lines[-1].startswith("suite run: error: --run-id: ")
        assert f"is being written by another run (pid {first.pid} " in lines[-1]
        assert "Traceback" not in second.stderr
        assert first.poll() is None and workers_of(out) == worker
        assert read_rows(csv_of(out)).rows == []  # the second runner wrote nothing

        first.send_signal(signal.SIGKILL)
        first.wait()
        wait_for(lambda: not workers_of(out), 10, "the orphaned worker to die with its runner")
    finally:
        if first.poll() is None:
            first.kill()
    assert read_rows(csv_of(out)).rows == []  # the cell in flight is the only loss

    resumed = run(out)
    assert resumed.returncode == 0, resumed.stderr
    rows = checked_rows(out)
    assert sorted(rows) == ["TinyViT"]
    assert all(r["status"] == "ok" for r in rows.values())
    assert "already recorded (" not in resumed.stderr and "0 already recorded" in resumed.stderr
    # the killed attempt's log is kept beside the new one
    vit_logs = sorted(p.name for p in logs.rglob("000-tinyvit-*.log"))
    assert vit_logs == ["000-tinyvit-bs1-eager-inference.attempt2.log", "000-tinyvit-bs1-eager-inference.log"]
    assert rows["TinyViT"]["log_file"].endswith(".attempt2.log")
