"""The README of a GPU study's results folder, every figure read from the files in it (the rows,
the calls' summaries and logs, the cross-checks' reports) by `python -m suite gpu-study finish`:
what ran and in which order, the commands as run, each call's time against its estimate, the
cells (lost ones named), then the measured sections of suite.gpustudy.figures. One section is the
hand-written analysis (`--analysis`), put in as it is."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.gpustudy.figures import (
    beside,
    calibration,
    cell_label,
    crosscheck,
    health,
    md_table,
    repeatability,
    rows_of,
    speedups,
    walls,
)
from suite.gpustudy.plan import GPU, REFERENCE_GPU
from suite.report.reference import Reference
from suite.spec import load_matrix
from suite.spec.cost import format_duration

TBW = "_To be written by whoever commits this run, from the figures above._"
ANALYSIS_HEADING = "### Where and why they differ from the guide's"
_CELL_LINE = re.compile(r"^\[\s*\d+/\d+\] (.+?): ok \((.+?)\) in ")
_SECTION = re.compile(r"^=== cell: (.+?) \(\d+\) ===$")


@dataclass(frozen=True)
class Sources:
    folder: Path
    matrix: Path
    reference: Path
    merge_report: tuple[str, ...]
    beside: Path | None = None  # an earlier study's results folder


def run_folders(folder: Path) -> dict[str, Path]:
    return {
        p.name: p
        for p in sorted(folder.iterdir())
        if p.is_dir() and p.name not in ("calls", "tables", "plots")
    }


def folder_rows(runs: dict[str, Path]) -> dict[str, list[dict[str, str]]]:
    """{run folder: its rows, each with `folder`: where it is (two attempts of one run id differ)}."""
    return {
        run_id: [{**row, "folder": run_id} for row in rows_of(path)]
        for run_id, path in runs.items()
        if any(path.glob("raw/*.csv"))
    }


def call_logs(folder: Path) -> list[str]:
    """The text of every attempt's log, in the order run."""
    return [
        log.read_text(encoding="utf-8", errors="replace") for log in sorted(folder.glob("calls/*/call*.log"))
    ]


