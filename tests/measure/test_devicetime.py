"""The device's share of a call, read off a profiler trace: a fake Kineto trace in Chrome's
format (torch 2.0's and later releases' category names), overlapping kernels counted once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from suite.measure import devicetime
from suite.run import pairrule


def trace(*events: tuple[str, float, float]) -> dict[str, object]:
    return {
        "traceEvents": [
            {"ph": "X", "cat": cat, "name": f"e{i}", "ts": ts, "dur": dur, "pid": 0, "tid": 7}
            for i, (cat, ts, dur) in enumerate(events)
        ]
    }


def test_busy_time_is_the_union_of_the_device_intervals() -> None:
    t = trace(
        ("kernel", 100.0, 50.0),  # 100-150
        ("kernel", 120.0, 50.0),  # 120-170: overlaps, 20 more
        ("gpu_memcpy", 200.0, 10.0),  # 200-210
        ("cpu_op", 0.0, 1000.0),  # the host's: not the device's
        ("cuda_runtime", 90.0, 5.0),  # a launch, on the host
        ("Kernel", 300.0, 40.0),  # torch 2.0's spelling
        ("Memset", 340.0, 10.0),  # touching the kernel before it: 340-350
    )
    assert devicetime.busy_us(t) == pytest.approx(70 + 10 + 40 + 10)


def test_busy_time_of_an_empty_or_foreign_trace_is_zero() -> None:
    assert devicetime.busy_us({}) == 0.0
    assert devicetime.busy_us({"traceEvents": [{"name": "meta", "ph": "M"}]}) == 0.0


def test_a_chrome_trace_file_as_torch_exports_it(tmp_path: Path) -> None:
    path = tmp_path / "trace.json"
    path.write_text(json.dumps(trace(("kernel", 0.0, 250.0), ("kernel", 1000.0, 250.0))))
    assert devicetime.busy_us(json.loads(path.read_text())) == 500.0


def test_no_columns_off_cuda() -> None:
    assert devicetime.fields("cpu", {"": lambda: None}, lambda: None, {"": 1.0}) == {}


def test_a_profiler_that_fails_costs_its_columns_only(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fn: object, sync: object, calls: int = 10) -> float:
        raise RuntimeError("CUPTI_ERROR_NOT_INITIALIZED")

    monkeypatch.setattr(devicetime, "profiled_ms", broken)
    out = devicetime.fields("cuda", {"": lambda: None}, lambda: None, {"": 1.0})
    assert set(out) == {"device_note"} and "CUPTI_ERROR_NOT_INITIALIZED" in out["device_note"]


def test_host_share_and_where_a_slower_call_lost_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devicetime, "profiled_ms", lambda fn, sync, calls=10: fn())
    out = devicetime.fields(
        "cuda", {"": lambda: 0.8, "eager_": lambda: 2.5}, lambda: None, {"": 1.0, "eager_": 3.0}
    )
    assert out == pytest.approx(
        {"device_ms": 0.8, "host_ms": 0.2, "eager_device_ms": 2.5, "eager_host_ms": 0.5}
    )
    assert pairrule.where(1.0, 1.2) == pairrule.KERNELS  # the kernels took 20% longer
    assert pairrule.where(1.0, 1.01) == pairrule.HOST  # the kernels did not: the host did
    assert pairrule.where(None, 1.0) == ""
