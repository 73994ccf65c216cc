"""How a row is laid out: which sections it has, flat in the CSV, by section in a worker's result
and in report.json.

`SECTIONS` lists the sections (suite.results.sections: a module each) in the order docs/csv.md
shows them; a new one is imported and listed there. `ORDER` is the CSV's column order, a
contract: the columns as the raw CSVs of every run since have them, each run of names under the
section it belongs to (a topic's columns came in over time, so a section's columns need not sit
together). A new column is appended at the end, never inserted: old and new rows stay comparable
and a resumed run can append to its file. `nest` and `flatten` turn a row's fields into sections
and back; `to_wire` and `from_wire`, the worker's result (suite.measure.worker writes it,
suite.run.launch reads it). Imported inside the containers: standard library only.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from suite.results.sections import (
    accuracy,
    aot,
    compiling,
    cudagraphs,
    devicetime,
    energy,
    health,
    key,
    latency,
    memory,
    mixed_resolution,
    outcome,
    pair,
    parity,
    phases,
    pipeline,
    provenance,
    sampling,
    schedule,
    serving,
    throughput,
)
from suite.results.sections.base import Column, Section

SECTIONS: tuple[Section, ...] = (
    key.SECTION,
    outcome.SECTION,
    latency.SECTION,
    throughput.SECTION,
    compiling.SECTION,
    accuracy.SECTION,
    memory.SECTION,
    provenance.SECTION,
    health.SECTION,
    sampling.SECTION,
    schedule.SECTION,
    phases.SECTION,
    cudagraphs.SECTION,
    energy.SECTION,
    devicetime.SECTION,
    pair.SECTION,
    # the scenarios'
    parity.SECTION,
    pipeline.SECTION,
    serving.SECTION,
    mixed_resolution.SECTION,
    aot.SECTION,
)
BY_SECTION: dict[str, Section] = {s.name: s for s in SECTIONS}
# every column by name, and the section it belongs to
COLUMN_OF: dict[str, Column] = {c.name: c for s in SECTIONS for c in s.columns}
SECTION_OF: dict[str, str] = {c.name: s.name for s in SECTIONS for c in s.columns}


# fmt: off
ORDER: tuple[str, ...] = (
    # key
    "run_id", "build", "device", "gpu_name", "task", "model", "model_id", "weights", "batch_size", "mode",
    "dtype", "scenario",
    # outcome
    "status", "error",
    # latency
    "iterations", "mean_ms", "median_ms", "p10_ms", "p90_ms", "std_ms", "min_ms", "ci95_low_ms",
    "ci95_high_ms", "eager_median_ms", "speedup", "speedup_ci95_low", "speedup_ci95_high",
    # compile
    "compile_s", "graph_breaks", "recompiles",
    # accuracy
    "max_abs_diff", "accuracy",
    # memory
    "peak_mem_mb", "params_m",
    # provenance
    "torch_version", "torch_git", "cuda_version", "cudnn_version", "triton_version", "transformers_version",
    "python_version", "driver_version", "image", "suite_version",
    # outcome
    "started_at", "wall_s",
    # key
    "warmup", "tolerance", "compile_cache", "dynamic",
    # compile
    "compile_warm_s", "compile_megacache_s", "first_result_s", "eager_first_result_s", "breakeven_calls",
    "breakeven_calls_warm", "compile_note",
    # key
    "variant", "input_source",
    # provenance
    "torch_cuda_build", "cpu_name",
    # key
    "torch_threads", "malloc",
    # health
    "host_load", "gpu_sm_clock_mhz_min", "gpu_sm_clock_mhz_max", "gpu_temp_c_max", "gpu_power_w_mean",
    "gpu_throttle", "gpu_other_processes", "cpu_steal_pct", "cpu_wait_pct", "page_faults_per_call", "health",
    # latency
    "eager_ci95_low_ms", "eager_ci95_high_ms",
    # outcome
    "shard", "log_file",
    # phases
    "phase_dynamo_s", "phase_pre_aot_s", "phase_aot_s", "phase_lowering_s", "phase_codegen_s",
    "phase_kernels_s", "phase_autotune_s", "phase_cudagraphs_s", "phase_other_s", "graphs", "guards",
    "recompile_reasons", "phase_note",
    # cudagraphs
    "cudagraph_records", "cudagraph_record_s", "cudagraph_pool_mb", "cudagraph_extra_mb", "cudagraph_note",
    # energy
    "energy_source", "idle_power_w", "eager_j_per_image", "compiled_j_per_image", "energy_ratio",
    "energy_note",
    # provenance
    "gpu_uuid", "gpu_compute_capability", "gpu_persistence_mode", "gpu_power_limit_w", "gpu_ecc_mode",
    "gpu_mig_mode", "gpu_app_clock_mhz", "gpu_clocks_locked", "image_id",
    # parity
    "parity", "parity_inputs", "parity_top1", "parity_top5", "parity_box_iou", "parity_labels",
    "parity_mask_iou", "parity_max_abs_diff", "parity_scaled_diff", "parity_diff_bound", "parity_note",
    # pipeline
    "pipeline_post", "pre_median_ms", "pre_ci95_low_ms", "pre_ci95_high_ms", "pre_fast_median_ms",
    "pre_fast_ci95_low_ms", "pre_fast_ci95_high_ms", "forward_median_ms", "forward_ci95_low_ms",
    "forward_ci95_high_ms", "post_median_ms", "post_ci95_low_ms", "post_ci95_high_ms", "e2e_median_ms",
    "e2e_ci95_low_ms", "e2e_ci95_high_ms", "pre_fast_note", "e2e_eager_median_ms", "e2e_speedup",
    "e2e_speedup_ci95_low", "e2e_speedup_ci95_high",
    # sampling
    "calls", "stop_reason", "timed_s", "processes", "process_spread_pct",
    # compile
    "warm_compile_s",
    # sampling
    "run_noise_pct", "rerun95_low_ms", "rerun95_high_ms", "speedup_noise_pct", "speedup_rerun95_low",
    "speedup_rerun95_high", "process_note",
    # key
    "stop_rule",
    # serving
    "serving_target_ms", "serving_rate_per_s", "serving_throughput_per_s", "serving_p50_ms", "serving_p90_ms",
    "serving_p99_ms", "serving_dropped", "serving_requests", "serving_mean_batch", "serving_trials",
    "serving_note",
    # mixed_resolution
    "mixed_sizes", "mixed_compile_s", "mixed_cudagraph_records", "mixed_p50_ms", "mixed_p99_ms",
    "mixed_eager_p50_ms", "mixed_eager_p99_ms", "fixed_p50_ms", "fixed_p99_ms", "mixed_max_abs_diff",
    "mixed_note",
    # aot
    "aot_export_s", "aot_compile_s", "aot_load_s", "aot_package_mb", "aot_packages",
    # schedule
    "schedule", "compile_wave", "process_start", "compile_ahead_s",
    # provenance
    "nightly_date", "torch_wheel_url", "torch_wheel_sha256", "torchvision_version",
    # throughput
    "throughput_ms", "throughput_ci95_low_ms", "throughput_ci95_high_ms", "eager_throughput_ms",
    "eager_throughput_ci95_low_ms", "eager_throughput_ci95_high_ms", "throughput_speedup",
    "throughput_speedup_ci95_low", "throughput_speedup_ci95_high", "throughput_blocks", "block_calls",
    # latency
    "switch_penalty_pct", "eager_switch_penalty_pct",
    # health
    "host_probe_us", "host_speed_moved_pct",
    # provenance
    "tf32_matmul", "tf32_cudnn", "matmul_precision",
    # phases
    "phase_first_run_s",
    # accuracy
    "accuracy_note",
    # serving
    "serving_floor_ms", "serving_lowest_rate_per_s", "serving_lowest_p99_ms", "serving_failed_rate_per_s",
    # devicetime
    "device_ms", "host_ms", "eager_device_ms", "eager_host_ms", "device_note",
    # pair
    "pair_id", "pair_role", "pair_partner", "pair_rounds", "pair_latency", "pair_latency_ci95_low",
    "pair_latency_ci95_high", "pair_throughput", "pair_throughput_ci95_low", "pair_throughput_ci95_high",
    "pair_eager_latency", "pair_eager_latency_ci95_low", "pair_eager_latency_ci95_high",
    "pair_eager_throughput", "pair_eager_throughput_ci95_low", "pair_eager_throughput_ci95_high",
    "pair_speedup", "pair_speedup_ci95_low", "pair_speedup_ci95_high", "pair_compile_time_ratio",
    "timing_cpus",
    # accuracy
    "accuracy_rmse", "accuracy_rmse_eager", "accuracy_multiplier", "accuracy_cosine", "accuracy_spread",
    "accuracy_reference", "accuracy_context",
    # key
    "weights_init",
)
# fmt: on

SECTIONED = "sections"  # a worker's result: its fields by section, under this key
OTHER = "other"  # in `nest`: fields that are no column (a reader warns of and drops them)
# what a result carries beside its fields: several rows (a dynamic-batch cell's), the per-call samples
ENVELOPE: tuple[str, ...] = ("rows", "samples")


def nest(fields: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """A row's fields by section, sections and their columns in their own order; a section the
    row has no field of is left out, and a field that is no column goes under `OTHER`."""
    out: dict[str, dict[str, Any]] = {}
    for section in SECTIONS:
        mine = {n: fields[n] for n in section.names if n in fields}
        if mine:
            out[section.name] = mine
    other = {k: v for k, v in fields.items() if k not in SECTION_OF}
    return {**out, OTHER: other} if other else out


def flatten(sections: Mapping[str, Any]) -> dict[str, Any]:
    """The row's fields from its sections (the inverse of `nest`); a section that is not a
    mapping is dropped, as a reader drops a field it does not know."""
    out: dict[str, Any] = {}
    for fields in sections.values():
        if isinstance(fields, Mapping):
            out.update(fields)
    return out


def to_wire(result: Mapping[str, Any]) -> dict[str, Any]:
    """A worker's result as it writes it: the envelope (its rows, each sectioned the same way;
    its samples) and its fields under `SECTIONED`."""
    wire: dict[str, Any] = {k: result[k] for k in ENVELOPE if k in result}
    if isinstance(wire.get("rows"), list):
        wire["rows"] = [to_wire(row) if isinstance(row, Mapping) else row for row in wire["rows"]]
    wire[SECTIONED] = nest({k: v for k, v in result.items() if k not in ENVELOPE})
    return wire


def from_wire(wire: Any) -> Any:
    """A worker's result as the runner reads it: flat fields beside the envelope. Anything else
    (not a mapping, no sections) comes back as it was, for the reader's own checks to refuse."""
    if not isinstance(wire, Mapping) or not isinstance(wire.get(SECTIONED), Mapping):
        return wire
    out: dict[str, Any] = {k: wire[k] for k in ENVELOPE if k in wire}
    if isinstance(out.get("rows"), list):
        out["rows"] = [from_wire(row) for row in out["rows"]]
    out.update(flatten(wire[SECTIONED]))
    return out