def attempts(folder: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(label, summary, record) of every attempt, in the order they ran."""
    out = []
    for sub in sorted((folder / "calls").iterdir(), key=lambda p: int(p.name.split("-")[0])):
        record = json.loads((sub / "attempt.json").read_text(encoding="utf-8"))
        summary = next(iter(sorted(sub.glob("call*.json"))), None)
        data = json.loads(summary.read_text(encoding="utf-8")) if summary else {}
        out.append((sub.name, data, record))
    return out


def render_readme(src: Sources, inputs: Sequence[Path], analysis: str | None) -> str:
    folder = src.folder
    runs = run_folders(folder)
    rows = folder_rows(runs)
    every = [r for rs in rows.values() for r in rs]
    tried = attempts(folder)
    matrix = load_matrix(src.matrix)
    gpu, torch = _distinct(every, "gpu_name"), _distinct(every, "torch_version")
    lines = [
        f"# The GPU study on {gpu}, torch {torch}",
        "",
        *_intro(tried, every),
        "",
        "## How it was made",
        "",
        *_commands(tried, folder, inputs, src.beside),
        "",
        "## The machine and its software",
        "",
        *_software(every),
        "",
        "## The calls, in the order they ran",
        "",
        *_calls(tried),
        "",
        *calibration(rows, matrix, src.reference, [summary for _, summary, _ in tried], call_logs(folder)),
        "",
        "## The cells",
        "",
        *_cells(rows, runs, tried),
        "",
        f"## Speed-ups beside the guide's {REFERENCE_GPU} figures",
        "",
        *speedups(every, Reference.load(src.reference)),
        "",
    ]
    if src.beside is not None:
        theirs = [r for rs in folder_rows(run_folders(src.beside)).values() for r in rs]
        lines += [f"## Beside {src.beside.name}: the cells both measured", "", *beside(every, theirs), ""]
    lines += [
        ANALYSIS_HEADING,
        "",
        (analysis or TBW).strip(),
        "",
        "## Cross-check: the suite's timing loop against independent timers",
        "",
        *crosscheck(runs),
    ]
    if any(p.glob("rep-*/raw") for p in runs.values()):
        lines += ["", "## Repeatability: the same cells, three runs back to back", "", *repeatability(runs)]
    lines += [
        "",
        "## Wall time per cell and the share spent compiling",
        "",
        *walls(rows, matrix, src.reference, [summary for _, summary, _ in tried]),
    ]
    lines += ["", "## Health while the cells were timed", "", *health(every)]
    lines += ["", "## The merge", "", *[f"- {line}" for line in src.merge_report]]
    lines += [
        "",
        "Tables: [tables/tables.md](tables/tables.md); plots: `plots/`; each attempt's files: `calls/`.",
    ]
    return "\n".join(lines) + "\n"


def _intro(
    tried: Sequence[tuple[str, dict[str, Any], dict[str, Any]]], every: Sequence[dict[str, str]]
) -> list[str]:
    ran = list(
        dict.fromkeys(
            s["what"] for _, summary, _ in tried for s in summary.get("steps", []) if s.get("wall_s")
        )
    )
    starts = sorted(summary.get("started_at", "") for _, summary, _ in tried if summary.get("started_at"))
    ok = sum(r["status"] == "ok" for r in every)
    return [
        f"{len(tried)} attempt(s) of {len({s.get('call') for _, s, _ in tried})} call(s) of "
        "`python -m suite gpu-study` on one GPU machine held for short windows, from "
        f"{starts[0] if starts else '?'} "
        f"to {starts[-1] if starts else '?'} (start of the last); {ok} cell(s) ended ok. The steps that ran, "
        "whole or in part: " + "; ".join(ran) + ". Random weights built from each checkpoint's config, "
        "the repository's photo, offline. Every figure below is read from the files in this folder by "
        "`python -m suite gpu-study finish` (suite/gpustudy/finish.py, readme.py), but the section "
        "written by hand, which cites them.",
    ]


def _commands(
    tried: Sequence[tuple[str, dict[str, Any], dict[str, Any]]],
    folder: Path,
    inputs: Sequence[Path],
    beside: Path | None = None,
) -> list[str]:
    lines = ["On the GPU machine, in the order run (WORK: the run folders' root there):", "", "```bash"]
    for label, s, _ in tried:
        command = s.get("command") or (
            f"python -m suite gpu-study call {s.get('call')}"
            + (" --tiny" if s.get("variant") != GPU else "")
            + (f" --budget-s {float(s['budget_s']):g}" if s.get("budget_s") else "")
            + ' --out "$OUT"'
        )
        lines.append(f"# {label}: {s.get('started_at', '')}")
        lines.append(command)
        lines += [f"#   {step['command']}" for step in s.get("steps", []) if step.get("wall_s")]
    shown = " ".join(str(p) if not p.is_absolute() else p.name for p in inputs)
    lines += ["```", "", "Then on the host, with every call's files as they came back:", "", "```bash"]
    more = f" --beside results/{beside.name}" if beside is not None else ""
    lines.append(
        f"python -m suite gpu-study finish {shown} -o results/{folder.name} --analysis ANALYSIS.md{more}"
    )
    return [*lines, "```"]


def _distinct(rows: Iterable[dict[str, str]], column: str) -> str:
    values = sorted({r.get(column, "") for r in rows} - {""})
    return ", ".join(values) or "—"


SOFTWARE = (
    ("GPU", "gpu_name"),
    ("driver", "driver_version"),
    ("CUDA (torch's)", "cuda_version"),
    ("cuDNN", "cudnn_version"),
    ("torch", "torch_version"),
    ("torch git", "torch_git"),
    ("triton", "triton_version"),
    ("transformers", "transformers_version"),
    ("Python", "python_version"),
    ("CPU", "cpu_name"),
    ("torch threads", "torch_threads"),
    ("malloc", "malloc"),
    ("TF32, float32 matmuls", "tf32_matmul"),
    ("TF32, cuDNN convolutions", "tf32_cudnn"),
    ("float32 matmul precision", "matmul_precision"),
    ("image", "image"),
    ("suite", "suite_version"),
    ("build label", "build"),
)


def _software(rows: Sequence[dict[str, str]]) -> list[str]:
    return md_table(("", "as the rows record it"), ((name, _distinct(rows, col)) for name, col in SOFTWARE))


def _calls(tried: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[str]:
    body = []
    for label, s, record in tried:
        back = "its tarball" if record.get("source") else "no tarball (its log and summary only)"
        for step in s.get("steps", []):
            body.append(
                (
                    label,
                    step["what"],
                    str(step["cells"]),
                    format_duration(step["estimate_s"]),
                    format_duration(step["wall_s"]),
                    step["status"],
                )
            )
        deadline = f"deadline {format_duration(s['budget_s'])}" if s.get("budget_s") else "no deadline"
        done = all(t["status"] in ("done", "already done") for t in s.get("steps", []))
        body.append(
            (
                f"**{label}**",
                f"**the call** ({deadline}; {back})",
                "",
                format_duration(s.get("estimate_s", 0)),
                format_duration(s.get("wall_s", 0)),
                "complete" if done else "NOT complete",
            )
        )
    return [
        *md_table(("attempt", "step", "cells", "estimate (as printed then)", "wall", "outcome"), body),
        "",
        "An attempt's estimate is the cost model of its commit, as the call printed it.",
    ]


def _logged_cells(log: Path) -> list[str]:
    """The cells a worker's log says it began: one `cell: <label> | ...` first line, or a shared
    process's `=== cell: <label> (i) ===` sections."""
    lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
    shared = [m.group(1) for line in lines if (m := _SECTION.match(line))]
    if shared or (lines and lines[0].startswith("cells:")):
        return shared
    return [lines[0].split("|")[0].removeprefix("cell:").strip()] if lines else [log.stem]


def lost_cells(runs: dict[str, Path], rows: dict[str, list[dict[str, str]]]) -> list[str]:
    """Cells a run began (their log is there) that left no row, in that attempt or a later one:
    in flight when a deadline stopped it."""
    out = []
    for run_id, folder in runs.items():
        if (folder / "crosscheck.json").exists():  # a cross-check writes no row
            continue
        logged = {r.get("log_file", "") for r in rows.get(run_id, [])}
        measured = {cell_label(r) for r in rows.get(run_id, [])}
        for log in sorted(folder.glob("logs/*/*.log")):
            if str(log.relative_to(folder)) in logged:
                continue
            for cell in _logged_cells(log):
                if cell not in measured:
                    out.append(
                        f"- {run_id}: {cell}: begun, no row (the cell in flight when its step was stopped)"
                    )
    return list(dict.fromkeys(out))


def _not_back(folder: Path, tried: Sequence[tuple[str, dict[str, Any], dict[str, Any]]]) -> list[str]:
    """Cells an attempt without a tarball measured: only its log says what they were."""
    out = []
    for label, _, record in tried:
        if record.get("source"):
            continue
        for log in sorted((folder / "calls" / label).glob("call*.log")):
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                match = _CELL_LINE.match(line)
                if match:
                    out.append(
                        f"- {label}: {match.group(1)}: ok ({match.group(2)}), as its log says; "
                        "no row came back"
                    )
    return out


def _cells(
    rows: dict[str, list[dict[str, str]]],
    runs: dict[str, Path],
    tried: Sequence[tuple[str, dict[str, Any], dict[str, Any]]],
) -> list[str]:
    body, failed = [], []
    for run_id, rs in rows.items():
        counts: dict[str, int] = {}
        for r in rs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            if r["status"] != "ok":
                failed.append(f"- {run_id}: {cell_label(r)}: {r['status']}: {r.get('error', '')}")
        body.append((run_id, str(len(rs)), ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))))
    lines = md_table(("run folder", "rows", "statuses"), body)
    lost = lost_cells(runs, rows)
    back = _not_back(runs[next(iter(runs))].parent if runs else Path("."), tried)
    skipped = [
        f"- {cell_label(r)}: {note}"
        for rs in rows.values()
        for r in rs
        for note in r.get("compile_note", "").split("; ")
        if note.startswith("CUDA graphs skipped")
    ]
    lines += ["", "Lost in flight:", "", *(lost or ["- none"])]
    if back:
        lines += [
            "",
            "Measured, but their attempt's tarball did not come back (not in the rows or tables):",
            "",
            *back,
        ]
    if failed:
        lines += ["", "Cells that did not end ok:", "", *failed]
    if skipped:
        lines += ["", "Compiled cells timed without the CUDA graphs their mode asked for:", "", *skipped]
    not_run = sorted(
        {s["what"] for _, summary, _ in tried for s in summary.get("steps", [])}
        - {s["what"] for _, summary, _ in tried for s in summary.get("steps", []) if s.get("wall_s")}
    )
    if not_run:
        lines += ["", "Steps no attempt reached: " + "; ".join(not_run) + "."]
    return lines
