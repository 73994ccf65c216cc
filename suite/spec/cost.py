"""An estimate of how long one cell takes, in seconds: for balancing shards and for the ETA.

This is a rough model of what the worker does, not a measurement. Its rates come in two
sets: a GPU's (GPU_RATES, measured on an H200 with torch 2.11 for the models the GPU study ran, the
others by a formula: a cold `torch.compile` takes tens of seconds, max-autotune several minutes)
and a 2-core CPU's (CPU_RATES, read off this project's own runs), which `plan` uses for
`--device cpu` or a machine without an NVIDIA GPU. Sharding and the runner's ETA use the GPU's
rates whatever the device: they need only the *ratios* between cells, and read only the cell's
matrix data (never the running device), so every machine computes the same shards.

    seconds = startup + load + compile + forwards * seconds per forward + energy window

(where `CallTimes` knows a device's per-call time of the cell's functions, measured, that is
used instead of the formula's per-forward figure), plus, with `processes: k`, k - 1 more
processes (each: startup + a warm compile + the same calls), plus, with the `compile_cost`
setting, the warm and mega-cache processes of a compiled cell (each: startup + load + a
fraction of the compile + a few forwards), and for a dynamic-batch
cell the forwards at each batch size it serves and the compiles its `dynamic` setting makes.

A sweep's estimate follows the schedule that runs it (`estimate_schedule`): `serial` the sum of
its cells; `ahead` each wave's longest compile process, then every process's timing one after
the other and its exit, which the next timing waits for; with `overlap`, the next wave compiles
while this one is timed.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from suite.spec.model import Cell
from suite.spec.schedule import (
    AHEAD,
    COMPILE_CORES_BUSY,
    SERIAL,
    compiled_ahead,
    groups_of,
    overlap_cores,
    pool_size,
    processes_of,
    shareable,
    waves,
)
from suite.spec.vocab import DYNAMIC_BATCH, STOP_CI
from suite.spec.warmup import calls_made, settle_seconds, warmup_calls


@dataclass(frozen=True)
class Rates:
    """What a kind of device takes for the parts of a cell that differ most between devices."""

    startup_s: float  # child process, torch + transformers imports, model build, inputs, teardown
    compile_base_s: float  # a cold compile of the smallest graph
    forward_s_per_m_params_image: float  # compute of one forward, per million parameters and image
    compile_s_per_m_params: float = 0.3  # bigger models have more layers, so bigger graphs
    # the energy window (suite.measure.energy): blocks of each function after the timed calls
    # (`energy_s` a function), and the idle reading before any work (`energy_idle_s`)
    energy_s: float = 0.0
    energy_idle_s: float = 0.0
    # a cold default-mode compile measured per model (display name -> seconds): used instead of
    # compile_base_s + compile_s_per_m_params where known; `shrunk_compile_by_model` the same
    # for the shrunk models of a `shrink` profile (smoke)
    compile_by_model: tuple[tuple[str, float], ...] = ()
    shrunk_compile_by_model: tuple[tuple[str, float], ...] = ()
    cell_s: float = 0.0  # a cell's own fixed work beyond its calls (warm-up, statistics, health)
    preload_s: float = 0.0  # of startup_s, the imports a forked process skips (suite.measure.zygote)
    exit_s: float = 0.0  # of startup_s, a process's end after its last result (`ahead` waits for it)
    # a mode's compile against default's where this device's differs from COMPILE_FACTOR's
    compile_factor: tuple[tuple[str, float], ...] = ()

    def __post_init__(self) -> None:
        if min(self.startup_s, self.compile_base_s, self.forward_s_per_m_params_image) <= 0:
            raise ValueError(f"{self}: every rate must be positive")
        measured = (
            s for _, s in (*self.compile_by_model, *self.shrunk_compile_by_model, *self.compile_factor)
        )
        fixed = (self.compile_s_per_m_params, self.energy_s, self.energy_idle_s, self.cell_s)
        if min(*fixed, self.preload_s, self.exit_s, *measured) < 0:
            raise ValueError(f"{self}: no rate may be negative")
        if self.preload_s + self.exit_s > self.startup_s:
            raise ValueError(f"{self}: preload_s and exit_s are parts of startup_s")

    def compile_s(self, model: str, size_m: float, shrunk: bool = False) -> float:
        """A cold default-mode compile of `model` (`size_m` million parameters; `shrunk`: the
        smoke profile's shrunk model of that name, which is not the full one measured)."""
        measured = dict(self.shrunk_compile_by_model if shrunk else self.compile_by_model).get(model)
        return (
            measured if measured is not None else self.compile_base_s + self.compile_s_per_m_params * size_m
        )

    def mode_factor(self, mode: str) -> float:
        """A mode's compile against default's on this device (COMPILE_FACTOR unless measured)."""
        return dict(self.compile_factor).get(mode, COMPILE_FACTOR.get(mode, 1.0))


# One NVIDIA H200 (16 cores, torch 2.11), the GPU study's rows of 2026-11-26 and 2026-11-28
# (results/2026-11-26-h200-torch2.11, results/2026-11-28-h200-torch2.11; the second under `ahead`,
# 8 compiles at once, each compile process's seconds before its gate read off its progress line).
# A cold compile (`compile_s`) takes each model's own time, not following the parameter count
# (MobileNet, 2.5 M: 15-21 s; ConvNeXT-large, 198 M: 14-17 s; Mask2former 71 s): each model
# measured keeps the mean of its rows, the others 18 s + 0.1 s per million parameters; a
# reduce-overhead compile took what default's did (0.92-1.08 x, the CUDA graphs recorded in the
# warm-up). A compile process spent 15-20 s beside its compile_s (start, model, eager first
# result, warm-up, accuracy; Maskformer 30 s); the timed part of a cell was its calls (`timed_s`),
# then 4 s of energy blocks (2 s a function) and, after a process's last cell, 2-4 s until it had
# exited (the gaps between one cell's end and the next one's start under `ahead`).
GPU_RATES_FROM = (
    "one NVIDIA H200, the GPU studies of 2026-11-26 and 2026-11-28"  # where GPU_RATES were measured
)
GPU_RATES = Rates(
    startup_s=19.0,
    exit_s=3.0,
    compile_base_s=18.0,
    forward_s_per_m_params_image=2e-5,  # compute: ViT-base (86 M) x 16 images ~ 28 ms
    compile_s_per_m_params=0.1,
    energy_s=2.0,
    energy_idle_s=1.0,
    compile_by_model=(
        ("ViT", 16.0),  # 14.0 (11-26), 18.0 (11-28)
        ("BeiT", 27.7),  # 25.0, 30.3
        ("ConvNeXT", 15.1),  # 16.5; 14.8, 14.1, 13.7
        ("ResNet", 14.0),  # 15.5; 13.0, 14.1, 12.2
        ("MobileNet", 17.4),  # 21.1; 15.6, 15.5, 15.4
        ("Segformer", 21.6),
        ("Mask2former", 71.0),
        ("Maskformer", 52.4),
        ("OwlViT", 25.5),
        ("DETR", 30.1),
        ("Resnet-101", 33.2),
        ("Conditional-DETR", 26.9),  # 28.5, 26.2, 26.1
    ),
    compile_factor=(("reduce-overhead", 1.0),),
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
    # + eager, first compiled, and the accuracy pass: eager twice, compiled, float64 (docs/accuracy.md)
    return eager_warmup + compiled_warmup + 2 * timed_calls(cell) + 6


def _forward_s(size: float, batch_size: int, rates: Rates) -> float:
    return FORWARD_OVERHEAD_S + rates.forward_s_per_m_params_image * size * batch_size


EAGER = "eager"


@dataclass(frozen=True)
class CallTimes:
    """Milliseconds a call of a cell's function took where it was measured (`seen`: model, batch
    size, dtype, function: "eager" or the compiled mode), and where it was not, the least a call
    of the model at that batch size takes (`floor`: model, batch size): used instead of the
    formula's per-forward figure, which knows only the parameter count (Maskformer at 640 x 864
    runs 52 ms a call on an H200 where the formula says 6). Never for shrunk models."""

    seen: Mapping[tuple[str, int, str, str], float] = field(default_factory=dict)
    floor: Mapping[tuple[str, int], float] = field(default_factory=dict)

    def call_s(self, cell: Cell, function: str, formula_s: float) -> float:
        if cell.settings.shrink or cell.scenario == DYNAMIC_BATCH:
            return formula_s
        seen = self.seen.get((cell.model.name, cell.batch_size, cell.settings.dtype, function))
        if seen is not None:
            return seen / 1e3
        least = self.floor.get((cell.model.name, cell.batch_size))
        return max(formula_s, least / 1e3) if least is not None else formula_s


NO_TIMES = CallTimes()


@dataclass(frozen=True)
class _Calls:
    """One cell's seconds per call: its eager function's, and its compiled function's (the
    eager one's for an eager cell); a training cell's calls are training steps."""

    eager_s: float
    compiled_s: float

    @staticmethod
    def of(cell: Cell, rates: Rates, times: CallTimes) -> _Calls:
        formula = _forward_s(params_m(cell), cell.batch_size, rates)
        if cell.scenario == "train":
            formula *= TRAIN_STEP_FORWARDS
        eager = times.call_s(cell, EAGER, formula)
        compiled = eager if cell.mode == EAGER else times.call_s(cell, cell.mode, formula)
        return _Calls(eager, compiled)

    def warm_up_s(self, cell: Cell) -> float:
        """The calls before the gate: eager's warm-up and its timed call; a compiled cell's first
        compiled call, its warm-up and the accuracy check's call of each function."""
        eager = warmup_calls(cell.settings.warmup, compiled=False)
        if cell.mode == EAGER:
            return eager * self.eager_s
        compiled = warmup_calls(cell.settings.warmup, compiled=True)
        return (eager + 2) * self.eager_s + (compiled + 2) * self.compiled_s

    def timed_s(self, cell: Cell) -> float:
        """The timed part: one untimed call of each function after the gate, the calls the loop
        makes (latency, throughput blocks, switches; capped by max_timing_s under the CI rule),
        and settling after each switch."""
        paired = cell.mode != EAGER
        made = calls_made(timed_calls(cell), paired)
        seconds = made * (self.eager_s + (self.compiled_s if paired else 0.0))
        if cell.settings.stop_rule == STOP_CI:  # the rule stops timing after max_timing_s
            seconds = min(seconds, cell.settings.max_timing_s)
        gate = self.eager_s + (self.compiled_s if paired else 0.0)
        return gate + seconds + settle_seconds(paired, timed_calls(cell))


def timed_seconds(cell: Cell, device_type: str = "cuda", times: CallTimes = NO_TIMES) -> float:
    """A cell's timed part alone (_Calls.timed_s): the calls the stopping rule makes and their settling."""
    return _Calls.of(cell, RATES[device_type], times).timed_s(cell)


def rates_of(device_type: str, energy: bool = True) -> Rates:
    """The rates of `device_type` ("cuda" or "cpu"); without the energy window where `energy` is
    False (SUITE_ENERGY=off in the workers' environment: suite.measure.energy)."""
    rates = RATES[device_type]
    return rates if energy else replace(rates, energy_s=0.0, energy_idle_s=0.0)


def _energy_s(cell: Cell, rates: Rates) -> float:
    """The energy window's blocks: each function timed, after the timed calls."""
    return rates.energy_s * (1 if cell.mode == EAGER else 2)


def estimate_seconds(
    cell: Cell, device_type: str = "cuda", energy: bool = True, times: CallTimes = NO_TIMES
) -> float:
    """Expected wall time of one cell, all its processes, on a device of `device_type` ("cuda" or
    "cpu": RATES) (an estimate; see the module docstring); `energy`: see rates_of; `times`: the
    calls' measured times where known."""
    rates = rates_of(device_type, energy)
    size = params_m(cell)
    startup_s = rates.startup_s + LOAD_S_PER_M_PARAMS * size
    compile_s = _cold_compile_s(cell, rates, size)
    if cell.scenario == DYNAMIC_BATCH:
        return startup_s + _dynamic_seconds(cell, size, compile_s, rates)
    if cell.scenario == "train":
        compile_s *= TRAIN_COMPILE_FACTOR
    calls = _Calls.of(cell, rates, times)
    calls_s = calls.warm_up_s(cell) + calls.timed_s(cell)
    energy_s = rates.energy_idle_s + _energy_s(cell, rates)
    seconds = startup_s + rates.cell_s + compile_s + calls_s + energy_s
    # processes per cell (suite.run.cell_path): each further one starts, compiles on the first's
    # caches (warm) and makes the same calls
    extra_processes = cell.settings.processes - 1
    if extra_processes > 0:
        seconds += extra_processes * (startup_s + WARM_COMPILE_FRACTION * compile_s + calls_s)
    if cell.compile_cost:
        extra = startup_s + WARM_COMPILE_FRACTION * compile_s + COMPILE_COST_FORWARDS * calls.eager_s
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
    processes compile at once; with `overlap` only what the timing does not hide), then the
    timing's (every process's timing and exit, one after the other, and the cells that keep their
    own process)."""

    schedule: str
    compile_s: float
    timing_s: float
    pool: int = 1
    cores: int = 1
    overlap: bool = False

    @property
    def total_s(self) -> float:
        return self.compile_s + self.timing_s


def _cold_compile_s(cell: Cell, rates: Rates, size: float) -> float:
    """A cell's cold compile, as estimate_seconds counts it."""
    return rates.mode_factor(cell.mode) * rates.compile_s(cell.model.name, size, cell.settings.shrink)


