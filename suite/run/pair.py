"""Two builds timed side by side: the coordinator of a pair (the host's side of
suite.measure.pairing; the protocol's words: suite.spec.pair_protocol), and a runner's line to it.

Two runners (`suite run --pair SOCKET --pair-role base|new`, each in its build's environment: a
virtualenv, or a container that sees the socket through the results mount) go through the same
cells. Each runner first tells the coordinator which cells it will run, and after each cell that
it has ended. Each cell's worker asks the coordinator before it touches the device: the
coordinator holds the device for one process at a time (preparing, timing, or finishing a cell),
so nothing ever times beside anything else. When both builds' workers of a cell have prepared,
it has them time rounds in turn (base, new, new, base, ...) until the pair's rule says the
rounds are enough (`PairRule`), then lets each finish, and hands the new build's worker the
pair's figures for its row (`pair_fields`). A cell only one build runs, a second process of a
cell, a partner that died or never came: timed alone under its own rule, still alone on the
device. Standard library only (the container sessions run it on the host).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import queue
import socket
import struct
import sys
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.results.sections import pair as pair_section
from suite.spec.pair_protocol import BASE, NEW, PAIRED, ROLES, SOLO, STOP, TURN, UnixAddress
from suite.spec.warmup import BLOCK_CALLS
from suite.stats import median, median_ci, percentile

PAIR_MIN_ROUNDS = 10  # fewer rounds give no interval worth judging (and a pair costs little more)
RESAMPLES = 2000  # of the bootstrap over rounds
ANNOUNCE_WAIT_S = 600.0  # how long a worker waits for the other runner to say which cells it runs
SOCKET_NAME = ".pair.sock"


def other(role: str) -> str:
    return NEW if role == BASE else BASE


@dataclass(frozen=True)
class PairRule:
    """When a pair has timed enough rounds: `fixed`, after `max_rounds`; else once the 95% CI of
    the median of each judged per-round ratio is within `ci_target_pct` of it, after at least
    `min_rounds`, or at `max_rounds`, or after `max_seconds` of rounds. From the cell's own
    stopping rule (its calls counted in rounds of BLOCK_CALLS), never under PAIR_MIN_ROUNDS."""

    min_rounds: int = PAIR_MIN_ROUNDS
    max_rounds: int = 60
    ci_target_pct: float = 1.0
    max_seconds: float = 120.0
    fixed: bool = False

    def __post_init__(self) -> None:
        if not 1 <= self.min_rounds <= self.max_rounds:
            raise ValueError(
                f"pair rule: needs 1 <= min_rounds <= max_rounds ({self.min_rounds}, {self.max_rounds})"
            )

    @staticmethod
    def of(rule: dict[str, Any]) -> PairRule:
        """From a worker's hello (its StopRule's numbers)."""
        rounds = max(PAIR_MIN_ROUNDS, math.ceil(int(rule.get("max_calls", 0)) / BLOCK_CALLS))
        least = max(PAIR_MIN_ROUNDS, math.ceil(int(rule.get("min_calls", 0)) / BLOCK_CALLS))
        return PairRule(
            min(least, rounds),
            rounds,
            float(rule.get("ci_target_pct", 1.0)),
            float(rule.get("max_seconds", 120.0)),
            rule.get("rule") == "fixed",
        )

    def enough(self, log: RoundLog, elapsed_s: float) -> bool:
        n = log.rounds
        if n >= self.max_rounds:
            return True
        if self.fixed or n < self.min_rounds:
            return False
        if all(half_width_pct(xs) <= self.ci_target_pct for xs in log.judged().values()):
            return True
        return elapsed_s >= self.max_seconds


def half_width_pct(xs: Sequence[float]) -> float:
    lo, hi = median_ci(xs)
    mid = median(xs)
    return 100.0 * (hi - lo) / 2 / mid if mid > 0 else float("inf")


@dataclass
class RoundLog:
    """Each round's figures of both builds (suite.measure.timing's round_figures), in order."""

    functions: int
    figures: dict[str, list[dict[str, Any]]] = field(default_factory=lambda: {BASE: [], NEW: []})

    @property
    def rounds(self) -> int:
        return min(len(self.figures[BASE]), len(self.figures[NEW]))

    def ratios(self) -> dict[str, list[float]]:
        """Per round, base / new of each figure (> 1: the new build is faster): the row's own
        function's latency and throughput, the eager function's beside a compiled one, and the
        compiled speed-up's ratio new / base."""
        out: dict[str, list[float]] = {}
        pairs = list(zip(self.figures[BASE], self.figures[NEW], strict=False))
        own = self.functions - 1
        out["latency"] = [b["latency"][own] / n["latency"][own] for b, n in pairs]
        out["throughput"] = [b["block"][own] / n["block"][own] for b, n in pairs]
        if self.functions > 1:
            out["eager_latency"] = [b["latency"][0] / n["latency"][0] for b, n in pairs]
            out["eager_throughput"] = [b["block"][0] / n["block"][0] for b, n in pairs]
            out["speedup"] = [
                (n["latency"][0] / n["latency"][own]) / (b["latency"][0] / b["latency"][own])
                for b, n in pairs
            ]
        return out

    def judged(self) -> dict[str, list[float]]:
        """The ratios the stopping rule waits on: the row's latency, and a compiled row's speed-up."""
        r = self.ratios()
        return {k: v for k, v in r.items() if k in ("latency", "speedup")}


