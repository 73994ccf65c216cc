"""A worker's side of a pair: two builds' workers of one cell timed in alternating rounds.

Under `suite pair` (and the paired bench sessions) a coordinator on the host (suite.run.pair)
holds the device: one process at a time prepares (builds and compiles its model), times, or
finishes. Once both builds' workers of a cell have prepared, it hands out rounds in turn (base,
new, new, base, ...), one round each: the host probe, then each function's short block (a
switch call and settling first, as after any other process's calls), exactly the timing loop's
round (suite.measure.timing). After each round the worker sends that round's figures; the
coordinator alone decides when the pair has enough (both workers take the same rounds), and at
the end hands the new build's worker the pair's figures for its row. A cell that only one build
has, a second process of a cell, or a partner that died, is timed alone (`solo`) under the
cell's own stopping rule, with the device still held for it.

The line protocol, one JSON object a line over a Unix socket (`PAIR_ENV` names its path, which
the containers see through the results mount), worker -> coordinator: hello {role, key, cpus},
ready {compile_s}, round {figures}, timed, bye; coordinator -> worker: prepare, time {mode, cpus},
turn, stop, solo, finish {fields}. Standard library only (it runs in the containers).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from suite.measure import gate

PAIR_ENV = "SUITE_PAIR"  # the coordinator's socket
ROLE_ENV = "SUITE_PAIR_ROLE"  # base | new
BASE, NEW = "base", "new"
ROLES = (BASE, NEW)
PAIRED, SOLO = "paired", "solo"
TURN, STOP = "turn", "stop"
CONNECT_TIMEOUT_S = 30.0


class PairLost(ConnectionError):
    """The coordinator went away: the worker goes on alone under its own rule."""


def pair_key(key_fields: dict[str, object]) -> str:
    """A cell's identity in a pair: its row key without the build (the two builds' cells of one
    cell share it) and the device, as one stable string."""
    kept = {k: v for k, v in key_fields.items() if k not in ("build", "device")}
    return json.dumps(kept, sort_keys=True, default=str)


class UnixAddress:
    """A Unix socket's path as bind and connect can take it: a path longer than the kernel's
    limit (108 bytes; a run folder deep in a CI workspace) is reached through its folder's open
    descriptor, /proc/self/fd/N/NAME. A context manager: the descriptor is closed after."""

    LIMIT = 100

    def __init__(self, path: str) -> None:
        self.path, self.fd = path, -1

    def __enter__(self) -> str:
        if len(self.path.encode()) < self.LIMIT:
            return self.path
        folder, name = os.path.split(self.path)
        self.fd = os.open(folder or ".", os.O_RDONLY)
        return f"/proc/self/fd/{self.fd}/{name}"

    def __exit__(self, *exc: object) -> None:
        if self.fd >= 0:
            os.close(self.fd)


def allowed_cpus() -> list[int]:
    """The CPUs this process may run on (its cgroup's cpuset in a container)."""
    return sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []


def pin_threads(cpus: Sequence[int]) -> None:
    """Every thread of this process (torch's intra-op threads too) onto `cpus`: affinity is per
    thread on Linux, and threads made later inherit their creator's."""
    if not cpus or not hasattr(os, "sched_setaffinity"):
        return
    for tid in os.listdir("/proc/self/task"):
        try:
            os.sched_setaffinity(int(tid), cpus)
        except (OSError, ValueError):  # a thread that ended meanwhile
            continue


def cpu_text(cpus: Sequence[int]) -> str:
    """`0-3,8`: a CPU list as the kernel writes one (the row's `timing_cpus`)."""
    out: list[str] = []
    for c in sorted(set(cpus)):
        if out and "-" not in out[-1] and int(out[-1]) == c - 1:
            out[-1] = f"{out[-1]}-{c}"
        elif out and "-" in out[-1] and int(out[-1].split("-")[1]) == c - 1:
            out[-1] = f"{out[-1].split('-')[0]}-{c}"
        else:
            out.append(str(c))
    return ",".join(out)


@dataclass
class Partner:
    """This worker's line to the coordinator (None of it exists outside a pair: `connect`)."""

    sock: socket.socket
    role: str
    reader: Any = None
    mode: str = ""  # PAIRED or SOLO once timing is granted
    cpus: list[int] = field(default_factory=list)  # where this worker times (pinned)
    before: list[int] = field(default_factory=list)  # its CPUs before the pin

    @staticmethod
    def connect(key_fields: dict[str, object], **hello: Any) -> Partner | None:
        """The line for this cell, or None outside a pair (no `PAIR_ENV`); `hello` tells the
        coordinator the cell's build, its stopping rule and how many functions it times."""
        path, role = os.environ.get(PAIR_ENV, ""), os.environ.get(ROLE_ENV, "")
        return Partner.open(path, role, key_fields, **hello) if path else None

    @staticmethod
    def open(path: str, role: str, key_fields: dict[str, object], **hello: Any) -> Partner:
        if role not in ROLES:
            raise ValueError(f"{ROLE_ENV}={role!r}: must be {' or '.join(ROLES)}")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(CONNECT_TIMEOUT_S)
        with UnixAddress(path) as address:
            sock.connect(address)
        sock.settimeout(None)  # a partner's compile may take as long as the cell's timeout
        partner = Partner(sock, role, sock.makefile("r", encoding="utf-8"))
        partner.send("hello", role=role, key=pair_key(key_fields), cpus=allowed_cpus(), **hello)
        return partner

    def send(self, op: str, **fields: Any) -> None:
        try:
            self.sock.sendall((json.dumps({"op": op, **fields}) + "\n").encode())
        except OSError as exc:
            raise PairLost(f"the pair's coordinator is gone ({exc})") from None

    def receive(self, *expected: str) -> dict[str, Any]:
        line = self.reader.readline()
        if not line:
            raise PairLost("the pair's coordinator closed the line")
        message = json.loads(line)
        if message.get("op") not in expected:
            raise PairLost(f"the pair's coordinator said {message.get('op')!r}, expected {expected}")
        return message

    def prepare(self) -> None:
        """Wait until this worker may build and compile its model (alone on the device); with
        the coordinator gone, at once (alone)."""
        try:
            self.receive("prepare")
        except PairLost:
            self.mode = SOLO

    def ready(self, compile_s: float | None) -> str:
        """Prepared: wait until timing is granted; PAIRED or SOLO. Pins the threads where the
        coordinator says."""
        try:
            self.send("ready", compile_s=compile_s)
            granted = self.receive("time")
        except PairLost:
            self.mode = SOLO
            return self.mode
        self.mode, self.cpus = granted["mode"], [int(c) for c in granted.get("cpus") or []]
        # the partner holds the device too, but only ever times between this worker's rounds
        gate.add_idle({int(p) for p in granted.get("partner_pids") or []})
        self.before = allowed_cpus()
        pin_threads(self.cpus)
        return self.mode

    def turn(self) -> str:
        """In a paired cell, before each round: TURN (time one round), STOP (the pair has
        enough: `mode` becomes STOP) or SOLO (the partner or the coordinator is gone: go on
        alone under the cell's own rule)."""
        try:
            op = str(self.receive(TURN, STOP, SOLO)["op"])
        except PairLost:
            op = SOLO
        if op != TURN:
            self.mode = op
        return op

    def round_done(self, figures: dict[str, Any]) -> None:
        try:
            self.send("round", figures=figures)
        except PairLost:
            self.mode = SOLO

    def timed(self) -> dict[str, Any]:
        """Timing over: the threads unpinned; wait for the go to finish the cell (energy,
        scenario extras: alone on the device); the pair's fields for this worker's row."""
        pin_threads(self.before)
        try:
            self.send("timed")
            fields = dict(self.receive("finish").get("fields") or {})
        except PairLost:
            fields = {}
        return {**fields, "timing_cpus": cpu_text(self.cpus) or None}

    def close(self) -> None:
        with contextlib.suppress(PairLost):
            self.send("bye")
        self.sock.close()
