"""A damaged run folder (a lock file that is a folder, a link or a pipe, `raw` that is a
file, folders that take no file) stops `run` before any cell with one line naming the
path, exit status 2; the rows already recorded stay as they were."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from support import call, stub_environment

from suite.results import RowWriter
from suite.run import launch, preflight

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"
NAME = "torch9.9.9__cpu.csv"  # the stub environment's build label, on the CPU
HINT = "; move it away, or use another --run-id"


def recorded(run: Path) -> Path:
    """A run folder with one recorded row (a failed one: a resume would move it)."""
    csv_path = run / "raw" / NAME
    with RowWriter(csv_path) as w:
        w.append(
            {"run_id": "r", "build": "torch9.9.9", "device": "cpu", "model": "TinyViT", "status": "error"}
        )
    return csv_path


def _lock_dir(run: Path) -> str:
    (run / "raw" / f".{NAME}.lock").mkdir()
    return f"--run-id: cannot use the lock file {run / 'raw' / f'.{NAME}.lock'}: Is a directory{HINT}"


def _lock_link(run: Path) -> str:
    (run / "raw" / f".{NAME}.lock").symlink_to(run / "elsewhere")
    return f"--run-id: cannot use the lock file {run / 'raw' / f'.{NAME}.lock'}: it is a symbolic link{HINT}"


def _lock_pipe(run: Path) -> str:
    os.mkfifo(run / "raw" / f".{NAME}.lock")
    return f"--run-id: cannot use the lock file {run / 'raw' / f'.{NAME}.lock'}: not a regular file{HINT}"


def _raw_file(run: Path) -> str:
    shutil.rmtree(run / "raw")
    (run / "raw").write_text("not a folder\n")
    return f"--run-id: cannot write results to {run / 'raw'}: it is a file, not a folder{HINT}"


def _logs_file(run: Path) -> str:
    (run / "logs").write_text("")
    return f"--run-id: cannot write results to {run / 'logs'}: it is a file, not a folder{HINT}"


def _scratch_file(run: Path) -> str:
    (run / ".scratch").write_text("")
    return f"--run-id: cannot write results to {run / '.scratch'}: it is a file, not a folder{HINT}"


def _log_folder_file(run: Path) -> str:
    (run / "logs").mkdir()
    (run / "logs" / NAME[:-4]).write_text("")  # the folder of this build's logs: found after the probe
    return f"--run-id: cannot write results to {run / 'logs' / NAME[:-4]}: it is a file, not a folder{HINT}"


def _superseded_file(run: Path) -> str:
    (run / "superseded").write_text("")
    return f"{run / 'raw' / NAME}: cannot rewrite for the resume: File exists ({run / 'superseded'})"


def _csv_pipe(run: Path) -> str:
    (run / "raw" / NAME).unlink()
    os.mkfifo(run / "raw" / NAME)  # reading it would wait forever
    return f"{run / 'raw' / NAME}: not a regular file (a pipe or a device) where a CSV of rows belongs{TAIL}"


def _csv_folder(run: Path) -> str:
    (run / "raw" / NAME).unlink()
    (run / "raw" / NAME).mkdir()
    return f"{run / 'raw' / NAME}: a folder where a CSV of rows belongs{TAIL}"


def _superseded_pipe(run: Path) -> str:
    (run / "superseded").mkdir()
    os.mkfifo(run / "superseded" / NAME)  # the resume reads it before appending the failed row
    path = run / "superseded" / NAME
    return f"{path}: not a regular file (a pipe or a device) where a CSV of rows belongs{TAIL}"


TAIL = "; move it away or use another --run-id"

DAMAGE: dict[str, Callable[[Path], str]] = {
    "lock is a folder": _lock_dir,
    "lock is a link": _lock_link,
    "lock is a pipe": _lock_pipe,
    "raw is a file": _raw_file,
    "logs is a file": _logs_file,
    "scratch is a file": _scratch_file,
    "this build's log folder is a file": _log_folder_file,
    "superseded is a file": _superseded_file,
    "the CSV is a pipe": _csv_pipe,
    "the CSV is a folder": _csv_folder,
    "the superseded CSV is a pipe": _superseded_pipe,
}


@pytest.mark.parametrize("case", list(DAMAGE))
def test_a_damaged_run_folder_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    environment = stub_environment(torch_version="9.9.9")
    probed: list[str] = []
    monkeypatch.setattr(preflight, "probe", lambda device, python=None: probed.append(device) or environment)
    started: list[object] = []
    monkeypatch.setattr(launch, "run_worker", lambda *a, **k: started.append(a))
    run = tmp_path / "r"
    csv_path = recorded(run)
    before = csv_path.read_bytes()
    expected = DAMAGE[case](run)
    args = ["--matrix", str(TINY), "--profile", "tiny", "--device", "cpu", "--min-free-mb", "0"]
    code, err = call(["run", *args, "--out", str(tmp_path), "--run-id", "r"])
    assert code == 2, err
    assert err.strip().splitlines() == [f"suite run: error: {expected}"]
    assert not started
    if case in ("raw is a file", "logs is a file", "scratch is a file"):
        assert not probed  # seen before the probe and the model check: in a moment
    if csv_path.is_file():
        assert csv_path.read_bytes() == before


def _unprivileged() -> list[str]:
    """A command prefix that drops root (who ignores file modes), or [] when not root."""
    if os.geteuid() != 0:
        return []
    if not shutil.which("setpriv"):
        pytest.skip("running as root without setpriv: file modes cannot be tested")
    return ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


# `run` through the CLI, in a process whose user the file modes apply to; the probe and the
# model check (child processes: the venv's Python may not be executable by that user) are
# stand-ins, as in the in-process tests above.
AS_USER = """
import sys
from support import stub_environment
from suite.cli import main
from suite.run import preflight
preflight.probe = lambda device, python=None: stub_environment(torch_version="9.9.9")
preflight.check_models = lambda matrix, cells, *args, **kwargs: None
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("case", ["read-only raw", "unreadable lock"])
def test_folders_and_locks_without_permission(case: str) -> None:
    """For real, as a user the modes apply to: a `raw/` that takes no file, a lock file that
    cannot be opened."""
    prefix = _unprivileged()
    root = Path(tempfile.mkdtemp(prefix="suite-perm-"))
    try:
        root.chmod(0o777)
        run = root / "r"
        (run / "raw").mkdir(parents=True)
        run.chmod(0o777)
        if case == "read-only raw":
            (run / "raw").chmod(0o555)
            expected = f"--run-id: cannot write results to {run / 'raw'}: Permission denied{HINT}"
        else:
            (run / "raw").chmod(0o777)
            lock = run / "raw" / f".{NAME}.lock"
            lock.write_text("")
            lock.chmod(0)
            expected = f"--run-id: cannot use the lock file {lock}: Permission denied{HINT}"
        cmd = [*prefix, sys.executable, "-c", AS_USER, "run", "--matrix", str(TINY), "--profile", "tiny"]
        cmd += ["--device", "cpu", "--out", str(root), "--run-id", "r", "--min-free-mb", "0"]
        env = {**os.environ, "PYTHONPATH": f"{REPO}:{REPO / 'tests'}", "PYTHONDONTWRITEBYTECODE": "1"}
        proc = subprocess.run(
            cmd, capture_output=True, text=True, cwd=REPO, env=env, timeout=300, check=False
        )
        assert proc.returncode == 2, proc.stderr
        assert proc.stderr.strip().splitlines() == [f"suite run: error: {expected}"]
        assert not list(run.rglob("*.log")) and not list(run.rglob("*.csv"))  # no cell ran
    finally:
        for path in root.rglob("*"):
            with contextlib.suppress(OSError):
                path.chmod(0o777)
        shutil.rmtree(root, ignore_errors=True)


def test_another_lock_file_that_is_a_pipe_does_not_stop_the_run_end(tmp_path: Path) -> None:
    """The end of a run asks whether other runners of the folder still go (held_by_others);
    a pipe in a lock file's place would block a plain open for reading forever."""
    raw = tmp_path / "raw"
    raw.mkdir()
    os.mkfifo(raw / ".other__cpu.csv.lock")
    (raw / ".folder__cpu.csv.lock").mkdir()
    own = raw / f".{NAME}.lock"
    code = "import sys; from pathlib import Path; from suite.run.lock import held_by_others; "
    code += "print(held_by_others(Path(sys.argv[1]), Path(sys.argv[2])))"
    proc = subprocess.run(
        [sys.executable, "-c", code, str(raw), str(own)],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=60,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
