"""Running one call of the GPU study (suite.gpustudy.plan) on a GPU held for a short window: the
steps not done yet, each the suite's own CLI in a child process
(`python -m suite run|crosscheck|repeat ... --run-id ID`), under a deadline, and its outputs packed
in the folder whose files are brought back (`--out`).

A window ends at its deadline, a command given a limit is killed at it, and only a few small files
are worth bringing back (suite.gpustudy.packing); a fresh machine is bare. So:
- the call stops its own step at the deadline (SIGINT: the runner kills the cell in flight and
  exits with its rows safe), so a call cut short loses only the cell it was measuring;
- what it measured is packed into `<out>/callN.tar.gz` after every step and every PACK_EVERY_S
  seconds while one runs (written whole, then renamed), beside `callN.log` (everything the steps
  printed), `callN.md` and `callN.json` (the plan, each step's estimate, wall time and outcome);
- the same call again resumes: the run folders are where the last attempt left them (a machine
  still held), or are unpacked from the `callN.tar.gz` the caller brings back (`--resume-from`,
  on the next window's fresh machine);
  a finished cross-check is not run again. Standard library only.
What a call finds done: suite.gpustudy.done; its report and files: suite.gpustudy.callreport.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TextIO

from suite.gpustudy.callreport import (
    ALREADY,
    DONE,
    FAILED,
    INTERRUPTED,
    NO_TIME,
    NOT_STARTED,
    RUNNING,
    STOPPED,
    CallReport,
    StepOutcome,
    cap_log,
    closing,
    command_line,
    plan_lines,
    write_summary,
)
from suite.gpustudy.done import calibration, cell_counts, finished
from suite.gpustudy.estimate import PlannedStep, Planner
from suite.gpustudy.packing import pack, unpack
from suite.gpustudy.plan import DEVICE, STEP_OVERHEAD_S, Call
from suite.gpustudy.step import Packer, Tee, run_step, sigterm_as_interrupt
from suite.spec.cost import format_duration


def run_ids(planned: Sequence[PlannedStep]) -> list[str]:
    return list(dict.fromkeys(p.step.run_id for p in planned))


# ---------------------------------------------------------------------------------------------
# Running a step under the deadline


@dataclass(frozen=True)
class Where:
    """Where a call works and what it runs its steps with: the run folders (`work`), the files the
    window brings back (`out`), an earlier attempt's tarball to resume from, the Python and folder
    the steps run in, where their output is echoed, and the call's own command as run."""

    work: Path
    out: Path
    resume_from: Path | None = None
    python: str = sys.executable
    cwd: Path | None = None
    echo: TextIO | None = None
    command: str = ""
    planner: Planner = field(default_factory=Planner)


def run_call(
    call: Call, variant: str, planned: Sequence[PlannedStep], where: Where, budget_s: float
) -> CallReport:
    """Run the call's steps (see the module doc); the report is also written to `where.out`."""
    from datetime import datetime, timezone

    work, out, resume_from, python, command = (
        where.work,
        where.out,
        where.resume_from,
        where.python,
        where.command,
    )
    echo = where.echo or sys.stdout
    cwd = where.cwd or Path(__file__).resolve().parents[2]
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    start = time.monotonic()
    deadline = start + budget_s if budget_s else None
    ids = run_ids(planned)
    report = CallReport(
        call=call.number,
        title=call.title,
        variant=variant,
        device=DEVICE[variant],
        budget_s=budget_s,
        estimate_s=sum(p.seconds for p in planned),
        started_at=datetime.now(timezone.utc).isoformat(timespec="seconds"),
        command=command,
        steps=[
            StepOutcome(
                p.step.what,
                command_line(p.step.argv(variant, work), p.step.env()),
                len(p.cells),
                p.seconds,
                status=NOT_STARTED,
            )
            for p in planned
        ],
    )
    log_path = out / f"call{call.number}.log"
    with open(log_path, "a", encoding="utf-8") as log:
        tee = Tee(log, echo)
        for line in plan_lines(call, variant, planned, budget_s, work):
            tee.line(line)
        restored = _restore(call, ids, work, resume_from, tee)
        _calibrate(report, where, planned, tee)

        in_flight: list[tuple[StepOutcome, float]] = []  # the step running now, and its start

        def do_pack() -> None:
            report.wall_s = time.monotonic() - start
            report.cells = cell_counts(work, ids)
            for outcome, began in in_flight:
                outcome.wall_s = round(time.monotonic() - began, 1)
            summary = json.dumps(asdict(report), indent=1) + "\n"
            for folder in (work, out):  # out: so a call killed from outside still says how far it got
                (folder / f"call{call.number}.json").write_text(summary, encoding="utf-8")
            note = pack(
                work, ids, out / f"call{call.number}.tar.gz", {f"call{call.number}.json": summary.encode()}
            )
            report.packed = note

        restore_sigterm = sigterm_as_interrupt()
        try:
            for outcome, p in zip(report.steps, planned, strict=True):
                left = None if deadline is None else deadline - time.monotonic()
                if _skipped(p, outcome, work, left, tee):
                    continue
                tee.line(f"gpu-study: step: {p.step.what}\n  {outcome.command}")
                outcome.status, began = RUNNING, time.monotonic()
                in_flight[:] = [(outcome, began)]
                try:
                    code, stopped, wall = run_step(
                        p.step.argv(variant, work),
                        tee,
                        left,
                        python,
                        cwd,
                        lambda: Packer(do_pack),
                        p.step.env(),
                    )
                except KeyboardInterrupt:
                    outcome.status = INTERRUPTED
                    raise
                finally:
                    in_flight.clear()
                    outcome.wall_s = round(time.monotonic() - began, 1)
                outcome.wall_s, outcome.exit_code = round(wall, 1), code
                outcome.status = STOPPED if stopped else (DONE if code == 0 else FAILED)
                tee.line(
                    f"gpu-study: {p.step.what}: {outcome.status} in {format_duration(wall)} (exit {code})"
                )
                do_pack()
                if code == 2 and not stopped:  # bad input or a missing prerequisite: so would the rest
                    tee.line(
                        "gpu-study: the step's input or prerequisites are wrong (exit 2): the call stops"
                    )
                    break
        except KeyboardInterrupt:
            tee.line("gpu-study: interrupted: packing what was measured")
        finally:
            restore_sigterm()
            report.wall_s = time.monotonic() - start
            do_pack()
            tee.line(closing(report, restored))
    write_summary(out, report)
    cap_log(log_path)
    return report


