"""The device time section: the device's share of a call on CUDA, from one profiled pass after
the timed calls (suite.measure.devicetime): whether a change is in the kernels or on the host.
Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Section, extra, extra_timed

EAGER = "eager_"  # the prefix of the eager function's figures on a compiled row

SECTION = Section(
    name="devicetime",
    title="Device time",
    about="CUDA rows ([pairs.md](pairs.md)); empty on a failed row, off CUDA and in rows from before them.",
    columns=(
        extra_timed(
            "device_ms",
            "ms",
            "the GPU's busy time per call of the row's function over one profiled pass of 10 calls "
            "after the timed ones (the union of the trace's kernel, memcpy and memset intervals)",
        ),
        extra_timed("host_ms", "ms", "`median_ms` - `device_ms`: the host's share", positive=False),
        extra_timed("eager_device_ms", "ms", "compiled rows: `device_ms` of the eager function"),
        extra_timed("eager_host_ms", "ms", "`eager_median_ms` - `eager_device_ms`", positive=False),
        extra(
            "device_note",
            "why `device_ms` is empty on a CUDA row (the profiler failed: the row is otherwise whole)",
        ),
    ),
)
