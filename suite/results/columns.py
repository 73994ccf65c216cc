"""The CSV contract's rules: one table of columns, the statuses, and which columns key a cell
(how a row's values are written and which row of a cell is kept: suite.results.rows).

Every reader and writer takes its column groups from `TABLE` and its statuses from
`STATUS_TABLE` below: a new column or status is added there, once. Imported inside the
containers: standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass

TEXT, INT, NUMBER = "text", "int", "number"
ALWAYS, WHEN_OK = "always", "when ok"
PASS, FAIL = "pass", "fail"  # the accuracy column: compiled output within the rule or not
# the accuracy column's other words (suite.measure.accuracy_rule, docs/accuracy.md): outputs
# too flat to show a wrong answer, eager disagreeing with itself, no check (accuracy_note: why)
DEGENERATE, NONDETERMINISTIC, SKIPPED_ACCURACY = "degenerate", "eager-nondeterministic", "skipped"
ACCURACY_WORDS: tuple[str, ...] = (PASS, FAIL, DEGENERATE, NONDETERMINISTIC, SKIPPED_ACCURACY)


@dataclass(frozen=True)
class Column:
    """One CSV column and the rules readers and writers apply to it."""

    name: str
    kind: str = TEXT  # TEXT | INT | NUMBER (what a non-empty value must parse as)
    unit: str = ""  # of a number: ms, s, MB, M (millions), x (a ratio)
    contract: bool = True  # one of the contract's columns (docs/design.md); else an extra after them
    required: str = ""  # ALWAYS | WHEN_OK: never empty / never empty on an ok row (merge checks)
    timing: bool = False  # measured: emptied on any status but ok
    positive: bool = False  # a duration or ratio: > 0 when present
    key: bool = False  # in the resume key (a cell inside one <build>__<device> file)
    cell: int = 0  # place in the key that matches a cell across runs (merge, compare); 0: not in it
    choices: tuple[str, ...] = ()  # the values allowed besides empty, where the set is closed
    doc: str = ""
    nonfinite: bool = False  # a NUMBER that may be `nan` or `inf` (measured so); elsewhere: empty
    # a setting that changes the row's figures (compare, calibrate and history match cells on it:
    # two rows that both record it and differ in it are not compared); empty: not recorded
    setting: bool = False


def _timed(
    name: str,
    unit: str = "ms",
    positive: bool = True,
    required: str = "",
    doc: str = "",
    contract: bool = True,
) -> Column:
    """A measured number: emptied on a failed row."""
    return Column(
        name, NUMBER, unit, contract=contract, required=required, timing=True, positive=positive, doc=doc
    )


def _extra_timed(name: str, unit: str, doc: str, positive: bool = True) -> Column:
    """A measured number after the contract's columns: emptied on a failed row."""
    return Column(name, NUMBER, unit, contract=False, timing=True, positive=positive, doc=doc)


def _pair_ratio(name: str, what: str) -> tuple[Column, ...]:
    """A pair's ratio of one figure (base / new: > 1, the new build is faster) and its 95% CI."""
    doc = f"paired with pair_partner, per round base / new of {what}: the median over rounds"
    return (
        _extra_timed(f"pair_{name}", "x", doc),
        _extra_timed(f"pair_{name}_ci95_low", "x", f"95% CI of pair_{name} (a bootstrap over rounds)"),
        _extra_timed(f"pair_{name}_ci95_high", "x", ""),
    )


# The device's share of a call on CUDA, from one profiled pass after the timed calls
# (suite.measure.devicetime): whether a change is in the kernels or on the host.
DEVICE_TIME_COLUMNS: tuple[Column, ...] = (
    _extra_timed("device_ms", "ms", "CUDA: the GPU's busy time per call of the row's function (profiled)"),
    _extra_timed("host_ms", "ms", "CUDA: median_ms - device_ms, the host's share", positive=False),
    _extra_timed("eager_device_ms", "ms", "CUDA: device_ms of the eager function, on a compiled row"),
    _extra_timed("eager_host_ms", "ms", "CUDA: eager_median_ms - eager_device_ms", positive=False),
    Column("device_note", contract=False, doc="why device_ms is empty on a CUDA row (the profiler failed)"),
)


