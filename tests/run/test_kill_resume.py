"""The runner killed with SIGKILL at random moments, then resumed, many times over.

The runner here is the real one (lock, resume, CSV writer, scratch files), driven by a
small script; the worker is a shell stub that answers in a tenth of a second, so dozens
of kills fit in seconds. After every kill the raw CSV must parse, hold no duplicate and
only planned cells, and keep every row recorded before; after the final resume, rows
equal cells exactly. Real workers killed with their runner: tests/run/test_faults.py.

The kill times are random; the seed is in every failure message (SUITE_TEST_SEED=<seed>
repeats a sequence).
"""

from __future__ import annotations

import dataclasses
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from support import STUB_ENVIRONMENT, write_stub_worker

from suite.results import KEY_COLUMNS, key_of, read_rows
from suite.spec import expand, load_matrix

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"
KILLS = 14

DRIVER = """
import json, sys
from pathlib import Path
from suite.run import runner
from suite.measure.provenance import Environment
from suite.errors import UsageError
from suite.spec import expand, load_matrix
matrix, out, stub, environment = sys.argv[1:5]
cells = expand(load_matrix(Path(matrix)), "tiny", "stub")
try:
    environment = Environment(**json.loads(environment))
    runner.run_cells(runner.Sweep(cells, environment, Path(out), "k", python=stub, min_free_mb=0))
except UsageError as exc:
    print(f"error: {exc}", file=sys.stderr)
    sys.exit(2)
"""


@dataclasses.dataclass
class Sweep:
    matrix: Path
    out: Path
    stub: Path
    keys: set[tuple[str, ...]]

    @property
    def csv(self) -> Path:
        return self.out / "k" / "raw" / "stub__cpu.csv"

    @property
    def superseded(self) -> Path:
        return self.out / "k" / "superseded" / "stub__cpu.csv"

    def start(self, **extra: str) -> subprocess.Popen[str]:
        env = dict(os.environ, PYTHONPATH=str(REPO), **extra)
        cmd = [
            sys.executable,
            "-c",
            DRIVER,
            str(self.matrix),
            str(self.out),
            str(self.stub),
            json.dumps(dataclasses.asdict(STUB_ENVIRONMENT)),
        ]
        return subprocess.Popen(
            cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
        )


@pytest.fixture
def sweep(tmp_path: Path) -> Sweep:
    """Six cells (TinyViT and TinyResNet at batch 1, 2 and 4) with the stub worker."""
    text = TINY.read_text().replace("batch_sizes: [1]", "batch_sizes: [1, 2, 4]")
    text = text.replace("path: suite/assets/", f"path: {REPO}/suite/assets/")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text)
    stub = write_stub_worker(tmp_path / "stub-worker")
    keys = {key_of(c.key_fields("cpu")) for c in expand(load_matrix(matrix), "tiny", "stub")}
    assert len(keys) == 6
    return Sweep(matrix, tmp_path / "out", stub, keys)


def rows_by_key(rows: list[dict[str, str]], where: str) -> dict[tuple[str, ...], dict[str, str]]:
    keys = [key_of(r) for r in rows]
    dupes = {k for k in keys if keys.count(k) > 1}
    assert not dupes, f"{where}: duplicated cells {dupes}"
    return dict(zip(keys, rows, strict=True))


def test_sigkill_at_random_moments_then_resume_loses_nothing(sweep: Sweep) -> None:
    seed = int(os.environ.get("SUITE_TEST_SEED", random.randrange(2**32)))
    rng = random.Random(seed)
    ok_rows: dict[tuple[str, ...], dict[str, str]] = {}  # every ok row ever seen: must stay
    error_rows: list[dict[str, str]] = []  # every error row ever seen: raw or superseded
    pids: list[int] = []
    torn = 0
    for attempt in range(KILLS + 1):
        where = f"seed {seed}, attempt {attempt}"
        before = {k: r for k, r in ok_rows.items()}
        if sweep.csv.exists() and rng.random() < 0.25:  # a power cut mid-row: a torn tail
            with open(sweep.csv, "a") as fh:
                fh.write("k,stub,cpu,stub,Image Classification,TinyViT,vit (con")
            torn += 1
        proc = sweep.start()
        pids.append(proc.pid)
        if attempt < KILLS:
            time.sleep(rng.uniform(0.0, 1.6))
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        else:
            _, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, f"{where}: {err}"
        if not sweep.csv.exists():
            continue  # killed before the run opened its file
        got = read_rows(sweep.csv)
        assert got.skipped == 0, f"{where}: {got.problems}"
        assert got.repaired <= 1, where
        rows = rows_by_key(got.rows, where)
        assert set(rows) <= sweep.keys, f"{where}: rows of cells outside the plan"
        for key, row in before.items():
            assert rows.get(key) == row, f"{where}: an ok row recorded before the kill changed or vanished"
        absorb(rows, before, (ok_rows, error_rows), proc.pid, where)
    check_final(sweep, seed, error_rows, torn)


