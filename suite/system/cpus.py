"""Which CPUs a process runs on (Linux's affinity): the CPUs this process may use, a process's
threads pinned to a set of them, and a CPU list as the kernel writes one. The `overlap` schedule
pins its processes from the parent (suite.run.schedule), a pair's worker pins itself while it
times (suite.measure.pairing), a row says where it was timed (`timing_cpus`) and a container
where it may run (`--cpuset-cpus`, suite.sessions.fleet). Where the system has no affinity (not
Linux), nothing is pinned and `overlap` refuses to run (suite.run.runner). Standard library only."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Sequence
from pathlib import Path


def available() -> list[int]:
    """The CPUs this process may run on (its affinity: its cgroup's cpuset in a container), or []
    where the system cannot say."""
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter is not None else []


def pin(pid: int, cpus: Collection[int]) -> bool:
    """Every thread of process `pid` (torch's intra-op threads too) onto `cpus` (threads it starts
    later inherit the mask of the thread that starts them); False where the process is gone or
    cannot be pinned."""
    setter = getattr(os, "sched_setaffinity", None)
    if setter is None or not cpus:
        return False
    try:
        tids = [int(t.name) for t in Path(f"/proc/{pid}/task").iterdir()]
    except OSError:
        tids = [pid]
    done = False
    for tid in tids:
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            setter(tid, set(cpus))
            done = True
    return done


def cpu_text(cpus: Sequence[int]) -> str:
    """[0, 1, 2, 3, 8] -> `0-3,8`: a CPU list as the kernel writes one (and --cpuset-cpus takes)."""
    runs: list[list[int]] = []
    for cpu in sorted(set(cpus)):
        if runs and cpu == runs[-1][1] + 1:
            runs[-1][1] = cpu
        else:
            runs.append([cpu, cpu])
    return ",".join(f"{a}-{b}" if b > a else str(a) for a, b in runs)


def cpu_list(text: str) -> list[int]:
    """`0-3,8` -> [0, 1, 2, 3, 8]."""
    found: list[int] = []
    for part in text.split(",") if text else []:
        low, _, high = part.partition("-")
        found += range(int(low), int(high or low) + 1)
    return found
