"""Energy per image from the device's own energy counter: NVML's total-energy counter on an
NVIDIA GPU (nvmlDeviceGetTotalEnergyConsumption, millijoules since the driver loaded, Volta and
newer), the CPU packages' RAPL counters on a CPU (/sys/class/powercap/intel-rapl:N/energy_uj,
where the kernel exposes them and this user may read them).

`Energy.start(before_work=True)` runs before the cell's model is built or anything touches the
device (no CUDA context yet) and measures the idle power then (the counter over IDLE_S seconds
with nothing running: shown apart, never subtracted): a GPU that has just run work stays at its
high clocks for a while, so an idle taken after the model was loaded is a warm idle (121 W
against 80 W on the first H200). After the timed calls it
runs each of the cell's functions in blocks of at least BLOCK_S seconds, ROUNDS rounds in
alternating order (eager, compiled, compiled, eager): a counter updated every few milliseconds
cannot tell apart calls of a millisecond that alternate, nor measure ten of them, so the blocks
are long enough for its resolution and the order spreads drift over both. J/image = the energy
a function's blocks took / the images they processed. The counter is the whole device's (the
whole GPU; on a CPU every process on the packages counts): the note says so.

In a process that serves several cells (the `ahead` schedule), a function is measured once
(`Process`): an eager cell after its compiled sibling (the same model, batch size and dtype) has
its eager figure in that sibling's row already, and its own blocks would measure the very same
function again; so it runs none, and its note names the row that has the figure. Likewise the
idle power is read once, by the process's first cell: only then is it before any work.

Every source is optional: without one the columns stay empty and `energy_note` says why;
SUITE_ENERGY=off turns the measurement off (its blocks cost IDLE_S + 2 x ROUNDS x BLOCK_S
seconds of a compiled cell). Standard library only; NVML through suite.measure.health's loader.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from suite.measure import health
from suite.results.sections.energy import SECTION

IDLE_S = 1.0
BLOCK_S = 1.0
ROUNDS = 2
MIN_CALLS = 3  # a block makes at least this many calls, however long they take
POWERCAP = Path("/sys/class/powercap")
OFF_ENV = "SUITE_ENERGY"  # "off": no energy measurement (no idle wait, no blocks)
EAGER, COMPILED = "eager", "compiled"

COLUMNS: tuple[str, ...] = SECTION.names  # every column this module fills


class Counter(Protocol):
    """A cumulative energy counter."""

    source: str
    note: str  # what the counter covers

    def joules(self) -> float: ...

    def close(self) -> None: ...


@dataclass
class NvmlCounter:
    nvml: Any
    handle: Any
    source: str = "nvml"
    note: str = "NVML total-energy counter: the whole GPU"

    def joules(self) -> float:
        return float(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle)) / 1000.0  # mJ

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


@dataclass
class RaplCounter:
    """The package zones' energy_uj summed, each zone's wrap-around (max_energy_range_uj) undone."""

    zones: list[Path]
    ranges: list[int] = field(default_factory=list)
    last: list[int] = field(default_factory=list)
    total_uj: int = 0
    source: str = "rapl"
    note: str = ""

    def __post_init__(self) -> None:
        self.ranges = [_read_int(z / "max_energy_range_uj") for z in self.zones]
        self.last = [_read_int(z / "energy_uj") for z in self.zones]
        names = ", ".join(_zone_name(z) for z in self.zones)
        self.source = f"rapl ({names})"
        self.note = f"RAPL {names}: the whole CPU package(s), every process on them included"

    def joules(self) -> float:
        for i, zone in enumerate(self.zones):
            now = _read_int(zone / "energy_uj")
            delta = now - self.last[i]
            if delta < 0:  # the counter wrapped
                delta += self.ranges[i]
            self.total_uj += delta
            self.last[i] = now
        return self.total_uj / 1e6

    def close(self) -> None:
        pass


def _read_int(path: Path) -> int:
    return int(path.read_text().strip())


def _zone_name(zone: Path) -> str:
    try:
        return (zone / "name").read_text().strip()
    except OSError:
        return zone.name


def rapl_counter(root: Path = POWERCAP) -> tuple[RaplCounter | None, str]:
    """The CPU packages' RAPL counter, or None and why not."""
    if not root.is_dir():
        return None, f"no RAPL: {root} does not exist (the kernel exposes no powercap zones here)"
    tops = (p for p in root.glob("intel-rapl:*") if p.name.count(":") == 1)  # intel-rapl:N, not N:M
    zones = sorted((p for p in tops if _zone_name(p).startswith("package")), key=lambda p: p.name)
    if not zones:
        return None, f"no RAPL: no package zone (intel-rapl:N named package-N) under {root}"
    for zone in zones:
        try:
            _read_int(zone / "energy_uj")
            _read_int(zone / "max_energy_range_uj")
        except PermissionError:
            return None, (
                f"no RAPL: {zone / 'energy_uj'} is not readable by this user (root only since Linux 5.10, "
                "CVE-2020-8694)"
            )
        except (OSError, ValueError) as exc:
            return None, f"no RAPL: {zone / 'energy_uj'} unreadable ({exc})"
    return RaplCounter(zones), ""


