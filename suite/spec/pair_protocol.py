"""The pair's line protocol: the words two builds' workers and their coordinator share.

Under `suite pair` (and the paired bench sessions) a coordinator on the host (suite.run.pair)
holds the device for one process at a time; each worker (suite.measure.pairing) finds it by the
environment (`PAIR_ENV`: the socket's path, which the containers see through the results mount;
`ROLE_ENV`: base or new), and the sessions that start the two runners (suite.sessions.pairing)
name the roles. One JSON object a line over a Unix socket, worker -> coordinator: hello {role,
key, cpus}, ready {compile_s}, round {figures}, timed, bye; coordinator -> worker: prepare, time
{mode, cpus}, turn, stop, solo, finish {fields}. Standard library only: the host's sessions, the
run side and the containers read it alike.
"""

from __future__ import annotations

import json
import os

PAIR_ENV = "SUITE_PAIR"  # the coordinator's socket
ROLE_ENV = "SUITE_PAIR_ROLE"  # base | new
BASE, NEW = "base", "new"
ROLES = (BASE, NEW)
PAIRED, SOLO = "paired", "solo"
TURN, STOP = "turn", "stop"


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
