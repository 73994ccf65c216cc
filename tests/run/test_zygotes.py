"""The fork server (suite.measure.zygote, suite.run.zygotes): a forked child is the process a spawn
would give (its own session, its environment, its output, its exit status, a crash its own),
with torch already imported; a zygote that dies takes its children along and says so; one that
cannot fork is said once and the caller spawns."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from support import REPO

from suite.measure import zygote as zygote_module
from suite.measure.zygote import unsafe_to_fork
from suite.run.environ import child_env
from suite.run.zygotes import Zygote, Zygotes

PROBES = REPO / "tests" / "data" / "forked"
ENV = {"PYTHONPATH": os.pathsep.join((str(REPO), str(PROBES))), "ZYGOTE_ONLY": "1"}


@pytest.fixture(scope="module")
def zygote(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Zygote]:
    log = tmp_path_factory.mktemp("zygote") / "zygote.log"
    z = Zygote(sys.executable, child_env(ENV), log)
    assert z.ready(), z.refused + log.read_text()
    yield z
    z.close()


def _fork(zygote: Zygote, *argv: str) -> tuple[object, dict[str, object]]:
    env = child_env({**ENV, "PROBE_VAR": "mine"})
    del env["ZYGOTE_ONLY"]
    child = zygote.fork("forked_probe", list(argv), env)
    assert child is not None, zygote.refused
    return child, json.loads(child.stdout.readline())


def test_a_forked_child_is_a_process_of_its_own_with_its_own_environment(zygote: Zygote) -> None:
    child, seen = _fork(zygote, "exit", "3")
    assert child.wait(timeout=30) == 3 and child.poll() == 3
    assert seen["pid"] == child.pid == seen["pgid"]  # its own group: a timeout kills it whole
    assert seen["ppid"] == zygote.pid and seen["argv"] == ["exit", "3"]
    assert seen["probe_var"] == "mine" and seen["zygote_only"] is None  # the request's, not the zygote's
    assert seen["torch_preloaded"] and seen["stdin_empty"]
    assert zygote.startup_s is not None and zygote.startup_s > 0


@pytest.mark.parametrize(
    ("action", "code", "said"),
    [("segv", -signal.SIGSEGV, ""), ("raise", 1, "RuntimeError: planted in the forked child")],
)
def test_a_crash_is_the_childs_exit_status_and_the_zygote_goes_on(
    zygote: Zygote, action: str, code: int, said: str
) -> None:
    child, _ = _fork(zygote, action)
    assert child.wait(timeout=30) == code
    assert said in child.stdout.read().decode()
    again, _ = _fork(zygote, "exit", "0")
    assert again.wait(timeout=30) == 0


def test_wait_times_out_and_a_killed_group_is_reaped(zygote: Zygote) -> None:
    child, _ = _fork(zygote, "sleep")
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.2)
    assert child.poll() is None
    os.killpg(child.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z"
    except OSError:
        return True


def test_a_zygote_that_dies_takes_its_children_and_no_more_forks(tmp_path: Path) -> None:
    z = Zygote(sys.executable, child_env(ENV), tmp_path / "zygote.log")
    assert z.ready(), z.refused
    child, _ = _fork(z, "sleep")
    os.kill(z.pid, signal.SIGKILL)
    assert child.wait(timeout=30) == -signal.SIGKILL
    deadline = time.monotonic() + 10
    while not _gone(child.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child.pid)
    assert z.fork("forked_probe", ["exit", "0"], child_env(ENV)) is None
    z.close()


def test_an_interpreter_that_cannot_be_a_zygote_is_said_once_and_spawned(tmp_path: Path) -> None:
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    said: list[str] = []
    zygotes = Zygotes(str(fake), tmp_path / "logs", said.append)
    assert zygotes.spawn("forked_probe", [], ENV) is None
    assert zygotes.spawn("forked_probe", [], ENV) is None
    zygotes.close()
    assert len(said) == 1 and said[0].startswith("fork server: ") and "spawned fresh" in said[0], said


def test_forks_only_where_the_imports_left_cuda_uninitialised() -> None:
    """torch.cuda.is_initialized() and the driver's own answer decide, not whether its library
    is loaded: a GPU machine's zygote that imported torch without touching CUDA forks."""
    libc = "7f00-7f01 r-xp 0 08:01 1 /usr/lib/libc.so.6\n"
    cuda = "7f00-7f01 r-xp 0 08:01 1 /usr/lib/x86_64-linux-gnu/libcuda.so.580.159.04\n"
    never, always = (lambda *_: False), (lambda *_: True)
    assert unsafe_to_fork(libc, never, always) == ""  # no driver loaded: nothing to ask it
    assert unsafe_to_fork(cuda, never, never) == ""  # loaded, not initialised: safe
    assert "driver was initialised" in unsafe_to_fork(cuda, never, always)
    assert "torch.cuda.is_initialized() is True" in unsafe_to_fork(libc, always, never)
    # on this machine: torch imported, CUDA untouched (a library not loaded is never loaded to ask)
    assert unsafe_to_fork() == ""
    assert not zygote_module._driver_initialised(cuda)


def test_a_zygote_whose_imports_initialised_cuda_refuses_in_one_line(monkeypatch) -> None:
    """The zygote's own answer when the check fails (faked here: no GPU on the test machine):
    one `refused` message, no fork; the runner then spawns and says it once (above)."""
    import socket

    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    monkeypatch.setattr(zygote_module, "die_with_parent", lambda watch: None)
    monkeypatch.setattr(zygote_module, "_torch_initialised", lambda: True)
    assert zygote_module.main([str(theirs.detach()), repr(time.time()), "logs"]) == 0  # its fd now
    said = json.loads(ours.recv(zygote_module.MAX_MESSAGE))
    assert said == {"refused": "torch initialised CUDA at import (torch.cuda.is_initialized() is True)"}
    ours.close()


def test_the_manager_hands_down_the_start_up_and_the_zygote_as_parent(tmp_path: Path) -> None:
    """A forked worker's spawn time is set back by the zygote's start-up (time to first result
    counts the imports it skipped), and its parent is the zygote (its lifeline)."""
    said: list[str] = []
    zygotes = Zygotes(sys.executable, tmp_path / "logs", said.append)
    asked = time.time()
    child = zygotes.spawn("forked_probe", ["exit", "0"], {**ENV, "SUITE_SPAWN_TIME": "1.0"})
    assert child is not None, said
    seen = json.loads(child.stdout.readline())
    assert child.wait(timeout=30) == 0
    (z,) = zygotes._by_key.values()
    assert int(seen["parent_env"]) == z.pid == seen["ppid"]
    assert float(seen["spawn_time"]) <= time.time() - z.startup_s
    assert float(seen["spawn_time"]) >= asked - z.startup_s - 1
    assert said and "imported once" in said[0], said
    zygotes.close()
    assert (tmp_path / "logs" / "zygote.log").exists()
