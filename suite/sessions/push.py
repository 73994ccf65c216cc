"""Results leave the machine: a container session's run folder pushed to a folder, a bucket or
the Hub (`--push URL`, or the variable SUITE_PUSH), after every N new rows while the containers
run and once more when the session ends (the merge's tables and plots included: the merge
pushes too); and which run a session resumes when no `--run-id` is given.

A push copies every file of the run folder but the hidden ones (locks, scratch, the compile
cache) to `<URL>/<run id>/<same path>`, each file whole (a local target: written beside and
renamed; a bucket or the Hub: one object per file), and skips a file whose content it pushed
already (a hidden manifest in the run folder keeps what went where; a local target is also
read back). Pushing the same folder twice leaves the same files with the same content.
`s3://`, `hf://` and any other URL go through fsspec (and its filesystem's package); where that
is missing the session stops in one line before anything runs.

A session marks its run folder `.session.json` (`running`, then `finished` when it ends, with
failed cells or not); a session killed on the way (a preempted VM) leaves `running`, and the
next session of the same kind without `--run-id` resumes that run and says so (`--new`: a new
one). Host side: standard library only, fsspec imported only for a URL that needs it.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from suite.errors import UsageError

PUSH_ENV = "SUITE_PUSH"  # where results go when --push is not given
EVERY_ENV = "SUITE_PUSH_EVERY"  # rows between pushes while the run goes on
DEFAULT_EVERY = 5
MARKER = ".session.json"
FSSPEC_PACKAGES = {"s3": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "hf": "huggingface_hub", "az": "adlfs"}


def _is_url(url: str) -> bool:
    return "://" in url and not url.startswith("file://")


@dataclass(frozen=True)
class Target:
    """Where a run folder is pushed: a local folder, or an fsspec URL with its filesystem."""

    url: str
    every: int = DEFAULT_EVERY
    fs: Any = None  # the fsspec filesystem (None: a local folder)

    def __post_init__(self) -> None:
        if self.every < 1:
            raise UsageError("--push-every", f"{self.every}: a whole number of rows >= 1")

    @property
    def root(self) -> str:
        return self.url.removeprefix("file://").rstrip("/") if not self.fs else self.url.rstrip("/")

    def key(self) -> str:
        return hashlib.sha256(self.url.encode()).hexdigest()[:12]


def open_target(url: str, every: int = DEFAULT_EVERY) -> Target:
    """The target of `--push URL`, checked before the run: a local folder that can be made and
    written, or an fsspec URL whose packages are installed (else one line, exit 2)."""
    if not url.strip():
        raise UsageError("--push", "empty: a folder, s3://bucket/prefix or hf://datasets/org/name")
    if not _is_url(url):
        root = Path(url.removeprefix("file://"))
        try:
            root.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise UsageError("--push", f"{root}: cannot make the folder ({exc.strerror or exc})") from None
        if not os.access(root, os.W_OK):
            raise UsageError("--push", f"{root}: not writable")
        return Target(url, every)
    scheme = url.split("://", 1)[0]
    package = FSSPEC_PACKAGES.get(scheme, "")
    try:
        import fsspec  # a URL needs it; a folder does not

        fs, _ = fsspec.core.url_to_fs(url)
    except ImportError as exc:
        missing = getattr(exc, "name", None) or package or "fsspec"
        raise UsageError(
            "--push",
            f"{url}: {missing} is not installed in the Python nox runs on; pip install fsspec"
            + (f" {package}" if package else "")
            + " next to nox, or push to a folder",
        ) from None
    except (ValueError, OSError) as exc:
        raise UsageError("--push", f"{url}: {exc}") from None
    return Target(url, every, fs)


def target_of(flag: str | None, every: str | None, environ: Mapping[str, str]) -> Target | None:
    """`--push` / `--push-every`, else SUITE_PUSH / SUITE_PUSH_EVERY; None: nothing pushed."""
    url = flag if flag is not None else environ.get(PUSH_ENV, "").strip()
    text = every if every is not None else environ.get(EVERY_ENV, "").strip() or str(DEFAULT_EVERY)
    if not text.isdigit():
        raise UsageError("--push-every", f"{text!r}: a whole number of rows >= 1")
    return open_target(url, int(text)) if url else None


def run_files(run_dir: Path) -> Iterator[Path]:
    """The files a push copies: all but hidden ones (and those under hidden folders)."""
    for path in sorted(run_dir.rglob("*")):
        rel = path.relative_to(run_dir)
        if path.is_file() and not path.is_symlink() and not any(p.startswith(".") for p in rel.parts):
            yield path


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def push(run_dir: Path, target: Target) -> int:
    """Copy the run folder to `<target>/<run id>/`; the number of files written (0: all there)."""
    manifest_path = run_dir / f".push-{target.key()}.json"
    try:
        sent: dict[str, str] = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        sent = {}
    written = 0
    for path in run_files(run_dir):
        rel = path.relative_to(run_dir).as_posix()
        data = path.read_bytes()
        digest = _digest(data)
        dest = f"{target.root}/{run_dir.name}/{rel}"
        if target.fs is None:
            local = Path(dest)
            if local.is_file() and _digest(local.read_bytes()) == digest:
                sent[rel] = digest
                continue
            local.parent.mkdir(parents=True, exist_ok=True)
            scratch = local.with_name(f".{local.name}.push")
            scratch.write_bytes(data)
            os.replace(scratch, local)
        elif sent.get(rel) == digest:
            continue
        else:
            target.fs.pipe_file(dest, data)
        sent[rel] = digest
        written += 1
    manifest_path.write_text(json.dumps(sent, indent=1, sort_keys=True), encoding="utf-8")
    hand_over(manifest_path)
    return written


def rows_recorded(run_dir: Path) -> int:
    """Complete rows in the run folder's raw CSVs (they only grow while it runs)."""
    count = 0
    for csv_file in (run_dir / "raw").glob("*.csv"):
        try:
            count += max(csv_file.read_bytes().count(b"\n") - 1, 0)
        except OSError:
            continue
    return count


