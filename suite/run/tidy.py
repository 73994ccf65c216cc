"""What a run leaves in its folder: raw CSVs, logs (and, after a merge, tables and plots); no
lock file (suite.run.lock removes its own), no scratch files, and the compile cache of
`compile_cache: run` only when asked for (`run --keep-compile-cache`).

That cache can take hundreds of MB, and it serves only the run that made it (a resumed run
included: a killed run keeps it, for the resume). While it is there, a README.txt in it says
what it is and that it can be deleted.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Sequence
from pathlib import Path

from suite.run.launch import RunPaths
from suite.run.lock import held_by_others, lock_path_for
from suite.spec.model import Cell

CACHE_README = """\
The inductor and triton compile caches that the cells of this run share (compile_cache: run
in matrix.yaml): a cell compiles what an earlier cell of the run already compiled from here.

`python -m suite run` removes this folder when the run ends, unless it was given
--keep-compile-cache; a run that was killed leaves it for its resume (the same --run-id).
It holds no result: delete it whenever no run of this folder is going on.
"""


def explain_cache(paths: RunPaths, cells: Sequence[Cell]) -> None:
    """Before the first cell: a README in the shared compile cache, when a cell will use it."""
    if any(c.settings.compile_cache == "run" for c in cells):
        paths.compile_cache.mkdir(parents=True, exist_ok=True)
        (paths.compile_cache / "README.txt").write_text(CACHE_README, encoding="utf-8")


def tidy(paths: RunPaths, keep_compile_cache: bool) -> None:
    """After the last cell (the run's lock still held): remove this runner's scratch files and
    the shared compile cache, unless it was asked for or another runner of this run folder
    (another build or shard) is still going."""
    shutil.rmtree(paths.scratch, ignore_errors=True)
    _remove_if_empty(paths.scratch.parent)
    if keep_compile_cache or not paths.compile_cache.exists():
        return
    if not held_by_others(paths.csv.parent, lock_path_for(paths.csv)):
        shutil.rmtree(paths.compile_cache, ignore_errors=True)


def _remove_if_empty(folder: Path) -> None:
    with contextlib.suppress(OSError):  # not empty (another runner's scratch), or gone
        folder.rmdir()