def compile_process_seconds(cell: Cell, device_type: str = "cuda", times: CallTimes = NO_TIMES) -> float:
    """A cold compile process of the `ahead` schedule, until its gate: start (its exit aside),
    load, the idle energy reading, eager's warm-up and call, the compile, the compiled warm-up
    and the accuracy check (suite.measure.scenarios.base)."""
    rates = RATES[device_type]
    size = params_m(cell)
    compile_s = _cold_compile_s(cell, rates, size)
    if cell.scenario == "train":
        compile_s *= TRAIN_COMPILE_FACTOR
    return (
        rates.startup_s
        - rates.exit_s
        + LOAD_S_PER_M_PARAMS * size
        + rates.energy_idle_s
        + compile_s
        + _Calls.of(cell, rates, times).warm_up_s(cell)
    )


def shared_cell_seconds(
    cell: Cell, device_type: str = "cuda", energy: bool = True, times: CallTimes = NO_TIMES
) -> float:
    """A cell served by a process already started (the `ahead` schedule): what its own process
    would take, less the start-up."""
    return estimate_seconds(cell, device_type, energy, times) - RATES[device_type].startup_s


def ahead_timing_seconds(
    cell: Cell, device_type: str = "cuda", energy: bool = True, times: CallTimes = NO_TIMES
) -> float:
    """A cell's part of the `ahead` schedule's timing: a compiled-ahead cell's process after its
    compile (the rest of its calls, its energy window, its process's exit), a cell that follows
    another in a process its own work less the start-up, any other cell its own process."""
    if compiled_ahead(cell):
        return estimate_seconds(cell, device_type, energy, times) - compile_process_seconds(
            cell, device_type, times
        )
    if shareable(cell):
        return shared_cell_seconds(cell, device_type, energy, times)
    return estimate_seconds(cell, device_type, energy, times)


