"""A container session's benchmark containers, one pipeline per slot (suite.sessions.fleet: one per
GPU), all slots at once: each slot runs its builds' containers one after the other, so a GPU
never waits for another GPU's slower part, and a container that fails or is killed (out of
memory) costs its own cells only: the other slots go on, and its cells that have no row get
an `error` row that says so (suite mark, suite.run.unrun).

Host side, standard library only. With one slot nothing changes from a single container:
its output goes straight to the terminal; with several, each line is prefixed with the
slot's name (`[gpu3] `).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from suite.run.pair import Coordinator
from suite.sessions.fleet import Slot
from suite.sessions.pairing import socket_path
from suite.spec import BuildSpec
from suite.spec.pair_protocol import BASE, NEW

# `python -m suite ARGS` run by the session in its own process (the noxfile: the host's suite,
# no torch): its standard output. A one-line error of the suite's ends the session.
SuiteVerb = Callable[[Sequence[str]], str]


@dataclass(frozen=True)
class Mark:
    """Rows for the cells of one build and slot that did not run (`suite mark`)."""

    status: str  # skipped | error
    reason: str
    slot: Slot
    only: str = "all"  # all | compiled | eager
    image_tag: str = ""
    image_id: str = ""

    def __post_init__(self) -> None:
        if self.status not in ("skipped", "error") or self.only not in ("all", "compiled", "eager"):
            raise ValueError(f"mark: status {self.status!r}, only {self.only!r}")
        if not self.reason.strip():
            raise ValueError("a mark needs its reason")


def with_flag(args: Sequence[str], flag: str, value: str | None) -> list[str]:
    """`args` with `flag` (`--flag V`, `--flag=V`) set to `value` where it was (else at the
    end), or taken out when value is None."""
    out: list[str] = []
    skip = placed = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == flag or arg.startswith(flag + "="):
            skip = arg == flag
            if value is not None and not placed:
                out += [flag, value]
                placed = True
            continue
        out.append(arg)
    return out if value is None or placed else [*out, flag, value]


def unpaired(cmd: Sequence[str]) -> list[str]:
    """A runner's command without its pair's flags (suite.sessions.pairing.runner_flags)."""
    return with_flag(with_flag(cmd, "--pair", None), "--pair-role", None)


def eager_only(args: Sequence[str]) -> list[str]:
    """The suite's arguments narrowed to the eager cells (a build whose compiled cells this
    machine cannot run)."""
    return with_flag(args, "--modes", "eager")


def mark_args(
    build: BuildSpec, run_id: str, out: str, device: str, suite_args: Sequence[str], mark: Mark
) -> list[str]:
    """`suite mark ...` for `mark`: the session's selection, the slot's shard and GPU."""
    args = with_flag(suite_args, "--shard", mark.slot.shard or None)
    cmd = ["mark", "--build", build.name, "--run-id", run_id, "--out", out, "--device", device, *args]
    cmd += ["--status", mark.status, "--reason", mark.reason, "--only", mark.only]
    if mark.slot.gpu is not None:
        cmd += ["--gpu-state", mark.slot.gpu.to_json()]
    if mark.image_tag:
        cmd += ["--image-tag", mark.image_tag]
    if mark.image_id:
        cmd += ["--image-id", mark.image_id]
    return cmd


def describe_status(code: int) -> str:
    """A container's exit status in words: 137 is a SIGKILL (docker's OOM killer, or the host's)."""
    if code == 137:
        return "status 137 (killed: out of memory, or stopped)"
    if code == 125:
        return "status 125 (docker could not start it)"
    return f"status {code}"


@dataclass
class Job:
    """One container: a build on a slot."""

    build: BuildSpec
    slot: Slot
    cmd: list[str]
    tag: str = ""
    image_id: str = ""
    eager_reason: str = ""  # non-empty: the build runs its eager cells only here, and why
    role: str = ""  # base | new: this build's side of its slot's pair (suite.sessions.pairing)


@dataclass
class Outcome:
    job: Job
    code: int
    seconds: float


@dataclass
class Pipelines:
    """Runs each slot's jobs in order, all slots at once; collects what happened."""

    log: Callable[[str], None]
    run_dir: Path | None = None  # on the host: where a slot's pair coordinator listens
    outcomes: list[Outcome] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def run(self, jobs: Sequence[Job]) -> list[Outcome]:
        by_slot: dict[Slot, list[Job]] = {}
        for job in jobs:
            by_slot.setdefault(job.slot, []).append(job)
        prefixed = len(by_slot) > 1
        threads = [
            threading.Thread(target=self._pipeline, args=(slot_jobs, prefixed), name=f"slot-{slot.name}")
            for slot, slot_jobs in by_slot.items()
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        order = {id(job): i for i, job in enumerate(jobs)}
        return sorted(self.outcomes, key=lambda o: order[id(o.job)])

    def _pipeline(self, jobs: Sequence[Job], prefixed: bool) -> None:
        """The slot's pair first (both containers at once, one coordinator), then its other
        builds one after the other."""
        paired = [job for job in jobs if job.role]
        if paired and self.run_dir is not None:
            try:
                self._pair(paired, prefixed)
            except OSError as exc:  # no socket where the run folder is: timed apart, said so
                self.log(
                    f"warning: the pair on {paired[0].slot.name} could not start ({exc}); builds timed apart"
                )
                paired = []
        for job in jobs:
            if job not in paired:
                self._timed(job, prefixed)

    def _timed(self, job: Job, prefixed: bool, coordinator: Coordinator | None = None) -> None:
        started = time.monotonic()
        code = self._one(job, prefixed)
        if coordinator is not None:  # its cells will not come: the partner's go on alone
            coordinator.runner_gone(job.role)
        outcome = Outcome(job, code, time.monotonic() - started)
        with self._lock:
            self.outcomes.append(outcome)
        self.log(
            f"{job.build.name} on {job.slot.name}: the benchmark container "
            + ("ran" if code == 0 else f"exited with {describe_status(code)} after")
            + f" {outcome.seconds:.1f} s"
        )

    def _pair(self, jobs: Sequence[Job], prefixed: bool) -> None:
        """Both builds' containers of a slot at once, their cells timed side by side."""
        assert self.run_dir is not None
        slot = jobs[0].slot
        coordinator = Coordinator(socket_path(self.run_dir, slot.name), log=self.log).start()
        self.log(
            f"pair {coordinator.pair_id} on {slot.name}: "
            + ", ".join(f"{j.build.name} ({j.role})" for j in jobs)
        )
        threads = [threading.Thread(target=self._timed, args=(job, prefixed, coordinator)) for job in jobs]
        for role in {BASE, NEW} - {job.role for job in jobs}:
            coordinator.runner_gone(role)
        try:
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
        finally:
            coordinator.close()

    def _one(self, job: Job, prefixed: bool) -> int:
        self.log(" ".join(job.cmd))
        try:
            return self._run(job, prefixed)
        except OSError as exc:  # docker vanished under us: this container's cells, not the others'
            self.log(f"{job.build.name} on {job.slot.name}: docker could not start ({exc})")
            return 127

    def _run(self, job: Job, prefixed: bool) -> int:
        if not prefixed:
            return subprocess.run(job.cmd, check=False).returncode
        proc = subprocess.Popen(
            job.cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace"
        )
        assert proc.stdout is not None
        for line in proc.stdout:
            with self._lock:
                sys.stderr.write(f"[{job.slot.name}] {line}")
                sys.stderr.flush()
        return proc.wait()
