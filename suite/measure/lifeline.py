"""A worker dies with the runner that started it.

The runner starts each worker in its own session (so a timeout can kill the worker's
whole process group, inductor's compile workers included). The flip side: if the runner
itself is killed (SIGKILL, OOM killer, a closed terminal), the worker would keep running
as an orphan, hold the GPU and spoil the timings of the resumed run. Two guards:

- Linux: `prctl(PR_SET_PDEATHSIG, SIGKILL)`, so the kernel kills the worker the moment
  its parent dies;
- anywhere: a daemon thread that polls `os.getppid()` and kills the worker's process
  group once the parent is gone.

Standard library only (runs inside the containers, Python 3.10 and later).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading
import time

PARENT_ENV = "SUITE_PARENT_PID"  # set by the runner for each worker
PR_SET_PDEATHSIG = 1


def _kill_own_group() -> None:
    """SIGKILL this process and, when it leads its own group (as a worker does), the group."""
    with contextlib.suppress(OSError):
        if os.getpgrp() == os.getpid():
            os.killpg(os.getpid(), signal.SIGKILL)
    os.kill(os.getpid(), signal.SIGKILL)


def _set_pdeathsig() -> bool:
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0) == 0
    except (OSError, AttributeError):
        return False


def _watch(parent: int, interval: float) -> None:
    while True:
        if os.getppid() != parent:
            _kill_own_group()
        time.sleep(interval)


def die_with_parent(parent: int | None = None, interval: float = 1.0, watch: bool = True) -> None:
    """Arrange for this process to die when `parent` (default: $SUITE_PARENT_PID) does; without
    `watch`, by the kernel's guard alone (for a process that must start no thread of its own:
    suite.measure.zygote).

    Does nothing when no parent pid is known (a worker started by hand)."""
    if parent is None:
        text = os.environ.get(PARENT_ENV, "")
        if not text.isdigit():
            return
        parent = int(text)
    _set_pdeathsig()
    if os.getppid() != parent:  # the parent died before the guard was set
        _kill_own_group()
    if watch:
        threading.Thread(target=_watch, args=(parent, interval), name="lifeline", daemon=True).start()