@dataclass(frozen=True)
class Machine:
    """What a schedule is estimated for: the device's rates, its cores, the compile pool asked
    for, the energy window, forked processes, compiles beside the timing, and the calls' times."""

    device_type: str = "cuda"
    cores: int | None = None
    pool: int | None = None
    energy: bool = True
    fork: bool = False
    overlap: bool = False
    times: CallTimes = NO_TIMES

    @property
    def width(self) -> int:
        return self.cores if self.cores is not None else (os.cpu_count() or 1)


@dataclass(frozen=True)
class CellPhases:
    """One cell's part of its `ahead` process: before its gate (`compile_s`: the process's start
    and, for a compiled-ahead cell, its compile; nothing for a cell that follows another), its
    timing after the gate (what its row's wall_s has beyond compile_ahead_s), and the process's
    exit after it where it is the last (which the next timing waits for, unless `overlap`)."""

    cell: Cell
    compile_s: float
    timing_s: float
    exit_s: float = 0.0


def owner_of(cell: Cell) -> tuple[object, ...]:
    """What an energy figure is of (suite.measure.energy's owner): model, batch size, dtype."""
    return (cell.model.name, cell.variant, cell.batch_size, cell.settings.dtype, cell.scenario)


def process_phases(proc: Sequence[tuple[int, Cell]], m: Machine) -> list[CellPhases]:
    """Each cell's phases in one `ahead` process (suite.spec.schedule.processes_of): the first
    cell pays the start (less the imports a fork skips) and its compile; a cell after it reads no
    idle power and, an eager one after its compiled sibling, runs no energy blocks (its figure is
    the sibling's: suite.measure.energy)."""
    rates = rates_of(m.device_type, m.energy)
    out: list[CellPhases] = []
    compiled: set[tuple[object, ...]] = set()
    for i, (_, cell) in enumerate(proc):
        timing = ahead_timing_seconds(cell, m.device_type, m.energy, m.times)
        start = 0.0
        if i == 0:
            ahead = compiled_ahead(cell)
            start = compile_process_seconds(cell, m.device_type, m.times) if ahead else rates.startup_s
            start -= rates.preload_s if m.fork else 0.0
            timing -= rates.exit_s if ahead else 0.0  # ahead_timing_seconds counts the exit with it
            start -= 0.0 if ahead else rates.exit_s
        else:
            timing -= rates.energy_idle_s
            if cell.mode == EAGER and owner_of(cell) in compiled:
                timing -= _energy_s(cell, rates)
        if cell.mode != EAGER:
            compiled.add(owner_of(cell))
        out.append(CellPhases(cell, start, timing, rates.exit_s if i == len(proc) - 1 else 0.0))
    return out


