"""One step of a GPU study's call, run as the suite's CLI in a child process under the call's
deadline (suite.gpustudy.call runs the steps): its output teed into the call's log, the run
folders packed every PACK_EVERY_S while it runs, stopped with SIGINT and STOP_GRACE_S of grace
at the deadline, and interrupted when the call itself is.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

PACK_EVERY_S = 30.0
STOP_GRACE_S = 45.0  # after SIGINT: the runner kills its worker and writes nothing more


class Tee:
    """The steps' output to our stdout and to the call's log, line by line."""

    def __init__(self, log: TextIO, echo: TextIO) -> None:
        self.log, self.echo, self.lock = log, echo, threading.Lock()

    def line(self, text: str) -> None:
        with self.lock:
            for stream in (self.log, self.echo):
                stream.write(text if text.endswith("\n") else text + "\n")
                stream.flush()

    def pump(self, source: Any) -> None:
        for raw in iter(source.readline, b""):
            self.line(raw.decode("utf-8", errors="replace"))


def run_step(
    argv: Sequence[str],
    tee: Tee,
    seconds_left: float | None,
    python: str,
    cwd: Path,
    while_running: Callable[[], contextlib.AbstractContextManager[Any]] = contextlib.nullcontext,
    extra_env: Mapping[str, str] | None = None,
) -> tuple[int, bool, float]:
    """(exit status, stopped at the deadline, wall seconds) of `python -m suite ARGV`; at the
    deadline the child gets SIGINT (its runner kills the cell in flight and exits with its rows
    written), then SIGKILL if it has not ended STOP_GRACE_S later. The child stays in our process
    group and gets SIGINT if we die (a window's limit that kills only us must not leave it running: it holds
    its run's lock and the GPU). `while_running`: a context entered once the child has started;
    `extra_env`: what the step's command runs with beyond our environment."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **(extra_env or {}))
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(cwd), env.get("PYTHONPATH", "")) if p)
    start = time.monotonic()
    proc = subprocess.Popen(
        [python, "-m", "suite", *argv],
        cwd=cwd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        env=env,
        preexec_fn=_interrupt_when_parent_dies,
    )
    pump = threading.Thread(target=tee.pump, args=(proc.stdout,), daemon=True)
    pump.start()
    stopped = False
    try:
        with while_running():
            try:
                proc.wait(timeout=None if seconds_left is None else max(0.0, seconds_left))
            except subprocess.TimeoutExpired:
                stopped = True
                tee.line(
                    "gpu-study: the call's deadline: stopping this step "
                    f"(SIGINT, then SIGKILL after {STOP_GRACE_S:g} s)"
                )
                _stop(proc)
    except BaseException:  # our own interruption (SIGTERM at a window's limit, Ctrl-C): the child too
        _stop(proc)
        raise
    finally:
        pump.join(timeout=10)
    return proc.returncode, stopped, time.monotonic() - start


def _stop(proc: subprocess.Popen[bytes]) -> None:
    """SIGINT (the runner's own clean stop), then SIGKILL (its worker dies with it: lifeline)."""
    with contextlib.suppress(ProcessLookupError):
        proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            proc.kill()
        proc.wait()


def _interrupt_when_parent_dies() -> None:
    """In the child, before it runs: SIGINT handled (a command started in the background by a
    non-interactive shell, as `cmd &` or nohup, inherits SIGINT ignored, and so would the step: it
    would shrug off the deadline and outlive a killed call, holding its run's lock; seen here), and
    sent to it when its parent dies (Linux; elsewhere nothing)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # Python then installs its KeyboardInterrupt handler
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGINT), 0, 0, 0)  # PR_SET_PDEATHSIG


class Packer:
    """Packs the call's outputs now and then while a step runs, so that even a call killed from
    outside (the window's own limit) brings back all but its last half minute."""

    def __init__(self, do_pack: Callable[[], None], every_s: float | None = None) -> None:
        self.do_pack, self.every_s = do_pack, PACK_EVERY_S if every_s is None else every_s
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name="gpu-study-pack", daemon=True)

    def _run(self) -> None:
        while not self.stop.wait(self.every_s):
            with contextlib.suppress(Exception):  # a pack that fails is tried again, and at the end
                self.do_pack()

    def __enter__(self) -> Packer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()


def sigterm_as_interrupt() -> Callable[[], None]:
    """A window ends a command past its limit with SIGTERM: treat it as Ctrl-C (stop the step, pack
    what was measured, exit). Returns the function that puts the old handler back."""
    if threading.current_thread() is not threading.main_thread():
        return lambda: None

    def handler(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    old = signal.signal(signal.SIGTERM, handler)
    return lambda: signal.signal(signal.SIGTERM, old)
