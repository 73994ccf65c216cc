"""Images a second at a p99 latency target (the `serving` rows, docs/serving.md): per model, one
column per mode (eager, then the compile modes in the matrix's order), each cell the highest
Poisson arrival rate whose p99 latency, queueing included, met its target, with that trial's p99
and the rate over eager's.

Host side only (pandas). The figures are the rows' own.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from suite.report.tables.cells import number
from suite.report.tables.table import Heading, Table, text_table
from suite.spec.vocab import MODES, SERVING

SERVING_SECTION = "serving"
SERVING_NOTE = (
    "Each cell: the highest arrival rate (requests of one image, Poisson arrivals, or bursts where the "
    "row's serving_note says so) at which the p99 latency, queueing in the dynamic batcher included, "
    "stayed under the target · that rate's p99 / the target · the rate over eager's. The target is "
    "serving.p99_ms, else 5 x the eager batch-1 p99 measured in the cell's own process. Service "
    "times are real model calls; arrivals run on a virtual clock (docs/serving.md). 'none': no rate "
    "met the target, with the lowest rate tried and its p99, or, where a lone request's p99 (max_wait "
    "+ a batch-1 call's p99) was already over the target, that floor and no search. '>=': no rate above "
    "was tried before the time budget ran out (a lower bound)."
)
MODE_ORDER = MODES  # eager, the compile modes, aot-inductor


def _cell(row: Any, eager_rate: float | None) -> str:
    if row is None:
        return "—"
    if row["status"] != "ok":
        return f"{row['status']}: {row['error']}"[:100]
    rate, p99, target = (
        number(row.get(c)) for c in ("serving_rate_per_s", "serving_p99_ms", "serving_target_ms")
    )
    if rate is None:
        return "—"
    if not rate and target is not None:
        return _none(row, target)
    bounded = (
        number(row.get("serving_failed_rate_per_s")) is not None or "serving_failed_rate_per_s" not in row
    )
    text = f"{rate:.4g}/s" if bounded else f">= {rate:.4g}/s"  # no rate above it was tried: a lower bound
    if p99 is not None and target is not None:
        text += f" (p99 {p99:.3g} / {target:.3g} ms)"
    elif target is not None:
        text += f" (target {target:.3g} ms)"
    if row["mode"] != "eager" and eager_rate and rate:
        text += f" · {rate / eager_rate:.2f}x"
    return text


def _none(row: Any, target: float) -> str:
    """No rate met the target: why, from the row's floor and lowest trial."""
    floor, lowest, lowest_p99 = (
        number(row.get(c)) for c in ("serving_floor_ms", "serving_lowest_rate_per_s", "serving_lowest_p99_ms")
    )
    if lowest is not None and lowest_p99 is not None:
        return f"none: p99 {lowest_p99:.3g} ms at {lowest:.4g}/s, the lowest tried (target {target:.3g} ms)"
    if floor is not None and floor > target:
        return f"none: a lone request's p99 {floor:.3g} ms > target {target:.3g} ms"
    return f"none (target {target:.3g} ms)"


def serving_tables(frame: pd.DataFrame) -> list[Table]:
    """One table per (device, GPU, build, dtype) of the serving rows."""
    if "scenario" not in frame or "serving_rate_per_s" not in frame:
        return []
    rows = frame[frame["scenario"] == SERVING]
    tables = []
    for (device, gpu, build, dtype), group in rows.groupby(
        ["device", "gpu_name", "build", "dtype"], sort=False
    ):
        present = set(group["mode"])
        modes = [m for m in MODE_ORDER if m in present] + sorted(present - set(MODE_ORDER))
        heading = Heading(
            SERVING_SECTION,
            f"Images a second at a p99 target · {gpu} ({device}) · {build} · {dtype}",
            "Highest arrival rate whose p99 latency met the target, per model and mode.",
            SERVING_NOTE,
        )
        columns = ["Task/Model", *((f"{m}: images/s (p99 / target) · vs eager", m) for m in modes)]
        table = text_table(("serving", device, gpu, build, dtype), heading, columns)
        for (task, model), by_model in group.groupby(["task", "model"], sort=False):
            by_mode = {r["mode"]: r for _, r in by_model.iterrows()}
            eager = by_mode.get("eager")
            eager_rate = (
                number(eager.get("serving_rate_per_s"))
                if eager is not None and eager["status"] == "ok"
                else None
            )
            context = {
                "task": task,
                "model": model,
                "device": device,
                "GPU": gpu,
                "build": build,
                "dtype": dtype,
            }
            for m in modes:
                r = by_mode.get(m)
                context[f"{m}_images_per_s"] = number(r.get("serving_rate_per_s")) if r is not None else None
            table.add(context, [f"{task}/{model}", *(_cell(by_mode.get(m), eager_rate) for m in modes)])
        tables.append(table)
    return tables