def absorb(
    rows: dict[tuple[str, ...], dict[str, str]],
    before: dict[tuple[str, ...], dict[str, str]],
    seen: tuple[dict[tuple[str, ...], dict[str, str]], list[dict[str, str]]],
    pid: int,
    where: str,
) -> None:
    """One attempt's rows into every ok row and every error row seen so far; a new ok row must
    come from this attempt's runner."""
    ok_rows, error_rows = seen
    for key, row in rows.items():
        if row["status"] == "ok":
            if key not in before:  # appended by this attempt's runner, from its own worker
                assert row["input_source"] == str(pid), f"{where}: a stale result was appended"
            ok_rows[key] = row
        elif row not in error_rows:
            error_rows.append(row)


def check_final(sweep: Sweep, seed: int, error_rows: list[dict[str, str]], torn: int) -> None:
    """Rows equal cells, the failing cell's row says why, and every failed attempt's row is kept."""
    final = rows_by_key(read_rows(sweep.csv).rows, f"seed {seed}, final")
    assert set(final) == sweep.keys, f"seed {seed}: rows must equal cells"
    model, batch = KEY_COLUMNS.index("model"), KEY_COLUMNS.index("batch_size")
    failing = next(k for k in final if k[model] == "TinyViT" and k[batch] == "2")
    assert final[failing]["status"] == "error" and "worker exited with status 1" in final[failing]["error"]
    assert all(r["status"] == "ok" for k, r in final.items() if k != failing)
    superseded = read_rows(sweep.superseded).rows if sweep.superseded.exists() else []
    assert len(superseded) == len({tuple(r.values()) for r in superseded}), f"seed {seed}: dupes"
    for row in error_rows:  # nothing lost: each failed attempt's row is still somewhere
        assert row in superseded or row == final[failing], f"seed {seed}: lost {row['started_at']}"
    if torn:
        assert read_rows(sweep.csv).repaired == 0


def test_a_second_runner_is_refused_and_the_file_stays_whole(sweep: Sweep) -> None:
    """First with the lock certainly held, then both started at once (either may win)."""
    lock = sweep.csv.with_name(f".{sweep.csv.name}.lock")
    for round_ in range(4):
        first = sweep.start(STUB_SLEEP="0.3")
        if round_ == 0:
            deadline = time.monotonic() + 60
            while not (lock.exists() and f"pid {first.pid} " in lock.read_text()):
                assert time.monotonic() < deadline, "the first runner never took the lock"
                time.sleep(0.02)
        second = sweep.start(STUB_SLEEP="0.3")
        errs = [p.communicate(timeout=120)[1] for p in (first, second)]
        codes = [p.returncode for p in (first, second)]
        if round_ == 0:
            assert codes == [0, 2], errs
            assert f"is being written by another run (pid {first.pid} on " in errs[1]
            assert len(errs[1].strip().splitlines()) == 1, errs[1]
        else:  # refused, or came after the other had ended (and re-ran its one failed cell)
            assert set(codes) <= {0, 2}, errs
            for code, err in zip(codes, errs, strict=True):
                assert code == 0 or "is being written by another run" in err, err
        rows = rows_by_key(read_rows(sweep.csv).rows, f"round {round_}")
        assert set(rows) == sweep.keys


def test_an_orphan_worker_of_a_killed_run_cannot_hand_in_its_result(sweep: Sweep, tmp_path: Path) -> None:
    """The stub (a shell: no lifeline) outlives its killed runner and writes its result
    while the resumed runner's own attempt at the same cell is running; that attempt
    then fails. The resumed run must record its own failure, not the orphan's result.
    The stubs wait on each other's files, so the order is certain: retry starts, orphan
    hands in, retry fails."""
    mark, started = tmp_path / "orphan-done", tmp_path / "retry-started"
    first = sweep.start(STUB_WAIT_FOR=str(started), STUB_MARK=str(mark))
    logs = sweep.out / "k" / "logs" / "stub__cpu"
    deadline = time.monotonic() + 60
    while not any("stub: waiting" in p.read_text() for p in logs.glob("*.log")):
        assert time.monotonic() < deadline, "the first stub never started"
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)
    first.wait()
    second = sweep.start(
        STUB_SLOW_FAIL="*000-tinyvit-bs1-*", STUB_STARTED=str(started), STUB_FAIL_AFTER=str(mark)
    )
    _, err = second.communicate(timeout=120)
    assert second.returncode == 0, err
    assert mark.read_text().strip() == str(first.pid), "the orphan did not hand in: the test proves nothing"
    rows = rows_by_key(read_rows(sweep.csv).rows, "resumed")
    assert set(rows) == sweep.keys
    retried = next(r for r in rows.values() if r["model"] == "TinyViT" and r["batch_size"] == "1")
    assert retried["status"] == "error" and "worker exited with status 1" in retried["error"]
    ok = [r for r in rows.values() if r["status"] == "ok"]
    assert ok and all(r["input_source"] == str(second.pid) for r in ok)
