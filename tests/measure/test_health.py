"""The machine-health columns (suite.measure.health) without a GPU: a fake NVML module stands in
for pynvml, fake counters for /proc; the flags of the `health` column, and how the runner shows
them (the row, the progress line, the done summary)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
from support import stub_environment

from suite.measure import allocator, health
from suite.measure.health import Health, other_processes, throttle_names
from suite.results.health import verdict
from suite.run.progress import Progress
from suite.run.runner import RunReport, build_row
from suite.spec import Filters, expand, load_matrix

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


class FakeNvml:
    """pynvml's calls the tracker makes, answering from canned series (one value per sample)."""

    NVML_CLOCK_SM = 1
    NVML_TEMPERATURE_GPU = 0

    def __init__(self, clocks, temps, powers_mw, reasons, pids, supported=True) -> None:
        self.series = {"clock": list(clocks), "temp": list(temps), "power": list(powers_mw)}
        self.reasons, self.pids, self.supported = list(reasons), list(pids), supported
        self.calls: list[str] = []

    def _next(self, name: str):
        values = self.series[name]
        return values.pop(0) if len(values) > 1 else values[0]

    def nvmlInit(self) -> None:
        self.calls.append("init")

    def nvmlShutdown(self) -> None:
        self.calls.append("shutdown")

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        self.calls.append(f"handle {index}")
        return "gpu0"

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> str:
        self.calls.append(f"uuid {uuid}")
        return "gpu0"

    def nvmlDeviceGetClockInfo(self, handle: str, clock: int) -> int:
        assert (handle, clock) == ("gpu0", self.NVML_CLOCK_SM)
        return self._next("clock")

    def nvmlDeviceGetTemperature(self, handle: str, sensor: int) -> int:
        return self._next("temp")

    def nvmlDeviceGetPowerUsage(self, handle: str) -> int:
        if not self.supported:
            raise RuntimeError("NVMLError_NotSupported")
        return self._next("power")

    def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
        return self.reasons.pop(0) if len(self.reasons) > 1 else self.reasons[0]

    def nvmlDeviceGetComputeRunningProcesses(self, handle: str) -> list[SimpleNamespace]:
        pids = self.pids.pop(0) if len(self.pids) > 1 else self.pids[0]
        return [SimpleNamespace(pid=p) for p in pids]


def opener(fake: FakeNvml):
    """What suite.measure.health.open_nvml does with the real module: initialise it, hand it over."""

    def open_nvml() -> FakeNvml:
        fake.nvmlInit()
        return fake

    return open_nvml


@pytest.fixture
def counters(monkeypatch: pytest.MonkeyPatch):
    """/proc/stat, /proc/pressure/cpu and getrusage's page faults, as two readings: at the start
    and at the end."""
    readings = {
        "cpu": [(100, 10_000), (130, 11_000)],
        "wait": [5_000_000, 5_050_000],
        "faults": [7_000, 7_900],
    }
    monkeypatch.setattr(health, "_cpu_times", lambda: readings["cpu"].pop(0))
    monkeypatch.setattr(health, "_cpu_wait_us", lambda: readings["wait"].pop(0))
    monkeypatch.setattr(health, "_page_faults", lambda: readings["faults"].pop(0))
    return readings


