"""The `ahead` schedule's gate: a process that compiled a cell waits here, its model compiled and
warmed up, until the runner lets it time alone (suite.run.schedule).

Before each cell's timed calls the worker writes `ready-<n>` (its pid) into the folder GATE_ENV
names and waits for `go-<n>`; the runner writes `go-<n>` when no other process compiles or times,
with the ids of the processes that wait at their own gates meanwhile (idle, holding their
models: `idle_siblings`, which the health check does not count as sharing the GPU) and, where the
runner pinned this process to CPUs of its own to time (`--overlap`, `--pin-timing`), those CPUs
(`timing_cpus`). Without GATE_ENV (`serial`, a worker run by hand) there is no gate. Standard
library only.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

GATE_ENV = "SUITE_GATE"
POLL_S = 0.05  # how often a waiting process looks for its go (an idle process: a few syscalls)
READY, GO = "ready-{n}", "go-{n}"

_state = {"count": 0}
_idle: set[int] = set()
_cpus: list[int] = []


def wait() -> float:
    """Wait for the runner's go before timing; the seconds waited (0.0 without a gate)."""
    folder = os.environ.get(GATE_ENV)
    if not folder:
        return 0.0
    n = _state["count"]
    _state["count"] = n + 1
    ready, go = Path(folder) / READY.format(n=n), Path(folder) / GO.format(n=n)
    tmp = ready.with_suffix(".tmp")
    tmp.write_text(str(os.getpid()))
    tmp.replace(ready)
    start = time.monotonic()
    while not go.exists():
        time.sleep(POLL_S)
    said = json.loads(go.read_text() or "{}")
    _idle.clear()
    _idle.update(int(p) for p in said.get("idle", []))
    _cpus[:] = sorted(int(c) for c in said.get("cpus", []))
    return time.monotonic() - start


def open_gate(folder: Path, n: int, idle: list[int], cpus: list[int] | None = None) -> None:
    """The runner's side: let the process waiting at gate `n` of `folder` time (atomically);
    `cpus`: the CPUs it was pinned to for its timing (None: not pinned)."""
    tmp = folder / (GO.format(n=n) + ".tmp")
    tmp.write_text(json.dumps({"idle": sorted(idle), "cpus": sorted(cpus or [])}))
    tmp.replace(folder / GO.format(n=n))


def add_idle(pids: set[int]) -> None:
    """Processes that hold the device but never time beside this one (a pair's partner, which
    takes turns with it: suite.measure.pairing)."""
    _idle.update(pids)


def idle_siblings() -> set[int]:
    """The processes that waited at their gates while this one was let through."""
    return set(_idle)


def timing_cpus() -> list[int]:
    """The CPUs the runner pinned this process to for its timing at the last gate ([]: none)."""
    return list(_cpus)
