"""How long the GPU study's steps take, by the schedule that runs them (suite.spec.cost): a `run`
step's cells in `ahead`'s waves (8 compiles at once on 16 cores, then each process timed alone and
its exit waited for; with `--overlap` the next wave compiling meanwhile), a `repeat` its
repetitions under its own schedule, a cross-check its one process per cell and its rounds; each
step its own start-up. And how calls of a given budget cut the study.

The per-call times are what earlier GPU studies measured (`seen_call_ms`: the committed results
folders `gpu-study finish` writes), else the guide's eager time on its GPU as a floor, else the
cost model's formula. Only the matrix, the cost model and CSV files are read here (no torch), so
`plan` runs on any host and `call` on the GPU machine's own Python.
"""

from __future__ import annotations

import csv
import math
import os
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
from pathlib import Path

from suite.errors import UsageError
from suite.gpustudy.plan import (
    DEFAULT_MATRIX,
    GPU,
    REFERENCE_GPU,
    RESERVE_S,
    STEP_OVERHEAD_S,
    Call,
    Step,
)
from suite.spec.cost import (
    EAGER,
    LOAD_S_PER_M_PARAMS,
    NO_TIMES,
    RATES,
    CallTimes,
    Machine,
    ahead_timing_seconds,
    compile_process_seconds,
    estimate_on,
    format_duration,
    params_m,
    sweep_phases,
    timed_seconds,
)
from suite.spec.expand import expand
from suite.spec.model import Cell, Matrix
from suite.spec.schedule import AHEAD, SERIAL, compiled_ahead, pool_size
from suite.spec.vocab import DYNAMIC_BATCH
from suite.spec.warmup import BLOCK_CALLS, SETTLE_MS, calls_made

STUDY_CORES = 16  # the machine the study is planned for: one H100 or H200 with 16 cores
DEFAULT_RESULTS = DEFAULT_MATRIX.parent / "results"
# torch.utils.benchmark's Timer.timeit(n) makes max(n // 100, 2) untimed calls before its n
TIMEIT_WARMUP_CALLS = 2


def guide_forward_ms(reference: Path) -> dict[tuple[str, int], float]:
    """{(model, batch size): the guide's eager milliseconds on its reference GPU} from the guide's
    main tables (results/reference/guide_torch2.0.1.csv); empty where the file is missing."""
    path = reference / "guide_torch2.0.1.csv"
    out: dict[tuple[str, int], float] = {}
    try:
        with open(path, encoding="utf-8", newline="") as fh:
            for row in csv.DictReader(fh):
                if row.get("GPU") != REFERENCE_GPU or row.get("erratum"):
                    continue
                try:
                    out[(row["model"], int(row["batch size"]))] = float(row["without torch.compile"])
                except (KeyError, ValueError):  # OOM, a blank: no figure
                    continue
    except OSError:
        return {}
    return out


def seen_call_ms(results: Path) -> dict[tuple[str, int, str, str], float]:
    """{(model, batch size, dtype, function): ms} a call took in the GPU studies committed under
    `results` (the folders `gpu-study finish` writes, each with a calls/ folder): the median of
    the ok inference rows' medians, a compiled row giving its mode's and its paired eager one's."""
    from suite.results import read_rows

    seen: dict[tuple[str, int, str, str], list[float]] = {}
    for calls in sorted(results.glob("*/calls")):
        for path in sorted(calls.parent.glob("*/raw/*.csv")):
            try:
                rows = read_rows(path).rows
            except Exception:  # a damaged file: its figures are not used
                continue
            for r in rows:
                if r.get("status") != "ok" or r.get("scenario") != "inference" or r.get("dynamic"):
                    continue
                key = (r["model"], int(r["batch_size"]), r["dtype"])
                for function, value in ((r["mode"], r.get("median_ms")), (EAGER, r.get("eager_median_ms"))):
                    if value not in (None, ""):
                        seen.setdefault((*key, function), []).append(float(value))
    return {k: statistics.median(v) for k, v in seen.items()}


