"""The host side of the GPU study (issue 30): the three calls' files, fetched from the lent machine,
into one results folder: the run folders as the calls left them, the merged tables and plots
(suite.report.publish), and a README whose every figure is read from those files here, never
typed: the commands, the device and its software, the health columns, each call's time against
its estimate, the speed-ups beside the guide's A100 figures, the cross-check ratios against their
target, the repeatability spreads against theirs, and each cell's wall time and compile share.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.report.reference import Reference, normalize
from suite.results import read_rows, slug
from suite.run import crosscheck as xcheck
from suite.run import repeat
from suite.run.packing import unpack
from suite.spec import expand, load_matrix
from suite.spec.cost import estimate_seconds, format_duration
from suite.spec.gpustudy import CALLS, GPU, REFERENCE_GPU, TINY, cell_seconds, guide_forward_ms, plan_call


def merged_runs(folder: Path) -> list[str]:
    """The run folders of the tables: those with raw CSVs at their top (a cross-check has none, a
    repeat has them one level down, in each repetition: both are reported on their own)."""
    return sorted(p.name for p in folder.iterdir() if p.is_dir() and any(p.glob("raw/*.csv")))


TBW = "_To be written by whoever commits this run, from the figures above._"


@dataclass
class Inputs:
    """What the calls brought back, unpacked: run folders and each call's summary."""

    runs: dict[str, Path]  # run id -> folder
    summaries: dict[int, dict[str, Any]]  # call -> callN.json
    logs: list[Path]
    archives: list[Path]


def _files(inputs: Sequence[Path]) -> list[Path]:
    out: list[Path] = []
    for path in inputs:
        if path.is_dir():
            out += sorted(p for p in path.iterdir() if p.is_file())
        elif path.is_file():
            out.append(path)
        else:
            raise UsageError(str(path), "no such file or folder")
    return out


def gather(inputs: Sequence[Path], staging: Path) -> Inputs:
    """Unpack every callN.tar.gz among `inputs` into `staging`; the summaries and logs beside them."""
    files = _files(inputs)
    archives = [p for p in files if p.name.startswith("call") and p.name.endswith(".tar.gz")]
    if not archives:
        raise UsageError(str(inputs[0]), "no callN.tar.gz here: give the files the calls brought back")
    runs: dict[str, Path] = {}
    summaries: dict[int, dict[str, Any]] = {}
    for archive in sorted(archives):
        into = staging / archive.name.removesuffix(".tar.gz")
        for run_id in unpack(archive, into):
            if run_id in runs:
                raise UsageError(str(archive), f"run folder {run_id} is in two archives")
            runs[run_id] = into / run_id
        for summary in into.glob("call*.json"):
            _read_summary(summary, summaries)
    for path in files:  # the callN.json beside the tarball is the later one
        if path.name.startswith("call") and path.suffix == ".json":
            _read_summary(path, summaries)
    # the calls' logs, and what a call's command wrote beside them (nvidia-smi -q)
    logs = [p for p in files if (p.name.startswith("call") and p.suffix == ".log") or p.suffix == ".txt"]
    return Inputs(runs, summaries, logs, archives)


def _read_summary(path: Path, into: dict[int, dict[str, Any]]) -> None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        into[int(data["call"])] = data
    except (OSError, ValueError, KeyError, TypeError):
        raise UsageError(str(path), "not a call summary the gpu-study wrote") from None