@dataclass
class Watcher:
    """Pushes the run folder after every `target.every` new rows while the containers run (a
    thread polling every `poll_s`), and once more at `stop`; a failed push is a warning, the
    next one carries the same files and more."""

    run_dir: Path
    target: Target
    log: Callable[[str], None]
    poll_s: float = 30.0
    pushed_rows: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def once(self, final: bool = False) -> None:
        rows = rows_recorded(self.run_dir)
        if not final and rows - self.pushed_rows < self.target.every:
            return
        try:
            written = push(self.run_dir, self.target)
        except (OSError, ValueError, RuntimeError) as exc:
            self.log(f"warning: the push to {self.target.url} failed ({exc}); the next one tries again")
            return
        self.pushed_rows = rows
        said = f"{written} file(s) new or changed, {rows} row(s)"
        self.log(f"pushed {self.run_dir.name} to {self.target.url}: {said}")

    def start(self) -> None:
        def loop() -> None:
            while not self._stop.wait(self.poll_s):
                self.once()

        self._thread = threading.Thread(target=loop, name="push", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.once(final=True)


# --- which run a session resumes ---------------------------------------------------------------


def mark(run_dir: Path, session: str, state: str) -> None:
    """The run folder's marker: which kind of session made it, and whether it ended."""
    run_dir.mkdir(parents=True, exist_ok=True)
    scratch = run_dir / f"{MARKER}.tmp"
    scratch.write_text(json.dumps({"session": session, "state": state}) + "\n", encoding="utf-8")
    os.replace(scratch, run_dir / MARKER)
    hand_over(run_dir / MARKER)


def hand_over(path: Path) -> None:
    """As root, a file the host writes into a run folder goes to the folder's owner (the
    containers' user, who got the folder: suite.sessions.host.prepare_mounts), so that every
    file of a run is one user's, whoever wrote it."""
    if os.getuid() != 0:
        return
    folder = path.parent.stat()
    if folder.st_uid != 0:
        os.chown(path, folder.st_uid, folder.st_gid, follow_symlinks=False)


def unfinished(out: Path, session: str) -> str | None:
    """The newest run folder under `out` that a session of this kind began and never ended."""
    found = []
    for marker in out.glob(f"*/{MARKER}"):
        try:
            said = json.loads(marker.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(said, dict) and said.get("session") == session and said.get("state") == "running":
            found.append((marker.stat().st_mtime, marker.parent.name))
    return max(found)[1] if found else None