def test_gpu_figures_come_from_nvml_samples(counters, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    me = os.getpid()
    fake = FakeNvml(
        clocks=[1980, 1755, 1980],
        temps=[61, 70, 66],
        powers_mw=[300_000, 400_000, 350_000],
        reasons=[0x1, 0x4 | 0x20, 0x1],  # idle, then sw power cap + sw thermal
        pids=[[me], [me, 4242]],
    )
    with Health("cuda", interval_s=0.01, nvml=opener(fake)) as h:
        time.sleep(0.2)
    f = h.fields()
    assert (f["gpu_sm_clock_mhz_min"], f["gpu_sm_clock_mhz_max"]) == (1755, 1980)
    assert f["gpu_temp_c_max"] == 70
    assert 300 <= f["gpu_power_w_mean"] <= 400
    assert f["gpu_throttle"] == "sw_power,sw_thermal"  # idle is not a slow-down
    assert f["gpu_other_processes"] == 1
    assert fake.calls[0] == "init" and fake.calls[-1] == "shutdown"
    assert verdict(f, cores=16).split(",") == ["throttled", "clock-varied", "shared-gpu", "steal", "busy"]


def test_a_steady_unshared_gpu_is_ok(counters) -> None:
    fake = FakeNvml([1980], [50], [250_000], [0x1], [[os.getpid()]], supported=False)
    with Health("cuda", interval_s=0.01, nvml=opener(fake)) as h:
        time.sleep(0.05)
    f = h.fields()
    assert f["gpu_power_w_mean"] is None  # not supported by this GPU: empty, not invented
    assert f["gpu_throttle"] == "" and f["gpu_other_processes"] == 0
    assert f["gpu_sm_clock_mhz_min"] == f["gpu_sm_clock_mhz_max"] == 1980
    assert f["cpu_steal_pct"] == 3.0
    assert verdict({**f, "cpu_steal_pct": 0.5, "cpu_wait_pct": 0.0}, cores=16) == "ok"


def test_without_nvml_the_gpu_columns_are_empty(counters) -> None:
    with Health("cuda", nvml=lambda: None) as h:
        pass
    f = h.fields()
    assert all(f[c] is None for c in f if c.startswith("gpu_"))
    assert f["cpu_steal_pct"] == 3.0  # 30 of 1000 jiffies


def test_cpu_figures_from_the_counters(counters, monkeypatch: pytest.MonkeyPatch) -> None:
    clock = iter([10.0, 10.5])
    monkeypatch.setattr(health.time, "monotonic", lambda: next(clock))
    with Health("cpu", calls=60) as h:
        pass
    f = h.fields()
    assert f["cpu_steal_pct"] == 3.0
    assert f["cpu_wait_pct"] == 10.0  # 50 ms of waiting in 0.5 s
    assert f["page_faults_per_call"] == 15.0  # 900 faults over 60 calls
    assert all(f[c] is None for c in f if c.startswith("gpu_"))  # a CPU cell asks no GPU
    assert verdict(f, cores=2) == "steal,busy"


def test_a_loop_shorter_than_a_tick_has_no_steal_figure(counters, monkeypatch: pytest.MonkeyPatch) -> None:
    """No jiffy went by in /proc/stat (a loop under the kernel's 10 ms tick): steal over no time
    is not 0%, it was not measured (docs/csv.md's table says so)."""
    counters["cpu"] = [(100, 10_000), (100, 10_000)]
    clock = iter([10.0, 10.004])
    monkeypatch.setattr(health.time, "monotonic", lambda: next(clock))
    with Health("cpu") as h:
        pass
    f = h.fields()
    assert f["cpu_steal_pct"] is None and f["cpu_wait_pct"] is not None


def test_page_faults_need_the_number_of_calls(counters) -> None:
    """Faults per call over no calls is not 0: the figure is left empty."""
    with Health("cpu") as h:
        pass
    assert h.fields()["page_faults_per_call"] is None


def test_off_linux_every_column_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(health, "_cpu_times", lambda: None)
    monkeypatch.setattr(health, "_cpu_wait_us", lambda: None)
    monkeypatch.setattr(health, "_page_faults", lambda: None)
    with Health("cpu", calls=10) as h:
        pass
    assert set(h.fields().values()) == {None}
    assert verdict(h.fields(), cores=2) == ""  # no figures: no verdict either


@pytest.mark.skipif(not Path("/proc/pressure/cpu").exists(), reason="no PSI in this kernel")
def test_the_real_counters_of_this_machine_are_read() -> None:
    with Health("cpu") as h:
        end = time.monotonic() + 0.2
        while time.monotonic() < end:
            pass
    f = h.fields()
    assert 0 <= f["cpu_steal_pct"] <= 100 and 0 <= f["cpu_wait_pct"] <= 100


@pytest.mark.parametrize(
    ("row", "cores", "expected"),
    [
        ({"cpu_steal_pct": 0.0, "cpu_wait_pct": 9.9}, 2, "ok"),
        ({"cpu_steal_pct": 0.0, "cpu_wait_pct": 10.0}, 2, "busy"),
        ({"cpu_steal_pct": 2.0, "cpu_wait_pct": 0.0}, 2, "steal"),
        # no PSI: the load the runner read as the cell ended decides, above 1.5 x the cores
        ({"cpu_steal_pct": 0.0, "host_load": 3.0}, 2, "ok"),
        ({"cpu_steal_pct": 0.0, "host_load": 3.1}, 2, "busy"),
        ({"gpu_sm_clock_mhz_min": 1941, "gpu_sm_clock_mhz_max": 1980}, 8, "ok"),  # 1.97%: steady
        ({"gpu_sm_clock_mhz_min": 1935, "gpu_sm_clock_mhz_max": 1980}, 8, "clock-varied"),
        ({"gpu_throttle": "applications_clocks,sync_boost"}, 8, "ok"),  # settings, not slow-downs
        ({"gpu_throttle": "hw_slowdown"}, 8, "throttled"),
        ({"gpu_other_processes": "2"}, 8, "shared-gpu"),
        ({"host_load": 9.0}, 2, ""),  # the load alone is not a health reading: a failed cell
        # the host CPU's speed (the probe's spread while timed) against the row's between-run
        # noise, or 10% where the device type has none (the H200's 1.8x steps would show)
        ({"host_speed_moved_pct": 19.9, "run_noise_pct": 20.0}, 16, "ok"),
        ({"host_speed_moved_pct": 80.0, "run_noise_pct": 20.0}, 16, "host-varied"),
        ({"host_speed_moved_pct": 10.0}, 16, "ok"),
        ({"host_speed_moved_pct": 10.5, "cpu_wait_pct": 12.0}, 2, "busy,host-varied"),
    ],
)
def test_verdict_flags(row: dict, cores: int, expected: str) -> None:
    assert verdict(row, cores) == expected


def test_throttle_names_and_container_pids() -> None:
    assert throttle_names(0x1 | 0x8 | 0x40) == ["hw_slowdown", "hw_thermal"]
    assert other_processes({10, 11}, 2, me=10) == 1
    # in a container NVML reports host pids: this process is one of them under another id
    assert other_processes({5001}, 1, me=7) == 0
    assert other_processes({5001, 5002}, 2, me=7) == 1
    assert other_processes(set(), 0, me=7) == 0


def _cell():
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "any", Filters()) if c.model.name == "TinyViT"]
    return cell


