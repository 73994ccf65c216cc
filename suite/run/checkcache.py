"""Model checks that found nothing, remembered on disk, so that `plan` (which every nox session
runs before it builds anything) does not start a Python that imports torch and transformers
(5-9 s of CPU) to check the same models against the same libraries again.

A check is remembered only when it found no problem, under a key made of everything its answer
depends on: what was checked (the models' specs), the Python that checked them, where torch and
transformers are installed and their versions and files' times, and the checking code itself.
A problem is never remembered: a bad model is checked, and reported, every time. `run` still
checks in its child (which also probes the device); it only adds what it found here.

Where: $SUITE_CACHE_DIR, else $XDG_CACHE_HOME/torch-compile-suite, else
~/.cache/torch-compile-suite; the folder `model-checks/` in it, one empty file per clean
check. A cache that cannot be read or written is left alone: the check runs as before.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import os
import sys
from pathlib import Path

# the code whose answer is remembered: a change to it is a new key
CHECKING_CODE = ("measure/config_check.py", "measure/models.py", "spec/model.py", "spec/limits.py")
LIBRARIES = ("torch", "transformers")


def cache_dir() -> Path:
    """The suite's cache folder (see the module docstring)."""
    if os.environ.get("SUITE_CACHE_DIR"):
        return Path(os.environ["SUITE_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "torch-compile-suite"


def _library(name: str) -> str | None:
    """Where `name` is installed, its version and its package file's time, found without
    importing it; None when this Python does not have it."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    try:
        version = importlib.metadata.version(name)
        stamp = os.stat(spec.origin).st_mtime_ns
    except (importlib.metadata.PackageNotFoundError, OSError):
        return None
    return f"{name} {version} {spec.origin} {stamp}"


def key_of(payload: str) -> str | None:
    """The key of checking `payload` in a child of this Python (suite.run.preflight); None when
    it cannot be made (a library missing, the suite's files unreadable): the check then runs."""
    parts = [payload, os.path.realpath(sys.executable)]
    for name in LIBRARIES:
        found = _library(name)
        if found is None:
            return None
        parts.append(found)
    root = Path(__file__).resolve().parents[1]
    try:
        parts += [(root / rel).read_text(encoding="utf-8") for rel in CHECKING_CODE]
    except OSError:
        return None
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _entry(key: str) -> Path:
    return cache_dir() / "model-checks" / key


def found_clean(key: str | None) -> bool:
    """Whether a check with this key found nothing before."""
    return key is not None and _entry(key).is_file()


def remember_clean(key: str | None) -> None:
    """Remember that a check with this key found nothing (quietly skipped where the cache
    cannot be written)."""
    if key is None:
        return
    try:
        entry = _entry(key)
        entry.parent.mkdir(parents=True, exist_ok=True)
        entry.touch()
    except OSError:
        pass