def nvml_counter(nvml: Callable[[], Any] = health.open_nvml) -> tuple[NvmlCounter | None, str]:
    """The GPU's NVML total-energy counter, or None and why not."""
    module = nvml()
    if module is None:
        return None, "no NVML (package nvidia-ml-py or the NVIDIA driver missing)"
    try:
        handle = health.nvml_handle(module)
        module.nvmlDeviceGetTotalEnergyConsumption(handle)
    except Exception as exc:  # NVMLError_NotSupported: before Volta
        with contextlib.suppress(Exception):
            module.nvmlShutdown()
        why = f"{type(exc).__name__}: {exc}"
        return None, f"NVML has no total-energy counter for this GPU ({why}; it needs Volta or newer)"
    return NvmlCounter(module, handle), ""


def open_counter(
    device: str, nvml: Callable[[], Any] = health.open_nvml, powercap: Path = POWERCAP
) -> tuple[Counter | None, str]:
    if device == "cuda":
        return nvml_counter(nvml)
    return rapl_counter(powercap)


@dataclass(frozen=True)
class Pace:
    """How long the idle reading and each block run, and how many rounds: one value, so that a
    test can shorten them together."""

    idle_s: float = IDLE_S
    block_s: float = BLOCK_S
    rounds: int = ROUNDS


@dataclass
class Process:
    """What this process has measured already: whether a cell has started (its idle reading was
    the one before any work), and the eager function's energy by owner, with the row that has it
    (`who`)."""

    started: bool = False
    measured: dict[tuple[Any, str], str] = field(default_factory=dict)


PROCESS = Process()


@dataclass
class Tally:
    joules: float = 0.0
    images: int = 0
    seconds: float = 0.0


