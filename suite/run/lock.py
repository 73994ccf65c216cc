"""One runner per raw CSV: an exclusive `flock` on a lock file next to it, held for the run.

Two runners appending to the same CSV would record each cell twice and could interleave
their resume rewrites. The lock is taken before the CSV is read (resume) and released
when the run ends, also when the runner dies: the kernel drops a dead process's locks,
so a killed run never leaves a stale lock behind, only its file, which the next runner
takes over. A run that ends removes the file while it still holds the lock, so a finished
run folder has none; a runner that locked a file just removed (it opened it before the
removal) sees that the path no longer leads to its file and starts again. The file holds
only who has it, for the message.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import stat
from datetime import datetime, timezone
from pathlib import Path

from suite.errors import UsageError


def lock_path_for(csv_path: Path) -> Path:
    """`raw/.<name>.csv.lock`: beside the CSV, hidden, and not matched by `raw/*.csv`."""
    return csv_path.with_name(f".{csv_path.name}.lock")


class RunLock:
    """`with RunLock(csv_path):` - raises UsageError (exit 2) if another run holds it."""

    def __init__(self, csv_path: Path) -> None:
        self.csv_path = csv_path
        self.path = lock_path_for(csv_path)
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self._damaged(exc.strerror or str(exc)) from None
        while True:
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):  # e.g. a file system without locks
                    os.close(fd)
                    raise self._damaged(f"cannot be locked ({exc.strerror or exc})") from None
                holder = self._holder(fd)
                os.close(fd)
                raise UsageError(
                    "--run-id",
                    f"{self.csv_path} is being written by another run"
                    f"{f' ({holder})' if holder else ''}; wait for it to end, or use another --run-id",
                ) from None
            if self._still_there(fd):
                break
            os.close(fd)  # removed by the run that just ended: lock the path's new file
        stamp = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with contextlib.suppress(OSError):  # who holds it is for messages only: a full disk may refuse
            os.ftruncate(fd, 0)
            os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp}\n".encode())
        self._fd = fd
        return self

    def _open(self) -> int:
        """The lock file, opened (created if missing); a damaged one is one line (exit 2)."""
        try:
            # not inherited by workers; a symbolic link is refused (the suite makes none)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o644)
        except OSError as exc:
            link = exc.errno == errno.ELOOP and self.path.is_symlink()
            raise self._damaged("it is a symbolic link" if link else exc.strerror or str(exc)) from None
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise self._damaged("not a regular file")
        return fd

    def _damaged(self, why: str) -> UsageError:
        """The lock file cannot be used (a folder or a link in its place, no permission):
        no run can safely write this CSV until it is moved away."""
        return UsageError(
            "--run-id",
            f"cannot use the lock file {self.path}: {why}; move it away, or use another --run-id",
        )

    @staticmethod
    def _holder(fd: int) -> str:
        with contextlib.suppress(OSError):
            text = os.pread(fd, 200, 0).decode("utf-8", "replace")
            return " ".join(text.split())
        return ""

    def _still_there(self, fd: int) -> bool:
        """Whether the lock path still names the file we hold open and locked."""
        try:
            on_disk = os.stat(self.path)
        except FileNotFoundError:
            return False
        except OSError as exc:
            os.close(fd)
            raise self._damaged(exc.strerror or str(exc)) from None
        held = os.fstat(fd)
        return (on_disk.st_dev, on_disk.st_ino) == (held.st_dev, held.st_ino)

    def __exit__(self, *exc: object) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                self.path.unlink()  # while still held: no runner can take this file any more
            os.close(self._fd)  # closing drops the lock
            self._fd = None


def held_by_others(folder: Path, own: Path) -> bool:
    """Whether a runner other than the holder of `own` holds a lock in `folder` now (a run
    folder's shared compile cache is removed only when none does)."""
    for path in folder.glob(".*.lock"):
        if path == own:
            continue
        try:
            # O_NONBLOCK: a pipe put in a lock file's place must not stop the run's end
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW)
        except OSError:  # removed by its run as it ended, or a link (no runner makes one)
            continue
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return True
        finally:
            os.close(fd)  # a lock we took for the test is dropped with it
    return False
