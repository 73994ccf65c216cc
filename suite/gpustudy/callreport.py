"""A call's account: each step's outcome and the call's report (`CallReport`), the plan printed
before anything runs, the closing line, `callN.md` and `callN.json` beside the tarball, and the
call's log kept under its limit. Standard library only (it runs on the GPU machine).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from suite.gpustudy.estimate import PlannedStep
from suite.gpustudy.plan import DEVICE, PROFILE, STEP_OVERHEAD_S, Call
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


def command_line(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    import shlex

    before = "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
    return before + "python -m suite " + " ".join(shlex.quote(a) for a in argv)


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
        lines.append(f"    {command_line(p.step.argv(variant, out), p.step.env())}")
    lines.append(
        f"estimated {format_duration(total)} in all (suite/spec/cost.py"
        + (
            ": per call the committed GPU studies' time, else at least the guide's A100 eager time"
            if variant == "gpu"
            else ""
        )
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


def closing(report: CallReport, restored: Sequence[str]) -> str:
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


def write_summary(out: Path, report: CallReport) -> None:
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


def cap_log(path: Path) -> None:
    """Keep the log under LOG_LIMIT_BYTES: its last part, which says how the call ended."""
    size = path.stat().st_size
    if size <= LOG_LIMIT_BYTES:
        return
    with open(path, "rb") as fh:
        fh.seek(size - LOG_LIMIT_BYTES + 200)
        tail = fh.read()
    path.write_bytes(b"[... the start of this log was cut: it was over 8 MiB ...]\n" + tail)
