"""Running one call of the GPU study (suite.gpustudy.plan) on a lent machine: the steps not done
yet, each the suite's own CLI in a child process
(`python -m suite run|crosscheck|repeat ... --run-id ID`), under
a deadline, and its outputs packed where the device tool brings files back.

A lent machine's command is killed at its limit and only files under `$OUT` come back (at most 8,
16 MiB each, 2 folders deep); a fresh machine is bare. So:
- the call stops its own step at the deadline (SIGINT: the runner kills the cell in flight and
  exits with its rows safe), so a call cut short loses only the cell it was measuring;
- what it measured is packed into `<out>/callN.tar.gz` after every step and every PACK_EVERY_S
  seconds while one runs (written whole, then renamed), beside `callN.log` (everything the steps
  printed), `callN.md` and `callN.json` (the plan, each step's estimate, wall time and outcome);
- the same call again resumes: the run folders are where the last attempt left them (a machine
  still warm), or are unpacked from the `callN.tar.gz` the caller brings back (`--resume-from`);
  a finished cross-check is not run again. Standard library only.
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

from suite.gpustudy.packing import pack, unpack
from suite.gpustudy.plan import DEVICE, PROFILE, STEP_OVERHEAD_S, Call, PlannedStep
from suite.gpustudy.step import Packer, Tee, run_step, sigterm_as_interrupt
from suite.spec.cost import format_duration

LOG_LIMIT_BYTES = 8 * 2**20  # the call's log: its last part, past this
DONE, STOPPED, NO_TIME, NOT_STARTED, FAILED, ALREADY, INTERRUPTED, RUNNING = (
    "done",
    "stopped at the deadline",
    "not started: no time left",
    "not started",
    "failed",
    "already done",
    "interrupted",
    "running when last packed",  # what a call killed from outside leaves for its step in flight
)


@dataclass
class StepOutcome:
    what: str
    command: str
    cells: int
    estimate_s: float
    wall_s: float = 0.0
    status: str = NOT_STARTED
    exit_code: int | None = None


@dataclass
class CallReport:
    call: int
    title: str
    variant: str
    device: str
    budget_s: float
    estimate_s: float
    started_at: str
    wall_s: float = 0.0
    steps: list[StepOutcome] = field(default_factory=list)
    calibration: str = ""
    packed: str = ""
    command: str = ""  # the call as run (`--out "$OUT"`: no path of the machine)
    cells: dict[str, int] = field(default_factory=dict)  # the rows of its run folders, by status

    def complete(self) -> bool:
        return all(s.status in (DONE, ALREADY) for s in self.steps)


def run_ids(planned: Sequence[PlannedStep]) -> list[str]:
    return list(dict.fromkeys(p.step.run_id for p in planned))


def command_line(argv: Sequence[str]) -> str:
    import shlex

    return "python -m suite " + " ".join(shlex.quote(a) for a in argv)


# ---------------------------------------------------------------------------------------------
# What is done already, and the cost model against it


def _key(model: str, batch_size: object, mode: str, scenario: str) -> tuple[str, int, str, str]:
    return model, int(str(batch_size)), mode, scenario


def _rows(folder: Path) -> list[dict[str, str]]:
    from suite.results import read_rows

    rows: list[dict[str, str]] = []
    for csv_path in sorted(folder.glob("raw/*.csv")):
        try:
            rows += read_rows(csv_path).rows
        except Exception:  # unreadable: the step's own resume says why, and runs it
            continue
    return rows


def finished(work: Path, p: PlannedStep) -> bool:
    """Whether every cell of a run step has its row (ok or oom: what a resume keeps), so that the
    step need not start at all (a step's start-up alone is 14-18 s of a call's 9 minutes)."""
    if p.step.verb != "run" or not p.cells or any(c.dynamic for c in p.cells):
        return False
    have = {
        _key(r["model"], r["batch_size"], r["mode"], r["scenario"])
        for r in _rows(work / p.step.run_id)
        if r.get("status") in ("ok", "oom") and not r.get("dynamic")
    }
    return all(_key(c.model.name, c.batch_size, c.mode, c.scenario) in have for c in p.cells)


def calibration(work: Path, planned: Sequence[PlannedStep]) -> tuple[float, str] | None:
    """(measured / estimated, a line saying from what) over every cell that ended ok in the run
    folders here (earlier calls on this machine, a restored tarball), each against the cost
    model's estimate of it; None when there is none."""
    estimates = {
        _key(c.model.name, c.batch_size, c.mode, c.scenario): s
        for p in planned
        for c, s in zip(p.cells, p.each, strict=False)
        if not c.dynamic
    }
    measured = estimated = 0.0
    count = 0
    for p in planned:
        if p.step.verb != "run":
            continue
        for row in _rows(work / p.step.run_id):
            est = estimates.get(_key(row["model"], row["batch_size"], row["mode"], row["scenario"]))
            if row.get("status") != "ok" or row.get("dynamic") or est is None or not row.get("wall_s"):
                continue
            measured, estimated, count = measured + float(row["wall_s"]), estimated + est, count + 1
    if not count:
        return None
    ratio = measured / estimated
    line = (
        f"the {count} cell(s) finished here took {ratio:.2f} x the cost model's estimate "
        f"({format_duration(measured)} for {format_duration(estimated)})"
    )
    return ratio, line


