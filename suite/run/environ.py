"""The environment every child Python of the suite starts with (a worker, the preflight probe, a
nox session's `python -m suite`): ours, this checkout's suite first on PYTHONPATH, output
unbuffered. Standard library only, so the nox sessions can use it without importing the run side."""

from __future__ import annotations

import os
from pathlib import Path

PACKAGE_ROOT = Path(__file__).resolve().parents[2]


def child_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """Ours (HF_TOKEN etc. pass through, never written anywhere), the suite importable, output
    unbuffered so a log is complete; then `extra`."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env
