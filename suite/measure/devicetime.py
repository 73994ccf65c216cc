"""The device's share of a call on CUDA: one profiled pass after the timed calls (torch.profiler's
Kineto trace), never inside them.

`device_ms` is the time the GPU was busy per call: the union of the trace's kernel, memcpy and
memset intervals over the pass, divided by its calls (overlapping kernels counted once).
`host_ms` is the row's latency median minus that: the interpreter, the dispatcher, the launches
and the gaps between kernels, everything a faster GPU would not shorten. A regression is then in
the kernels when device_ms grew, on the host when only host_ms did (docs/pairs.md). Off CUDA
there is nothing to profile: no columns. The trace is read as exported JSON (Chrome's trace
format), the same under torch 2.0.1 and current releases.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping
from typing import Any

PROFILED_CALLS = 10
# the trace's device-side categories (torch 2.0 writes "Kernel", "Memcpy", "Memset"; later
# releases "kernel", "gpu_memcpy", "gpu_memset")
DEVICE_CATEGORIES = frozenset({"kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset"})


def busy_us(trace: Mapping[str, Any]) -> float:
    """Microseconds the device was busy in a Chrome-format trace: the union of its device events'
    [ts, ts + dur) intervals."""
    spans = sorted(
        (float(e["ts"]), float(e["ts"]) + float(e.get("dur", 0)))
        for e in _events(trace)
        if str(e.get("cat", "")).lower() in DEVICE_CATEGORIES and e.get("ph") == "X"
    )
    total, end = 0.0, float("-inf")
    for start, stop in spans:
        if stop <= end:
            continue
        total += stop - max(start, end)
        end = stop
    return total


def _events(trace: Mapping[str, Any]) -> Iterable[Mapping[str, Any]]:
    events = trace.get("traceEvents", [])
    return (e for e in events if isinstance(e, dict) and "ts" in e)


def profiled_ms(fn: Callable[[], Any], sync: Callable[[], None], calls: int = PROFILED_CALLS) -> float:
    """The device's busy milliseconds per call of `fn` over `calls` profiled calls."""
    from torch.profiler import ProfilerActivity, profile

    sync()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        sync()
    fd, path = tempfile.mkstemp(suffix=".json", prefix="suite-trace-")
    os.close(fd)
    try:
        prof.export_chrome_trace(path)
        with open(path, encoding="utf-8") as fh:
            trace = json.load(fh)
    finally:
        os.unlink(path)
    return busy_us(trace) / 1000.0 / calls


def fields(
    device: str,
    fns: Mapping[str, Callable[[], Any]],
    sync: Callable[[], None],
    latency_ms: Mapping[str, float],
) -> dict[str, Any]:
    """The row's device and host shares (`device_ms`, `host_ms` of the row's function; on a
    compiled row `eager_device_ms`, `eager_host_ms` too); a note where the profiler failed."""
    if device != "cuda":
        return {}
    out: dict[str, Any] = {}
    try:
        for prefix, fn in fns.items():
            dev = profiled_ms(fn, sync)
            out[f"{prefix}device_ms"] = dev
            out[f"{prefix}host_ms"] = max(0.0, latency_ms[prefix] - dev)
    except Exception as exc:  # the profiler is a guest: its failure costs its columns, not the row
        return {"device_note": f"no device time: {type(exc).__name__}: {str(exc)[:200]}"}
    return out