def _process_phases(proc: Sequence[tuple[int, Cell]], m: Machine) -> tuple[float, float]:
    """(compile phase, timing phase) of one `ahead` process: its start and its first cell's
    compile; then each cell's timing and the exit."""
    phases = process_phases(proc, m)
    return sum(p.compile_s for p in phases), sum(p.timing_s + p.exit_s for p in phases)


def sweep_phases(cells: Sequence[Cell], m: Machine) -> list[CellPhases]:
    """Every cell's phases as `ahead` runs the sweep (a cell that keeps its own process: its
    whole estimate as its timing)."""
    out: list[CellPhases] = []
    for group in groups_of(list(enumerate(cells))):
        if not shareable(group[0][1]):
            out.append(
                CellPhases(group[0][1], 0.0, estimate_seconds(group[0][1], m.device_type, m.energy, m.times))
            )
            continue
        for proc in processes_of(group):
            out += process_phases(proc, m)
    return out


def _crowding(pool: int, cores: int, machine: int) -> float:
    """How much longer each compile of a wave of `pool` takes on `cores` than one alone on the
    `machine` (which serial's figures are): compiles that share the cores take longer."""
    return max(1.0, pool * COMPILE_CORES_BUSY / cores) / max(1.0, COMPILE_CORES_BUSY / machine)


