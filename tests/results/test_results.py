"""The CSV contract and the crash-safe writer."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from suite import results
from suite.results import COLUMNS, CONTRACT_COLUMNS, RowWriter, read_rows

DESIGN_COLUMNS = """run_id, build, device, gpu_name, task, model, model_id, weights, batch_size, mode,
dtype, scenario, status, error, iterations, mean_ms, median_ms, p10_ms, p90_ms, std_ms, min_ms,
ci95_low_ms, ci95_high_ms, eager_median_ms, speedup, speedup_ci95_low, speedup_ci95_high,
compile_s, graph_breaks, recompiles, max_abs_diff, accuracy, peak_mem_mb, params_m,
torch_version, torch_git, cuda_version, cudnn_version, triton_version, transformers_version,
python_version, driver_version, image, suite_version, started_at, wall_s"""


def row(**kw: object) -> dict[str, object]:
    base = {
        "run_id": "r",
        "build": "stable",
        "device": "cpu",
        "model": "ViT",
        "status": "ok",
        "median_ms": 1.5,
        "error": "",
    }
    base.update(kw)
    return base


def test_contract_columns_are_the_design_columns_in_order() -> None:
    expected = tuple(c.strip() for c in DESIGN_COLUMNS.replace("\n", " ").split(","))
    assert expected == CONTRACT_COLUMNS
    assert COLUMNS[: len(CONTRACT_COLUMNS)] == CONTRACT_COLUMNS
    assert len(set(COLUMNS)) == len(COLUMNS)


def test_writer_writes_header_once_and_appends(tmp_path: Path) -> None:
    path = tmp_path / "raw" / "b__cpu.csv"
    with RowWriter(path) as w:
        w.append(row())
    with RowWriter(path) as w:
        w.append(row(model="BeiT", status="error", error="boom\nsecond line", median_ms=None))
    lines = path.read_text().splitlines()
    assert lines[0].split(",") == list(COLUMNS)
    assert len(lines) == 3
    got = read_rows(path)
    assert [r["model"] for r in got.rows] == ["ViT", "BeiT"]
    assert got.rows[1]["error"] == "boom second line"  # one line, always
    assert got.rows[1]["median_ms"] == ""


def test_values_are_plain(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    with RowWriter(path) as w:
        w.append(row(median_ms=float("nan"), speedup=1.234567891, accuracy=True, batch_size=4))
    r = read_rows(path).rows[0]
    assert r["median_ms"] == "" and r["speedup"] == "1.23457" and r["accuracy"] == "true"
    assert r["batch_size"] == "4"


def test_writer_rejects_unknown_status_and_columns(tmp_path: Path) -> None:
    with RowWriter(tmp_path / "x.csv") as w:
        with pytest.raises(ValueError):
            w.append(row(status="fine"))
        with pytest.raises(KeyError):
            w.append(row(colour="red"))


def test_torn_last_line_is_cut_on_open_and_reported(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    with RowWriter(path) as w:
        w.append(row())
    with open(path, "a") as fh:
        fh.write("r,stable,cpu,half a ro")  # a writer killed mid-row
    partial = read_rows(path)
    assert len(partial.rows) == 1 and partial.repaired == 1
    with RowWriter(path) as w:
        assert w.repaired_bytes == len("r,stable,cpu,half a ro")
        w.append(row(model="BeiT"))
    again = read_rows(path)
    assert [r["model"] for r in again.rows] == ["ViT", "BeiT"] and again.repaired == 0
    with open(path, newline="") as fh:
        assert all(len(r) == len(COLUMNS) for r in csv.reader(fh))


def test_a_file_killed_before_its_header_was_whole_reads_as_empty(tmp_path: Path) -> None:
    # a run killed between creating its file and writing the header, then a torn row appended
    # (a power cut): one line and no newline, no header to refuse
    path = tmp_path / "x.csv"
    path.write_text("k,stub,cpu,stub,Image Classification,TinyViT,vit (con")
    torn = read_rows(path)
    assert torn.rows == [] and torn.repaired == 1 and "partial first line" in torn.problems[0]
    with RowWriter(path) as w:  # the next run cuts it and writes its header
        w.append(row())
    assert [r["model"] for r in read_rows(path).rows] == ["ViT"]


def test_reader_reports_bad_rows(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    with RowWriter(path) as w:
        w.append(row())
    with open(path, "a") as fh:
        fh.write("too,few,fields\n")
        fh.write(",".join("weird" if c == "status" else "" for c in COLUMNS) + "\n")
    got = read_rows(path)
    assert len(got.rows) == 1 and got.skipped == 2
    assert any("3 fields" in p for p in got.problems)
    assert any("unknown status 'weird'" in p for p in got.problems)


def test_a_nul_byte_makes_a_row_unreadable_on_every_python(tmp_path: Path) -> None:
    # Python 3.10's csv refuses a NUL, 3.11's reads it into the field: a damaged build or
    # model name would then count as a cell of its own on resume
    path = tmp_path / "x.csv"
    with RowWriter(path) as w:
        w.append(row())
    line = path.read_text().splitlines()[1]
    with open(path, "a") as fh:
        fh.write("\x00" + line + "\n")
    got = read_rows(path)
    assert len(got.rows) == 1 and got.skipped == 1
    assert any("NUL byte" in p for p in got.problems)


def test_reader_rejects_a_file_without_the_contract_header(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(results.CsvFormatError, match="lacks column"):
        read_rows(path)


def test_writer_refuses_a_header_from_another_version(tmp_path: Path) -> None:
    path = tmp_path / "x.csv"
    path.write_text(",".join(CONTRACT_COLUMNS) + "\n")
    with pytest.raises(results.CsvFormatError, match="new --run-id"):
        RowWriter(path)


def test_raw_csv_names() -> None:
    assert results.raw_csv_name("stable", "NVIDIA H100 80GB HBM3") == "stable__nvidia-h100-80gb-hbm3.csv"
    assert results.raw_csv_name("nightly", "cpu", "2/4") == "nightly__cpu__shard-2-of-4.csv"


STAGES, STAGE_FIGURES = ("pre", "pre_fast", "forward", "post", "e2e"), ("median", "ci95_low", "ci95_high")


def test_column_groups_come_from_the_one_table() -> None:
    """Each group a reader or writer uses is the table's, in the table's order."""
    # the contract's measured columns, then the compile-cost figures (extras)
    compile_cost = (
        "compile_warm_s", "compile_megacache_s", "first_result_s", "eager_first_result_s", "breakeven_calls",
        "breakeven_calls_warm",
    )  # fmt: skip
    contract = (
        "iterations", "mean_ms", "median_ms", "p10_ms", "p90_ms", "std_ms", "min_ms", "ci95_low_ms",
        "ci95_high_ms", "eager_median_ms", "speedup", "speedup_ci95_low", "speedup_ci95_high", "compile_s",
        "graph_breaks", "recompiles", "max_abs_diff", "accuracy",
    )  # fmt: skip
    # where compile time, memory and energy go (extras): measured, emptied on a failed row
    issue_29 = (
        "phase_dynamo_s", "phase_pre_aot_s", "phase_aot_s", "phase_lowering_s", "phase_codegen_s",
        "phase_kernels_s", "phase_autotune_s", "phase_cudagraphs_s", "phase_other_s", "graphs", "guards",
        "recompile_reasons", "cudagraph_records", "cudagraph_record_s", "cudagraph_pool_mb",
        "cudagraph_extra_mb", "idle_power_w", "eager_j_per_image", "compiled_j_per_image", "energy_ratio",
    )  # fmt: skip
    # the task's answer against float32 eager, and the request per stage
    stages = tuple(f"{s}_{f}_ms" for s in STAGES for f in STAGE_FIGURES)
    issue_28 = (
        "parity", "parity_inputs", "parity_top1", "parity_top5", "parity_box_iou", "parity_labels",
        "parity_mask_iou", "parity_max_abs_diff", "parity_scaled_diff", "parity_diff_bound", *stages,
        "e2e_eager_median_ms", "e2e_speedup", "e2e_speedup_ci95_low", "e2e_speedup_ci95_high",
    )  # fmt: skip
    # the stopping rule, per row; processes per cell
    issue_27 = (
        "calls", "stop_reason", "timed_s", "processes", "process_spread_pct", "warm_compile_s",
        "run_noise_pct", "rerun95_low_ms", "rerun95_high_ms", "speedup_noise_pct", "speedup_rerun95_low",
        "speedup_rerun95_high",
    )  # fmt: skip
    # serving, mixed resolutions, aot-inductor
    issue_40 = (
        "serving_target_ms", "serving_rate_per_s", "serving_throughput_per_s", "serving_p50_ms",
        "serving_p90_ms", "serving_p99_ms", "serving_dropped", "serving_requests", "serving_mean_batch",
        "serving_trials", "mixed_compile_s", "mixed_cudagraph_records", "mixed_p50_ms", "mixed_p99_ms",
        "mixed_eager_p50_ms", "mixed_eager_p99_ms", "fixed_p50_ms", "fixed_p99_ms", "mixed_max_abs_diff",
        "aot_export_s", "aot_compile_s", "aot_load_s", "aot_package_mb", "aot_packages",
    )  # fmt: skip
    # latency beside throughput, the switch penalty, the host's speed, the phases' remainder
    issue_38 = (
        "throughput_ms", "throughput_ci95_low_ms", "throughput_ci95_high_ms", "eager_throughput_ms",
        "eager_throughput_ci95_low_ms", "eager_throughput_ci95_high_ms", "throughput_speedup",
        "throughput_speedup_ci95_low", "throughput_speedup_ci95_high", "throughput_blocks", "block_calls",
        "switch_penalty_pct", "eager_switch_penalty_pct", "host_probe_us", "host_speed_moved_pct",
        "phase_first_run_s",
    )  # fmt: skip
    # why a serving search found no rate
    serving_why = (
        "serving_floor_ms", "serving_lowest_rate_per_s", "serving_lowest_p99_ms", "serving_failed_rate_per_s",
    )  # fmt: skip
    # the device's share of a call on CUDA; two builds timed side by side (docs/pairs.md)
    device_time = ("device_ms", "host_ms", "eager_device_ms", "eager_host_ms")
    pair = ("pair_rounds", *(
        f"pair_{name}{end}"
        for name in ("latency", "throughput", "eager_latency", "eager_throughput", "speedup")
        for end in ("", "_ci95_low", "_ci95_high")
    ), "pair_compile_time_ratio")  # fmt: skip
    # the accuracy rule's numbers, what its reference and its pass ran with (docs/accuracy.md)
    accuracy_rule = (
        "accuracy_rmse", "accuracy_rmse_eager", "accuracy_multiplier", "accuracy_cosine", "accuracy_spread",
        "accuracy_reference", "accuracy_context",
    )  # fmt: skip
    assert tuple(results.TIMING_COLUMNS) == (
        *contract, *compile_cost, *issue_29, *issue_28, *issue_27, *issue_40, *issue_38, *serving_why,
        *device_time, *pair, *accuracy_rule,
    )  # fmt: skip
    # a dynamic-batch cell owes one row per (setting, batch size): `dynamic` is in both keys
    assert results.KEY_COLUMNS == (
        "build", "device", "model", "model_id", "weights", "batch_size", "mode", "dtype", "scenario",
        "dynamic",
    )  # fmt: skip
    # across runs: the order a comparison lists cells in, build first
    assert results.CELL_COLUMNS == (
        "build", "task", "model", "batch_size", "mode", "dtype", "scenario", "weights", "variant", "device",
        "gpu_name", "dynamic",
    )  # fmt: skip
    assert COLUMNS[len(CONTRACT_COLUMNS) :] == results.EXTRA_COLUMNS
    extras = set(compile_cost) | set(issue_29) | set(issue_28) | set(issue_27) | set(issue_40) | set(issue_38)
    extras |= set(serving_why) | set(device_time) | set(pair) | set(accuracy_rule)
    assert set(results.TIMING_COLUMNS) - extras <= set(CONTRACT_COLUMNS)
    ranks = sorted(c.cell for c in results.TABLE if c.cell)
    assert ranks == list(range(1, len(ranks) + 1)), "cell ranks: 1, 2, ... once each"
    for col in results.TABLE:
        assert col.kind in (results.TEXT, results.INT, results.NUMBER), col
        assert col.required in ("", results.ALWAYS, results.WHEN_OK), col
        assert not col.positive or col.kind != results.TEXT, col
        assert not col.key or col.contract or col.name == "dynamic", col


def test_statuses_and_their_groups() -> None:
    assert results.STATUSES == ("ok", "oom", "error", "timeout", "skipped")
    assert results.FAILED_STATUSES == ("oom", "error", "timeout")  # skipped: not run, not failed
    assert {"ok", "oom"} == results.DONE_STATUSES  # what a resumed run keeps
    assert results.STATUS_WORDS == {
        "ok": "ok", "oom": "OOM", "error": "error", "timeout": "timeout", "skipped": "skipped",
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["pipe", "folder"])
def test_a_pipe_or_folder_in_a_csvs_place_is_refused_not_read(tmp_path: Path, kind: str) -> None:
    """merge and compare read every raw/*.csv: a pipe there used to block them forever (in a
    child with a timeout, which a blocking open would hit)."""
    path = tmp_path / "raw.csv"
    if kind == "pipe":
        os.mkfifo(path)
    else:
        path.mkdir()
    code = "import sys; from pathlib import Path; from suite.results import read_rows\n"
    code += "try:\n    read_rows(Path(sys.argv[1]))\nexcept OSError as exc:\n    print(exc.strerror)"
    repo = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=repo, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    want = "not a regular file (a pipe or a device)" if kind == "pipe" else "Is a directory"
    assert proc.stdout.strip() == want