def study_times(reference: Path, results: Path = DEFAULT_RESULTS) -> CallTimes:
    """The per-call times the GPU variant's estimates use (the module docstring)."""
    return CallTimes(seen_call_ms(results), guide_forward_ms(reference))


@dataclass(frozen=True)
class Planner:
    """What the study's estimates are made for: the device and its cores, the calls' times."""

    device_type: str = "cuda"
    cores: int = STUDY_CORES
    times: CallTimes = NO_TIMES

    @staticmethod
    def of(variant: str, reference: Path, cores: int | None = None) -> Planner:
        """The GPU variant on STUDY_CORES cores with the times seen; the tiny one on this machine."""
        if variant == GPU:
            return Planner("cuda", cores or STUDY_CORES, study_times(reference))
        return Planner("cpu", cores or (os.cpu_count() or 1))

    def machine(self, step: Step) -> Machine:
        """The schedule's estimate for this step's flags: forked processes (the default), its
        energy window, its compile pool, its overlap."""
        extra, flags = set(step.extra), dict(_pairs(step.flags))
        fork = flags.get("--process-start", "fork") == "fork"
        pool = int(flags["--compile-pool"]) if "--compile-pool" in flags else None
        return Machine(
            self.device_type,
            self.cores,
            pool,
            energy=step.energy,
            fork=fork,
            overlap="--overlap" in extra,
            times=self.times,
        )

    def cell_seconds(self, cell: Cell, step: Step) -> float:
        """A cell's share of its step: its timing, and of a compiled-ahead cell's compile the
        share one of a wave takes (what `cut_into_calls` counts cell by cell)."""
        m = self.machine(step)
        timing = ahead_timing_seconds(cell, m.device_type, m.energy, m.times)
        if not compiled_ahead(cell):
            return timing
        return timing + compile_process_seconds(cell, m.device_type, m.times) / pool_size(m.width)

    def step_seconds(self, step: Step, cells: Sequence[Cell]) -> float:
        """A step's estimate: its start-up, then a run's cells under `ahead`, a repeat's
        repetitions under its schedule, a cross-check's processes."""
        m = self.machine(step)
        if step.verb == "crosscheck":
            seconds = sum(self.crosscheck_seconds(c, step) for c in cells)
        elif step.verb == "repeat":
            schedule = dict(_pairs(step.flags)).get("--schedule", SERIAL)
            seconds = step.times * estimate_on(cells, m, schedule).total_s
        elif step.verb == "pair":  # two runners, one process on the device at a time: twice serial
            seconds = 2 * estimate_on(cells, m, SERIAL).total_s
        else:
            seconds = estimate_on(cells, m, AHEAD).total_s
        return STEP_OVERHEAD_S + seconds

    def crosscheck_seconds(self, cell: Cell, step: Step) -> float:
        """A cross-check's process: start, load, compile and warm-up (as a compile process's),
        its rounds (each function: the suite's loop of `iterations` calls, settling after its
        switch, and torch.utils.benchmark's single calls and blocks of as many, settling first),
        until the time budget or the most rounds, and its exit."""
        rates = RATES[self.device_type]
        if cell.mode == EAGER:
            start = rates.startup_s - rates.exit_s + LOAD_S_PER_M_PARAMS * params_m(cell)
        else:
            start = compile_process_seconds(cell, self.device_type, self.times)
        n = cell.settings.iterations
        paired = cell.mode != EAGER
        functions = 2 if paired else 1
        timeit = n * (1 + TIMEIT_WARMUP_CALLS) + max(1, n // BLOCK_CALLS) * (
            TIMEIT_WARMUP_CALLS + BLOCK_CALLS
        )
        calls = functions * (calls_made(n, paired) + timeit)
        per_call = _per_call_s(cell, self)
        round_s = calls * per_call + functions * 2 * SETTLE_MS / 1e3
        rounds = step.rounds
        if step.budget_s:
            rounds = min(rounds, max(min(5, rounds), math.ceil(step.budget_s * functions / round_s)))
        return start + rounds * round_s + rates.exit_s


