"""Which CPUs a process of the `overlap` schedule runs on (Linux's affinity; parent side): the
compiling processes on the compiles' CPUs from their start (their threads and the compile workers
they start inherit it), the one being timed moved to its own before its gate opens
(suite.spec.schedule.timing_cpus). Where the system has no affinity (not Linux), nothing is pinned
and `overlap` refuses to run (suite.run.runner)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from pathlib import Path


def available() -> list[int]:
    """The CPUs this process may run on (its affinity), or [] where the system cannot say."""
    getter = getattr(os, "sched_getaffinity", None)
    return sorted(getter(0)) if getter is not None else []


def pin(pid: int, cpus: Collection[int]) -> bool:
    """Every thread of process `pid` onto `cpus` (threads it starts later inherit the mask of the
    thread that starts them); False where the process is gone or cannot be pinned."""
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
