"""Paths as the merged pages write them: relative to the project, never a machine's absolute
path (a merged `tables.md` is committed and read on other machines)."""

from __future__ import annotations

import os
from pathlib import Path

PROJECT_ROOT = Path(__file__).resolve().parents[2]


def shown(path: Path | str) -> str:
    """`path` relative to the project (`matrix.yaml`, `results/<run>/raw/x.csv`); one outside it
    relative to the project too (`../elsewhere/x.csv`), so no absolute path is written."""
    return Path(os.path.relpath(Path(path).resolve(), PROJECT_ROOT)).as_posix()
