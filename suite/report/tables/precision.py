"""The precision tables, two of them, read off the merged rows: "what reduced precision and compiling change
in the answer" (the `precision` rows: the task's agreement with float32 eager, the parity
verdict, and each precision's speed over float32 eager) and "what compiling saves per
request" (the `pipeline` rows: each stage's median, the end-to-end medians and the speed-up of
compiling on the whole request beside the forward-only one).

Host side only (pandas). The figures are the rows' own; a speed-up over float32 eager is the
ratio of two cells' medians (two processes), the pipeline's speed-ups are paired (one process).
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from suite.measure.parity import TIED
from suite.report.tables.cells import number
from suite.report.tables.table import Heading, Table, TextColumn, text_table
from suite.spec.vocab import DTYPES, PIPELINE, PRECISION

PRECISION_SECTION, PIPELINE_SECTION = "precision", "pipeline"
PARITY_NOTE = (
    "Each cell's answers on the same inputs (the photograph and five crops, flips and rescales of it, "
    "x the batch) against float32 eager's: classification, top-1 agreement · share of the top-5 kept; "
    "detection, mean IoU of float32 eager's 10 most confident boxes with their matches · share with the "
    "same label; segmentation, mean IoU of the label maps. parity: the task's rule (the parity_* "
    'settings of matrix.yaml; "+ ties": top-1 changes between classes that are one number in the '
    "cell's dtype, counted as agreeing, the row's parity_note says how many). autocast-<dtype>: "
    "float32 weights and inputs, each call under "
    "torch.autocast to <dtype> (its diff bound is <dtype>'s). "
    "vs fp32 eager: float32 eager's median / this cell's (two processes). "
    "With random weights (smoke runs) agreement tests the numerics, not the task's quality."
)
PIPELINE_NOTE = (
    "Medians per request (batch-size images, each decoded photo preprocessed), stages and whole request "
    "timed interleaved in the compiled cell's process: pre = the model's processor, pre fast = its fast "
    "variant (— where this build has none: the row's pre_fast_note says why), post = the task's "
    "post-processing. forward: the row's interleaved eager and compiled forwards (the inference "
    "figures); the stages' own forward is the raw CSV's forward_median_ms. speed-up: paired eager / "
    "compiled median with its 95% CI, of the forward alone and "
    "of the whole request (preprocess with the model's processor, forward, post-process)."
)


def _f(value: Any) -> str:
    """A difference: three significant digits."""
    x = number(value)
    return "—" if x is None else f"{x:.3g}"


def _rate(value: Any) -> str:
    """An agreement rate (0 to 1): two decimals."""
    x = number(value)
    return "—" if x is None else f"{x:.2f}"


def _ms(value: Any) -> str:
    x = number(value)
    return "—" if x is None else f"{x:.3f}"


def _gain(ratio: Any, low: Any, high: Any) -> str:
    r = number(ratio)
    if r is None:
        return "—"
    lo, hi = number(low), number(high)
    interval = f" [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
    return f"{r:.2f}x{interval}"


def _rows(frame: pd.DataFrame, scenario: str) -> pd.DataFrame:
    return frame[frame["scenario"] == scenario]


def _status(row: Any) -> dict[str, Any]:
    return {"status": row["status"], "why": row["error"]}


def _agreement(row: Any) -> str:
    task = row["task"]
    if task == "Image Classification":
        ties = " + ties" if TIED in str(row.get("parity_note") or "") else ""
        return f"top-1 {_rate(row['parity_top1'])}{ties} · top-5 {_rate(row['parity_top5'])}"
    if task == "Object Detection":
        return f"box IoU {_rate(row['parity_box_iou'])} · labels {_rate(row['parity_labels'])}"
    return f"mask IoU {_rate(row['parity_mask_iou'])}"


def precision_tables(frame: pd.DataFrame) -> list[Table]:
    """One table per (device, GPU, build, batch size) of the precision rows."""
    rows = _rows(frame, PRECISION)
    tables = []
    for (device, gpu, build, bs), group in rows.groupby(
        ["device", "gpu_name", "build", "batch_size"], sort=False
    ):
        heading = Heading(
            PRECISION_SECTION,
            f"What reduced precision and compiling change in the answer · {gpu} ({device}) · {build} · "
            f"batch size {bs}",
            "Against float32 eager on the same inputs, per model, compile mode and dtype.",
            PARITY_NOTE,
        )
        table = text_table(("precision", device, gpu, build, f"bs{bs}"), heading, PRECISION_COLUMNS)
        order = group.assign(
            _mode=(group["mode"] != "eager").astype(int),
            _dtype=group["dtype"].map({d: i for i, d in enumerate(DTYPES)}).fillna(len(DTYPES)),
        )
        keys = ["task", "model", "_mode", "mode", "_dtype"]
        for _, r in order.sort_values(keys, kind="stable").iterrows():
            base = group[
                (group["model"] == r["model"]) & (group["mode"] == "eager") & (group["dtype"] == "float32")
            ]
            ok = r["status"] == "ok"
            fp32 = number(base.iloc[0]["median_ms"]) if len(base) and base.iloc[0]["status"] == "ok" else None
            median = number(r["median_ms"]) if ok else None
            speed = fp32 / median if fp32 and median else None
            word = r["status"] if not ok else (r["parity"] or "—")
            table.add(
                {
                    "task": r["task"],
                    "model": r["model"],
                    "device": device,
                    "GPU": gpu,
                    "build": build,
                    "batch size": bs,
                    "mode": r["mode"],
                    "dtype": r["dtype"],
                    "status": r["status"],
                    **{c: r.get(c) for c in PARITY_COLUMNS},
                    "median_ms": median,
                    "speedup_vs_fp32_eager": speed,
                    "why": r["error"] if not ok else "",
                },
                [
                    f"{r['task']}/{r['model']}",
                    r["mode"],
                    r["dtype"],
                    word if ok else f"{word}: {r['error']}"[:120],
                    _agreement(r) if ok else "—",
                    _f(r["parity_max_abs_diff"]) if ok else "—",
                    _ms(median),
                    "—" if speed is None else f"{speed:.2f}x",
                ],
            )
        tables.append(table)
    return tables


PARITY_COLUMNS = (
    "parity",
    "parity_inputs",
    "parity_top1",
    "parity_top5",
    "parity_box_iou",
    "parity_labels",
    "parity_mask_iou",
    "parity_max_abs_diff",
)
STAGES = ("pre", "pre_fast", "forward", "post", "e2e")
PRECISION_COLUMNS: tuple[TextColumn, ...] = (
    "Task/Model", "mode", "dtype", "parity", ("agreement with fp32 eager", "agreement"),
    ("max abs diff", "max_abs_diff"), ("median (ms)", "median_ms"), ("vs fp32 eager", "vs_fp32_eager"),
)  # fmt: skip
PIPELINE_COLUMNS: tuple[TextColumn, ...] = (
    "Task/Model", "Batch Size", "pre", ("pre fast", "pre_fast"), ("forward eager → compiled", "forward"),
    "post", ("request eager → compiled", "e2e"), ("speed-up: forward", "speedup"),
    ("speed-up: request", "e2e_speedup"),
)  # fmt: skip


def pipeline_tables(frame: pd.DataFrame) -> list[Table]:
    """One table per (device, GPU, build, dtype, compile mode) of the compiled pipeline rows."""
    rows = _rows(frame, PIPELINE)
    rows = rows[rows["mode"] != "eager"]
    tables = []
    keys = ["device", "gpu_name", "build", "dtype", "mode"]
    for (device, gpu, build, dtype, mode), group in rows.groupby(keys, sort=False):
        heading = Heading(
            PIPELINE_SECTION,
            f"What compiling saves per request · {gpu} ({device}) · {build} · {dtype} · mode {mode}",
            "One request from a decoded image to the task's answer, per stage (median ms).",
            PIPELINE_NOTE,
        )
        table = text_table(("pipeline", device, gpu, build, dtype, mode), heading, PIPELINE_COLUMNS)
        for _, r in group.sort_values(["task", "model", "batch_size"], kind="stable").iterrows():
            ok = r["status"] == "ok"
            label = f"{r['task']}/{r['model']}"
            if not ok:
                table.add(
                    {
                        "task": r["task"],
                        "model": r["model"],
                        "batch size": r["batch_size"],
                        "status": r["status"],
                    },
                    [label, str(r["batch_size"]), r["status"], "—", "—", "—", "—", "—", "—"],
                )
                continue
            context = {
                "task": r["task"],
                "model": r["model"],
                "device": device,
                "GPU": gpu,
                "build": build,
                "dtype": dtype,
                "mode": mode,
                "batch size": r["batch_size"],
                "status": r["status"],
                **{f"{s}_median_ms": number(r[f"{s}_median_ms"]) for s in STAGES},
                "forward_eager_median_ms": number(r["eager_median_ms"]),
                "forward_compiled_median_ms": number(r["median_ms"]),
                "e2e_eager_median_ms": number(r["e2e_eager_median_ms"]),
                "speedup": number(r["speedup"]),
                "e2e_speedup": number(r["e2e_speedup"]),
                "e2e_speedup_ci95_low": number(r["e2e_speedup_ci95_low"]),
                "e2e_speedup_ci95_high": number(r["e2e_speedup_ci95_high"]),
                "pre_fast_note": r["pre_fast_note"],
            }
            table.add(
                context,
                [
                    label,
                    str(r["batch_size"]),
                    _ms(r["pre_median_ms"]),
                    _ms(r["pre_fast_median_ms"]),
                    f"{_ms(r['eager_median_ms'])} → {_ms(r['median_ms'])}",
                    _ms(r["post_median_ms"]),
                    f"{_ms(r['e2e_eager_median_ms'])} → {_ms(r['e2e_median_ms'])}",
                    _gain(r["speedup"], r["speedup_ci95_low"], r["speedup_ci95_high"]),
                    _gain(r["e2e_speedup"], r["e2e_speedup_ci95_low"], r["e2e_speedup_ci95_high"]),
                ],
            )
        tables.append(table)
    return tables
