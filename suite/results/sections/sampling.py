"""The sampling section: how many calls and processes the row's figures pool, why its timed loop
stopped (suite.measure.timing.StopRule), and where another run's median should fall
(suite.run.rerun). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Column, Section, counted, extra, extra_timed

SECTION = Section(
    name="sampling",
    title="Samples, and when timing stops",
    about="How the row's figures were sampled ([measurement.md](measurement.md#when-timing-stops), "
    "[intervals.md](intervals.md)); `iterations` stays the number of timed calls the row's figures "
    "come from (per function, all processes).",
    columns=(
        counted(
            "calls",
            "timed calls made: every timed function (a compiled row: its eager and its compiled "
            "calls) and process, the latency calls, the throughput blocks' calls and the switch calls",
        ),
        Column(
            "stop_reason",
            contract=False,
            timing=True,
            choices=("fixed", "ci", "max_calls", "max_seconds", "pair"),
            doc="why the timed loop stopped: `fixed` (`stop_rule: fixed`, exactly `iterations` calls), "
            "`ci` (every timed function's 95% CI of the median within `ci_target_pct` of it), "
            "`max_calls` (`iterations` calls first), `max_seconds` (`max_timing_s` of timing first), "
            "`pair` (a pair's coordinator stopped both builds' rounds: [pairs.md](pairs.md))",
        ),
        extra_timed("timed_s", "s", "seconds the timed loop took (all processes)"),
        counted(
            "processes",
            "worker processes whose calls the row's figures pool (the `processes` setting, less "
            "any that failed); empty with one process",
            setting=True,
        ),
        extra_timed(
            "process_spread_pct",
            "%",
            "max / min - 1 of those processes' own medians, in percent",
            positive=False,
        ),
        extra_timed(
            "run_noise_pct",
            "%",
            "the machine's between-run noise of a median (the `run_noise_pct` setting for the row's "
            "device type); empty where it was not measured",
            positive=False,
        ),
        extra_timed(
            "rerun95_low_ms",
            "ms",
            "the rerun interval: where another run's median of the cell on this machine should fall, "
            "95% of the time (the CI of the median widened by both runs' sampling error and the "
            "between-run noise): low; empty without `run_noise_pct`",
        ),
        extra_timed("rerun95_high_ms", "ms", "the rerun interval: high"),
        extra_timed(
            "speedup_noise_pct",
            "%",
            "the machine's between-run noise the speed-up's rerun interval adds (`speedup_noise_pct`)",
            positive=False,
        ),
        extra_timed("speedup_rerun95_low", "x", "where another run's paired speed-up should fall, 95%: low"),
        extra_timed(
            "speedup_rerun95_high", "x", "where another run's paired speed-up should fall, 95%: high"
        ),
        extra("process_note", "a process of the cell that gave no samples, and why"),
    ),
    notes="Beside each raw CSV, `raw/<build>__<device>.samples.jsonl` keeps every ok row's per-call "
    'milliseconds: one JSON line per (row, process, series), `{"key": {the resume key\'s columns}, '
    '"run_id", "process" (0: the cell\'s first, cold process), "cold", "series" (`eager` | '
    "`compiled`; a compiled row's interleaved eager calls are `eager`, sample i of both taken in the "
    'same round), "ms": [...]}`, appended and fsync\'d with the row (`suite/results/samples.py`: '
    "standard library only, because the containers pin no columnar library). `merge` reads these "
    "files beside the CSVs it merges, writes them as one Parquet table, `tables/samples.parquet` "
    "(pyarrow; a row per call: the key's columns, `run_id`, `process`, `cold`, `series`, `call`, "
    "`ms`), recomputes every row's median from them and says whether each agrees with the CSV "
    "(`suite merge: samples: N row(s)' medians recomputed from M call(s): all agree with the CSV`; "
    "`compare` says the same of each of its two runs, after its verdict); "
    "`suite.report.samples.pooled` concatenates two runs' calls (processes kept apart by run). The "
    "CSV stays the contract: a run without a samples file (from before samples were kept) merges as "
    "before.",
)
