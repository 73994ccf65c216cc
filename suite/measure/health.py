"""Health of the machine while a cell's calls were timed: was the GPU throttled, its clock
steady, shared with another process; did the CPU's hypervisor steal time, did other tasks
compete for the cores? A figure taken on a sick machine is suspect, so every row says so.

`Health` is a context manager put around the timed loop (suite.measure.scenarios.base): it
reads the CPU counters of /proc at its start and end, and samples the GPU through NVML
(`pynvml`, NVIDIA's own binding, package nvidia-ml-py) from a thread every `interval_s`.
Every source is optional: without NVML, off Linux, or without a GPU, its columns are left
empty, never guessed. What the columns make of the `health` column is suite.results.health
(the runner calls it, since one fallback needs the load it reads). Standard library only.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from suite.measure import gate
from suite.results.health import COLUMNS

# NVML's clock-event ("throttle") reason bits (nvml.h, nvmlClocksEventReason*), by the name
# the gpu_throttle column uses. GPU idle (0x1) is left out: an idle GPU is not a slow one.
THROTTLE_BITS: tuple[tuple[int, str], ...] = (
    (0x2, "applications_clocks"),
    (0x4, "sw_power"),
    (0x8, "hw_slowdown"),
    (0x10, "sync_boost"),
    (0x20, "sw_thermal"),
    (0x40, "hw_thermal"),
    (0x80, "hw_power_brake"),
    (0x100, "display_clocks"),
)


def throttle_names(bits: int) -> list[str]:
    """NVML's reason bits as the column's names, in NVML's order."""
    return [name for bit, name in THROTTLE_BITS if bits & bit]


# ---------------------------------------------------------------------------------------
# CPU: /proc/stat (steal) and /proc/pressure/cpu (PSI: time some task waited for a CPU).


def _cpu_times(path: str = "/proc/stat") -> tuple[int, int] | None:
    """(steal, total) jiffies of all CPUs, or None off Linux."""
    try:
        with open(path) as fh:
            fields = fh.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    values = [int(v) for v in fields[1:9]]  # user nice system idle iowait irq softirq steal
    return (values[7] if len(values) > 7 else 0), sum(values)


def _cpu_wait_us(path: str = "/proc/pressure/cpu") -> int | None:
    """Microseconds some runnable task waited for a CPU since boot (PSI 'some'), or None."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith("some "):
                    return int(line.rsplit("total=", 1)[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def _page_faults() -> int | None:
    """Minor page faults of this process so far (all its threads), or None where getrusage is
    missing. A call that faults pages in pays for it in its time (suite.measure.allocator)."""
    try:
        import resource
    except ImportError:  # not Unix
        return None
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt


# ---------------------------------------------------------------------------------------
# GPU: NVML, sampled from a thread.


def open_nvml() -> Any | None:
    """pynvml, initialised; None without the package or a driver."""
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
    except Exception:  # NVMLError: no driver, no device
        return None
    return pynvml


def nvml_handle(nvml: Any) -> Any:
    """The NVML handle of the GPU torch uses (device 0 of the visible ones). NVML ignores
    CUDA_VISIBLE_DEVICES, so the GPU is found by its UUID where torch gives it."""
    try:
        import torch

        uuid = str(getattr(torch.cuda.get_device_properties(0), "uuid", "") or "")
        if uuid:
            return nvml.nvmlDeviceGetHandleByUUID(uuid if uuid.startswith("GPU-") else f"GPU-{uuid}")
    except Exception:
        pass
    first = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    if first.startswith("GPU-"):
        return nvml.nvmlDeviceGetHandleByUUID(first)
    return nvml.nvmlDeviceGetHandleByIndex(int(first) if first.isdigit() else 0)


@dataclass
class GpuSamples:
    clocks: list[float] = field(default_factory=list)
    temps: list[float] = field(default_factory=list)
    powers: list[float] = field(default_factory=list)
    throttle: int = 0
    pids: set[int] = field(default_factory=set)
    processes_max: int = 0


def _sample(nvml: Any, handle: Any, into: GpuSamples) -> None:
    """One reading of each figure; a figure this GPU or driver does not report is skipped."""
    readers: tuple[tuple[str, Callable[[], Any]], ...] = (
        ("clock", lambda: nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
        ("temp", lambda: nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
        ("power", lambda: nvml.nvmlDeviceGetPowerUsage(handle) / 1000.0),
        ("throttle", lambda: _reasons(nvml, handle)),
        ("pids", lambda: [p.pid for p in nvml.nvmlDeviceGetComputeRunningProcesses(handle)]),
    )
    for name, read in readers:
        try:
            value = read()
        except Exception:  # NVMLError_NotSupported and friends
            continue
        if name == "clock":
            into.clocks.append(float(value))
        elif name == "temp":
            into.temps.append(float(value))
        elif name == "power":
            into.powers.append(float(value))
        elif name == "throttle":
            into.throttle |= int(value)
        else:
            into.pids.update(value)
            into.processes_max = max(into.processes_max, len(value))


def _reasons(nvml: Any, handle: Any) -> int:
    """The active clock-event reasons: the function's newer name first (an older binding lacks
    it, an older driver lacks its symbol), then the older one."""
    names = ("nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons")
    readers = [getattr(nvml, n) for n in names if hasattr(nvml, n)]
    for read in readers[:-1]:
        try:
            return int(read(handle))
        except Exception:
            continue
    return int(readers[-1](handle))


def other_processes(pids: set[int], most_at_once: int, me: int, idle: frozenset[int] = frozenset()) -> int:
    """Compute processes on the GPU besides this one and the `idle` ones (the `ahead` schedule's
    processes waiting at their gates meanwhile: suite.measure.gate). In a container NVML reports
    the host's process ids, where this process has another id: it is then one of those seen."""
    if me in pids:
        return len(pids - {me} - idle)
    return max(0, min(len(pids), most_at_once) - 1 - len(idle)) if pids else 0


