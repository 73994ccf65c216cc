"""How the cells of a sweep are laid out in processes (pure: the runner's `ahead` schedule,
suite.run.schedule, and its estimate, suite.spec.cost, read the same rules).

`serial`: one process per cell. `ahead`: each compiled cell's process compiles it cold beside
others (a wave of them, one per CORES_PER_COMPILE cores), then waits; the wave's processes are
then timed one after the other, alone, each timing its own cell and then the eager cells of its
model that follow it. With `overlap` the next wave compiles meanwhile, on the cores the timed
process is not pinned to (overlap_cores).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from suite.spec.model import Cell

SERIAL, AHEAD = "serial", "ahead"
SCHEDULES: tuple[str, ...] = (AHEAD, SERIAL)
OVERLAP = "overlap"  # what an `ahead` row says when the next wave compiled beside its timing
# how an `ahead` process (and a pair's one process per cell) starts: forked from a zygote that
# imported torch and transformers once (suite.measure.zygote), or spawned fresh; `serial` outside
# a pair always spawns
FORK, SPAWN = "fork", "spawn"
PROCESS_STARTS: tuple[str, ...] = (FORK, SPAWN)


def forks(schedule: str, process_start: str, device_type: str, paired: bool = False) -> bool:
    """Whether a sweep's processes are forked: `ahead`'s, and a pair runner's (`serial`, one
    process per cell, `paired`), with `fork`, on a CPU or a GPU (the zygote never touches CUDA,
    refuses to fork where its imports did, and each forked worker initialises CUDA itself:
    suite.measure.zygote)."""
    return (schedule == AHEAD or paired) and process_start == FORK and device_type in ("cpu", "cuda")


Indexed = tuple[int, Cell]  # a cell and its place in the sweep (its files' names)


# the scenarios whose cells a shared process serves (a scenario added later keeps its own process
# until it is known to leave nothing behind for the next cell)
SHARED_SCENARIOS: tuple[str, ...] = ("inference", "train", "precision", "pipeline")


def shareable(cell: Cell) -> bool:
    """A cell a shared timing process can serve: one process, one batch size, no compile-cost
    processes (those measure a process's own start and caches), a scenario known to share."""
    own = cell.batch_sizes or cell.settings.processes != 1 or cell.compile_cost
    return not own and cell.scenario in SHARED_SCENARIOS


def compiled_ahead(cell: Cell) -> bool:
    """A cell whose compile runs ahead: compiled, shareable, on fresh caches (`compile_cache: cold`;
    with `run` its compile is whatever the run's shared cache makes it, as in `serial`)."""
    return shareable(cell) and cell.mode != "eager" and cell.settings.compile_cache == "cold"


def group_key(cell: Cell) -> tuple[Any, ...]:
    """Cells with the same key may share a timing process: one model and build in one scenario and
    dtype, and what the process is started with (the allocator's setting, the compile cache
    policy, the weights and the image the cells load)."""
    s = cell.settings
    return (
        cell.build,
        cell.model.name,
        cell.variant,
        cell.scenario,
        s.dtype,
        s.malloc,
        s.compile_cache,
        s.weights,
        s.shrink,
        s.image,
    )


def timing_order(cells: Sequence[Indexed]) -> list[Indexed]:
    """A group's cells by batch size, eager and compiled alternating which comes first from one
    batch size to the next, so neither kind always has the process's first (or last) slot."""
    sizes = sorted({c.batch_size for _, c in cells})
    out: list[Indexed] = []
    for n, size in enumerate(sizes):
        same = [ic for ic in cells if ic[1].batch_size == size]
        eager = [ic for ic in same if ic[1].mode == "eager"]
        compiled = [ic for ic in same if ic[1].mode != "eager"]
        out += eager + compiled if n % 2 == 0 else compiled + eager
    return out


def groups_of(cells: Sequence[Indexed]) -> list[list[Indexed]]:
    """The sweep's cells as timing groups, in the order of their first cell: a shared group per
    `group_key`, a group of one for every cell that is not shareable."""
    groups: dict[tuple[Any, ...], list[Indexed]] = {}
    order: list[list[Indexed]] = []
    for ic in cells:
        if not shareable(ic[1]):
            order.append([ic])
            continue
        key = group_key(ic[1])
        if key not in groups:
            groups[key] = []
            order.append(groups[key])
        groups[key].append(ic)
    return [timing_order(g) if shareable(g[0][1]) else g for g in order]


def processes_of(group: Sequence[Indexed]) -> list[list[Indexed]]:
    """A timing group's processes under `ahead`: each compiled-ahead cell starts one (its cold
    compile is a fresh process's first work); every other cell of the group follows the process
    of the compiled cell of its batch size (else the group's first process), timed after it; a
    group without a compiled-ahead cell is one process."""
    procs: list[list[Indexed]] = [[ic] for ic in group if compiled_ahead(ic[1])]
    rest = [ic for ic in group if not compiled_ahead(ic[1])]
    if not procs:
        return [list(group)] if group else []
    for ic in rest:
        same = [p for p in procs if p[0][1].batch_size == ic[1].batch_size]
        (same[0] if same else procs[0]).append(ic)
    return procs


def waves(jobs: Sequence[Any], width: int, key: Any) -> list[list[Any]]:
    """`jobs` in waves of at most `width`, longest `key` first: a wave's processes compile at once,
    then are timed one after the other (so a wave's compile lasts as long as its longest)."""
    ordered = sorted(jobs, key=key, reverse=True)
    step = max(1, width)
    return [ordered[i : i + step] for i in range(0, len(ordered), step)]


# Cores one cold compile keeps busy. Measured on this project's 2-vCPU VM (torch 2.13, shrunk
# ResNet and ViT, nothing else running, 2026-11-27; the machine's busy time over a compile's
# wall): 1.2 to 1.3 cores on average over a 13-19 s compile (dynamo's and inductor's Python,
# plus inductor's pool of C++ compile workers, which takes every core in bursts). Two compiles
# at once on those 2 cores made each `compile_s` 1.2 to 1.6 x its serial value (the A/A in
# docs/measurement.md). A wave gets one process per CORES_PER_COMPILE cores, the average
# rounded up; the estimate stretches a wider wave's compiles by COMPILE_CORES_BUSY.
COMPILE_CORES_BUSY = 1.3
CORES_PER_COMPILE = 2


def pool_size(cores: int | None = None, pool: int | None = None) -> int:
    """Compile processes at once (a wave): `pool` when the user names it (`--compile-pool`),
    else one per CORES_PER_COMPILE cores, so a wave's compiles do not share cores and each
    `compile_s` stays what a serial process measures. The timing waits until the wave's
    compiles are done, so it needs no cores of its own meanwhile."""
    if pool is not None:
        return max(1, pool)
    return max(1, (cores if cores is not None else (os.cpu_count() or 1)) // CORES_PER_COMPILE)


def overlap_cores(cores: int) -> int:
    """Cores the timed process is pinned to while the next wave compiles beside it (`--overlap`):
    CORES_PER_COMPILE where at least twice as many are there (a GPU worker's launch thread and
    the rest of its process), else one; the compiles get the others, at least one."""
    if cores < 2:
        return 0
    return CORES_PER_COMPILE if cores >= 2 * CORES_PER_COMPILE else 1


def timing_cpus(cpus: Sequence[int]) -> tuple[frozenset[int], frozenset[int]]:
    """(the timed process's CPUs, the compiles' CPUs) of `overlap` among the CPUs this process may
    run on (`cpus`): the timed process the first overlap_cores of them, the compiles the rest (on
    a single CPU both share it)."""
    ordered = sorted(cpus)
    own = overlap_cores(len(ordered))
    if own == 0:
        return frozenset(ordered), frozenset(ordered)
    return frozenset(ordered[:own]), frozenset(ordered[own:])