def bootstrap_median_ci(
    xs: Sequence[float], resamples: int = RESAMPLES, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap 95% CI of the median of `xs` (the rounds resampled)."""
    import random

    rng = random.Random(seed)
    n = len(xs)
    meds = [median([xs[rng.randrange(n)] for _ in range(n)]) for _ in range(resamples)]
    return percentile(meds, 2.5), percentile(meds, 97.5)


def pair_fields(log: RoundLog, compile_s: dict[str, float | None]) -> dict[str, Any]:
    """The new build's row's paired figures: per figure the median over rounds of base / new with
    its bootstrap CI; the compile time's ratio new / base (one compile each)."""
    out: dict[str, Any] = {"pair_rounds": log.rounds}
    if log.rounds:
        for name, xs in log.ratios().items():
            lo, hi = bootstrap_median_ci(xs)
            out.update(zip(pair_section.ratio_names(name), (median(xs), lo, hi), strict=True))
    b, n = compile_s.get(BASE), compile_s.get(NEW)
    if b and n and b > 0:
        out[pair_section.COMPILE_TIME_RATIO] = n / b
    return out


class Line:
    """One connection to the coordinator: its messages queued by a reader thread (None: gone)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.pid = peer_pid(sock)
        threading.Thread(target=self._read, name="pair-line", daemon=True).start()

    def _read(self) -> None:
        try:
            for line in self.sock.makefile("r", encoding="utf-8"):
                with contextlib.suppress(ValueError):
                    self.messages.put(json.loads(line))
        except OSError:
            pass
        self.messages.put(None)

    def send(self, op: str, **fields: Any) -> bool:
        try:
            self.sock.sendall((json.dumps({"op": op, **fields}) + "\n").encode())
            return True
        except OSError:
            return False

    def get(self, *ops: str) -> dict[str, Any] | None:
        """The next message, if it is one of `ops`; None when the other side is gone (or broke
        the protocol, which ends its line)."""
        message = self.messages.get()
        if message is None or message.get("op") not in ops:
            with contextlib.suppress(OSError):
                self.sock.close()
            self.messages.put(None)  # every later get sees the end too
            return None
        return message


def peer_pid(sock: socket.socket) -> int | None:
    """The process at the other end of a Unix socket, as this side's PID namespace numbers it."""
    try:
        creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        return int(struct.unpack("3i", creds)[0])
    except (OSError, AttributeError):
        return None


@dataclass
class _Cell:
    """One cell's workers of both builds while they meet."""

    key: str
    lines: dict[str, Line] = field(default_factory=dict)
    hello: dict[str, dict[str, Any]] = field(default_factory=dict)
    compile_s: dict[str, float | None] = field(default_factory=dict)
    gone: set[str] = field(default_factory=set)
    done: bool = False  # paired, timed and finished (or given up): later processes time alone


@dataclass
class Coordinator:
    """The pair's host side (module docstring): `start`, then the runners run, then `close`."""

    path: Path
    cpus: Sequence[int] | None = None  # where the workers time (None: the CPUs both may use)
    log: Callable[[str], None] = field(default=lambda line: print(line, file=sys.stderr, flush=True))
    device: threading.Lock = field(default_factory=threading.Lock)
    changed: threading.Condition = field(default_factory=threading.Condition)
    announced: dict[str, set[str]] = field(default_factory=dict)
    ended: dict[str, set[str]] = field(default_factory=lambda: {BASE: set(), NEW: set()})
    gone: set[str] = field(default_factory=set)  # runners that ended or died
    cells: dict[str, _Cell] = field(default_factory=dict)
    waiting: dict[str, str] = field(default_factory=dict)  # role -> the key its worker waits with
    paired: int = 0
    pair_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    _server: socket.socket | None = None

    def start(self) -> Coordinator:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.unlink(missing_ok=True)
        server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with UnixAddress(str(self.path)) as address:
            server.bind(address)
        os.chmod(self.path, 0o777)  # a container's user (not this one's) connects too
        server.listen(16)
        self._server = server
        threading.Thread(target=self._accept, name="pair-accept", daemon=True).start()
        return self

    def close(self) -> None:
        if self._server is not None:
            with contextlib.suppress(OSError):
                self._server.close()
        self.path.unlink(missing_ok=True)

    def runner_gone(self, role: str) -> None:
        """A runner's process ended: none of its cells will come any more."""
        with self.changed:
            self.gone.add(role)
            self.changed.notify_all()

    def _accept(self) -> None:
        while self._server is not None:
            try:
                sock, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(Line(sock),), name="pair-serve", daemon=True).start()

    def _serve(self, line: Line) -> None:
        first = line.get("runner", "hello")
        if first is None or first.get("role") not in ROLES:
            return
        if first["op"] == "runner":
            self._runner(line, first["role"], first.get("cells") or [])
        else:
            self._worker(line, first)

    def _runner(self, line: Line, role: str, cells: list[str]) -> None:
        with self.changed:
            self.announced[role] = set(cells)
            self.changed.notify_all()
        line.send("ack")
        while (message := line.get("ended")) is not None:
            with self.changed:
                self.ended[role].add(str(message.get("key")))
                self.changed.notify_all()
            line.send("ack")
        self.runner_gone(role)

    def _expects(self, role: str, key: str) -> bool:
        """Whether the other build's worker of this cell may still come (under the lock)."""
        them = other(role)
        cell = self.cells[key]
        return (
            not cell.done
            and key in self.announced.get(them, ())
            and key not in self.ended[them]
            and them not in self.gone
            and them not in cell.gone
        )

    def _worker(self, line: Line, hello: dict[str, Any]) -> None:
        role, key = hello["role"], str(hello.get("key"))
        with self.changed:  # both runners' cells known (or the other runner gone)
            self.changed.wait_for(
                lambda: other(role) in self.announced or other(role) in self.gone, ANNOUNCE_WAIT_S
            )
            cell = self.cells.setdefault(key, _Cell(key))
            first = role not in cell.hello and not cell.done
        if not first:  # a cell's later process (or the pair is over): alone
            self._solo(line)
            return
        with self.device:
            ready = line.send("prepare") and line.get("ready")
        with self.changed:
            if not ready:
                cell.gone.add(role)
                self.changed.notify_all()
                return
            cell.lines[role], cell.hello[role], cell.compile_s[role] = line, hello, ready.get("compile_s")
            self.changed.notify_all()
            drive = self._meet(role, cell)
        if drive == PAIRED:
            self._pair(cell)
        elif drive == SOLO:
            self._solo(line, prepared=True)

    def _meet(self, role: str, cell: _Cell) -> str:
        """Under the lock: wait for the partner; PAIRED (this thread drives the pair), SOLO, or
        "" (the partner's thread drives it and has finished)."""
        them = other(role)
        if not self._expects(role, cell.key):
            cell.done = True
            return SOLO
        if them in cell.lines:
            cell.done = True
            return PAIRED
        if self.waiting.get(them, cell.key) != cell.key:  # both wait for a cell the other has not reached
            self.log(f"pair: {role} reached a cell the other build waits elsewhere for; timed alone")
            cell.done = True
            return SOLO
        self.waiting[role] = cell.key
        self.changed.wait_for(lambda: cell.done or not self._expects(role, cell.key))
        self.waiting.pop(role, None)
        if cell.done:
            return ""
        cell.done = True
        return SOLO

    def _solo(self, line: Line, prepared: bool = False) -> None:
        """One worker timed alone, the device held for it from preparing to its end."""
        with self.device:
            if not prepared and not (line.send("prepare") and line.get("ready")):
                return
            if line.send("time", mode=SOLO, cpus=self._cpus([])) and line.get("timed"):
                line.send("finish", fields={})
                line.get("bye")

    def _cpus(self, hellos: Sequence[dict[str, Any]]) -> list[int]:
        """Where the workers time: the coordinator's CPUs, else those both workers may use."""
        if self.cpus:
            return list(self.cpus)
        sets = [set(h.get("cpus") or ()) for h in hellos if h.get("cpus")]
        return sorted(set.intersection(*sets)) if sets else []

    def _pair(self, cell: _Cell) -> None:
        """Both builds' workers prepared: their rounds in turn, then each finishes."""
        lines, hellos = cell.lines, [cell.hello[BASE], cell.hello[NEW]]
        rule = PairRule.of(cell.hello[NEW].get("rule") or {})
        log = RoundLog(int(cell.hello[NEW].get("functions") or 1))
        with self.device:
            cpus = self._cpus(hellos)
            for role in ROLES:
                lines[role].send("time", mode=PAIRED, cpus=cpus, partner_pids=[lines[other(role)].pid or 0])
            lost = self._rounds(lines, rule, log)
            figures = pair_fields(log, cell.compile_s)
            for role in ROLES:  # each finishes alone: the base build first
                if role == lost:
                    continue
                if lost is None:
                    lines[role].send(STOP)
                if lines[role].get("timed"):
                    mine = {"pair_id": self.pair_id, "pair_role": role}
                    if lost is None:
                        mine["pair_partner"] = str(cell.hello[other(role)].get("build", ""))
                        mine.update(figures if role == NEW else {})
                    lines[role].send("finish", fields=mine)
                    lines[role].get("bye")
        with self.changed:
            self.paired += lost is None
            self.changed.notify_all()

    def _rounds(self, lines: dict[str, Line], rule: PairRule, log: RoundLog) -> str | None:
        """Rounds in turn until the rule has enough; the role whose worker was lost (its partner
        told to go on alone), or None."""
        start = time.monotonic()
        while True:
            order = ROLES if log.rounds % 2 == 0 else ROLES[::-1]
            for role in order:
                got = lines[role].send(TURN) and lines[role].get("round")
                if not got:
                    lines[other(role)].send(SOLO)
                    return role
                log.figures[role].append(got["figures"])
            if rule.enough(log, time.monotonic() - start):
                return None


