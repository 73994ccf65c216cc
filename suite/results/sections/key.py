"""The key and settings section: which cell a row is (the resume key, the cell across runs) and
the settings that change its figures (compare matches rows on them). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import ALWAYS, INT, NUMBER, Column, Section

SECTION = Section(
    name="key",
    title="The cell and its settings",
    about="Which cell the row is (the resume key inside one raw CSV; across runs, the cell key that "
    "merge and compare match on) and the settings that change its figures: two rows that both "
    "record a setting and differ in it are not compared ([merge.md](merge.md#compare)).",
    columns=(
        Column("run_id", doc="the run the row belongs to (`--run-id`, or the run folder's name)"),
        Column("build", required=ALWAYS, key=True, cell=1, doc="the build label (`matrix.yaml`)"),
        Column("device", required=ALWAYS, key=True, cell=10, doc="`cpu` or a slug of the GPU's name"),
        Column("gpu_name", required=ALWAYS, cell=11, doc="the GPU's name (the CPU's model on a CPU run)"),
        Column("task", required=ALWAYS, cell=2, doc="the guide's task (Image Classification, ...)"),
        Column("model", required=ALWAYS, key=True, cell=3, doc="the model's display name"),
        Column("model_id", key=True, doc="the hub id (or `<model_type> (config)`)"),
        Column("weights", key=True, cell=8, doc="`pretrained` or `random`"),
        Column("batch_size", INT, required=ALWAYS, key=True, cell=4, doc="images per call"),
        Column(
            "mode",
            required=ALWAYS,
            key=True,
            cell=5,
            doc="`eager` or a `torch.compile` mode (or `aot-inductor`, [aot-inductor.md](aot-inductor.md))",
        ),
        Column(
            "dtype",
            key=True,
            cell=6,
            doc="float32/float16/bfloat16 (the weights and inputs cast to it) or "
            "autocast-float16/autocast-bfloat16 (float32 weights and inputs, every call under "
            "`torch.autocast` to that dtype; `precision` rows only, [precision.md](precision.md#autocast))",
        ),
        Column(
            "scenario",
            key=True,
            cell=7,
            doc="`inference`, `train`, `dynamic-batch`, `precision`, `pipeline`, `serving` or "
            "`mixed-resolution`",
        ),
        Column(
            "warmup",
            INT,
            contract=False,
            setting=True,
            doc="warm-up calls that ran (untimed) before the timed ones: an eager cell's eager function's, "
            "a compiled cell's compiled function's after its compiling first call; empty unless ok "
            "(below)",
        ),
        Column(
            "tolerance",
            NUMBER,
            contract=False,
            setting=True,
            doc="accuracy tolerance of the pass/fail check ([accuracy.md](accuracy.md))",
        ),
        Column(
            "compile_cache",
            contract=False,
            setting=True,
            doc="`cold` (fresh inductor/triton cache per cell) or `run` (shared)",
        ),
        Column(
            "dynamic",
            contract=False,
            key=True,
            cell=12,
            choices=("static", "auto", "marked"),
            doc="`dynamic-batch` and `mixed-resolution` rows: `static` (`torch.compile(dynamic=False)`), "
            "`auto` (torch's default), `marked` (`torch._dynamo.mark_dynamic` on the batch dimension); "
            "empty on other rows",
        ),
        Column(
            "variant",
            contract=False,
            cell=9,
            doc="`smoke` for a shrunk model, `custom of <base>` for a custom configuration",
        ),
        Column(
            "input_source", contract=False, setting=True, doc="which image fed the model (URL or file name)"
        ),
        Column(
            "torch_threads",
            INT,
            contract=False,
            setting=True,
            doc="`torch.get_num_threads()` in the worker as it timed (on a CPU, one a core where it was "
            "pinned to fewer to time: `timing_cpus`)",
        ),
        Column(
            "malloc",
            contract=False,
            setting=True,
            choices=("steady", "system"),
            doc="the worker's C allocator, as in effect: `steady` (glibc's mmap and trim thresholds "
            "fixed) or `system` (as is; [trust.md](trust.md))",
        ),
        Column(
            "stop_rule",
            contract=False,
            setting=True,
            doc="the timed loop's rule as set, on every row: `fixed, <iterations> calls` or "
            "`ci <ci_target_pct>%, <min>-<max> calls, <max_timing_s> s` "
            "([measurement.md](measurement.md#when-timing-stops))",
        ),
        Column(
            "weights_init",
            contract=False,
            setting=True,
            choices=("unit-variance",),
            doc="every row: `unit-variance` for random weights (scaled after the config's init, "
            "[accuracy.md](accuracy.md#random-weights)); empty for a checkpoint's, or a run before "
            "the scaling",
        ),
    ),
    notes="`warmup` is the number of untimed warm-up calls that ran before the row's timed calls, not "
    "the setting: the `warmup` setting, but at least 1 for an eager function and at least 3 for a "
    "compiled one (CUDA-graph trees warm up on the 1st call after compiling, record on the 2nd, "
    "replay from the 3rd), so `warmup: 0` gives 1 in an eager row and 3 in a compiled one. In a "
    "compiled row it counts the compiled function's warm-up calls, made after its first call (which "
    "compiles it; its time gives `compile_s`): neither that first call nor the accuracy check's "
    "calls are counted, and the eager function timed beside it was warmed up separately, by the "
    "eager count, earlier in the same process. Empty when the cell did not end `ok`.",
)
