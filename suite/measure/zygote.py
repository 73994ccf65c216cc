"""The process the `ahead` schedule's workers are forked from: start-up paid once per run.

A worker's start-up is mostly imports: torch and transformers' model code take 5 to 9 s of CPU
(this project's 2-vCPU VM, torch 2.13, transformers 5.23), paid again by every fresh process.
This process imports them once (`PRELOAD`, what every worker imports before it builds its
model, nothing that the cell's own compile would import later), then, for each request of the
runner (suite.run.zygotes), forks a child that becomes `python -m MODULE ARGS...` with the
request's environment, its own session and the request's output pipe: from there on it is the
process a fresh spawn would have been, its caches empty (nothing here ever compiled or ran a
model), its crash its own. The runner hears the child's pid and, once this process reaps it,
its exit status.

Forking is refused (the runner spawns fresh processes instead, and says why in one line) where
it is not safe: CUDA initialised by the imports (a CUDA context, or a driver initialised by
cuInit, does not survive a fork: torch.cuda.is_initialized(), and the driver itself asked,
without initialising it, where its library is loaded) or an import failing. The zygote never
touches CUDA; each forked worker initialises it itself, as a spawned one does (so a GPU run
forks too). Nothing here starts a thread of its own; the idle threads some libraries start at
import (OpenBLAS' pool) are rebuilt by their own fork handlers. The child's start-up for time-to-first-result
(suite.measure.compile_cost) is this process's measured start-up, handed down in its spawn
time. Standard library at import; `PRELOAD` inside `main`.

`python -m suite.measure.zygote FD SPAWNED LOGS`: FD a SOCK_SEQPACKET socket to the runner, SPAWNED
the runner's time.time() just before it started this process, LOGS the run's log folder (read by
nobody: it names the run in `ps`, where every forked worker shows this command line).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import runpy
import select
import signal
import socket
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any

from suite.measure.lifeline import die_with_parent  # the one suite module here: children import the rest

# Imported once, in this order; every worker imports them before its first eager result.
PRELOAD: tuple[str, ...] = ("torch", "transformers", "transformers.modeling_utils")
MAX_MESSAGE = 1 << 20  # a request: module, arguments, environment (a few kB)


def send(sock: socket.socket, **message: Any) -> None:
    sock.send(json.dumps(message).encode())


CUDA_NOT_INITIALIZED = 3  # CUDA_ERROR_NOT_INITIALIZED: what the driver answers before cuInit


def _maps() -> str | None:
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as f:
            return f.read()
    except OSError:
        return None


def _torch_initialised() -> bool:
    """torch.cuda.is_initialized(), where the imports brought torch in (False otherwise)."""
    torch = sys.modules.get("torch")
    cuda = getattr(torch, "cuda", None)
    return bool(cuda is not None and cuda.is_initialized())


def _driver_initialised(maps: str) -> bool:
    """Whether CUDA's driver, loaded in this process, was initialised (cuInit called, by torch's
    device count or any other import): asked through the library already loaded (RTLD_NOLOAD:
    nothing loaded, nothing initialised by asking), cuDeviceGetCount answers
    CUDA_ERROR_NOT_INITIALIZED until cuInit."""
    import ctypes

    names = {line.rsplit("/", 1)[-1] for line in maps.splitlines() if "libcuda.so" in line}
    for name in sorted(names):
        try:
            driver = ctypes.CDLL(name, mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
        except OSError:
            continue
        count = ctypes.c_int(0)
        if driver.cuDeviceGetCount(ctypes.byref(count)) != CUDA_NOT_INITIALIZED:
            return True
    return False


def unsafe_to_fork(
    maps: str | None = None,
    torch_initialised: Callable[[], bool] | None = None,
    driver_initialised: Callable[[str], bool] | None = None,
) -> str:
    """Why a fork of this process would not be the process a spawn gives, or "" when it would
    (`maps`: /proc/self/maps; the two checks are parameters so that a test can fake them)."""
    torch_initialised = torch_initialised or _torch_initialised
    driver_initialised = driver_initialised or _driver_initialised
    if torch_initialised():
        return "torch initialised CUDA at import (torch.cuda.is_initialized() is True)"
    maps = _maps() if maps is None else maps
    if maps is None:
        return "cannot read /proc/self/maps (not Linux?)"
    if "libcuda.so" in maps and driver_initialised(maps):
        return "CUDA's driver was initialised at import (a CUDA context does not survive a fork)"
    return ""


def exit_code(value: object) -> int:
    """SystemExit's code as a process's exit status (as the interpreter maps it)."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value & 0xFF
    print(value, file=sys.stderr)
    return 1


