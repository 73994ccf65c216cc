"""suite.lifeline: a worker dies with its runner, by each of its two guards on its own.

A stand-in runner starts a stand-in worker in its own session (as the real runner does);
the worker starts a grandchild (as inductor's compile workers are). Then the runner is
killed with SIGKILL. tests/run/test_faults.py does the same with the real runner and worker.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

WORKER = """
import subprocess, sys, time
import suite.measure.lifeline as lifeline
guard, parent = sys.argv[1], int(sys.argv[2])
if guard == "watchdog":  # as where prctl is missing
    lifeline._set_pdeathsig = lambda: False
    lifeline.die_with_parent(parent, interval=0.1)
else:  # the kernel's guard alone: the watchdog would wait ten minutes
    lifeline.die_with_parent(parent, interval=600)
grandchild = subprocess.Popen(["sleep", "300"])
print(grandchild.pid, flush=True)
time.sleep(300)
"""

RUNNER = """
import os, subprocess, sys, time
worker = subprocess.Popen(
    [sys.executable, "-c", sys.argv[1], sys.argv[2], str(os.getpid())],
    stdout=subprocess.PIPE, text=True, start_new_session=True,
)
grandchild = worker.stdout.readline().strip()
print(worker.pid, grandchild, flush=True)
time.sleep(300)
"""


def alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie is dead, waiting to be reaped


def wait_dead(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc and prctl are Linux's")
@pytest.mark.parametrize("guard", ["pdeathsig", "watchdog"])
def test_worker_dies_with_its_runner(guard: str) -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    runner = subprocess.Popen(
        [sys.executable, "-c", RUNNER, WORKER, guard], stdout=subprocess.PIPE, text=True, env=env
    )
    worker = grandchild = 0
    try:
        worker, grandchild = map(int, runner.stdout.readline().split())
        assert alive(worker) and alive(grandchild)
        time.sleep(0.3)
        assert alive(worker), "the worker must live while its runner does"
        runner.send_signal(signal.SIGKILL)
        runner.wait()
        assert wait_dead(worker, 5), f"the worker outlived its runner ({guard})"
        if guard == "watchdog":  # the watchdog takes the worker's whole group along
            assert wait_dead(grandchild, 5), "the worker's child outlived it"
    finally:
        for pid in (worker, grandchild):
            if pid and alive(pid):
                os.kill(pid, signal.SIGKILL)
        if runner.poll() is None:
            runner.kill()
