"""How the worker's C heap hands out memory: the `malloc` setting.

glibc's malloc, left to itself, changes its mind as a process runs. A block above the mmap
threshold (128 KiB at first) is mapped fresh from the kernel and unmapped on free, so every
page of it faults again on its next use; freeing such a block raises the threshold (up to
32 MiB), and free memory at the heap's top goes back to the kernel past a trim threshold that
moves with it. How many pages a forward pass faults in therefore depends on what the process
did before, and a block above 32 MiB (a batch-16 activation) faults in full on every call
(tests/measure/test_allocator.py). On this project's CPU (docs/trust.md) the same
eager ViT-B/16 cell faulted 3,600 to 7,600 pages a call from one run to the next; the eager
calls of a compiled cell were slower than the same calls alone, and the speed-up partly a
measure of the allocator's history.

`steady` (the default) fixes both choices for the worker's whole life through glibc's
tunables: never map a block on its own (`mmap_max=0`), never trim the heap (a trim threshold
of 1 TiB). After the warm-up every call reuses pages already faulted in, whatever ran before.
`system` leaves the platform's allocator as it is (what a plain `python` process does). The
figure a row was measured under is its `malloc` column (`in_effect`: glibc with these tunables,
else `system`), beside `page_faults_per_call` (suite.measure.health). Standard library only.
"""

from __future__ import annotations

import os
import platform
from collections.abc import Mapping

from suite.spec.vocab import MALLOC_STEADY, MALLOC_SYSTEM

ENV = "GLIBC_TUNABLES"
TUNABLES: tuple[tuple[str, str], ...] = (
    ("glibc.malloc.mmap_max", "0"),  # no block gets a mapping of its own: all come from the heap
    ("glibc.malloc.trim_threshold", str(2**40)),  # the heap's top is never given back
)


def _parse(value: str) -> dict[str, str]:
    """GLIBC_TUNABLES' `name=value:name=value` list; the last setting of a name wins, as in glibc."""
    out: dict[str, str] = {}
    for item in value.split(":"):
        name, sep, setting = item.partition("=")
        if sep and name:
            out[name] = setting
    return out


def child_env(setting: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The variables a worker needs for `setting`. `steady` puts the tunables first, so any the
    user set themselves in GLIBC_TUNABLES come after them and win; `system` adds nothing."""
    if setting != MALLOC_STEADY:
        return {}
    ours = ":".join(f"{name}={value}" for name, value in TUNABLES)
    theirs = environ.get(ENV, "")
    return {ENV: f"{ours}:{theirs}" if theirs else ours}


def in_effect(environ: Mapping[str, str] = os.environ, libc: str | None = None) -> str:
    """`steady` when this process runs on glibc with the tunables in force, else `system`."""
    libc = platform.libc_ver()[0] if libc is None else libc
    if libc != "glibc":
        return MALLOC_SYSTEM
    tunables = _parse(environ.get(ENV, ""))
    return MALLOC_STEADY if all(tunables.get(n) == v for n, v in TUNABLES) else MALLOC_SYSTEM