def become(request: dict[str, Any], out_fd: int, keep_closed: list[int]) -> None:
    """In the forked child: become `python -m MODULE ARGS...` and never return."""
    code = 1
    try:
        os.setsid()  # its own session and group: a timeout kills the group, as for a spawn
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in keep_closed:
            with contextlib.suppress(OSError):
                os.close(fd)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(out_fd, 1)
        os.dup2(out_fd, 2)
        os.close(devnull)
        os.close(out_fd)
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [request["module"], *request["argv"]]
        try:
            runpy.run_module(request["module"], run_name="__main__", alter_sys=True)
            code = 0
        except SystemExit as exc:
            code = exit_code(exc.code)
        except BaseException:  # as an uncaught exception ends a fresh interpreter
            traceback.print_exc()
            code = 1
        with contextlib.suppress(BaseException):
            atexit._run_exitfuncs()  # what a fresh interpreter runs at its end (inductor's pool)
    finally:
        with contextlib.suppress(BaseException):
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)


def serve(sock: socket.socket) -> None:
    """Fork a child for each request; report each child's pid, then its exit status. Ends when
    the runner closes its end (or dies)."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_r, False)
    os.set_blocking(wake_w, False)
    signal.signal(signal.SIGCHLD, lambda *_: None)  # a child's end wakes the select below
    signal.set_wakeup_fd(wake_w)
    children: set[int] = set()
    while True:
        ready, _, _ = select.select([sock, wake_r], [], [])
        if wake_r in ready:
            with contextlib.suppress(BlockingIOError):
                while os.read(wake_r, 512):
                    pass
        _reap(sock, children)
        if sock not in ready:
            continue
        message, fds, _, _ = socket.recv_fds(sock, MAX_MESSAGE, 1)
        if not message:  # the runner is gone or done; its children die with this process
            return
        if len(fds) != 1:
            for fd in fds:
                os.close(fd)
            send(sock, error=f"a request needs one output descriptor, got {len(fds)}")
            continue
        request = json.loads(message)
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            become(request, fds[0], [sock.fileno(), wake_r, wake_w])
        os.close(fds[0])
        children.add(pid)
        send(sock, pid=pid)


def _reap(sock: socket.socket, children: set[int]) -> None:
    for pid in list(children):
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            children.discard(pid)
            send(sock, exit=pid, code=os.waitstatus_to_exitcode(status))


def main(argv: list[str]) -> int:
    try:
        fd, spawned = int(argv[0]), float(argv[1])
    except (IndexError, ValueError):
        argv = []
    if len(argv) != 3:
        print("usage: python -m suite.measure.zygote FD SPAWNED LOGS", file=sys.stderr)
        return 2
    sock = socket.socket(fileno=fd)
    die_with_parent(watch=False)  # gone with the runner; its children go with it (theirs point here)
    try:
        for name in PRELOAD:
            importlib.import_module(name)
    except Exception as exc:  # the runner spawns fresh processes instead, and says why
        send(sock, refused=f"importing {name} failed: {type(exc).__name__}: {exc}")
        return 0
    reason = unsafe_to_fork()
    if reason:
        send(sock, refused=reason)
        return 0
    send(sock, ready=round(time.time() - spawned, 3))
    serve(sock)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
