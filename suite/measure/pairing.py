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

The line protocol's words are suite.spec.pair_protocol's. Standard library only (it runs in the
containers).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
from dataclasses import dataclass, field
from typing import Any

from suite.measure import gate
from suite.spec.pair_protocol import PAIR_ENV, ROLE_ENV, ROLES, SOLO, STOP, TURN, UnixAddress, pair_key
from suite.system.cpus import available, cpu_text, pin

CONNECT_TIMEOUT_S = 30.0


class PairLost(ConnectionError):
    """The coordinator went away: the worker goes on alone under its own rule."""


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
        partner.send("hello", role=role, key=pair_key(key_fields), cpus=available(), **hello)
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
        self.before = available()
        pin(os.getpid(), self.cpus)
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
        pin(os.getpid(), self.before)
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
