"""What other tools read of a merged run (docs/merge.md#exports): `report.json` (the run's
config: its settings and environment; and every row as its cell's config and a report by
section, as optimum-benchmark users expect a config-and-report JSON) and the CSV that PyTorch's
benchmarks/dynamo scripts write per suite and compile mode (`dev,name,batch_size,speedup,
abs_latency,compilation_latency,compression_ratio,eager_peak_mem,dynamo_peak_mem`), so the dynamo
dashboard's tools can read a night.

Host side only (pandas).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd

from suite.measure.provenance import PROVENANCE_COLUMNS
from suite.results import slug
from suite.results.columns import SETTING_COLUMNS
from suite.results.layout import OTHER, nest
from suite.results.sections import key

REPORT_JSON = "report.json"
REPORT_FORMAT = "suite-report/2"  # /1: each row flat, settings and environment at the top
DYNAMO_DIR = "dynamo"
# The header benchmarks/dynamo/common.py writes for a performance run with compile figures
DYNAMO_HEADER: tuple[str, ...] = (
    "dev",
    "name",
    "batch_size",
    "speedup",
    "abs_latency",
    "compilation_latency",
    "compression_ratio",
    "eager_peak_mem",
    "dynamo_peak_mem",
)
# A row's settings (the same for every cell of a run, as a rule) and its environment
SETTINGS: tuple[str, ...] = ("weights", *SETTING_COLUMNS)
ENVIRONMENT: tuple[str, ...] = PROVENANCE_COLUMNS


def _plain(value: Any) -> Any:
    """A JSON value: NaN and infinities as null, numpy scalars as Python's."""
    if hasattr(value, "item"):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _distinct(frame: pd.DataFrame, columns: tuple[str, ...]) -> dict[str, list[Any]]:
    """Each column's distinct non-empty values, in the order they first appear."""
    out: dict[str, list[Any]] = {}
    for c in columns:
        if c in frame:
            values = [_plain(v) for v in dict.fromkeys(frame[c].tolist()) if v not in ("", None)]
            out[c] = [v for v in values if v is not None]
    return out


def report_row(record: dict[str, Any]) -> dict[str, Any]:
    """One row as report.json holds it: what is no column (its `source`) as is, `config` (the key
    and settings section: which cell, run how) and `report` (every other section the row has a
    value in, each with all its columns; empty values as null)."""
    plain = {k: (None if v == "" else _plain(v)) for k, v in record.items()}
    sections = nest(plain)
    others = sections.pop(OTHER, {})
    config = sections.pop(key.SECTION.name, {})
    report = {
        name: fields for name, fields in sections.items() if any(v is not None for v in fields.values())
    }
    return {**others, "config": config, "report": report}


def write_report_json(frame: pd.DataFrame, folder: Path, inputs: list[str]) -> Path:
    """`report.json`: the inputs and runs, the config (each setting's and each environment
    column's distinct values) and every row the merge used, by section (`report_row`)."""
    report = {
        "format": REPORT_FORMAT,
        "inputs": inputs,
        "runs": _distinct(frame, ("run_id",)).get("run_id", []),
        "config": {"settings": _distinct(frame, SETTINGS), "environment": _distinct(frame, ENVIRONMENT)},
        "rows": [report_row(record) for record in frame.to_dict("records")],
    }
    path = folder / REPORT_JSON
    path.write_text(json.dumps(report, indent=1, sort_keys=False) + "\n")
    return path


def _gb(mb: Any) -> float | None:
    value = _plain(mb)
    return None if value in ("", None) else float(value) / 1000.0


def _dynamo_row(row: Any, eager: Any) -> dict[str, Any]:
    eager_mb = _gb(eager["peak_mem_mb"]) if eager is not None else None
    compiled_mb = _gb(row["peak_mem_mb"])
    ratio = eager_mb / compiled_mb if eager_mb and compiled_mb else None
    return {
        "dev": row["device"],
        "name": str(row["model"]).replace(" ", "_"),
        "batch_size": int(row["batch_size"]),
        "speedup": _plain(row["speedup"]),
        "abs_latency": _plain(row["median_ms"]),
        "compilation_latency": _plain(row["compile_s"]),
        "compression_ratio": ratio,
        "eager_peak_mem": eager_mb,
        "dynamo_peak_mem": compiled_mb,
    }


def write_dynamo_csvs(frame: pd.DataFrame, folder: Path) -> list[Path]:
    """One CSV per (build, device, dtype, scenario, compile mode) of the ok compiled inference and
    train rows, named as the dynamo scripts name theirs
    (`<build>_<mode>_<dtype>_<inference|training>_<device>_performance.csv`); memory in GB as theirs,
    the eager peak from the same cell's eager row (empty where there is none)."""
    rows = frame[
        (frame["status"] == "ok")
        & (frame["mode"] != "eager")
        & frame["scenario"].isin(("inference", "train"))
    ]
    if "dynamic" in rows:
        rows = rows[rows["dynamic"].fillna("") == ""]
    out_dir = folder / DYNAMO_DIR
    for old in out_dir.glob("*_performance.csv"):
        old.unlink()
    written = []
    keys = ["build", "device", "dtype", "scenario", "mode"]
    for (build, device, dtype, scenario, mode), group in rows.groupby(keys, sort=False):
        out = []
        for _, r in group.iterrows():
            same = frame[
                (frame["build"] == build) & (frame["device"] == device) & (frame["model"] == r["model"])
                & (frame["batch_size"] == r["batch_size"]) & (frame["dtype"] == dtype)
                & (frame["scenario"] == scenario) & (frame["mode"] == "eager") & (frame["status"] == "ok")
            ]  # fmt: skip
            out.append(_dynamo_row(r, same.iloc[0] if len(same) else None))
        kind = "training" if scenario == "train" else "inference"
        name = "_".join(slug(str(p)) for p in (build, mode, dtype, kind, device)) + "_performance.csv"
        out_dir.mkdir(parents=True, exist_ok=True)
        path = out_dir / name
        pd.DataFrame(out, columns=list(DYNAMO_HEADER)).to_csv(path, index=False, float_format="%.6g")
        written.append(path)
    return written
