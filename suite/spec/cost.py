"""An estimate of how long one cell takes, in seconds: for balancing shards and for the ETA.

This is a rough model of what the worker does, not a measurement. Its rates come in two
sets: a GPU's (GPU_RATES, measured on an H200 with torch 2.11 for the models the GPU study ran, the
others by a formula: a cold `torch.compile` takes tens of seconds, max-autotune several minutes)
and a 2-core CPU's (CPU_RATES, read off this project's own runs), which `plan` uses for
`--device cpu` or a machine without an NVIDIA GPU. Sharding and the runner's ETA use the GPU's
rates whatever the device: they need only the *ratios* between cells, and read only the cell's
matrix data (never the running device), so every machine computes the same shards.

    seconds = startup + load + compile + forwards * seconds per forward + energy window

plus, with `processes: k`, k - 1 more processes (each: startup + a warm compile + the same
calls), plus, with the `compile_cost` setting, the warm and mega-cache processes of a compiled cell
(each: startup + load + a fraction of the compile + a few forwards), and for a dynamic-batch
cell the forwards at each batch size it serves and the compiles its `dynamic` setting makes.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from suite.spec.model import Cell
from suite.spec.schedule import (
    AHEAD,
    COMPILE_CORES_BUSY,
    SERIAL,
    compiled_ahead,
    groups_of,
    pool_size,
    processes_of,
    shareable,
    waves,
)
from suite.spec.vocab import DYNAMIC_BATCH, STOP_CI
from suite.spec.warmup import settle_seconds, warmup_calls


@dataclass(frozen=True)
class Rates:
    """What a kind of device takes for the parts of a cell that differ most between devices."""

    startup_s: float  # child process, torch + transformers imports, model build, inputs, teardown
    compile_base_s: float  # a cold compile of the smallest graph
    forward_s_per_m_params_image: float  # compute of one forward, per million parameters and image
    compile_s_per_m_params: float = 0.3  # bigger models have more layers, so bigger graphs
    energy_s: float = 0.0  # the energy window after the timed calls (suite.measure.energy)
    # a cold default-mode compile measured per model (display name -> seconds): used instead of
    # compile_base_s + compile_s_per_m_params where known; `shrunk_compile_by_model` the same
    # for the shrunk models of a `shrink` profile (smoke)
    compile_by_model: tuple[tuple[str, float], ...] = ()
    shrunk_compile_by_model: tuple[tuple[str, float], ...] = ()
    cell_s: float = 0.0  # a cell's own fixed work beyond its calls (warm-up, statistics, health)
    preload_s: float = 0.0  # of startup_s, the imports a forked process skips (suite.measure.zygote)

    def __post_init__(self) -> None:
        if min(self.startup_s, self.compile_base_s, self.forward_s_per_m_params_image) <= 0:
            raise ValueError(f"{self}: every rate must be positive")
        measured = (s for _, s in (*self.compile_by_model, *self.shrunk_compile_by_model))
        if min(self.compile_s_per_m_params, self.energy_s, self.cell_s, self.preload_s, *measured) < 0:
            raise ValueError(f"{self}: no rate may be negative")

    def compile_s(self, model: str, size_m: float, shrunk: bool = False) -> float:
        """A cold default-mode compile of `model` (`size_m` million parameters; `shrunk`: the
        smoke profile's shrunk model of that name, which is not the full one measured)."""
        measured = dict(self.shrunk_compile_by_model if shrunk else self.compile_by_model).get(model)
        return (
            measured if measured is not None else self.compile_base_s + self.compile_s_per_m_params * size_m
        )


# One NVIDIA H200 (16 cores, torch 2.11, the GPU study of 2026-11-26, results/2026-11-26-h200-torch2.11):
# compiled cells at batch 1 took 36-54 s where the rates before these estimated 54-129 s. Start-up
# (the eager first result, model load included) 11-18 s, and 5-7 s after the timed calls beside the
# 5 s energy window (NVML); a cold compile 12-27 s that does not follow the parameter count
# (MobileNet, 2.5 M: 21 s; ConvNeXT-large, 198 M: 16.5 s): the models measured keep their own
# figure (the mean of their runs), the others 18 s + 0.1 s per million parameters.
GPU_RATES_FROM = "one NVIDIA H200, the GPU study of 2026-11-26"  # where GPU_RATES were measured
GPU_RATES = Rates(
    startup_s=19.0,
    compile_base_s=18.0,
    forward_s_per_m_params_image=2e-5,  # compute: ViT-base (86 M) x 16 images ~ 28 ms
    compile_s_per_m_params=0.1,
    energy_s=5.0,
    compile_by_model=(
        ("ViT", 14.0),
        ("BeiT", 25.0),
        ("ConvNeXT", 16.5),
        ("ResNet", 15.5),
        ("MobileNet", 21.1),
    ),
)
# A 2-core CPU (this project's AMD EPYC VM), from the current build's 25 smoke cells under
# `--schedule serial` on 2026-11-27 with nothing else running (docs/setup.md; torch 2.13,
# transformers 5.23): a process's first eager result came 5.9-8.2 s after its spawn (importing
# torch and transformers' model classes alone takes 5-9 s of CPU), an eager cell took 7.9-10.5 s
# in all, a compiled one its compile_s plus 11-14 s; under `ahead` an eager cell after its
# compiled sibling took 0.5-1.6 s. So: 8.4 s a process (start, imports, model, teardown), 1 s a
# cell, and each shrunk model's own compile_s of that run + 3 s (importing inductor and starting
# and stopping its compile workers, which compile_s does not count). Full-size ResNet-50
# (25.6 M) eager at batch 1 took 42-44 ms here (docs/trust.md).
CPU_COMPILE_OUTSIDE_S = 3.0
# A forked process (suite.measure.zygote) skips the imports: the zygote of the 4-model smoke run
# under `ahead` on that VM, idle, 2026-11-27 (docs/measurement.md), had them done 6.9 s after
# its spawn.
CPU_RATES = Rates(
    startup_s=8.4,
    preload_s=6.9,
    compile_base_s=16.0 + CPU_COMPILE_OUTSIDE_S,
    forward_s_per_m_params_image=1.5e-3,
    cell_s=1.0,
    shrunk_compile_by_model=tuple(
        (name, round(s + CPU_COMPILE_OUTSIDE_S, 1))
        for name, s in (
            ("ViT", 15.7),
            ("BeiT", 17.2),
            ("ConvNeXT", 15.1),
            ("ResNet", 17.1),
            ("Segformer", 26.2),
            ("Mask2former", 95.9),
            ("Maskformer", 73.8),
            ("MobileNet", 47.3),
            ("OwlViT", 20.9),
            ("DETR", 34.3),
            ("Resnet-101", 34.3),
            ("Conditional-DETR", 35.3),
        )
    ),
)
RATES = {"cuda": GPU_RATES, "cpu": CPU_RATES}
RATES_FROM = {"cuda": GPU_RATES_FROM, "cpu": "a 2-core CPU (this project's VM)"}

LOAD_S_PER_M_PARAMS = 0.02  # weights read from the cache and moved to the device
UNKNOWN_PARAMS_M = 100.0  # a model without `params_m` (custom configs): a ViT-base-sized guess
SHRUNK_PARAMS_M = 1.0  # smoke models are shrunk to a few layers of width 64

FORWARD_OVERHEAD_S = 0.004  # kernel launches of one forward, whatever its size
# A training step (forward + loss + backward + optimizer) costs about three forwards, and its
# compile about twice a forward's (AOTAutograd compiles the backward graph as well).
TRAIN_STEP_FORWARDS = 3.0
TRAIN_COMPILE_FACTOR = 2.0
# Compile cost of each mode relative to `default`; a mode not named here counts as default.
COMPILE_FACTOR: dict[str, float] = {
    "eager": 0.0,
    "default": 1.0,
    "reduce-overhead": 1.2,  # + CUDA-graph recording
    "max-autotune": 6.0,  # + benchmarking kernel choices for every matmul and conv
    "max-autotune-no-cudagraphs": 5.5,
    "aot-inductor": 1.5,  # + export, and the package's C++ compiled and linked
}


# The compile-cost processes (suite.run.cell_path): a warm one and a mega-cache one, each a
# fresh process (startup, load) making an eager warm-up call, an eager call and the first
# compiled call, which finds its graphs in a cache: on the order of a third of a cold compile
# (dynamo still traces; inductor and the kernel compilers are skipped).
COMPILE_COST_PROCESSES = 2
COMPILE_COST_FORWARDS = 3
WARM_COMPILE_FRACTION = 0.3
# A dynamic-batch cell's compiles: `static` compiles for every batch size; `auto` and `marked`
# compile the first size, then one graph with a symbolic batch dimension (a bit dearer).
SYMBOLIC_COMPILES = 2.2  # auto, marked: the first size's graph + one symbolic graph at ~1.2x
RETURN_FORWARDS = 2  # back at the first batch size: an eager call and a compiled one


def params_m(cell: Cell) -> float:
    """Model size in millions of parameters, as far as the matrix knows it."""
    if cell.settings.shrink:
        return SHRUNK_PARAMS_M
    return cell.model.published_params_m or UNKNOWN_PARAMS_M


# The stopping rule (stop_rule: ci): timed calls a cell is expected to make per function. An
# assumption until re-measured (docs/measurement.md): twice the minimum, never above the maximum.
CI_EXPECTED_MIN_FACTOR = 2


def timed_calls(cell: Cell) -> int:
    """Timed calls of each function the cell is expected to make: `iterations` with the fixed
    rule; with the CI rule, twice its minimum, capped by `iterations` (its `max_timing_s` caps the
    seconds: estimate_seconds)."""
    s = cell.settings
    if s.stop_rule != STOP_CI:
        return s.iterations
    return min(s.iterations, CI_EXPECTED_MIN_FACTOR * min(s.min_iterations, s.iterations))


def forwards(cell: Cell) -> int:
    """Forward calls the worker makes (suite.measure.scenarios.base.measure; a train cell
    makes as many steps): eager cells warm up and time one function; compiled cells warm up
    both (the warm-up policy, suite.spec.warmup) and time both, interleaved."""
    s = cell.settings
    eager_warmup = warmup_calls(s.warmup, compiled=False)
    if cell.mode == "eager":
        return eager_warmup + timed_calls(cell)
    compiled_warmup = warmup_calls(s.warmup, compiled=True)
    return eager_warmup + compiled_warmup + 2 * timed_calls(cell) + 4  # + eager, first compiled, 2 accuracy


def _forward_s(size: float, batch_size: int, rates: Rates) -> float:
    return FORWARD_OVERHEAD_S + rates.forward_s_per_m_params_image * size * batch_size


def rates_of(device_type: str, energy: bool = True) -> Rates:
    """The rates of `device_type` ("cuda" or "cpu"); without the energy window where `energy` is
    False (SUITE_ENERGY=off in the workers' environment: suite.measure.energy)."""
    rates = RATES[device_type]
    return rates if energy else replace(rates, energy_s=0.0)


def estimate_seconds(cell: Cell, device_type: str = "cuda", energy: bool = True) -> float:
    """Expected wall time of one cell, all its processes, on a device of `device_type` ("cuda" or
    "cpu": RATES) (an estimate; see the module docstring); `energy`: see rates_of."""
    rates = rates_of(device_type, energy)
    size = params_m(cell)
    startup_s = rates.startup_s + LOAD_S_PER_M_PARAMS * size
    compile_s = _cold_compile_s(cell, rates, size)
    if cell.scenario == DYNAMIC_BATCH:
        return startup_s + _dynamic_seconds(cell, size, compile_s, rates)
    forward_s = _forward_s(size, cell.batch_size, rates)
    if cell.scenario == "train":
        forward_s *= TRAIN_STEP_FORWARDS
        compile_s *= TRAIN_COMPILE_FACTOR
    timed = 2 * timed_calls(cell) if cell.mode != "eager" else timed_calls(cell)
    timed_s = timed * forward_s
    if cell.settings.stop_rule == STOP_CI:  # the rule stops timing after max_timing_s
        timed_s = min(timed_s, cell.settings.max_timing_s)
    timed_s += settle_seconds(cell.mode != "eager", timed_calls(cell))
    seconds = (
        startup_s + rates.cell_s + compile_s + (forwards(cell) - timed) * forward_s + timed_s + rates.energy_s
    )
    # processes per cell (suite.run.cell_path): each further one starts, compiles on the first's
    # caches (warm) and makes the same calls
    extra_processes = cell.settings.processes - 1
    if extra_processes > 0:
        calls_s = (forwards(cell) - timed) * forward_s + timed_s
        seconds += extra_processes * (startup_s + WARM_COMPILE_FRACTION * compile_s + calls_s)
    if cell.compile_cost:
        extra = startup_s + WARM_COMPILE_FRACTION * compile_s + COMPILE_COST_FORWARDS * forward_s
        seconds += COMPILE_COST_PROCESSES * extra
    return seconds


def _dynamic_seconds(cell: Cell, size: float, compile_s: float, rates: Rates) -> float:
    """A dynamic-batch cell after startup: at each batch size a compiled cell's forwards (warm-up,
    interleaved timing, accuracy), the return to the first size, and its compiles."""
    one = replace(cell, batch_sizes=(), dynamic="", scenario="inference")
    seconds = sum(forwards(one) * _forward_s(size, b, rates) for b in cell.batch_sizes)
    seconds += RETURN_FORWARDS * _forward_s(size, cell.batch_sizes[0], rates)
    compiles = len(cell.batch_sizes) if cell.dynamic == "static" else SYMBOLIC_COMPILES
    return seconds + compiles * compile_s


def format_duration(seconds: float) -> str:
    """h:mm:ss, for estimates and elapsed times alike."""
    seconds = round(max(0.0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"


# The `ahead` schedule (suite.spec.schedule, suite.run.schedule): waves of processes (pool_size),
# each compiling a cell cold, then timed one after the other (its cell, then eager cells that follow).
# The goal for the guide's whole study (`plan --profile full`) on one GPU with 16 cores.
STUDY_GOAL_S = 540.0


@dataclass(frozen=True)
class ScheduleEstimate:
    """A sweep's expected wall time under a schedule: the compiles' (each wave's longest: its
    processes compile at once), then the timing's (every process's timing, one after the other,
    and the cells that keep their own process)."""

    schedule: str
    compile_s: float
    timing_s: float
    pool: int = 1
    cores: int = 1

    @property
    def total_s(self) -> float:
        return self.compile_s + self.timing_s


def _cold_compile_s(cell: Cell, rates: Rates, size: float) -> float:
    """A cell's cold compile, as estimate_seconds counts it."""
    return COMPILE_FACTOR.get(cell.mode, 1.0) * rates.compile_s(cell.model.name, size, cell.settings.shrink)


def compile_process_seconds(cell: Cell, device_type: str = "cuda") -> float:
    """A cold compile process of the `ahead` schedule: start, load, an eager warm-up and call, the
    first compiled call (suite.measure.compile_cost.cold_compile)."""
    rates = RATES[device_type]
    size = params_m(cell)
    compile_s = _cold_compile_s(cell, rates, size)
    calls = warmup_calls(cell.settings.warmup, compiled=False) + 2
    return (
        rates.startup_s
        + LOAD_S_PER_M_PARAMS * size
        + compile_s
        + calls * _forward_s(size, cell.batch_size, rates)
    )


def shared_cell_seconds(cell: Cell, device_type: str = "cuda", energy: bool = True) -> float:
    """A cell served by a process already started (the `ahead` schedule): what its own process
    would take, less the start-up."""
    return estimate_seconds(cell, device_type, energy) - RATES[device_type].startup_s


def ahead_timing_seconds(cell: Cell, device_type: str = "cuda", energy: bool = True) -> float:
    """A cell's part of the `ahead` schedule's timing: a compiled-ahead cell's process after its
    compile (the rest of its calls, its energy window), a cell that follows another in a process
    its own work less the start-up, any other cell its own process."""
    if compiled_ahead(cell):
        return estimate_seconds(cell, device_type, energy) - compile_process_seconds(cell, device_type)
    if shareable(cell):
        return shared_cell_seconds(cell, device_type, energy)
    return estimate_seconds(cell, device_type, energy)


def estimate_schedule(
    cells: Sequence[Cell],
    device_type: str = "cuda",
    schedule: str = AHEAD,
    cores: int | None = None,
    pool: int | None = None,
    energy: bool = True,
    fork: bool = False,
) -> ScheduleEstimate:
    """A sweep's estimate under `schedule` on a machine with `cores`, its waves `pool` wide
    (default: suite.spec.schedule.pool_size of the cores); `energy`: see rates_of; `fork`: the
    shared processes forked from a zygote (suite.spec.schedule.forks), which pays the imports
    once and each process the rest of its start-up."""
    machine = cores if cores is not None else (os.cpu_count() or 1)
    if schedule == SERIAL:
        serial = sum(estimate_seconds(c, device_type, energy) for c in cells)
        return ScheduleEstimate(SERIAL, 0.0, serial, 1, machine)
    pool = pool_size(machine, pool)
    jobs: list[tuple[float, float]] = []  # (compile phase, timing phase) of each process
    timing = 0.0
    for group in groups_of(list(enumerate(cells))):
        if not shareable(group[0][1]):
            timing += estimate_seconds(group[0][1], device_type, energy)
            continue
        for proc in processes_of(group):
            first = proc[0][1]
            ahead = compiled_ahead(first)
            compile_s = compile_process_seconds(first, device_type) if ahead else RATES[device_type].startup_s
            compile_s -= RATES[device_type].preload_s if fork else 0.0
            jobs.append((compile_s, sum(ahead_timing_seconds(c, device_type, energy) for _, c in proc)))
    # compiles that share the cores (a --compile-pool wider than pool_size's) take longer each
    # than one alone on the same machine (which serial's figures are)
    crowding = max(1.0, pool * COMPILE_CORES_BUSY / machine) / max(1.0, COMPILE_CORES_BUSY / machine)
    compile_s = crowding * sum(max(c for c, _ in wave) for wave in waves(jobs, pool, key=lambda j: j[0]))
    compile_s += RATES[device_type].preload_s if fork and jobs else 0.0  # the zygote's own start
    return ScheduleEstimate(AHEAD, compile_s, timing + sum(t for _, t in jobs), pool, machine)