def _per_call_s(cell: Cell, planner: Planner) -> float:
    """The mean of the cell's two functions' per-call seconds (its one function's if eager)."""
    from suite.spec.cost import _Calls

    calls = _Calls.of(cell, RATES[planner.device_type], planner.times)
    return (calls.eager_s + calls.compiled_s) / 2


def _pairs(flags: Sequence[str]) -> list[tuple[str, str]]:
    return list(zip(flags[::2], flags[1::2], strict=False))


@dataclass(frozen=True)
class PlannedStep:
    step: Step
    cells: tuple[Cell, ...]
    seconds: float
    each: tuple[float, ...] = ()  # a run step's cells' shares (its start-up aside)


def plan_step(matrix: Matrix, step: Step, variant: str, planner: Planner, build: str = "?") -> PlannedStep:
    """One step with its cells and estimate."""
    profile = step.profile_of(variant)
    cells = expand(matrix, profile, build, step.filters(variant))
    if not cells:
        raise UsageError(f"{matrix.path}: profiles.{profile}", f"step {step.what!r} selects no cell")
    each = tuple(planner.cell_seconds(c, step) for c in cells) if step.verb == "run" else ()
    return PlannedStep(step, tuple(cells), planner.step_seconds(step, cells), each)


def plan_call(
    matrix: Matrix,
    call: Call,
    variant: str,
    reference: Path,
    build: str = "?",
    planner: Planner | None = None,
) -> list[PlannedStep]:
    """Each step of a call with its cells and estimate (`build`: the label the rows will carry, as
    `run` resolves it on the machine; only the cells' identity depends on it)."""
    planner = planner or Planner.of(variant, reference)
    return [plan_step(matrix, step, variant, planner, build) for step in call.steps]


def budget_of(deadline_s: float) -> float:
    """The steps' budget in a call given `deadline_s` seconds in all (0: none): what is left once
    a stopped step's grace and the last pack are kept back (RESERVE_S)."""
    return max(0.0, deadline_s - RESERVE_S) if deadline_s else 0.0


@dataclass(frozen=True)
class CallPlan:
    """What the cost model expects call N of a fresh study to finish: each step it reaches, with
    the cells it ends (a run step cut by the deadline goes on in the next call), and its seconds."""

    number: int
    steps: tuple[tuple[PlannedStep, tuple[Cell, ...]], ...]
    seconds: float


@dataclass
class _Cutter:
    budget_s: float
    calls: list[CallPlan] = field(default_factory=list)
    items: list[tuple[PlannedStep, tuple[Cell, ...]]] = field(default_factory=list)
    used: float = 0.0

    def fits(self, seconds: float) -> bool:
        return not self.items or not self.budget_s or self.used + seconds <= self.budget_s

    def close(self) -> None:
        if self.items:
            self.calls.append(CallPlan(len(self.calls) + 1, tuple(self.items), self.used))
        self.items, self.used = [], 0.0


def cut_into_calls(planned: Sequence[PlannedStep], budget_s: float) -> list[CallPlan]:
    """The study's steps cut into calls of `budget_s` seconds each, by the cost model: a step
    whole where it fits; a run step that does not, cell by cell at its cells' shares of its
    estimate (its start-up again in each call it spans); a cross-check or a repeat whole."""
    cut = _Cutter(budget_s)
    for p in planned:
        if cut.fits(p.seconds) or p.step.verb != "run" or not p.each:
            if not cut.fits(p.seconds):
                cut.close()
            cut.items.append((p, p.cells))
            cut.used += p.seconds
            continue
        scale = (p.seconds - STEP_OVERHEAD_S) / sum(p.each)  # the waves' saving, spread over the cells
        if not cut.fits(STEP_OVERHEAD_S + p.each[0] * scale):
            cut.close()
        done: list[Cell] = []
        cut.used += STEP_OVERHEAD_S
        for cell, share in zip(p.cells, p.each, strict=True):
            if done and not cut.fits(share * scale):
                cut.items.append((p, tuple(done)))
                cut.close()
                done, cut.used = [], STEP_OVERHEAD_S
            done.append(cell)
            cut.used += share * scale
        cut.items.append((p, tuple(done)))
    cut.close()
    return cut.calls