def _calibrate(report: CallReport, where: Where, planned: Sequence[PlannedStep], tee: Tee) -> None:
    """Each finished step and cell against its estimate, and the estimate of the steps left scaled
    by how long the finished ones took (if any did)."""
    found = calibration(where.work, planned, where.planner)
    if found:
        ratio, said = found
        left = sum(p.seconds for p in planned if not finished(where.work, p))
        left_s = format_duration(left * ratio)
        report.calibration = f"{'; '.join(said)}; scaled by {ratio:.2f}, the steps not done yet: {left_s}"
        tee.line(f"calibration: {report.calibration}")


def _skipped(p: PlannedStep, outcome: StepOutcome, work: Path, left: float | None, tee: Tee) -> bool:
    """True, the step's status set and told, when it is done already or has no time left to run."""
    if p.step.verb == "crosscheck" and (work / p.step.run_id / "crosscheck.json").exists():
        outcome.status = ALREADY
        tee.line(f"gpu-study: {p.step.what}: already done ({p.step.run_id}/crosscheck.json)")
        return True
    if finished(work, p):
        outcome.status = ALREADY
        tee.line(f"gpu-study: {p.step.what}: already done (every cell has its row in {p.step.run_id})")
        return True
    # a cross-check keeps nothing until it ends: start one only if it fits
    need = p.seconds if p.step.verb == "crosscheck" else STEP_OVERHEAD_S
    if left is not None and left < need:
        outcome.status = NO_TIME
        tee.line(f"gpu-study: {p.step.what}: not started ({format_duration(left)} left)")
        return True
    return False


def _latest_archive(folder: Path) -> Path:
    """The last call's tarball in `folder` (it holds every run folder of the calls before it)."""
    found = [(int(p.name[4:-7]), p) for p in folder.glob("call*.tar.gz") if p.name[4:-7].isdigit()]
    return max(found)[1] if found else folder / "call1.tar.gz"


def _restore(call: Call, ids: Sequence[str], work: Path, resume_from: Path | None, tee: Tee) -> list[str]:
    """Bring an earlier attempt's run folders back from its tarball, each one a machine still held does
    not still have; the folders restored."""
    if resume_from is None:
        return []
    archive = _latest_archive(resume_from) if resume_from.is_dir() else resume_from
    if not archive.is_file():
        tee.line(f"gpu-study: nothing to resume from ({archive} is not there): starting afresh")
        return []
    staging = work / f".restore-call{call.number}"
    shutil.rmtree(staging, ignore_errors=True)
    restored, kept = [], []
    for name in unpack(archive, staging):
        if name not in ids:
            continue
        if (work / name).exists():  # a machine still held: its folder is newer than any tarball
            kept.append(name)
            continue
        shutil.move(str(staging / name), str(work / name))
        restored.append(name)
    shutil.rmtree(staging, ignore_errors=True)
    tee.line(
        f"gpu-study: resuming from {archive}: restored {', '.join(restored) or 'nothing'}"
        + (f"; still here, kept as they are: {', '.join(kept)}" if kept else "")
    )
    return restored