# ---------------------------------------------------------------------------------------------
# Running a step under the deadline


def plan_lines(
    call: Call, variant: str, planned: Sequence[PlannedStep], budget_s: float, out: Path
) -> list[str]:
    """What the call will run and how long the cost model says it takes: printed before anything runs."""
    total = sum(p.seconds for p in planned)
    lines = [
        f"gpu-study call {call.number} ({variant}: profile {PROFILE[variant]}, "
        f"device {DEVICE[variant]}): {call.title}",
    ]
    for i, p in enumerate(planned, 1):
        lines.append(
            f"  step {i}: {p.step.what}: {len(p.cells)} cell(s), estimated {format_duration(p.seconds)}"
        )
        lines.append(f"    {command_line(p.step.argv(variant, out))}")
    lines.append(
        f"estimated {format_duration(total)} in all (suite/spec/cost.py"
        + (", each forward call at least the guide's A100 eager time" if variant == "gpu" else "")
        + f"; {format_duration(STEP_OVERHEAD_S)} a step for its start-up)"
    )
    if budget_s:
        over = total > budget_s
        lines.append(
            f"deadline: {format_duration(budget_s)} after the start"
            + (
                "; the estimate is over it: the call stops there (the cell in flight is lost, every "
                "finished one kept) and the same call again resumes"
                if over
                else ""
            )
        )
    return lines


@dataclass(frozen=True)
class Where:
    """Where a call works and what it runs its steps with: the run folders (`work`), the files the
    tool brings back (`out`), an earlier attempt's tarball to resume from, the Python and folder
    the steps run in, where their output is echoed, and the call's own command as run."""

    work: Path
    out: Path
    resume_from: Path | None = None
    python: str = sys.executable
    cwd: Path | None = None
    echo: TextIO | None = None
    command: str = ""


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
            StepOutcome(p.step.what, command_line(p.step.argv(variant, work)), len(p.cells), p.seconds)
            for p in planned
        ],
    )
    log_path = out / f"call{call.number}.log"
    with open(log_path, "a", encoding="utf-8") as log:
        tee = Tee(log, echo)
        for line in plan_lines(call, variant, planned, budget_s, work):
            tee.line(line)
        restored = _restore(call, ids, work, resume_from, tee)
        _calibrate(report, work, planned, tee)

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
                        p.step.argv(variant, work), tee, left, python, cwd, lambda: Packer(do_pack)
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
            tee.line(_closing(report, restored))
    _write_summary(out, report)
    _cap_log(log_path)
    return report