@dataclass(frozen=True)
class TimeParts:
    """Where a plan's time goes, by the cost model: the checks; the study's run steps split into
    their timed calls, compile waves, energy windows, process exits and the rest of each process
    (start, model, warm-up, accuracy check, compile-cost and dynamic-batch processes); its
    cross-checks, repetitions and pairs whole; every step's own start-up. The parts add up to
    the plan's total."""

    checks_s: float = 0.0
    timed_calls_s: float = 0.0
    compile_waves_s: float = 0.0
    energy_s: float = 0.0
    exits_s: float = 0.0
    rest_s: float = 0.0
    crosschecks_s: float = 0.0
    repeats_s: float = 0.0
    startups_s: float = 0.0

    @property
    def total_s(self) -> float:
        return sum(getattr(self, f.name) for f in fields(self))

    def line(self) -> str:
        """`plan`'s line: each part's h:mm:ss."""
        runs = self.timed_calls_s + self.compile_waves_s + self.energy_s + self.exits_s + self.rest_s
        return (
            f"where the time goes: the checks {format_duration(self.checks_s)}; the study's run steps "
            f"{format_duration(runs)} (timed calls {format_duration(self.timed_calls_s)}, compile waves "
            f"{format_duration(self.compile_waves_s)}, energy windows {format_duration(self.energy_s)}, "
            f"process exits {format_duration(self.exits_s)}, the rest of each process "
            f"{format_duration(self.rest_s)}); cross-checks {format_duration(self.crosschecks_s)}; "
            f"repetitions {format_duration(self.repeats_s)}; the steps' own start-ups "
            f"{format_duration(self.startups_s)}"
        )


def time_parts(planned: Sequence[PlannedStep], planner: Planner, checks: int = 0) -> TimeParts:
    """The plan's total in parts (TimeParts); the first `checks` steps are the checks, whole."""
    parts: dict[str, float] = {f.name: 0.0 for f in fields(TimeParts)}
    for i, p in enumerate(planned):
        if i < checks:
            parts["checks_s"] += p.seconds
            continue
        parts["startups_s"] += STEP_OVERHEAD_S
        body = p.seconds - STEP_OVERHEAD_S
        if p.step.verb == "crosscheck":
            parts["crosschecks_s"] += body
        elif p.step.verb != "run":
            parts["repeats_s"] += body
        else:
            split = _run_parts(p, planner)
            for name, seconds in split.items():
                parts[name] += seconds
            parts["rest_s"] += body - sum(split.values())
    return TimeParts(**parts)


def _run_parts(p: PlannedStep, planner: Planner) -> dict[str, float]:
    """A run step's timed calls, compile waves, energy windows and exits (its rest aside)."""
    m = planner.machine(p.step)
    schedule = estimate_on(p.cells, m, AHEAD)
    energy = schedule.total_s - estimate_on(p.cells, replace(m, energy=False), AHEAD).total_s
    timed = sum(timed_seconds(c, m.device_type, m.times) for c in p.cells if c.scenario != DYNAMIC_BATCH)
    exits = sum(ph.exit_s for ph in sweep_phases(p.cells, m))
    return {
        "timed_calls_s": timed,
        "compile_waves_s": schedule.compile_s,
        "energy_s": energy,
        "exits_s": exits,
    }
