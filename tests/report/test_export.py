"""What other tools read of a merged run (docs/merge.md#exports): report.json and the CSV that
PyTorch's benchmarks/dynamo scripts write, each read back as its reader would."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

pd = pytest.importorskip("pandas")

from suite.report.export import DYNAMO_HEADER, write_dynamo_csvs, write_report_json  # noqa: E402


def _frame() -> object:
    base = {"run_id": "r1", "build": "stable", "device": "cuda", "gpu_name": "H100", "dtype": "float32"}
    base |= {
        "scenario": "inference",
        "batch_size": 4,
        "status": "ok",
        "dynamic": "",
        "torch_version": "2.0.1",
        "nightly_date": "20261126",
        "stop_rule": "ci<=2%",
    }
    rows = [
        {**base, "model": "ViT", "mode": "eager", "median_ms": 10.0, "peak_mem_mb": 800.0},
        {**base, "model": "ViT", "mode": "default", "median_ms": 5.0, "speedup": 2.0, "compile_s": 30.0}
        | {"peak_mem_mb": 1000.0},
        {**base, "model": "Mask 2", "mode": "default", "median_ms": 7.0, "speedup": 1.5, "compile_s": 40.0}
        | {"peak_mem_mb": 500.0},
        {**base, "model": "ViT", "mode": "reduce-overhead", "status": "error", "median_ms": float("nan")},
        {**base, "model": "ViT", "mode": "default", "scenario": "serving", "median_ms": 5.0},
    ]
    return pd.DataFrame(rows).astype(object).fillna("")


def test_the_dynamo_csv_reads_back(tmp_path: Path) -> None:
    (path,) = write_dynamo_csvs(_frame(), tmp_path)
    assert path.name == "stable_default_float32_inference_cuda_performance.csv"
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        assert tuple(reader.fieldnames or ()) == DYNAMO_HEADER
        rows = list(reader)
    vit, mask = rows
    assert (vit["dev"], vit["name"], vit["batch_size"]) == ("cuda", "ViT", "4")
    assert float(vit["speedup"]) == 2.0 and float(vit["abs_latency"]) == 5.0
    assert float(vit["compilation_latency"]) == 30.0
    assert float(vit["eager_peak_mem"]) == 0.8 and float(vit["dynamo_peak_mem"]) == 1.0  # GB
    assert float(vit["compression_ratio"]) == pytest.approx(0.8)
    assert mask["name"] == "Mask_2" and mask["eager_peak_mem"] == "" and mask["compression_ratio"] == ""
    # pandas, as the dashboard's scripts read it
    read = pd.read_csv(path)
    assert list(read.columns) == list(DYNAMO_HEADER) and read["speedup"].tolist() == [2.0, 1.5]


def test_report_json_is_config_plus_a_report_by_section(tmp_path: Path) -> None:
    path = write_report_json(_frame(), tmp_path, ["raw/stable__cuda.csv"])
    report = json.loads(path.read_text())
    assert report["format"] == "suite-report/2" and report["runs"] == ["r1"]
    assert report["inputs"] == ["raw/stable__cuda.csv"]
    config = report["config"]
    assert config["environment"]["torch_version"] == ["2.0.1"]
    # every provenance column, every setting of the CSV contract's group
    assert config["environment"]["nightly_date"] == ["20261126"]
    assert config["settings"]["stop_rule"] == ["ci<=2%"]
    rows = report["rows"]
    assert len(rows) == 5
    # each row: its cell and settings (the key section), then a report by section
    assert rows[1]["config"]["model"] == "ViT" and rows[1]["config"]["mode"] == "default"
    assert rows[1]["config"]["stop_rule"] == "ci<=2%"
    assert rows[1]["report"]["latency"] == {"median_ms": 5.0, "speedup": 2.0}
    assert rows[1]["report"]["compile"] == {"compile_s": 30.0}
    assert rows[1]["report"]["provenance"] == {"torch_version": "2.0.1", "nightly_date": "20261126"}
    # empty values are null; a section with no value at all (a failed row's latency) is left out
    assert rows[0]["report"]["latency"] == {"median_ms": 10.0, "speedup": None}
    assert "latency" not in rows[3]["report"] and rows[3]["report"]["outcome"] == {"status": "error"}


def test_a_report_row_keeps_what_is_no_column_and_every_column_once() -> None:
    from suite.report.export import report_row
    from suite.results import COLUMNS

    record = {c: "1" for c in COLUMNS} | {"source": "raw/x.csv:2"}
    row = report_row(record)
    assert row["source"] == "raw/x.csv:2"
    flat = [c for fields in (row["config"], *row["report"].values()) for c in fields]
    assert sorted(flat) == sorted(COLUMNS)