# Two builds timed side by side, in alternating rounds on one device (docs/pairs.md,
# suite.run.pair): which pair and role, and on the new build's row the paired ratios.
PAIR_COLUMNS: tuple[Column, ...] = (
    Column("pair_id", contract=False, doc="the pair session both builds' rows were timed in"),
    Column("pair_role", contract=False, choices=("base", "new"), doc="this row's build in the pair"),
    Column("pair_partner", contract=False, doc="the other build of the pair"),
    Column("pair_rounds", INT, contract=False, timing=True, doc="rounds each build timed in turn"),
    *_pair_ratio("latency", "the row's function's latency (median of each round's calls)"),
    *_pair_ratio("throughput", "the row's function's throughput block"),
    *_pair_ratio("eager_latency", "the eager function's latency, on a compiled row"),
    *_pair_ratio("eager_throughput", "the eager function's throughput block, on a compiled row"),
    *_pair_ratio("speedup", "the compiled speed-up, new / base (eager / compiled of each round)"),
    _extra_timed("pair_compile_time_ratio", "x", "compile_s new / base (one compile each)"),
    Column(
        "timing_cpus",
        contract=False,
        setting=True,
        doc="the CPUs a pair's workers were pinned to while timed (both builds the same)",
    ),
)


# The contract's columns, in this order, first; then the suite's extras ("more may follow").
TABLE: tuple[Column, ...] = (
    Column("run_id"),
    Column("build", required=ALWAYS, key=True, cell=1),
    Column("device", required=ALWAYS, key=True, cell=10, doc="cuda | cpu"),
    Column("gpu_name", required=ALWAYS, cell=11, doc="the GPU's name (the CPU's model on cpu rows)"),
    Column("task", required=ALWAYS, cell=2),
    Column("model", required=ALWAYS, key=True, cell=3),
    Column("model_id", key=True),
    Column("weights", key=True, cell=8, doc="pretrained | random"),
    Column("batch_size", INT, required=ALWAYS, key=True, cell=4),
    Column("mode", required=ALWAYS, key=True, cell=5, doc="eager or a torch.compile mode"),
    Column("dtype", key=True, cell=6),
    Column("scenario", key=True, cell=7, doc="inference | train"),
    Column("status", doc="one of STATUSES (read_rows refuses any other)"),
    Column("error", doc="one line: why the cell failed"),
    Column("iterations", INT, timing=True),
    _timed("mean_ms", required=WHEN_OK),
    _timed("median_ms", required=WHEN_OK),
    _timed("p10_ms"),
    _timed("p90_ms"),
    _timed("std_ms", positive=False),
    _timed("min_ms"),
    _timed("ci95_low_ms"),
    _timed("ci95_high_ms"),
    _timed("eager_median_ms"),
    _timed("speedup", unit="x", doc="paired: eager median / compiled median"),
    _timed("speedup_ci95_low", unit="x"),
    _timed("speedup_ci95_high", unit="x"),
    _timed("compile_s", unit="s", positive=False),
    Column("graph_breaks", INT, timing=True),
    Column("recompiles", INT, timing=True),
    Column("max_abs_diff", NUMBER, timing=True, nonfinite=True, doc="nan / inf: in compiled outputs only"),
    Column(
        "accuracy",
        timing=True,
        choices=ACCURACY_WORDS,
        doc="compiled rows: the float64 rule's verdict (docs/accuracy.md); empty on eager rows",
    ),
    Column("peak_mem_mb", NUMBER, "MB"),
    Column("params_m", NUMBER, "M"),
    Column("torch_version"),
    Column("torch_git"),
    Column("cuda_version"),
    Column("cudnn_version"),
    Column("triton_version"),
    Column("transformers_version"),
    Column("python_version"),
    Column("driver_version"),
    Column("image"),
    Column("suite_version"),
    Column("started_at"),
    Column("wall_s", NUMBER, "s"),
    # the suite's extras
    Column(
        "warmup",
        INT,
        contract=False,
        setting=True,
        doc="warm-up calls that ran (untimed) before the timed ones: an eager cell's eager function's, "
        "a compiled cell's compiled function's after its compiling first call; empty unless ok",
    ),
    Column(
        "tolerance", NUMBER, contract=False, setting=True, doc="accuracy tolerance of the pass/fail check"
    ),
    Column(
        "compile_cache",
        contract=False,
        setting=True,
        doc="cold (fresh inductor/triton cache per cell) or run (shared)",
    ),
    # compile cost (issue 14; README "What compiling costs"): figures of the compile-cost
    # processes and of the dynamic-batch scenario
    Column(
        "dynamic",
        contract=False,
        key=True,
        cell=12,
        choices=("static", "auto", "marked"),
        doc="dynamic-batch rows: torch.compile(dynamic=False) | torch's default | + mark_dynamic on "
        "the batch dimension",
    ),
    # compile seconds and break-even calls may be 0 (nothing compiled: a warm cache that serves all,
    # a batch size a symbolic graph already covers); like compile_s, never negative
    _extra_timed(
        "compile_warm_s",
        "s",
        "compile_s in a fresh process that finds the first process's caches",
        positive=False,
    ),
    _extra_timed(
        "compile_megacache_s",
        "s",
        "loading torch.compiler's saved artifacts + compile_s, fresh caches",
        positive=False,
    ),
    _extra_timed(
        "first_result_s", "s", "process start to the first compiled output: eager_first_result_s + compile_s"
    ),
    _extra_timed(
        "eager_first_result_s", "s", "process start to model ready, plus the first eager call's duration"
    ),
    _extra_timed(
        "breakeven_calls",
        "calls",
        "compile_s / (eager - compiled median per call); empty if not faster",
        positive=False,
    ),
    _extra_timed("breakeven_calls_warm", "calls", "as breakeven_calls, from compile_warm_s", positive=False),
    Column(
        "compile_note",
        contract=False,
        doc="one line: which compile caches were hit, why a compile-cost figure is empty, what torch did "
        "with the batch dimension",
    ),
    Column("variant", contract=False, cell=9, doc='"smoke" for a shrunk model; "custom of <base>"'),
    Column("input_source", contract=False, setting=True, doc="which image fed the model (URL or file name)"),
    Column("torch_cuda_build", contract=False, doc="torch.version.cuda, CPU runs too (cuda_version: empty)"),
    Column("cpu_name", contract=False, doc="host CPU model (latency on CPU, launch overhead on GPU)"),
    Column("torch_threads", INT, contract=False, setting=True, doc="torch.get_num_threads() in the worker"),
    Column(
        "malloc",
        contract=False,
        setting=True,
        choices=("steady", "system"),
        doc="the worker's C allocator: steady (glibc's mmap and trim thresholds fixed) or system (as is)",
    ),
    Column("host_load", NUMBER, contract=False, doc="1-minute load average as the cell ended: contention"),
    # machine health while the calls were timed (suite.measure.health): empty where not measured
    # (a failed cell's worker returns none of them)
    Column("gpu_sm_clock_mhz_min", NUMBER, "MHz", contract=False, doc="NVML: lowest SM clock"),
    Column("gpu_sm_clock_mhz_max", NUMBER, "MHz", contract=False, doc="NVML: highest SM clock"),
    Column("gpu_temp_c_max", NUMBER, "C", contract=False, doc="NVML: hottest GPU reading"),
    Column("gpu_power_w_mean", NUMBER, "W", contract=False, doc="NVML: mean power draw"),
    Column(
        "gpu_throttle",
        contract=False,
        doc="NVML: active clock-event reasons but idle (sw_power,hw_slowdown,...); empty: none",
    ),
    Column("gpu_other_processes", INT, contract=False, doc="other compute processes on the GPU"),
    Column("cpu_steal_pct", NUMBER, "%", contract=False, doc="CPU time the hypervisor took"),
    Column(
        "cpu_wait_pct",
        NUMBER,
        "%",
        contract=False,
        doc="time some runnable task waited for a CPU (Linux PSI): the load was above the cores",
    ),
    Column(
        "page_faults_per_call",
        NUMBER,
        contract=False,
        doc="minor page faults of the worker per timed call (eager and compiled calls alike): pages "
        "the allocator handed back and took again (malloc column)",
    ),
    Column(
        "health",
        contract=False,
        doc="ok, or the flags that make a figure suspect (throttled, clock-varied, shared-gpu, steal, busy, "
        "host-varied)",
    ),
    Column("eager_ci95_low_ms", NUMBER, "ms", contract=False, positive=True, doc="95% CI of eager_median_ms"),
    Column("eager_ci95_high_ms", NUMBER, "ms", contract=False, positive=True),
    Column("shard", contract=False, doc='"i/n" when the run was sharded, else empty'),
    Column("log_file", contract=False, doc="the cell's worker log, relative to the run folder"),
    # issue 29 (docs/phases-energy.md): where a cold start's seconds go (torch's own accounting,
    # suite.measure.phases), what CUDA graphs cost (suite.measure.cudagraphs), energy per image
    # (suite.measure.energy); empty where a build or device does not give a figure, the note says why
    _extra_timed("phase_dynamo_s", "s", "Dynamo: tracing, guards (frame compile - backend call)", False),
    _extra_timed(
        "phase_pre_aot_s",
        "s",
        "the backend before AOTAutograd: first-use imports, pre-grad passes, cache keys",
        False,
    ),
    _extra_timed("phase_aot_s", "s", "AOTAutograd, without inductor's compile of each graph", False),
    _extra_timed("phase_lowering_s", "s", "inductor: graph passes and lowering (autotuning apart)", False),
    _extra_timed(
        "phase_codegen_s", "s", "inductor: code generation (scheduler, kernel and wrapper source)", False
    ),
    _extra_timed("phase_kernels_s", "s", "compiling the C++ or Triton kernels and loading the module", False),
    _extra_timed(
        "phase_autotune_s",
        "s",
        "autotuning: compile-time template benchmarks + run-time Triton configs",
        False,
    ),
    _extra_timed("phase_cudagraphs_s", "s", "CUDA-graph recording within the first compiled call", False),
    _extra_timed(
        "phase_other_s", "s", "compile_s - the phases' sum: outside torch's accounting (may be < 0)", False
    ),
    Column(
        "graphs", INT, contract=False, timing=True, doc="graphs dynamo compiled in the first compiled call"
    ),
    Column("guards", INT, contract=False, timing=True, doc="guards of those graphs (torch's own count)"),
    Column(
        "recompile_reasons", contract=False, timing=True, doc="dynamo's guard failures after the first call"
    ),
    Column(
        "phase_note",
        contract=False,
        doc="which phases a build does not time and why; a sum beyond the margin; the warm and mega-cache "
        "compiles' largest phases",
    ),
    Column(
        "cudagraph_records",
        INT,
        contract=False,
        timing=True,
        doc="CUDA graphs recorded (first call + warm-up)",
    ),
    _extra_timed("cudagraph_record_s", "s", "seconds recording them", False),
    _extra_timed(
        "cudagraph_pool_mb", "MB", "memory the CUDA graphs' private pools hold after the warm-up", False
    ),
    _extra_timed(
        "cudagraph_extra_mb",
        "MB",
        "compiled warm-up's reserved peak - eager warm-up's (the pools counted), same process",
        False,
    ),
    Column("cudagraph_note", contract=False, doc="why a CUDA-graph figure is empty"),
    Column(
        "energy_source",
        contract=False,
        setting=True,
        doc="nvml | rapl (zones): the counter the energy figures come from",
    ),
    _extra_timed(
        "idle_power_w", "W", "the device's power before the first call, nothing running (not subtracted)"
    ),
    _extra_timed(
        "eager_j_per_image", "J", "the eager function's energy per image, in blocks after the timed calls"
    ),
    _extra_timed("compiled_j_per_image", "J", "the compiled function's, the same way"),
    _extra_timed("energy_ratio", "x", "compiled_j_per_image / eager_j_per_image (< 1: compiled uses less)"),
    Column("energy_note", contract=False, doc="what the counter covers, or why the energy figures are empty"),
    # issue 24: the machine's state (suite.measure.machine), as nvidia-smi and Docker report it
    # for the GPU and image of the run; empty where a source gave none, never guessed
    Column("gpu_uuid", contract=False, doc="nvidia-smi: the GPU's UUID"),
    Column("gpu_compute_capability", contract=False, doc='nvidia-smi: compute capability ("9.0")'),
    Column("gpu_persistence_mode", contract=False, doc="nvidia-smi: Enabled | Disabled"),
    Column("gpu_power_limit_w", NUMBER, "W", contract=False, doc="nvidia-smi: the power limit in force"),
    Column("gpu_ecc_mode", contract=False, doc="nvidia-smi: Enabled | Disabled (current)"),
    Column("gpu_mig_mode", contract=False, doc="nvidia-smi: Enabled | Disabled (current)"),
    Column("gpu_app_clock_mhz", NUMBER, "MHz", contract=False, doc="nvidia-smi: application clock, graphics"),
    Column(
        "gpu_clocks_locked",
        contract=False,
        setting=True,
        doc='"MIN,MAX" MHz when the run locked the GPU clocks, "no" when it did not (not asked, or the '
        "lock failed), empty when nothing said",
    ),
    Column("image_id", contract=False, doc="the image's ID as Docker reports it (sha256:...); else empty"),
    # issue 28: the task's answer against float32 eager (`precision` rows, docs/precision.md)
    Column(
        "parity",
        contract=False,
        timing=True,
        choices=(PASS, FAIL),
        doc="the task's parity rule (thresholds: the parity_* settings) against float32 eager",
    ),
    Column("parity_inputs", INT, contract=False, timing=True, doc="images judged (inputs x batch)"),
    _extra_timed("parity_top1", "", "share of images whose top-1 class is float32 eager's", positive=False),
    _extra_timed("parity_top5", "", "mean share of float32 eager's top-5 classes kept", positive=False),
    _extra_timed(
        "parity_box_iou", "", "mean IoU of float32 eager's top boxes with their matches", positive=False
    ),
    _extra_timed("parity_labels", "", "share of those boxes whose match has the same label", positive=False),
    _extra_timed("parity_mask_iou", "", "mean IoU of the label maps over the classes shown", positive=False),
    Column(
        "parity_max_abs_diff",
        NUMBER,
        contract=False,
        timing=True,
        nonfinite=True,
        doc="max |diff| of every floating output against float32 eager's",
    ),
    _extra_timed(
        "parity_scaled_diff",
        "",
        "max over outputs of |diff| / max(1, max |fp32 eager|)",
        positive=False,
    ),
    _extra_timed("parity_diff_bound", "", "the most parity_scaled_diff may be (the rule's)", positive=False),
    Column("parity_note", contract=False, doc="what the parity figures were judged on"),
    # issue 28: one request end to end, per stage (`pipeline` rows, docs/pipeline.md)
    Column(
        "pipeline_post", contract=False, setting=True, doc="the task's post-processing the post stage calls"
    ),
    *(
        _extra_timed(f"{stage}_{figure}_ms", "ms", f"{what}: {figure.replace('_', ' ')}")
        for stage, what in (
            ("pre", "preprocessing, the model's processor"),
            ("pre_fast", "preprocessing, the fast processor"),
            ("forward", "the forward of the row's function"),
            ("post", "the task's post-processing"),
            ("e2e", "the whole request with the row's function"),
        )
        for figure in ("median", "ci95_low", "ci95_high")
    ),
    Column("pre_fast_note", contract=False, doc="why pre_fast_* is empty"),
    _extra_timed("e2e_eager_median_ms", "ms", "the whole request with the eager forward (compiled rows)"),
    _extra_timed("e2e_speedup", "x", "paired: eager request median / compiled request median"),
    _extra_timed("e2e_speedup_ci95_low", "x", "95% CI of e2e_speedup"),
    _extra_timed("e2e_speedup_ci95_high", "x", ""),
    # issue 27: the timed loop's stopping rule (suite.measure.timing.StopRule), per row
    Column(
        "calls",
        INT,
        contract=False,
        timing=True,
        doc="timed calls made, every timed function (eager + compiled on a compiled row) and process",
    ),
    Column(
        "stop_reason",
        contract=False,
        timing=True,
        choices=("fixed", "ci", "max_calls", "max_seconds", "pair"),
        doc="why the timed loop stopped: fixed (stop_rule: fixed, `iterations` calls), ci (the median's "
        "95% CI within ci_target_pct), max_calls (`iterations` reached first), max_seconds (max_timing_s), "
        "pair (a pair's coordinator: the paired ratios narrow enough, docs/pairs.md)",
    ),
    _extra_timed("timed_s", "s", "seconds the timed loop took (all processes)"),
    # issue 27: processes per cell (suite.run.cell_path, suite.run.pooled)
    Column(
        "processes",
        INT,
        contract=False,
        timing=True,
        setting=True,
        doc="worker processes whose samples the row's figures pool (the `processes` setting, less failures)",
    ),
    _extra_timed(
        "process_spread_pct", "%", "max / min - 1 of the processes' own medians, in percent", positive=False
    ),
    _extra_timed("warm_compile_s", "s", "median compile of the 2nd..kth processes, on the first's caches"),
    # issue 27: where another run's median should fall (suite.run.rerun, docs/intervals.md)
    _extra_timed(
        "run_noise_pct",
        "%",
        "the machine's between-run noise the rerun interval adds (the run_noise_pct setting)",
        positive=False,
    ),
    _extra_timed("rerun95_low_ms", "ms", "where another run's median should fall, 95%: low"),
    _extra_timed("rerun95_high_ms", "ms", "where another run's median should fall, 95%: high"),
    _extra_timed(
        "speedup_noise_pct",
        "%",
        "the machine's between-run noise the speed-up's rerun interval adds (speedup_noise_pct)",
        positive=False,
    ),
    _extra_timed("speedup_rerun95_low", "x", "where another run's paired speed-up should fall, 95%: low"),
    _extra_timed("speedup_rerun95_high", "x", "where another run's paired speed-up should fall, 95%: high"),
    Column("process_note", contract=False, doc="a process of the cell that gave no samples, and why"),
    # issue 37: the stopping rule as set (stop_reason says why a row's loop stopped), on every row
    Column(
        "stop_rule",
        contract=False,
        setting=True,
        doc='the timed loop\'s rule as set: "fixed, <iterations> calls" or "ci <ci_target_pct>%, '
        '<min_iterations>-<iterations> calls, <max_timing_s> s" (stop_rule_text)',
    ),
    # issue 40: the serving scenario (docs/serving.md): the highest Poisson arrival rate whose p99
    # latency, queueing included, met the target, and that trial's figures
    _extra_timed("serving_target_ms", "ms", "the p99 latency target (set, or 5 x eager batch-1 p99)"),
    _extra_timed(
        "serving_rate_per_s", "/s", "highest arrival rate that met the target (0: none)", positive=False
    ),
    _extra_timed("serving_throughput_per_s", "/s", "images served a second at that rate"),
    _extra_timed("serving_p50_ms", "ms", "latency at that rate, queueing included: median"),
    _extra_timed("serving_p90_ms", "ms", "latency at that rate, queueing included: p90"),
    _extra_timed("serving_p99_ms", "ms", "latency at that rate, queueing included: p99"),
    Column(
        "serving_dropped", INT, contract=False, timing=True, doc="requests dropped (queue full) at that rate"
    ),
    Column("serving_requests", INT, contract=False, timing=True, doc="requests that trial finished"),
    _extra_timed("serving_mean_batch", "", "mean batch the batcher formed at that rate"),
    Column("serving_trials", INT, contract=False, timing=True, doc="arrival rates the search tried"),
    Column("serving_note", contract=False, doc="the target's origin, the batcher, the search's bracket"),
    # issue 40: the mixed-resolution scenario (docs/mixed-resolution.md)
    Column("mixed_sizes", contract=False, doc="the image sizes served in turn (HxW>...), back to the first"),
    _extra_timed("mixed_compile_s", "s", "compile seconds paid after the first size's", positive=False),
    Column(
        "mixed_cudagraph_records",
        INT,
        contract=False,
        timing=True,
        doc="CUDA graphs recorded after the first size",
    ),
    _extra_timed("mixed_p50_ms", "ms", "compiled, every size round-robin: median"),
    _extra_timed("mixed_p99_ms", "ms", "compiled, every size round-robin: p99"),
    _extra_timed("mixed_eager_p50_ms", "ms", "eager, every size round-robin: median"),
    _extra_timed("mixed_eager_p99_ms", "ms", "eager, every size round-robin: p99"),
    _extra_timed("fixed_p50_ms", "ms", "compiled at the first size alone: median"),
    _extra_timed("fixed_p99_ms", "ms", "compiled at the first size alone: p99"),
    Column(
        "mixed_max_abs_diff",
        NUMBER,
        contract=False,
        timing=True,
        nonfinite=True,
        doc="compiled vs eager at the other sizes: the largest max |diff|",
    ),
    Column("mixed_note", contract=False, doc="per size: graphs compiled, compile seconds, dynamo's reasons"),
    # issue 40: the aot-inductor mode (docs/aot-inductor.md)
    _extra_timed("aot_export_s", "s", "torch.export of the model at the cell's inputs"),
    _extra_timed("aot_compile_s", "s", "aoti_compile_and_package: the package built"),
    _extra_timed("aot_load_s", "s", "aoti_load_package in the timing process"),
    _extra_timed("aot_package_mb", "MB", "the package's size on disk"),
    Column("aot_packages", INT, contract=False, timing=True, doc="packages built (one per input shape)"),
    # issue 39: how the row was measured (suite.run.schedule, docs/measurement.md)
    Column(
        "schedule",
        contract=False,
        choices=("serial", "ahead", "overlap"),
        doc="serial: the cell's own process compiled and timed it; ahead: the same process compiled it "
        "in a wave beside others, then timed it alone, its model's eager cells after it; overlap: as "
        "ahead, pinned to its own cores while the next wave compiled on the others",
    ),
    Column(
        "compile_wave",
        INT,
        contract=False,
        doc="processes compiling at once when the row's compile_s was measured (1: alone, as serial)",
    ),
    Column(
        "process_start",
        contract=False,
        choices=("spawn", "fork"),
        doc="spawn: a fresh `python -m suite.measure.worker`; fork: forked from the run's zygote, a "
        "process that had imported torch and transformers once (its start-up counted as the zygote's)",
    ),
    Column(
        "compile_ahead_s",
        NUMBER,
        "s",
        contract=False,
        doc="of wall_s, what its process spent before its gate under ahead or overlap: start, model, "
        "the compile, warm-up and accuracy check (the rest is its timing); empty otherwise",
    ),
    # issue 36: which wheels ran (the image's, as resolved for the run; torch_git is torch's own)
    Column("nightly_date", contract=False, doc="the torch nightly's date (YYYYMMDD); empty for a release"),
    Column("torch_wheel_url", contract=False, doc="the torch wheel the image installed, by URL"),
    Column("torch_wheel_sha256", contract=False, doc="that wheel's sha256, as checked when installed"),
    Column("torchvision_version", contract=False, doc="the torchvision that ran"),
    # issue 38: throughput beside latency (suite.measure.timing, docs/measurement.md): blocks of
    # back-to-back calls with one synchronize (CUDA events on a GPU), timed in the same rounds
    _extra_timed(
        "throughput_ms",
        "ms",
        "back-to-back: median over blocks of ms per call (block_calls calls, one synchronize; CUDA "
        "events on a GPU) of the row's function; median_ms is latency (a synchronize around each call)",
    ),
    _extra_timed("throughput_ci95_low_ms", "ms", "95% CI of throughput_ms: low"),
    _extra_timed("throughput_ci95_high_ms", "ms", "95% CI of throughput_ms: high"),
    _extra_timed(
        "eager_throughput_ms", "ms", "the eager function's throughput_ms, same rounds (compiled rows)"
    ),
    _extra_timed("eager_throughput_ci95_low_ms", "ms", "95% CI of eager_throughput_ms: low"),
    _extra_timed("eager_throughput_ci95_high_ms", "ms", "95% CI of eager_throughput_ms: high"),
    _extra_timed(
        "throughput_speedup",
        "x",
        "paired over blocks: eager_throughput_ms / throughput_ms (speedup: latency)",
    ),
    _extra_timed("throughput_speedup_ci95_low", "x", "95% CI of throughput_speedup: low"),
    _extra_timed("throughput_speedup_ci95_high", "x", "95% CI of throughput_speedup: high"),
    Column(
        "throughput_blocks", INT, contract=False, timing=True, doc="throughput blocks of the row's function"
    ),
    Column("block_calls", INT, contract=False, timing=True, doc="back-to-back calls per throughput block"),
    _extra_timed(
        "switch_penalty_pct",
        "%",
        "a call right after the other function's against the others (median / median - 1): kept out "
        "of both figures; empty on an eager row",
        positive=False,
    ),
    _extra_timed("eager_switch_penalty_pct", "%", "the same, of the eager function (compiled rows)", False),
    # issue 38: the host CPU's speed while timed (suite.measure.timing.host_probe_us)
    _extra_timed(
        "host_probe_us", "us", "median of a fixed pure-Python loop run before each round: host speed"
    ),
    _extra_timed(
        "host_speed_moved_pct",
        "%",
        "p90 / p10 - 1 of the rounds' host probes (max / min under ten): health flags host-varied",
        positive=False,
    ),
    # issue 38: what float32 matmuls ran as (suite.measure.provenance)
    Column(
        "tf32_matmul",
        contract=False,
        choices=("true", "false"),
        doc="torch.backends.cuda.matmul.allow_tf32 in the worker: float32 matmuls on TF32 tensor cores",
    ),
    Column("tf32_cudnn", contract=False, choices=("true", "false"), doc="torch.backends.cudnn.allow_tf32"),
    Column(
        "matmul_precision",
        contract=False,
        doc="torch.get_float32_matmul_precision(): highest (no TF32), high, medium",
    ),
    # issue 38: the compile phases' remainder named (suite.measure.phases.Calls)
    _extra_timed(
        "phase_first_run_s",
        "s",
        "the first compiled call - the phases - a steady compiled call: its first run's one-off work "
        "(kernels loaded onto the device, first-call set-up); phase_other_s = this + (compiled - eager call)",
        positive=False,
    ),
    # issue 38: an accuracy check that can judge nothing says so (suite.measure.accuracy)
    Column(
        "accuracy_note",
        contract=False,
        doc="which output decided the accuracy verdict and by what, why it is degenerate, "
        "eager-nondeterministic or skipped; a per-model tolerance's reason",
    ),
    # issue 40: why a serving search found no rate (docs/serving.md): the floor no rate goes below,
    # and the lowest rate tried with its p99
    _extra_timed(
        "serving_floor_ms", "ms", "a lone request's p99: max_wait + the served function's batch-1 p99"
    ),
    _extra_timed(
        "serving_lowest_rate_per_s", "/s", "no rate met the target: the lowest rate tried", positive=False
    ),
    _extra_timed("serving_lowest_p99_ms", "ms", "no rate met the target: the lowest rate's p99"),
    _extra_timed(
        "serving_failed_rate_per_s",
        "/s",
        "the lowest rate above serving_rate_per_s that failed (empty: none tried, the rate is a lower bound)",
    ),
    *DEVICE_TIME_COLUMNS,
    *PAIR_COLUMNS,
    # the accuracy rule's numbers (suite.measure.accuracy_rule, docs/accuracy.md): the deciding
    # output tensor's, so a reader sees why a row passed or failed
    _extra_timed("accuracy_rmse", "", "RMSE of the compiled output from the float64 answer", positive=False),
    _extra_timed(
        "accuracy_rmse_eager", "", "RMSE of the eager output from the float64 answer", positive=False
    ),
    _extra_timed(
        "accuracy_multiplier",
        "x",
        "how many times accuracy_rmse_eager accuracy_rmse may be (+ tolerance / 10)",
    ),
    _extra_timed(
        "accuracy_cosine", "", "cosine similarity of compiled and eager (no float64 answer)", positive=False
    ),
    _extra_timed(
        "accuracy_spread",
        "",
        "standard deviation of the deciding output's reference values (degenerate below 10 x tolerance)",
        positive=False,
    ),
    Column(
        "accuracy_reference",
        contract=False,
        timing=True,
        doc="what the reference ran as: float64 on the device or the CPU, or none (cosine) and why",
    ),
    Column(
        "accuracy_context",
        contract=False,
        timing=True,
        doc="the accuracy pass's settings (TF32, cuDNN determinism), apart from the timed calls'",
    ),
    Column(
        "weights_init",
        contract=False,
        setting=True,
        choices=("unit-variance",),
        doc="random weights: how they were scaled after the config's init (docs/accuracy.md); "
        "empty: a checkpoint's, or a run before the scaling",
    ),
)
BY_NAME: dict[str, Column] = {c.name: c for c in TABLE}

COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE)
CONTRACT_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.contract)
EXTRA_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if not c.contract)
# Measurement columns: empty on any status but "ok".
TIMING_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.timing)
# The columns that identify a cell inside one <build>__<device> file (resume key).
KEY_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.key)
# A cell across runs: the resume key with the GPU and the model variant (smoke, custom), less
# the model id; in the order a comparison lists and sorts cells (build first).
CELL_COLUMNS: tuple[str, ...] = tuple(
    c.name for c in sorted((c for c in TABLE if c.cell), key=lambda c: c.cell)
)
# The settings that change a row's figures beyond the cell key (compile cache, allocator,
# processes, stopping rule, warm-up, threads, image, ...): cells are compared across runs only
# where every setting both rows record is the same (suite.compare.settings).
SETTING_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.setting)


@dataclass(frozen=True)
class Status:
    """A row's outcome, and what each reader does with it."""

    name: str
    word: str  # how tables and reports print it
    failed: bool  # the cell ran and failed (compare: newly failing / fixed)
    done: bool  # a resumed run keeps the row instead of running the cell again
    doc: str = ""


OK, OOM, ERROR, TIMEOUT, SKIPPED = "ok", "oom", "error", "timeout", "skipped"
STATUS_TABLE: tuple[Status, ...] = (
    Status(OK, "ok", failed=False, done=True, doc="measured"),
    Status(OOM, "OOM", failed=True, done=True, doc="out of memory: a re-run would fail the same way"),
    Status(ERROR, "error", failed=True, done=False, doc="an exception or a dead worker"),
    Status(TIMEOUT, "timeout", failed=True, done=False, doc="no result in time: the worker was killed"),
    Status(SKIPPED, "skipped", failed=False, done=False, doc="not run: this build cannot run the cell"),
)
STATUSES: tuple[str, ...] = tuple(s.name for s in STATUS_TABLE)
FAILED_STATUSES: tuple[str, ...] = tuple(s.name for s in STATUS_TABLE if s.failed)
# Statuses a resumed run keeps (does not re-run) by default.
DONE_STATUSES: frozenset[str] = frozenset(s.name for s in STATUS_TABLE if s.done)
STATUS_WORDS: dict[str, str] = {s.name: s.word for s in STATUS_TABLE}

# How a column with `nonfinite` writes (and readers accept) a measured NaN or infinity.
NONFINITE_WORDS: tuple[str, ...] = ("nan", "inf", "-inf")
NONFINITE_COLUMNS: tuple[str, ...] = tuple(c.name for c in TABLE if c.nonfinite)