def _calibrate(report: CallReport, work: Path, planned: Sequence[PlannedStep], tee: Tee) -> None:
    """The estimate of the steps left, scaled by how long the finished ones took (if any did)."""
    found = calibration(work, planned)
    if found:
        ratio, said = found
        left = sum(p.seconds for p in planned if not finished(work, p))
        report.calibration = f"{said}; scaled so, the steps not done yet: {format_duration(left * ratio)}"
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
    """Bring an earlier attempt's run folders back from its tarball, each one a warm machine does
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
        if (work / name).exists():  # a warm machine: its folder is newer than any tarball
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


def cell_counts(work: Path, ids: Sequence[str]) -> dict[str, int]:
    """The rows of the call's run folders (a repeat's repetitions included), by status."""
    from suite.results import read_rows

    counts: dict[str, int] = {}
    for run_id in ids:
        for csv_path in [*(work / run_id).glob("raw/*.csv"), *(work / run_id).glob("rep-*/raw/*.csv")]:
            try:
                rows = read_rows(csv_path).rows
            except Exception:  # unreadable: the step's own resume says why
                counts["unreadable file"] = counts.get("unreadable file", 0) + 1
                continue
            for row in rows:
                counts[row["status"]] = counts.get(row["status"], 0) + 1
    return counts


def _closing(report: CallReport, restored: Sequence[str]) -> str:
    counts: dict[str, int] = {}
    for s in report.steps:
        counts[s.status] = counts.get(s.status, 0) + 1
    steps = ", ".join(f"{n} {status}" for status, n in counts.items())
    verdict = "complete" if report.complete() else "NOT complete: run the same call again to resume"
    cells = ", ".join(f"{n} {status}" for status, n in sorted(report.cells.items())) or "none"
    failed = sum(n for status, n in report.cells.items() if status not in ("ok", "oom"))
    again = " (the same call again runs the failed ones again)" if failed else ""
    return (
        f"gpu-study call {report.call}: {verdict} ({steps}); cells: {cells}{again}; "
        f"{format_duration(report.wall_s)} against an "
        f"estimate of {format_duration(report.estimate_s)}"
        + (f"; resumed from {', '.join(restored)}" if restored else "")
        + (f"; {report.packed}" if report.packed else "")
    )


def _write_summary(out: Path, report: CallReport) -> None:
    (out / f"call{report.call}.json").write_text(
        json.dumps(asdict(report), indent=1) + "\n", encoding="utf-8"
    )
    lines = [
        f"# gpu-study call {report.call}: {report.title}",
        "",
        f"Variant {report.variant} on {report.device}, started {report.started_at}; "
        f"{format_duration(report.wall_s)} of wall time against an estimate of "
        f"{format_duration(report.estimate_s)}"
        + (f" and a deadline of {format_duration(report.budget_s)}" if report.budget_s else "")
        + ".",
        "",
        "| step | cells | estimate | wall | outcome | command |",
        "|---|---|---|---|---|---|",
    ]
    for s in report.steps:
        exit_note = f" (exit {s.exit_code})" if s.exit_code not in (None, 0) else ""
        lines.append(
            f"| {s.what} | {s.cells} | {format_duration(s.estimate_s)} | {format_duration(s.wall_s)} | "
            f"{s.status}{exit_note} | `{s.command}` |"
        )
    cells = ", ".join(f"{n} {status}" for status, n in sorted(report.cells.items())) or "none"
    lines += ["", f"Rows in its run folders: {cells}."]
    if report.calibration:
        lines += ["", f"Calibration: {report.calibration}."]
    (out / f"call{report.call}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _cap_log(path: Path) -> None:
    """Keep the log under LOG_LIMIT_BYTES: its last part, which says how the call ended."""
    size = path.stat().st_size
    if size <= LOG_LIMIT_BYTES:
        return
    with open(path, "rb") as fh:
        fh.seek(size - LOG_LIMIT_BYTES + 200)
        tail = fh.read()
    path.write_bytes(b"[... the start of this log was cut: it was over 8 MiB ...]\n" + tail)