def _rows(folder: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for csv_path in sorted((folder / "raw").glob("*.csv")):
        rows += read_rows(csv_path).rows
    return rows


def default_folder(rows: Sequence[dict[str, str]], root: Path) -> Path:
    """results/<date>-<gpu>-torch<version>: the date of the first cell, the device and torch of the rows."""
    if not rows:
        raise UsageError("-o", "the calls recorded no row: nothing to name the results folder after")
    first = min(rows, key=lambda r: r.get("started_at", ""))
    date = first.get("started_at", "")[:10] or "undated"
    torch = first.get("torch_version", "").split("+")[0] or "unknown"
    return root / f"{date}-{slug(first.get('device', 'unknown'))}-torch{torch}"


def finish(
    inputs: Sequence[Path], out: Path | None, reference: Path, matrix_path: Path, plots: bool = True
) -> Path:
    """Unpack, copy, merge and write the README; the results folder."""
    from suite.report.publish import run_merge

    with tempfile.TemporaryDirectory(prefix="gpu-study-") as tmp:
        got = gather(inputs, Path(tmp))
        rows = [r for src in got.runs.values() if any(src.glob("raw/*.csv")) for r in _rows(src)]
        folder = out or default_folder(rows, matrix_path.parent / "results")
        if folder.exists() and any(folder.iterdir()):
            raise UsageError("-o", f"{folder} exists and is not empty: give another -o, or remove it")
        folder.mkdir(parents=True, exist_ok=True)
        for run_id, src in got.runs.items():
            shutil.copytree(src, folder / run_id)
        calls = folder / "calls"
        calls.mkdir()
        for path in got.logs:
            shutil.copy2(path, calls / path.name)
        for number, summary in got.summaries.items():
            (calls / f"call{number}.json").write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    merged = [folder / run_id for run_id in merged_runs(folder)]
    if not merged:
        raise UsageError(str(inputs[0]), "the calls brought back no raw CSV: nothing to merge")
    result = run_merge(merged, folder, matrix_path, False, reference, plots=plots)
    readme = render_readme(folder, load_matrix(matrix_path), reference, result.loaded.report(), inputs)
    (folder / "README.md").write_text(readme, encoding="utf-8")
    return folder


# ---------------------------------------------------------------------------------------------
# The README, from the files


def _num(value: object) -> float | None:
    try:
        return None if value in (None, "") else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _f(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def _distinct(rows: Iterable[dict[str, str]], column: str) -> str:
    values = sorted({r.get(column, "") for r in rows} - {""})
    return ", ".join(values) or "—"


def _table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def render_readme(
    folder: Path, matrix: Any, reference_dir: Path, merge_report: Sequence[str], inputs: Sequence[Path]
) -> str:
    runs = {
        p.name: p
        for p in sorted(folder.iterdir())
        if p.is_dir() and p.name not in ("calls", "tables", "plots")
    }
    rows = {run_id: _rows(runs[run_id]) for run_id in merged_runs(folder)}
    every = [r for rs in rows.values() for r in rs]
    summaries = {}
    for path in sorted((folder / "calls").glob("call*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        summaries[int(data["call"])] = data
    gpu = _distinct(every, "gpu_name")
    torch = _distinct(every, "torch_version")
    lines = [
        f"# The GPU study on {gpu}, torch {torch}",
        "",
        "Issue 30's study in three calls of a lent GPU machine (docs/gpu-study.md): every model at batch 1;",
        "the guide's reduce-overhead models at batch 1 and 4 and the cross-check; classification at batch 4",
        "and 16, a compile-cost cell, a dynamic-batch cell and the repeatability. Random weights built from",
        "each checkpoint's config, the repository's photo, offline. Every figure below is read from the",
        "files in this folder by `python -m suite gpu-study finish` (suite/report/gpustudy.py).",
        "",
        "## How it was made",
        "",
    ]
    lines += _commands(summaries, folder, inputs)
    lines += ["", "## The machine and its software", ""]
    lines += _software(every)
    lines += ["", "## The calls: time against the estimate", ""]
    lines += _calls(summaries)
    lines += ["", "## The cells", ""]
    lines += _cells(rows)
    lines += ["", f"## Speed-ups beside the guide's {REFERENCE_GPU} figures", ""]
    lines += _speedups(every, Reference.load(reference_dir))
    lines += ["", "### Where and why they differ", "", TBW]
    lines += ["", "## Cross-check: the suite's timing loop against independent timers", ""]
    lines += _crosscheck(runs)
    lines += ["", "## Repeatability: the same cells, three runs back to back", ""]
    lines += _repeat(runs)
    lines += ["", "## Wall time per cell and the share spent compiling", ""]
    lines += _walls(rows, matrix, reference_dir)
    lines += ["", "## Health while the calls were timed", ""]
    lines += _health(every)
    lines += ["", "## The merge", ""]
    lines += [f"- {line}" for line in merge_report]
    lines += ["", "Tables: [tables/tables.md](tables/tables.md); plots: `plots/`; the calls' logs: `calls/`."]
    return "\n".join(lines) + "\n"


def _commands(summaries: dict[int, dict[str, Any]], folder: Path, inputs: Sequence[Path]) -> list[str]:
    lines = [
        "On the lent machine, one device-tool call each (docs/gpu-study.md gives the tool's arguments):",
        "",
    ]
    lines += ["```bash"]
    for number in sorted(summaries):
        s = summaries[number]
        variant = " --tiny" if s.get("variant") != GPU else ""
        lines.append(
            f'python -m suite gpu-study call {number}{variant} --out "$OUT"   # {s.get("title", "")}'
        )
        lines += [f"#   {step['command']}" for step in s.get("steps", [])]
    lines += ["```", "", "Then on the host, with the calls' files:", "", "```bash"]
    lines.append(f"python -m suite gpu-study finish {' '.join(str(p) for p in inputs)} -o {folder}")
    return [*lines, "```"]


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
    ("image", "image"),
    ("suite", "suite_version"),
    ("build label", "build"),
)


def _software(rows: Sequence[dict[str, str]]) -> list[str]:
    return _table(("", "as the rows record it"), ((name, _distinct(rows, col)) for name, col in SOFTWARE))


def _calls(summaries: dict[int, dict[str, Any]]) -> list[str]:
    if not summaries:
        return ["No call summary came back."]
    body = []
    for number in sorted(summaries):
        s = summaries[number]
        for step in s.get("steps", []):
            body.append(
                (
                    str(number),
                    step["what"],
                    str(step["cells"]),
                    format_duration(step["estimate_s"]),
                    format_duration(step["wall_s"]),
                    step["status"],
                )
            )
        body.append(
            (
                f"**{number}**",
                "**the call** ("
                + (f"deadline {format_duration(s['budget_s'])})" if s.get("budget_s") else "no deadline)"),
                "",
                format_duration(s.get("estimate_s", 0)),
                format_duration(s.get("wall_s", 0)),
                "complete"
                if all(t["status"] in ("done", "already done") for t in s["steps"])
                else "NOT complete",
            )
        )
    lines = _table(("call", "step", "cells", "estimate", "wall", "outcome"), body)
    measured = sum(t["wall_s"] for s in summaries.values() for t in s["steps"] if t["status"] == "done")
    estimated = sum(t["estimate_s"] for s in summaries.values() for t in s["steps"] if t["status"] == "done")
    if estimated:
        lines += [
            "",
            f"The finished steps took {measured / estimated:.2f} x the cost model's estimate "
            f"({format_duration(measured)} for {format_duration(estimated)}; suite/spec/cost.py, each "
            f"forward call at least the guide's {REFERENCE_GPU} eager time).",
        ]
    return lines


def _cells(rows: dict[str, list[dict[str, str]]]) -> list[str]:
    body = []
    failed = []
    for run_id, rs in rows.items():
        counts: dict[str, int] = {}
        for r in rs:
            counts[r["status"]] = counts.get(r["status"], 0) + 1
            if r["status"] != "ok":
                failed.append(f"- {run_id}: {_label(r)}: {r['status']}: {r.get('error', '')}")
        body.append((run_id, str(len(rs)), ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))))
    lines = _table(("run", "rows", "statuses"), body)
    skipped = [
        f"- {_label(r)}: {note}"
        for rs in rows.values()
        for r in rs
        for note in r.get("compile_note", "").split("; ")
        if note.startswith("CUDA graphs skipped")
    ]
    if failed:
        lines += ["", "Cells that did not end ok:", "", *failed]
    if skipped:
        lines += ["", "Compiled cells timed without the CUDA graphs their mode asked for:", "", *skipped]
    return lines


def _label(r: dict[str, str]) -> str:
    dyn = f" ({r['dynamic']})" if r.get("dynamic") else ""
    return f"{r['model']} bs={r['batch_size']} {r['mode']} {r['scenario']}{dyn}"


def _speedups(rows: Sequence[dict[str, str]], reference: Reference) -> list[str]:
    guide = {
        (normalize(f.model), f.batch_size, f.mode): f
        for f in reference.figures
        if f.gpu == REFERENCE_GPU and not f.erratum
    }
    body = []
    compiled = [r for r in rows if r["mode"] != "eager" and r["status"] == "ok" and not r.get("dynamic")]
    for r in sorted(compiled, key=lambda r: (int(r["batch_size"]), r["mode"], r["task"], r["model"])):
        fig = guide.get((normalize(r["model"]), int(r["batch_size"]), r["mode"]))
        ci = f"[{_f(_num(r.get('speedup_ci95_low')))}, {_f(_num(r.get('speedup_ci95_high')))}]"
        body.append(
            (
                r["model"],
                r["batch_size"],
                r["mode"],
                _f(_num(r.get("eager_median_ms"))),
                _f(_num(r.get("median_ms"))),
                f"{_f(_num(r.get('speedup')))} {ci}",
                r.get("accuracy", ""),
                r.get("health", ""),
                "—" if fig is None else f"{_f(fig.eager_ms, 3)} / {_f(fig.compiled_ms, 3)}",
                "—" if fig is None or fig.speedup is None else f"{fig.speedup:.2f} ({fig.build})",
            )
        )
    if not body:
        return ["No compiled cell ended ok."]
    header = (
        "model",
        "batch",
        "mode",
        "eager ms (paired median)",
        "compiled ms (median)",
        "speed-up [95% CI]",
        "accuracy",
        "health",
        f"guide {REFERENCE_GPU} eager / compiled ms (mean)",
        f"guide {REFERENCE_GPU} speed-up (torch)",
    )
    return [
        *_table(header, body),
        "",
        "Ours: eager median / compiled median of the compiled cell's interleaved calls (suite README, "
        "'What one cell measures'); the guide's: the ratio of its means of 300 calls, no spread published.",
    ]


def _crosscheck(runs: dict[str, Path]) -> list[str]:
    target = xcheck.TARGETS["cuda"]
    body, met, total = [], 0, 0
    for folder in runs.values():
        path = folder / "crosscheck.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        device_target = xcheck.TARGETS.get(str(data.get("device")), target)
        for item in data.get("results", []):
            ratios = [item.get(k) for k in ("vs_benchmark", "vs_events") if item.get(k)]
            within = [abs(r["ratio"] - 1) <= device_target for r in ratios]
            met, total = met + sum(within), total + len(within)

            def text(r: dict[str, float] | None) -> str:
                return "—" if not r else f"{r['ratio']:.3f} ({r['low']:.3f}-{r['high']:.3f})"

            body.append(
                (
                    item["model"],
                    str(item["batch_size"]),
                    item["mode"],
                    item["timed"],
                    _f(item.get("suite_ms"), 3),
                    text(item.get("vs_benchmark")),
                    text(item.get("vs_events")),
                    item.get("error") or ("yes" if within and all(within) else "NO"),
                )
            )
        target = device_target
    if not body:
        return ["No cross-check came back."]
    header = ("model", "batch", "mode", "timed", "suite ms", "suite / benchmark", "suite / CUDA events")
    return [
        *_table((*header, f"within ±{target:.0%}"), body),
        "",
        f"{met} of {total} ratio(s) within ±{target:.0%} (the target); a ratio is the median over rounds of "
        "suite / independent, the range its lowest and highest round (`crosscheck.md` in each "
        "cross-check's folder).",
    ]


def _repeat(runs: dict[str, Path]) -> list[str]:
    lines: list[str] = []
    for run_id, folder in runs.items():
        reps = sorted(p for p in folder.glob("rep-*") if (p / "raw").is_dir())
        if not reps:
            continue
        device = "cuda" if any(r.get("device") != "cpu" for rep in reps for r in _rows(rep)) else "cpu"
        target = repeat.TARGETS[device]
        spreads = repeat.collect(reps)
        body = []
        for c in spreads:
            s = c.median_spread
            body.append(
                (
                    c.key["model"],
                    c.key["batch_size"],
                    c.key["mode"],
                    ", ".join(f"{m:.3f}" for m in c.medians),
                    _f(None if s is None else 100 * s, 2, "%"),
                    _f(None if c.speedup_spread is None else 100 * c.speedup_spread, 2, "%"),
                    ", ".join(c.health) or "—",
                    "—" if s is None else ("yes" if s <= target else "NO"),
                )
            )
        header = ("model", "batch", "mode", "median ms per run", "spread", "speed-up spread", "health")
        lines += _table((*header, f"spread <= {target:.1%}"), body)
        judged = [c for c in spreads if c.median_spread is not None]
        met = sum(c.median_spread <= target for c in judged)  # type: ignore[operator]
        lines += [
            "",
            f"{met} of {len(judged)} cell(s) within {target:.1%} ({run_id}, {len(reps)} runs); "
            "spread = max / min - 1.",
        ]
    return lines or ["No repeatability run came back."]


def _walls(rows: dict[str, list[dict[str, str]]], matrix: Any, reference_dir: Path) -> list[str]:
    estimates: dict[tuple[str, ...], float] = {}
    shrunk = any(r.get("variant") == "smoke" for rs in rows.values() for r in rs)
    variant = TINY if shrunk else GPU  # the rows of `gpu-study call --tiny`: shrunk models
    guide = guide_forward_ms(reference_dir) if variant == GPU else {}
    for call in CALLS:
        for planned in plan_call(matrix, call, variant, reference_dir):
            for cell in planned.cells:
                key = (cell.model.name, str(cell.batch_size), cell.mode, cell.scenario, cell.dynamic)
                estimates[key] = cell_seconds(cell, guide)
    body = []
    measured = estimated = 0.0
    seen: set[tuple[str, ...]] = set()
    for run_id, rs in rows.items():
        for r in rs:
            wall = _num(r.get("wall_s"))
            key = (r["model"], r["batch_size"], r["mode"], r["scenario"], r.get("dynamic", ""))
            if r.get("dynamic"):  # one process, one row per batch size: its wall time is the cell's
                key = (r["model"], "1", r["mode"], r["scenario"], r["dynamic"])
                if key in seen:
                    continue
            seen.add(key)
            compile_s = sum(
                _num(r.get(c)) or 0.0 for c in ("compile_s", "compile_warm_s", "compile_megacache_s")
            )
            est = estimates.get(key)
            if wall is not None and est and r["status"] == "ok":
                measured, estimated = measured + wall, estimated + est
            body.append(
                (
                    run_id,
                    _label(r),
                    r["status"],
                    _f(wall, 1),
                    _f(compile_s or None, 1),
                    "—" if not wall or not compile_s else f"{compile_s / wall:.0%}",
                    "—" if est is None else format_duration(est),
                )
            )
    lines = _table(("run", "cell", "status", "wall s", "compiling s", "share", "estimate"), body)
    lines += [
        "",
        "wall s: the cell's processes, start to end (with the compile-cost processes where it has them); "
        "compiling s: its cold compile (+ the warm and mega-cache compiles); estimate: the cost model's.",
    ]
    if estimated:
        ratio = measured / estimated
        full = expand(matrix, "full", "?")  # the guide's study, full size, whatever ran here
        full_s = sum(estimate_seconds(c) for c in full)
        lines += [
            "",
            f"The cells that ended ok took {ratio:.2f} x their estimate ({format_duration(measured)} for "
            f"{format_duration(estimated)}). The guide's full study (`plan --profile full`: "
            f"{len(full)} cells, "
            f"{full[0].settings.iterations} iterations) is estimated at {format_duration(full_s)}; at that "
            f"ratio, about {format_duration(full_s * ratio)} on this machine.",
        ]
    return lines


HEALTH_COLUMNS = (
    ("SM clock, MHz (lowest - highest)", "gpu_sm_clock_mhz_min", "gpu_sm_clock_mhz_max"),
    ("hottest, °C", "gpu_temp_c_max", ""),
    ("mean power, W (range over cells)", "gpu_power_w_mean", ""),
    ("other compute processes (most)", "gpu_other_processes", ""),
    ("CPU steal, % (most)", "cpu_steal_pct", ""),
    ("CPU wait (PSI), % (most)", "cpu_wait_pct", ""),
    ("page faults per call (most)", "page_faults_per_call", ""),
)


def _health(rows: Sequence[dict[str, str]]) -> list[str]:
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return ["No cell ended ok."]
    verdicts: dict[str, int] = {}
    for r in ok:
        verdicts[r.get("health") or "—"] = verdicts.get(r.get("health") or "—", 0) + 1
    body = []
    for name, low, high in HEALTH_COLUMNS:
        lows = [v for v in (_num(r.get(low)) for r in ok) if v is not None]
        highs = [v for v in (_num(r.get(high)) for r in ok) if v is not None] if high else lows
        if not lows:
            body.append((name, "not measured"))
        elif high or low == "gpu_power_w_mean":
            body.append((name, f"{min(lows):g} - {max(highs):g}"))
        else:
            body.append((name, f"{max(lows):g}"))
    throttles = sorted({t for r in ok for t in (r.get("gpu_throttle") or "").split(",") if t})
    body.append(("clock-event reasons seen", ", ".join(throttles) or "none"))
    body.append(("health verdicts (cells)", ", ".join(f"{v} {n}" for v, n in sorted(verdicts.items()))))
    return [
        *_table(("", "over the cells that ended ok"), body),
        "",
        "Read while each cell's calls were timed (suite/measure/health.py: NVML every 0.1 s, /proc); "
        "flags as the README's 'Machine health' defines them.",
    ]
