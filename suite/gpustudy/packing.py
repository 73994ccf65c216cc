"""What a call on the GPU machine leaves to bring back (in `--out`: a few files, at most 8 and each
under 16 MiB, 2 folders down, plain names, so that a window's transfer, however limited, brings
them back): a call's run folders as one tarball, written whole, its working files left out, and
the checks that what is there keeps to that. Standard library only.
"""

from __future__ import annotations

import io
import re
import tarfile
import time
from collections.abc import Sequence
from pathlib import Path

from suite.errors import UsageError

MAX_FILE_BYTES = 16 * 2**20  # the most a file left to bring back may hold
PACK_LIMIT_BYTES = 15 * 2**20  # the tarball's own limit, with room to spare
LEFT_OUT = (".scratch", ".compile-cache")  # a run's working files, never results


def _excluded(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    parts = Path(info.name).parts
    if any(p in LEFT_OUT for p in parts) or parts[-1].endswith(".lock"):
        return None
    return info


def pack(work: Path, ids: Sequence[str], target: Path, extra: dict[str, bytes] | None = None) -> str:
    """Write `target` (a .tar.gz of the call's run folders under `work`, plus `extra` files at its
    top) whole, then rename it into place; past PACK_LIMIT_BYTES, again without the cells' logs.
    Returns a note on what was left out ("" when nothing)."""
    note = ""
    for with_logs in (True, False):
        tmp = target.with_name(f".{target.name}.tmp")
        with tarfile.open(tmp, "w:gz") as tar:
            for run_id in ids:
                folder = work / run_id
                if folder.is_dir():
                    tar.add(folder, arcname=run_id, filter=_excluded if with_logs else _no_logs)
            for name, data in (extra or {}).items():
                info = tarfile.TarInfo(name)
                info.size, info.mtime = len(data), int(time.time())
                tar.addfile(info, io.BytesIO(data))
        if tmp.stat().st_size <= PACK_LIMIT_BYTES or not with_logs:
            tmp.replace(target)
            if tmp.exists():  # pragma: no cover - replace moved it
                tmp.unlink()
            if not with_logs:
                note = "the cells' logs were left out of the tarball (over 15 MiB with them)"
            return note
        tmp.unlink()
    return note


def _no_logs(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if _excluded(info) is None or "logs" in Path(info.name).parts:
        return None
    return info


def unpack(archive: Path, into: Path) -> list[str]:
    """Unpack a call's tarball into `into`; the run folders it held."""
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive, "r:gz") as tar:
        members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
        for m in members:
            if m.name.startswith("/") or ".." in Path(m.name).parts:
                raise UsageError(str(archive), f"unsafe member {m.name!r}: not unpacked")
        if hasattr(tarfile, "data_filter"):
            tar.extractall(into, members=members, filter="data")
        else:  # pragma: no cover - Pythons before the extraction filters
            tar.extractall(into, members=members)
    return sorted({Path(m.name).parts[0] for m in members if len(Path(m.name).parts) > 1})


def check_shape(out: Path) -> list[str]:
    """What in `out` goes beyond what a call leaves to bring back: more than 8 files, a file over
    16 MiB, one more than 2 folders down, a name with other characters than letters, digits, '.',
    '_' and '-'. Empty: all of it comes back."""
    problems = []
    files = [p for p in out.rglob("*") if p.is_file()]
    if len(files) > 8:
        problems.append(f"{len(files)} files (at most 8 come back)")
    for p in files:
        rel = p.relative_to(out)
        if len(rel.parts) > 3:
            problems.append(f"{rel}: more than 2 folders down")
        if p.stat().st_size > MAX_FILE_BYTES:
            problems.append(f"{rel}: {p.stat().st_size} bytes, over 16 MiB")
        if any(not re.fullmatch(r"[A-Za-z0-9._-]+", part) for part in rel.parts):
            problems.append(f"{rel}: a name a transfer may not bring back")
    return problems
