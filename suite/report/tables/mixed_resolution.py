"""Image sizes that change: the `mixed-resolution` rows (docs/mixed-resolution.md), one table per
device, GPU, build and compile mode; a row per model and `dynamic` setting.

Host side only (pandas). The figures are the rows' own.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from suite.report.tables.cells import number
from suite.report.tables.table import Heading, Table, TextColumn, text_table
from suite.spec.vocab import DYNAMIC_SETTINGS, MIXED_RESOLUTION

MIXED_SECTION = "mixed resolution"
MIXED_COLUMNS: tuple[TextColumn, ...] = (
    "Task/Model", "sizes", "dynamic", ("first compile (s)", "compile_s"), "recompiles",
    ("compile after first (s)", "mixed_compile_s"), ("re-records", "mixed_cudagraph_records"),
    ("fixed p50 / p99", "fixed"), ("mixed p50 / p99", "mixed"), ("mixed eager p50 / p99", "mixed_eager"),
)  # fmt: skip
MIXED_NOTE = (
    "One process per setting serves the image sizes in turn, then the first again, with one compiled "
    "model: static = torch.compile(dynamic=False); auto = torch's default; marked = the default plus "
    "mark_dynamic on the pixels' height and width. first compile: the first size's (s). recompiles: graphs "
    "dynamo compiled after it; compile after first: the seconds those cost; re-records: CUDA graphs recorded "
    "after the first size (reduce-overhead on a GPU). fixed: the compiled model at the first size alone; "
    "mixed: every size round-robin (compiled, then eager), p50 / p99 ms. The raw CSV's mixed_note has "
    "dynamo's reason for each graph."
)


def _pair(row: Any, p50: str, p99: str) -> str:
    a, b = number(row.get(p50)), number(row.get(p99))
    return "—" if a is None or b is None else f"{a:.3g} / {b:.3g}"


def _values(row: Any) -> list[str]:
    if row["status"] != "ok":
        return [f"{row['status']}: {row['error']}"[:100], *["—"] * 6]
    compile_s, after = number(row.get("compile_s")), number(row.get("mixed_compile_s"))
    records, recompiles = number(row.get("mixed_cudagraph_records")), number(row.get("recompiles"))
    return [
        "—" if compile_s is None else f"{compile_s:.2f}",
        "—" if recompiles is None else str(int(recompiles)),
        "—" if after is None else f"{after:.2f}",
        "—" if records is None else str(int(records)),
        _pair(row, "fixed_p50_ms", "fixed_p99_ms"),
        _pair(row, "mixed_p50_ms", "mixed_p99_ms"),
        _pair(row, "mixed_eager_p50_ms", "mixed_eager_p99_ms"),
    ]


def mixed_resolution_tables(frame: pd.DataFrame) -> list[Table]:
    """One table per (device, GPU, build, dtype, compile mode) of the mixed-resolution rows."""
    if "scenario" not in frame or "mixed_sizes" not in frame:
        return []
    rows = frame[frame["scenario"] == MIXED_RESOLUTION]
    tables = []
    keys = ["device", "gpu_name", "build", "dtype", "mode"]
    for (device, gpu, build, dtype, mode), group in rows.groupby(keys, sort=False):
        heading = Heading(
            MIXED_SECTION,
            f"Image sizes that change · {gpu} ({device}) · {build} · {dtype} · mode {mode}",
            "One process per dynamic setting serving a fixed sequence of image sizes.",
            MIXED_NOTE,
        )
        table = text_table(("mixed-resolution", device, gpu, build, dtype, mode), heading, MIXED_COLUMNS)
        order = {d: i for i, d in enumerate(DYNAMIC_SETTINGS)}
        group = group.assign(_d=group["dynamic"].map(order).fillna(len(order)))
        for _, r in group.sort_values(["task", "model", "batch_size", "_d"], kind="stable").iterrows():
            context = {"task": r["task"], "model": r["model"], "device": device, "GPU": gpu, "build": build}
            context |= {
                "mode": mode,
                "dynamic": r["dynamic"],
                "batch size": r["batch_size"],
                "status": r["status"],
            }
            label = f"{r['task']}/{r['model']}" + (
                f" bs={r['batch_size']}" if str(r["batch_size"]) != "1" else ""
            )
            table.add(context, [label, str(r.get("mixed_sizes") or "—"), r["dynamic"], *_values(r)])
        tables.append(table)
    return tables
