"""The runner's side of suite.measure.zygote: the fork servers of one sweep, and the workers they
fork, held as the `ahead` schedule holds a spawned one (pid, output, poll, wait).

One zygote serves every process whose environment differs only in what is read after the fork
(`LATE_ENV`: the compile caches, the gate, the parent and spawn time); a process with another
start-up environment (another allocator setting, say) gets a zygote of its own, at most
`MAX_ZYGOTES`, then fresh spawns. A zygote that refuses (CUDA's driver loaded, an import
failing) or dies is said once on the run's stream, and the processes after it are spawned
fresh: forking is a saving, never a condition of a result.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from suite.measure.compile_cost import SPAWN_ENV
from suite.measure.gate import GATE_ENV
from suite.measure.lifeline import PARENT_ENV
from suite.measure.zygote import MAX_MESSAGE
from suite.run.environ import child_env
from suite.run.launch import pump, spawn

ZYGOTE_MODULE = "suite.measure.zygote"
LATE_ENV = frozenset({PARENT_ENV, SPAWN_ENV, GATE_ENV, "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR"})
MAX_ZYGOTES = 2
READY_TIMEOUT_S = 600.0  # imports of a cold disk on a slow machine; a spawn would pay them too
REPLY_TIMEOUT_S = 60.0


class Forked:
    """A worker a zygote forked: what the schedule uses of a `subprocess.Popen`. Its exit status
    comes from the zygote, which reaps it; it leads its own process group."""

    def __init__(self, zygote: Zygote, pid: int, stdout: IO[bytes]) -> None:
        self.zygote, self.pid, self.stdout = zygote, pid, stdout

    @property
    def returncode(self) -> int | None:
        return self.zygote.code_of(self.pid)

    def poll(self) -> int | None:
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        code = self.zygote.wait_for(self.pid, timeout)
        if code is None:
            raise subprocess.TimeoutExpired(f"forked worker {self.pid}", timeout or 0.0)
        return code


class Zygote:
    """One fork server: started at once, ready once its imports are done (`ready`)."""

    def __init__(self, python: str, env: dict[str, str], log: Path) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {**env, PARENT_ENV: str(os.getpid())}
        cmd = [python, "-m", ZYGOTE_MODULE, str(theirs.fileno()), repr(time.time()), str(log.parent)]
        self.proc = spawn(cmd, env, pass_fds=(theirs.fileno(),))
        theirs.close()
        # its own output (a warning, a failed import) reaches its log redacted, as a worker's does
        pump(self.proc.stdout, log, "ab")
        self.sock = ours
        self.startup_s: float | None = None
        self.refused = ""
        self.announced = False  # its ready line said
        self.gave_up = False  # why it cannot fork said
        self._answered = threading.Event()
        self._replies: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self._codes: dict[int, int] = {}
        self._forked: set[int] = set()
        self._dead = False
        self._cond = threading.Condition()
        self._send_lock = threading.Lock()
        threading.Thread(target=self._read, name="zygote-reader", daemon=True).start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def ready(self, timeout: float = READY_TIMEOUT_S) -> bool:
        """True once the zygote has imported and may fork; False if it refused, died or took
        longer than `timeout` (`refused` says which)."""
        if not self._answered.wait(timeout):
            self.refused = f"not ready after {timeout:g} s"
            self.close()
        return self.startup_s is not None and not self._dead

    def fork(self, module: str, argv: list[str], env: Mapping[str, str]) -> Forked | None:
        """`python -m module argv...` forked with `env` (its output on a new pipe); None when the
        zygote cannot (it died): the caller spawns instead."""
        read_end, write_end = os.pipe()
        request = json.dumps({"module": module, "argv": argv, "env": dict(env)}).encode()
        try:
            with self._send_lock:
                socket.send_fds(self.sock, [request], [write_end])
                reply = self._replies.get(timeout=REPLY_TIMEOUT_S)
        except (OSError, queue.Empty):
            reply = None
        finally:
            os.close(write_end)
        if not reply or "pid" not in reply:
            os.close(read_end)
            self.refused = self.refused or f"no child forked ({(reply or {}).get('error', 'no answer')})"
            return None
        pid = int(reply["pid"])
        with self._cond:
            self._forked.add(pid)
            if self._dead:
                self._lost(pid)
        return Forked(self, pid, os.fdopen(read_end, "rb"))

    def code_of(self, pid: int) -> int | None:
        with self._cond:
            return self._codes.get(pid)

    def wait_for(self, pid: int, timeout: float | None) -> int | None:
        with self._cond:
            self._cond.wait_for(lambda: pid in self._codes, timeout)
            return self._codes.get(pid)

    def close(self) -> None:
        """End the zygote (its children, if any are left, die with it)."""
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.sock.close()

    def _read(self) -> None:
        while True:
            try:
                data = self.sock.recv(MAX_MESSAGE)
            except OSError:
                data = b""
            if not data:
                break
            message = json.loads(data)
            if "ready" in message:
                self.startup_s = float(message["ready"])
                self._answered.set()
            elif "refused" in message:
                self.refused = str(message["refused"])
                self._answered.set()
            elif "exit" in message:
                with self._cond:
                    self._codes[int(message["exit"])] = int(message["code"])
                    self._cond.notify_all()
            else:
                self._replies.put(message)
        with self._cond:  # the zygote is gone: no status will come for what it forked
            self._dead = True
            for pid in self._forked - set(self._codes):
                self._lost(pid)
            self._cond.notify_all()
        self.refused = self.refused or f"the fork server ended ({self.proc.poll()})"
        self._answered.set()
        self._replies.put(None)

    def _lost(self, pid: int) -> None:
        """A child whose zygote died: killed with its group (it would die with the zygote anyway,
        by its death signal), its status that of a kill."""
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        self._codes[pid] = -signal.SIGKILL


@dataclass
class Zygotes:
    """The fork servers of one sweep, started as processes ask for them; `say` hears (once each)
    why one cannot fork."""

    python: str
    logs: Path
    say: Any = print
    _by_key: dict[tuple[tuple[str, str], ...], Zygote] = field(default_factory=dict)

    def spawn(self, module: str, argv: list[str], extra: Mapping[str, str]) -> Forked | None:
        """The process `python -m module argv...` with `child_env(extra)`, forked; None where no
        zygote can fork it (the caller spawns it fresh)."""
        env = child_env(dict(extra))
        key = tuple(sorted((k, v) for k, v in env.items() if k not in LATE_ENV))
        zygote = self._by_key.get(key)
        if zygote is None:
            if len(self._by_key) >= MAX_ZYGOTES:
                return None
            self.logs.mkdir(parents=True, exist_ok=True)
            name = "zygote.log" if not self._by_key else f"zygote-{len(self._by_key) + 1}.log"
            early = {k: v for k, v in env.items() if k not in LATE_ENV}
            zygote = Zygote(self.python, early, self.logs / name)
            self._by_key[key] = zygote
        forked = None
        if zygote.ready():
            if not zygote.announced:
                zygote.announced = True
                self.say(
                    f"fork server: torch and transformers imported once in {zygote.startup_s:.1f} s "
                    f"(pid {zygote.pid}); the processes are forked from it"
                )
            # as if spawned its start-up ago: time to first result counts the imports it skipped
            env[SPAWN_ENV] = repr(time.time() - (zygote.startup_s or 0.0))
            env[PARENT_ENV] = str(zygote.pid)
            forked = zygote.fork(module, argv, env)
        if forked is None and not zygote.gave_up:
            zygote.gave_up = True
            self.say(f"fork server: {zygote.refused}; processes are spawned fresh")
        return forked

    def close(self) -> None:
        for zygote in self._by_key.values():
            zygote.close()