@dataclass
class RunnerLine:
    """A runner's line to the coordinator: its cells first, then each cell as it ends (each
    answered, so the coordinator knows before the runner's next worker asks)."""

    sock: socket.socket
    reader: Any

    @staticmethod
    def connect(path: str, role: str, keys: Sequence[str]) -> RunnerLine:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        with UnixAddress(path) as address:
            sock.connect(address)
        line = RunnerLine(sock, sock.makefile("r", encoding="utf-8"))
        line._say({"op": "runner", "role": role, "cells": list(keys)})
        return line

    def _say(self, message: dict[str, Any]) -> None:
        self.sock.sendall((json.dumps(message) + "\n").encode())
        self.reader.readline()  # the ack

    def ended(self, key: str) -> None:
        with contextlib.suppress(OSError):
            self._say({"op": "ended", "key": key})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.sock.close()


@dataclass(frozen=True)
class Side:
    """One build's runner of a pair: how to start it (`suite run ...` in its environment, or in
    its container), and the environment it runs with beyond ours."""

    role: str
    command: Sequence[str]
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.role not in ROLES or not self.command:
            raise ValueError(f"a pair's side needs a role ({' or '.join(ROLES)}) and a command")


def run_pair(coordinator: Coordinator, sides: Sequence[Side]) -> dict[str, int]:
    """Both runners at once under one coordinator; each one's exit status by role. A runner that
    ends lets its partner's cells go on alone (the coordinator is told at once)."""
    import subprocess

    from suite.run.environ import child_env

    coordinator.start()
    procs = {s.role: subprocess.Popen(list(s.command), env=child_env(s.env)) for s in sides}
    for role in ROLES:  # a role nobody runs has no cells to wait for
        if role not in procs:
            coordinator.runner_gone(role)
    codes: dict[str, int] = {}
    try:
        while len(codes) < len(procs):
            for role, proc in procs.items():
                if role not in codes and proc.poll() is not None:
                    codes[role] = proc.returncode
                    coordinator.runner_gone(role)
            time.sleep(0.2)
    finally:
        for role, proc in procs.items():
            if role not in codes:
                proc.kill()
                codes[role] = proc.wait()
        coordinator.close()
    return codes