class Health:
    """Sample the machine's health while the block runs; `fields()` gives the CSV columns.
    `calls`: how many timed calls the block makes (the page faults are given per call)."""

    def __init__(
        self, device: str, calls: int = 0, interval_s: float = 0.1, nvml: Callable[[], Any] = open_nvml
    ) -> None:
        self.device, self.calls, self.interval_s, self._open_nvml = device, calls, interval_s, nvml
        self._nvml: Any = None
        self._handle: Any = None
        self._gpu = GpuSamples()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._cpu0: tuple[int, int] | None = None
        self._cpu1: tuple[int, int] | None = None
        self._wait0: int | None = None
        self._wait1: int | None = None
        self._faults0: int | None = None
        self._faults1: int | None = None
        self._t0 = self._t1 = 0.0

    def __enter__(self) -> Health:
        if self.device == "cuda":
            self._nvml = self._open_nvml()
            if self._nvml is not None:
                try:
                    self._handle = nvml_handle(self._nvml)
                except Exception:
                    self._handle = None
            if self._handle is not None:
                _sample(self._nvml, self._handle, self._gpu)
                self._thread = threading.Thread(target=self._run, name="health", daemon=True)
                self._thread.start()
        self._cpu0, self._wait0, self._t0 = _cpu_times(), _cpu_wait_us(), time.monotonic()
        self._faults0 = _page_faults()
        return self

    def _run(self) -> None:
        while not self._stop.wait(self.interval_s):
            _sample(self._nvml, self._handle, self._gpu)

    def __exit__(self, *exc: object) -> None:
        self._faults1 = _page_faults()
        self._cpu1, self._wait1, self._t1 = _cpu_times(), _cpu_wait_us(), time.monotonic()
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            _sample(self._nvml, self._handle, self._gpu)
        if self._nvml is not None:
            with contextlib.suppress(Exception):
                self._nvml.nvmlShutdown()

    def fields(self) -> dict[str, Any]:
        """The health columns; None (an empty cell) for every figure not measured."""
        out: dict[str, Any] = dict.fromkeys(COLUMNS)
        g = self._gpu
        if g.clocks:
            out["gpu_sm_clock_mhz_min"], out["gpu_sm_clock_mhz_max"] = min(g.clocks), max(g.clocks)
        if g.temps:
            out["gpu_temp_c_max"] = max(g.temps)
        if g.powers:
            out["gpu_power_w_mean"] = round(sum(g.powers) / len(g.powers), 1)
        if self._handle is not None:
            out["gpu_throttle"] = ",".join(throttle_names(g.throttle))
            idle = frozenset(gate.idle_siblings())
            out["gpu_other_processes"] = other_processes(g.pids, g.processes_max, os.getpid(), idle)
        if self._cpu0 and self._cpu1 and self._cpu1[1] > self._cpu0[1]:
            steal = self._cpu1[0] - self._cpu0[0]
            out["cpu_steal_pct"] = round(100.0 * steal / (self._cpu1[1] - self._cpu0[1]), 2)
        wall_us = (self._t1 - self._t0) * 1e6
        if self._wait0 is not None and self._wait1 is not None and wall_us > 0:
            out["cpu_wait_pct"] = round(min(100.0, 100.0 * (self._wait1 - self._wait0) / wall_us), 2)
        if self._faults0 is not None and self._faults1 is not None and self.calls > 0:
            out["page_faults_per_call"] = round((self._faults1 - self._faults0) / self.calls, 1)
        return out
