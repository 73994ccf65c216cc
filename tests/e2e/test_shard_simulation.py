"""A fan-out on one machine: each shard of a small plan as its own `suite run --shard i/n`
process (as each GitHub Actions job runs one), against one unsharded run. The union of the
shards' rows must be the unsharded run's rows, cell for cell.

What is under test is the sharding (the command line, the selection, the per-shard CSV names,
the empty shard, the merge), so each process is the real `suite run` with two stand-ins: the
stub worker of tests/support/__init__.py answers for each cell, and the environment probe is skipped.
No torch: the real worker end to end is tests/e2e/test_smoke_e2e.py's.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support import STUB_ENVIRONMENT, write_stub_worker

from suite.results import key_of, read_rows

ROOT = Path(__file__).resolve().parents[2]
# Two cells (eager, default) over three shards: two shards of one cell, one empty shard.
SELECTION = ["--profile", "smoke", "--models", "ViT", "--modes", "eager,default"]
# --schedule serial: the stub is a one-cell worker
TINY = ["--iterations", "3", "--warmup", "1", "--device", "cpu", "--schedule", "serial"]
SHARDS = 3
# the runs are module-scoped: under xdist the tests stay on one worker
pytestmark = pytest.mark.xdist_group("shard-simulation")

# `python -m suite run ARGS`, but the probe returns the stub environment and every worker is
# the stub (argv: STUB ENVIRONMENT_JSON ARGS...).
DRIVER = """
import dataclasses, json, sys
from suite.cli import main
from suite.measure.provenance import Environment
from suite.run import preflight, runner
stub, environment = sys.argv[1:3]
preflight.probe = lambda device, python=None: Environment(**json.loads(environment))
run_cells = runner.run_cells
runner.run_cells = lambda sweep: run_cells(dataclasses.replace(sweep, python=stub))
sys.exit(main(["run", *sys.argv[3:]]))
"""


@dataclass
class Runs:
    out: Path
    whole: Path  # results/<run>/ of the unsharded run
    sharded: Path  # results/<run>/ shared by every shard
    shard_logs: dict[int, subprocess.CompletedProcess[str]]


def suite_run(stub: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = json.dumps(dataclasses.asdict(STUB_ENVIRONMENT))
    return subprocess.run(
        [sys.executable, "-c", DRIVER, str(stub), environment, *SELECTION, *TINY, *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
        timeout=600,
        check=False,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Runs:
    out = tmp_path_factory.mktemp("fanout")
    stub = write_stub_worker(out / "stub-worker")
    whole = suite_run(stub, "--out", str(out), "--run-id", "whole")
    assert whole.returncode == 0, whole.stderr
    logs = {}
    for i in range(1, SHARDS + 1):
        logs[i] = suite_run(stub, "--out", str(out), "--run-id", "sharded", "--shard", f"{i}/{SHARDS}")
        assert logs[i].returncode == 0, logs[i].stderr
    return Runs(out, out / "whole", out / "sharded", logs)


def rows_of(run_dir: Path) -> list[dict[str, str]]:
    return [row for csv_path in sorted((run_dir / "raw").glob("*.csv")) for row in read_rows(csv_path).rows]


def test_shards_together_are_the_unsharded_run(runs: Runs) -> None:
    whole, sharded = rows_of(runs.whole), rows_of(runs.sharded)
    assert len(whole) == 2 and {r["status"] for r in whole + sharded} == {"ok"}
    assert sorted(map(key_of, sharded)) == sorted(map(key_of, whole))
    assert len({key_of(r) for r in sharded}) == len(sharded)  # no cell twice


def test_each_shard_writes_its_own_named_csv(runs: Runs) -> None:
    (whole_csv,) = (runs.whole / "raw").glob("*.csv")  # <build>__<device>.csv
    stem = whole_csv.name.removesuffix(".csv")
    raw = runs.sharded / "raw"
    written = {i: raw / f"{stem}__shard-{i}-of-{SHARDS}.csv" for i in range(1, SHARDS + 1)}
    assert sorted(raw.glob("*.csv")) == sorted(p for p in written.values() if p.exists())
    empty = [i for i, path in written.items() if not path.exists()]
    assert len(empty) == 1  # two cells, three shards
    for i, path in written.items():
        if path.exists():
            assert {r["shard"] for r in read_rows(path).rows} == {f"{i}/{SHARDS}"}
    message = f"shard {empty[0]}/{SHARDS} is empty (2 cell(s) over {SHARDS} shards): nothing to run"
    assert message in runs.shard_logs[empty[0]].stderr
    assert {r["shard"] for r in rows_of(runs.whole)} == {""}


def _merge(run_dir: Path, out: Path) -> dict[str, list[list[str]]]:
    """Every CSV table `suite merge` writes for one run: name -> rows (no plots: they are no CSV)."""
    proc = subprocess.run(
        [sys.executable, "-m", "suite", "merge", str(run_dir), "-o", str(out), "--no-plots"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    return {
        str(p.relative_to(out)): list(csv.reader(p.read_text().splitlines()))
        for p in sorted(out.rglob("*.csv"))
    }


def test_merged_tables_have_the_same_shape(runs: Runs) -> None:
    """Same tables, same rows and columns; the timings themselves differ from run to run."""
    whole = _merge(runs.whole, runs.out / "merged-whole")
    sharded = _merge(runs.sharded, runs.out / "merged-sharded")
    assert whole and sorted(whole) == sorted(sharded)
    for name, rows in whole.items():
        assert rows[0] == sharded[name][0], name  # header
        assert [(r[:1], len(r)) for r in rows] == [(r[:1], len(r)) for r in sharded[name]], name
