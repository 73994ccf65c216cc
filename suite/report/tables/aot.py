"""Compiling ahead against the JIT (docs/aot-inductor.md): per model and batch size, an
aot-inductor row beside the `default` row of the same cell: the package's load (what a serving
process pays at start) against the JIT's compile with warm caches (`compile_warm_s`, from
`compile_cost: true`) and with cold ones, the medians, and how long the start-up lead lasts.

Host side only (pandas). The figures are the rows' own; the break-even is arithmetic on them.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from suite.report.tables.cells import number
from suite.report.tables.table import Heading, Table, TextColumn, text_table

AOT_SECTION = "aot-inductor"
AOT_COLUMNS: tuple[TextColumn, ...] = (
    "Task/Model", "Batch Size", "package", "load (s)", "start: package / JIT (s)",
    "median: package / JIT (ms)", "vs eager: package / JIT", "lead",
)  # fmt: skip
AOT_NOTE = (
    "package start: its first call over an eager call, less the export and compile done ahead "
    "(aoti_load_package in the timing process and the first run; the load alone where the row lacks "
    "compile_s). JIT start: the default mode's first call over an eager call with warm caches "
    "(compile_warm_s, from compile_cost: true), else with cold ones (compile_s, marked). lead: JIT start - "
    "package start. Per call, package - JIT: from each cell's paired speed-up over eager (eager / speed-up, "
    "the JIT cell's eager median; it cancels load that differs between the two cells' processes), else "
    "from the medians. The lead lasts lead / (package - JIT per call) calls when the package is slower per "
    "call; 'always' when it is no slower; 'never' when the JIT starts first and is no slower."
)


def lead_calls(lead_s: float, aot_ms: float, jit_ms: float) -> str:
    """How many calls the package's start-up lead lasts (see AOT_NOTE)."""
    slower_ms = aot_ms - jit_ms
    if lead_s >= 0 and slower_ms <= 0:
        return "always"
    if lead_s < 0 and slower_ms >= 0:
        return "never"
    calls = lead_s * 1000.0 / slower_ms  # both negative: the JIT's lead, overtaken after that many
    return f"{calls:,.0f} calls" if lead_s >= 0 else f"ahead after {calls:,.0f} calls"


def aot_tables(frame: pd.DataFrame) -> list[Table]:
    """One table per (device, GPU, build, dtype) with aot-inductor inference rows."""
    if "aot_load_s" not in frame or "mode" not in frame:
        return []
    rows = frame[(frame["scenario"] == "inference") & (frame["mode"].isin(("aot-inductor", "default")))]
    tables = []
    for (device, gpu, build, dtype), group in rows.groupby(
        ["device", "gpu_name", "build", "dtype"], sort=False
    ):
        aot = group[group["mode"] == "aot-inductor"]
        if aot.empty:
            continue
        heading = Heading(
            AOT_SECTION,
            f"Compiling ahead (AOTInductor) vs the JIT · {gpu} ({device}) · {build} · {dtype}",
            "The package's load and median beside the default mode's compile and median.",
            AOT_NOTE,
        )
        table = text_table(("aot-inductor", device, gpu, build, dtype), heading, AOT_COLUMNS)
        for _, a in aot.iterrows():
            jit = group[
                (group["mode"] == "default")
                & (group["model"] == a["model"])
                & (group["batch_size"] == a["batch_size"])
            ]
            table.add(*_row(a, jit.iloc[0] if len(jit) else None, device, gpu, build))
        tables.append(table)
    return tables


def _start_s(a: Any) -> float | None:
    """The package's start in the timing process: its first call over an eager call less the
    build done ahead (what compile_warm_s is for the JIT), else the load alone."""
    first, export, build, load = (
        number(a.get(c)) for c in ("compile_s", "aot_export_s", "aot_compile_s", "aot_load_s")
    )
    if None in (first, export, build):
        return load
    return first - export - build  # type: ignore[operator]


def per_call_ms(a: Any, jit: Any) -> float | None:
    """Package - JIT per call (ms): eager / speed-up of each, paired within its own cell, on the
    JIT cell's eager median; the medians' difference where a speed-up is missing."""
    s_aot, s_jit, eager = (
        number(r.get(c)) for r, c in ((a, "speedup"), (jit, "speedup"), (jit, "eager_median_ms"))
    )
    if s_aot and s_jit and eager:
        return eager / s_aot - eager / s_jit
    aot_ms, jit_ms = number(a.get("median_ms")), number(jit.get("median_ms"))
    return None if aot_ms is None or jit_ms is None else aot_ms - jit_ms


def _row(a: Any, jit: Any, device: str, gpu: str, build: str) -> tuple[dict[str, Any], list[str]]:
    context = {"task": a["task"], "model": a["model"], "batch size": a["batch_size"], "device": device}
    context |= {"GPU": gpu, "build": build, "status": a["status"]}
    label = [f"{a['task']}/{a['model']}", str(a["batch_size"])]
    if a["status"] != "ok":
        return context, [*label, f"{a['status']}: {a['error']}"[:100], "—", "—", "—", "—", "—"]
    load, mb, aot_ms = (number(a.get(c)) for c in ("aot_load_s", "aot_package_mb", "median_ms"))
    build_s = sum(x for x in (number(a.get("aot_export_s")), number(a.get("aot_compile_s"))) if x is not None)
    ok = jit is not None and jit["status"] == "ok"
    warm = number(jit.get("compile_warm_s")) if ok else None
    start = warm if warm is not None else (number(jit.get("compile_s")) if ok else None)
    aot_start = _start_s(a)
    jit_ms = number(jit.get("median_ms")) if ok else None
    slower_ms = per_call_ms(a, jit) if ok else None
    lead = "—"
    if None not in (aot_start, start, slower_ms):
        lead = lead_calls(start - aot_start, slower_ms, 0.0)  # type: ignore[operator]
    context |= {"aot_load_s": load, "aot_start_s": aot_start, "jit_start_s": start}
    context |= {"aot_median_ms": aot_ms, "jit_median_ms": jit_ms, "aot_minus_jit_ms": slower_ms}
    speedups = [number(a.get("speedup")), number(jit.get("speedup")) if ok else None]
    return context, [
        *label,
        f"{mb:.2f} MB, built in {build_s:.1f} s" if mb is not None else "—",
        "—" if load is None else f"{load:.3f}",
        ("—" if aot_start is None else f"{aot_start:.3f}")
        + " / "
        + ("—" if start is None else f"{start:.2f}" + ("" if warm is not None else " (cold)")),
        f"{aot_ms:.3g} / " + ("—" if jit_ms is None else f"{jit_ms:.3g}") if aot_ms is not None else "—",
        " / ".join("—" if x is None else f"{x:.2f}x" for x in speedups),
        lead,
    ]