def estimate_schedule(
    cells: Sequence[Cell],
    device_type: str = "cuda",
    schedule: str = AHEAD,
    cores: int | None = None,
    pool: int | None = None,
    energy: bool = True,
    fork: bool = False,
    overlap: bool = False,
) -> ScheduleEstimate:
    """A sweep's estimate under `schedule` on a machine with `cores`, its waves `pool` wide
    (default: suite.spec.schedule.pool_size of the cores); `energy`: see rates_of; `fork`: the
    shared processes forked from a zygote (suite.spec.schedule.forks), which pays the imports
    once and each process the rest of its start-up; `overlap`: each wave after the first compiles
    on the cores the timed process does not use while the wave before it is timed
    (suite.spec.schedule.overlap_cores). With the calls' measured times: estimate_on."""
    m = Machine(device_type, cores, pool, energy, fork, overlap)
    return estimate_on(cells, m, schedule)


def estimate_on(cells: Sequence[Cell], m: Machine, schedule: str = AHEAD) -> ScheduleEstimate:
    """estimate_schedule's figure for a `Machine`."""
    if schedule == SERIAL:
        serial = sum(estimate_seconds(c, m.device_type, m.energy, m.times) for c in cells)
        return ScheduleEstimate(SERIAL, 0.0, serial, 1, m.width)
    jobs: list[tuple[float, float]] = []  # (compile phase, timing phase) of each process
    alone = 0.0  # the cells that keep their own process, after the waves
    for group in groups_of(list(enumerate(cells))):
        if not shareable(group[0][1]):
            alone += estimate_seconds(group[0][1], m.device_type, m.energy, m.times)
            continue
        jobs += [_process_phases(proc, m) for proc in processes_of(group)]
    zygote = RATES[m.device_type].preload_s if m.fork and jobs else 0.0  # the zygote's own start
    if not m.overlap:
        width = pool_size(m.width, m.pool)
        stretch = _crowding(width, m.width, m.width)
        compile_s = stretch * sum(max(c for c, _ in wave) for wave in waves(jobs, width, key=lambda j: j[0]))
        timing = sum(t for _, t in jobs)
        return ScheduleEstimate(AHEAD, compile_s + zygote, timing + alone, width, m.width)
    compile_cores = m.width - overlap_cores(m.width)
    width = pool_size(compile_cores, m.pool)
    stretch = _crowding(width, compile_cores, m.width)
    phases = [
        (stretch * max(c for c, _ in wave), sum(t for _, t in wave))
        for wave in waves(jobs, width, key=lambda j: j[0])
    ]
    # the first wave compiles alone; each later one while the one before it is timed
    compile_s = phases[0][0] if phases else 0.0
    exposed = sum(max(0.0, c - t) for (_, t), (c, _) in itertools.pairwise(phases))
    timing = sum(t for _, t in phases)
    return ScheduleEstimate(AHEAD, compile_s + exposed + zygote, timing + alone, width, m.width, True)