def _row(status: str = "ok", **fields: object) -> dict:
    measured = {"median_ms": 2.0, "mean_ms": 2.1, "cpu_steal_pct": 0.0, "cpu_wait_pct": 35.0}
    return build_row(
        _cell(),
        stub_environment(cpu_count=2),
        "r",
        {"status": status, "error": "", **(measured if status == "ok" else {}), **fields},
        "2026-01-01T00:00:00+00:00",
        1.0,
        "logs/x.log",
        "",
    )


def test_the_runner_writes_the_verdict_and_progress_says_busy() -> None:
    row = _row()
    assert row["health"] == "busy"
    stream = io.StringIO()
    progress = Progress.of([_cell()])
    progress.stream = stream
    progress.finish(_cell(), row, 1.0)
    assert "ok (median 2.00 ms; machine busy) in 1.0 s" in stream.getvalue()
    failed = _row("error", error="boom")  # a failed worker returns no health figures
    assert failed["health"] == ""  # nothing was timed: no verdict, whatever the load


def test_the_done_summary_counts_unhealthy_cells() -> None:
    report = RunReport(csv=Path("x.csv"), unhealthy=3, flags={"busy": 3, "steal": 1})
    assert report.health_note() == (
        "; 3 cell(s) timed on an unhealthy machine (busy 3, steal 1): see the health column"
    )
    assert RunReport(csv=Path("x.csv")).health_note() == ""


def test_throttle_reasons_fall_back_to_the_older_call() -> None:
    """A binding with the newer call on a driver without its symbol: the older call answers."""

    class OldDriver:
        def nvmlDeviceGetCurrentClocksEventReasons(self, handle: str) -> int:
            raise RuntimeError("NVMLError_FunctionNotFound")

        def nvmlDeviceGetCurrentClocksThrottleReasons(self, handle: str) -> int:
            return 0x8

    assert health._reasons(OldDriver(), "gpu0") == 0x8


def test_a_real_cpu_run_fills_the_cpu_columns_and_leaves_the_gpu_ones_empty(tmp_path: Path) -> None:
    import subprocess

    from support import REPO, tiny_run_cmd

    from suite.results import read_rows

    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("SUITE_FAULT", None)
    # 200 calls of about a millisecond: a timed loop shorter than the kernel's accounting tick
    # (10 ms) can see no /proc/stat jiffy go by, and then has no steal figure (empty, as for any
    # figure not measured): the tiny profile's 5 calls did, once, under CI's load. One model: the
    # columns are the machine's, whichever model is timed (a second one is a second Python)
    proc = subprocess.run(
        tiny_run_cmd(tmp_path, "h", "--iterations", "200", "--models", "TinyResNet"),
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    (csv,) = (tmp_path / "h" / "raw").glob("*.csv")
    rows = read_rows(csv).rows
    assert [r["model"] for r in rows] == ["TinyResNet"]
    for row in rows:
        assert all(row[c] == "" for c in health.COLUMNS if c.startswith("gpu_")), row  # no GPU: empty
        assert 0 <= float(row["cpu_steal_pct"]) <= 100
        assert float(row["page_faults_per_call"]) >= 0
        system_env = dict(os.environ, **allocator.child_env("system", os.environ))
        assert row["malloc"] == allocator.in_effect(system_env)  # the default: system
        if Path("/proc/pressure/cpu").exists():
            assert 0 <= float(row["cpu_wait_pct"]) <= 100
        assert row["health"] == verdict(row, os.cpu_count() or 1)
    flagged = [r for r in rows if r["health"] != "ok"]
    assert ("cell(s) timed on an unhealthy machine" in proc.stderr) == bool(flagged)
