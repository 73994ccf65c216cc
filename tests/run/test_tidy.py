"""A run leaves a clean folder: no lock file after it ends, no scratch files, and
the shared compile cache of `compile_cache: run` only when asked for (a README in it says
what it is while it is there); the lock stays one-runner-per-CSV although its file goes.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from support.runner import cells, run

from suite.errors import UsageError
from suite.run import lock as lock_module
from suite.run import tidy
from suite.run.launch import RunPaths
from suite.run.lock import RunLock, lock_path_for


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


@pytest.mark.parametrize("cache", ["cold", "run"])
def test_a_finished_run_leaves_its_rows_and_logs_only(tmp_path: Path, stub: Path, cache: str) -> None:
    run(tmp_path, stub, "NaN", cells=cells(tmp_path, cache))
    run_dir = tmp_path / "out" / "r"
    assert files(run_dir) == [
        "logs",
        "logs/stub__cpu",
        "logs/stub__cpu/000-tinyvit-bs1-eager-inference.log",
        "logs/stub__cpu/001-tinyvit-bs1-default-inference.log",
        "raw",
        "raw/stub__cpu.csv",
    ]


def test_the_compile_cache_is_kept_when_asked_and_says_what_it_is(tmp_path: Path, stub: Path) -> None:
    run(tmp_path, stub, "NaN", cells=cells(tmp_path, "run"), keep_compile_cache=True)
    cache = tmp_path / "out" / "r" / ".compile-cache"
    assert (cache / "inductor" / "kernel").exists()  # the workers' cache, shared by the run
    readme = (cache / "README.txt").read_text()
    assert "compile_cache: run" in readme and "--keep-compile-cache" in readme and "delete it" in readme


def test_the_cache_stays_while_another_runner_of_the_run_folder_is_going(tmp_path: Path, stub: Path) -> None:
    """Another build (or shard) of the same run folder, still running, shares the cache."""
    other = tmp_path / "out" / "r" / "raw" / "other__cpu.csv"
    with RunLock(other):
        run(tmp_path, stub, "NaN", cells=cells(tmp_path, "run"))
        assert (tmp_path / "out" / "r" / ".compile-cache" / "inductor" / "kernel").exists()
    assert not lock_path_for(other).exists()
    run(tmp_path, stub, "NaN", cells=cells(tmp_path, "run"))  # resumed: nothing to run; it tidies
    assert not (tmp_path / "out" / "r" / ".compile-cache").exists()


def test_a_killed_run_s_cache_is_explained(tmp_path: Path) -> None:
    paths = RunPaths.make(tmp_path, "k", "stub", "cpu")
    tidy.explain_cache(paths, cells(tmp_path, "cold"))
    assert not paths.compile_cache.exists()  # no cell shares a cache: nothing to explain
    tidy.explain_cache(paths, cells(tmp_path, "run"))
    assert "removes this folder when the run ends" in (paths.compile_cache / "README.txt").read_text()


def test_the_lock_file_goes_and_a_runner_that_locked_the_old_one_starts_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Runner B opens the lock file just before runner A, ending, removes it; B's lock is then
    on a file no one else can see. B must notice and lock the path's new file, or C, coming
    after, would run beside B."""
    csv = tmp_path / "raw" / "b__cpu.csv"
    a = RunLock(csv).__enter__()
    stale = os.open(a.path, os.O_RDWR)  # B's open, just before A ends
    a.__exit__()
    assert not a.path.exists()  # A leaves no file behind
    opens = iter([stale])
    real_open = os.open
    monkeypatch.setattr(lock_module.os, "open", lambda *args: next(opens, None) or real_open(*args))
    b = RunLock(csv).__enter__()
    assert a.path.exists() and a.path.read_text().startswith(f"pid {os.getpid()} ")
    with pytest.raises(UsageError, match="is being written by another run"):
        RunLock(csv).__enter__()  # C
    b.__exit__()
    assert not a.path.exists()