class Energy:
    """The idle power at entry, then `blocks(...)` after the timed calls; `fields()` the columns.

    `opener`, `clock` and `sleep` are parameters so that a test can plant a counter and time."""

    def __init__(
        self,
        device: str,
        images_per_call: int,
        sync: Callable[[], None],
        opener: Callable[[str], tuple[Counter | None, str]] = open_counter,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
        pace: Pace = Pace(),
        owner: Any = None,
    ) -> None:
        """`owner`: what a function's energy is a figure of (a cell's model, batch size, dtype):
        the eager function measured under the same owner in this process (PROCESS) is not
        measured again (the module docstring); None: every function is measured."""
        self.device, self.images_per_call, self.sync = device, images_per_call, sync
        self.owner, self.process = owner, PROCESS
        self.elsewhere: dict[str, str] = {}  # a label measured already -> the row that has it
        self.opener, self.clock, self.sleep = opener, clock, sleep
        self.idle_s, self.block_s, self.rounds = pace.idle_s, pace.block_s, pace.rounds
        self.counter: Counter | None = None
        self.why = ""
        self.idle_w: float | None = None
        self.tally: dict[str, Tally] = {}
        self.failed = ""
        self.started = False
        self.idle_when = ""

    def __enter__(self) -> Energy:
        return self.start()

    def start(self, before_work: bool = False) -> Energy:
        """Open the counter and measure the idle power, once (a second call does nothing).
        `before_work`: nothing has run on the device yet, so nothing to synchronize (and no CUDA
        context is made for it)."""
        if self.started:
            return self
        self.started = True
        if os.environ.get(OFF_ENV, "").lower() == "off":
            self.why = f"off ({OFF_ENV}=off)"
            return self
        try:
            self.counter, self.why = self.opener(self.device)
        except Exception as exc:  # a source that fails to open is a missing source, not a failed cell
            self.counter, self.why = None, f"energy counter unavailable ({type(exc).__name__}: {exc})"
        first, self.process.started = not self.process.started, True
        if self.counter is not None and self.owner is not None and not first:
            self.idle_when = "read by this process's first cell only (this one's would not be idle)"
        elif self.counter is not None:
            if not before_work:
                self.sync()
            self.idle_when = "before any work" if before_work else "after the model was loaded (warm)"
            j0, t0 = self.counter.joules(), self.clock()
            self.sleep(self.idle_s)
            j1, t1 = self.counter.joules(), self.clock()
            self.idle_w = (j1 - j0) / (t1 - t0) if t1 > t0 and j1 >= j0 else None
        return self

    def __exit__(self, *exc: object) -> None:
        if self.counter is not None:
            self.counter.close()

    def blocks(self, functions: Sequence[tuple[str, Callable[[], Any]]], who: str = "") -> None:
        """Each (label, function) in blocks of at least `block_s` seconds, in alternating order;
        a function this process measured already for the same owner is left out (`who`: the row
        this cell's figures go to, which a later cell's note names)."""
        if self.counter is None:
            return
        order = []
        for label, fn in functions:
            # the eager function is one per owner; each compiled cell's is its own (its mode's)
            key = (self.owner, label) if self.owner is not None and label == EAGER else None
            done = self.process.measured.get(key) if key is not None else None
            if done is not None:
                self.elsewhere[label] = done
                continue
            order.append((label, fn))
            if key is not None:
                self.process.measured[key] = who
        try:
            for r in range(self.rounds):
                for label, fn in order if r % 2 == 0 else reversed(order):
                    self._block(label, fn)
        except Exception as exc:  # the cell is measured: only its energy figures are lost
            self.tally.clear()
            self.failed = f"energy blocks stopped ({type(exc).__name__}: {exc})"

    def _block(self, label: str, fn: Callable[[], Any]) -> None:
        assert self.counter is not None
        self.sync()
        j0, t0 = self.counter.joules(), self.clock()
        calls = 0
        while calls < MIN_CALLS or self.clock() - t0 < self.block_s:
            fn()
            self.sync()
            calls += 1
        j1, t1 = self.counter.joules(), self.clock()
        tally = self.tally.setdefault(label, Tally())
        tally.joules += j1 - j0
        tally.images += calls * self.images_per_call
        tally.seconds += t1 - t0

    def per_image(self, label: str) -> float | None:
        t = self.tally.get(label)
        return t.joules / t.images if t and t.images and t.joules > 0 else None

    def fields(self) -> dict[str, Any]:
        """The energy columns; the figures empty, with the reason in `energy_note`, where not measured."""
        out: dict[str, Any] = dict.fromkeys(COLUMNS)
        if self.counter is None:
            out["energy_note"] = self.why
            return out
        notes = [self.counter.note] + ([f"idle power {self.idle_when}"] if self.idle_when else [])
        notes += [f"{label}: measured in this process's {who} row" for label, who in self.elsewhere.items()]
        out["energy_source"] = self.counter.source
        out["idle_power_w"] = None if self.idle_w is None else round(self.idle_w, 3)
        eager, compiled = self.per_image(EAGER), self.per_image(COMPILED)
        out["eager_j_per_image"], out["compiled_j_per_image"] = eager, compiled
        if eager is not None and compiled is not None:
            out["energy_ratio"] = compiled / eager
        notes += [self.failed] if self.failed else []
        stalled = [label for label, t in self.tally.items() if t.joules <= 0]
        if stalled:
            notes.append(f"the counter did not advance over the {', '.join(stalled)} blocks: no figure")
        if self.idle_w is None and not self.idle_when.startswith("read by"):
            notes.append("idle power: the counter did not advance while idle")
        out["energy_note"] = "; ".join(notes)
        return out
