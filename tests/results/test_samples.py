"""Samples kept: every ok row's per-call milliseconds, by process and series, in a JSON
Lines file beside the raw CSV; merge reads them back, writes them as Parquet and recomputes each
row's median from them. The runner is the real one, its worker a shell stub (tests/support/runner)."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import write_stub_worker
from support.runner import run

from suite.errors import UsageError
from suite.report.load import load
from suite.report.samples import pooled, read_beside, read_parquet, recompute, report_line, write_parquet
from suite.results import KEY_COLUMNS, read_rows
from suite.results import samples as samples_file
from suite.run import launch

# The stub's rows say median 1.0 ms; their samples (odd count) have that median too.
STUB = """#!/bin/sh
mkdir -p "$TORCHINDUCTOR_CACHE_DIR" && : > "$TORCHINDUCTOR_CACHE_DIR/kernel"
case "$4" in
  *-default-*) extra=', "speedup": 0.85, "eager_median_ms": 0.85'
               samples='"samples": {"eager": [0.8, 0.85, 0.9], "compiled": [1.2, 1.0, 0.7]}' ;;
  *) extra='' ; samples='"samples": {"eager": [1.5, 1.0, 0.5, 2.0, 0.9]}' ;;
esac
printf '{"status": "ok", "error": "", "mean_ms": 1, "median_ms": 1.0, %s' "$samples" >"$4.part"
printf '%s}' "$extra" >> "$4.part"
mv "$4.part" "$4"
"""


@pytest.fixture
def stub(tmp_path: Path) -> Path:
    return write_stub_worker(tmp_path / "worker.sh", STUB)


def test_samples_are_written_beside_the_csv_and_merge_recomputes_the_median(
    tmp_path: Path, stub: Path
) -> None:
    report, _ = run(tmp_path, stub, "NaN")
    beside = samples_file.samples_path(report.csv)
    assert beside.name == report.csv.name.removesuffix(".csv") + ".samples.jsonl"
    lines = samples_file.read(beside)
    assert {(s.series, len(s.ms)) for s in lines} == {("eager", 5), ("eager", 3), ("compiled", 3)}
    assert all(s.process == 0 and s.cold and s.run_id == "r" for s in lines)
    assert "samples" not in read_rows(report.csv).rows[0]  # the CSV stays the contract

    loaded = load([tmp_path / "out" / "r"])
    calls = read_beside(loaded.files)
    assert len(calls) == 11 and list(calls.columns[: len(KEY_COLUMNS)]) == list(KEY_COLUMNS)
    found = recompute(calls, loaded.frame)
    assert len(found) == 2 and all(r.agrees and r.median_ms == 1.0 for r in found)
    assert report_line(found).endswith("2 row(s)' medians recomputed from 8 call(s): all agree with the CSV")

    back = read_parquet(write_parquet(calls, tmp_path / "s.parquet"))
    assert back.equals(calls)
    # two runs pooled: a row's median over both runs' calls
    both = pooled([back, back.assign(run_id="other")])
    assert len(both) == 22 and set(both["run_id"]) == {"r", "other"}


def test_a_damaged_samples_file_is_named_with_its_line(tmp_path: Path) -> None:
    csv = tmp_path / "b__cpu.csv"
    samples_file.samples_path(csv).write_text('{"key": {}}\n')
    with pytest.raises(UsageError) as err:
        read_beside([csv])
    assert str(samples_file.samples_path(csv)) in str(err.value) and "1:" in str(err.value)


def test_a_torn_last_line_is_cut_off(tmp_path: Path) -> None:
    row = {c: "x" for c in KEY_COLUMNS} | {"run_id": "r"}
    path = tmp_path / "a.samples.jsonl"
    samples_file.append(path, samples_file.of_row(row, 1, False, {"compiled": [1.0, 2.0]}))
    with open(path, "a") as fh:
        fh.write('{"key": {"bui')  # a crash mid-write
    (one,) = samples_file.read(path)
    assert one.ms == (1.0, 2.0) and one.process == 1 and not one.cold


@pytest.mark.parametrize(
    ("field", "value"), [("process", -1), ("cold", "yes"), ("series", "other"), ("ms", (1.0, 0.0))]
)
def test_process_samples_are_validated(field: str, value: object) -> None:
    good = {"key": ("x",) * len(KEY_COLUMNS), "run_id": "r", "process": 0, "cold": True,
            "series": "eager", "ms": (1.0,)}  # fmt: skip
    with pytest.raises(samples_file.SamplesError, match=field):
        samples_file.ProcessSamples(**(good | {field: value}))


def test_a_malformed_samples_result_is_dropped_not_the_row(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    path.write_text('{"status": "ok", "error": "", "median_ms": 1.0, "samples": {"eager": [1, "x"]}}')
    fields = launch.result_fields(path)
    assert fields["median_ms"] == 1.0 and launch.SAMPLES not in fields
