"""The measured sections of a GPU study's README (suite.gpustudy.readme puts them in order): the
cost model's calibration, the speed-ups beside the guide's, the cross-check with its rounds'
spread, the repeatability, the wall time per cell, the health columns; every figure read from
the rows and reports brought back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from suite.gpustudy import calibrate
from suite.gpustudy.estimate import Planner, plan_call, plan_step
from suite.gpustudy.plan import GPU, REFERENCE_GPU, TINY, Step, call_of
from suite.report.reference import Reference, normalize
from suite.results import read_rows
from suite.run import crosscheck as xcheck
from suite.run import repeat
from suite.spec.cost import format_duration


def num(value: object) -> float | None:
    try:
        return None if value in (None, "") else float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def fmt(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "—" if value is None else f"{value:.{digits}f}{suffix}"


def md_table(header: Sequence[str], body: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(row) + " |" for row in body]


def _planner(rows: dict[str, list[dict[str, str]]], reference_dir: Path) -> tuple[str, Planner]:
    """The variant the rows are of (shrunk: the tiny one) and its planner."""
    shrunk = any(r.get("variant") == "smoke" for rs in rows.values() for r in rs)
    variant = TINY if shrunk else GPU
    return variant, Planner.of(variant, reference_dir)


def _step_of(folder: str, steps: dict[str, Step]) -> Step | None:
    return steps.get(folder) or steps.get(re.sub(r"-run\d+$", "", folder))


def calibration_pairs(
    rows: dict[str, list[dict[str, str]]],
    matrix: Any,
    reference_dir: Path,
    reports: Sequence[dict[str, Any]],
    logs: Sequence[str] = (),
) -> list[calibrate.Pair]:
    """Each step that ran to its end and each ok cell's parts, against this commit's estimates
    (`logs`: the calls' logs, whose progress lines give the compile phase of rows without it)."""
    variant, planner = _planner(rows, reference_dir)
    pairs = calibrate.step_pairs(reports, calibrate.estimated_by(matrix, variant, planner))
    steps = calibrate.steps_run(reports)
    logged = calibrate.ahead_in_logs(logs)
    for folder, rs in rows.items():
        step = _step_of(folder, steps)
        if step is not None and step.verb == "run":
            pairs += calibrate.cell_pairs(rs, plan_step(matrix, step, variant, planner), planner, logged)
    return pairs


def calibration(
    rows: dict[str, list[dict[str, str]]],
    matrix: Any,
    reference_dir: Path,
    reports: Sequence[dict[str, Any]],
    logs: Sequence[str] = (),
) -> list[str]:
    pairs = calibration_pairs(rows, matrix, reference_dir, reports, logs)
    ratio = calibrate.scale(pairs)
    if ratio is None:
        return ["No step or cell ended: nothing to calibrate the cost model with."]
    variant, planner = _planner(rows, reference_dir)
    study = plan_call(matrix, call_of(1), variant, reference_dir, planner=planner)
    study_s = sum(p.seconds for p in study)
    return [
        "**Calibration** (this commit's cost model, suite/spec/cost.py by the schedule that ran: "
        "suite/gpustudy/calibrate.py): each step that ran to its end against its estimate, each ok "
        "cell's compile and timing phases against theirs.",
        "",
        *calibrate.table(pairs),
        "",
        *[f"- {line}." for line in calibrate.summary(pairs)],
        "",
        f"The study as `gpu-study plan` of this commit lays it out ({len(study)} steps) is estimated at "
        f"{format_duration(study_s)} on {planner.cores} cores; scaled by {ratio:.2f}, "
        f"{format_duration(study_s * ratio)}.",
        "",
        "The per-call times of the estimates are the GPU studies' committed rows "
        "(suite/gpustudy/estimate.py), these included where they are committed: for cells measured "
        "here the ratio checks the fit of the schedule's model, not a forecast.",
    ]


def cell_label(r: dict[str, str]) -> str:
    dyn = f" ({r['dynamic']})" if r.get("dynamic") else ""
    return f"{r['model']} bs={r['batch_size']} {r['mode']} {r['scenario']}{dyn}"


def _speedup_cell(r: dict[str, str], column: str) -> str:
    low, high = num(r.get(f"{column}_ci95_low")), num(r.get(f"{column}_ci95_high"))
    return f"{fmt(num(r.get(column)))} [{fmt(low)}, {fmt(high)}]"


def speedups(rows: Sequence[dict[str, str]], reference: Reference) -> list[str]:
    """Each compiled cell that ended ok (every run folder: a cell measured twice is two lines): its
    latency speed-up, its throughput speed-up where the rows have one (what the guide measured: the
    comparison then uses it), and the guide's."""
    guide = {
        (normalize(f.model), f.batch_size, f.mode): f
        for f in reference.figures
        if f.gpu == REFERENCE_GPU and not f.erratum
    }
    compiled = [r for r in rows if r["mode"] != "eager" and r["status"] == "ok" and not r.get("dynamic")]
    throughput = any(num(r.get("throughput_speedup")) is not None for r in compiled)
    body = []
    for r in sorted(
        compiled, key=lambda r: (int(r["batch_size"]), r["mode"], r["task"], r["model"], r["started_at"])
    ):
        fig = guide.get((normalize(r["model"]), int(r["batch_size"]), r["mode"]))
        ours = num(r.get("throughput_speedup")) if throughput else num(r.get("speedup"))
        theirs = None if fig is None else fig.speedup
        row = [
            r["model"],
            r["batch_size"],
            r["mode"],
            r.get("folder", r["run_id"]),
            fmt(num(r.get("eager_median_ms"))),
            fmt(num(r.get("median_ms"))),
            _speedup_cell(r, "speedup"),
        ]
        if throughput:
            row.append(_speedup_cell(r, "throughput_speedup"))
        row += [
            r.get("accuracy", ""),
            r.get("health", ""),
            "—" if fig is None else f"{fmt(fig.eager_ms, 3)} / {fmt(fig.compiled_ms, 3)}",
            "—" if theirs is None else f"{theirs:.2f} ({fig.build})",  # type: ignore[union-attr]
            "—" if theirs is None or ours is None else f"{ours / theirs:.2f}",
        ]
        body.append(row)
    if not body:
        return ["No compiled cell ended ok."]
    header = [
        "model",
        "batch",
        "mode",
        "run",
        "eager ms (paired median)",
        "compiled ms (median)",
        "speed-up by latency [95% CI]" if throughput else "speed-up [95% CI]",
    ]
    header += ["speed-up by throughput [95% CI]"] if throughput else []
    header += [
        "accuracy",
        "health",
        f"guide {REFERENCE_GPU} eager / compiled ms (mean)",
        f"guide {REFERENCE_GPU} speed-up (torch)",
        "ours / guide" + (" (throughput)" if throughput else ""),
    ]
    return [
        *md_table(header, body),
        "",
        "Ours: eager median / compiled median of the compiled cell's interleaved, synchronized calls "
        "(per-call latency; suite README, 'What one cell measures')"
        + (
            "; by throughput: the paired ratio over blocks of back-to-back calls, what the guide measured"
            if throughput
            else ""
        )
        + "; the guide's: the ratio of its means of 300 back-to-back calls, no spread published. A cell "
        "in two run folders was measured twice (a later attempt that started afresh); the merged tables "
        "keep the later row.",
    ]


def _ratios(item: dict[str, Any]) -> dict[str, dict[str, float]]:
    """{what is compared: its ratio, lowest and highest round}: each pair of a report that lists
    them (`ratios`: latency against latency, throughput against throughput), else the latency
    pairs of an earlier report (`vs_benchmark`, `vs_events`)."""
    listed = item.get("ratios")
    if isinstance(listed, list) and listed:
        return {
            f"{r.get('figure', '')}: {r.get('against', '')}": r
            for r in listed
            if isinstance(r, dict) and r.get("ratio") is not None
        }
    return {k[3:]: v for k, v in item.items() if k.startswith("vs_") and isinstance(v, dict) and "ratio" in v}


def crosscheck(runs: dict[str, Path]) -> list[str]:
    body, met, total = [], 0, 0
    target = xcheck.TARGETS["cuda"]
    for run_id, folder in runs.items():
        path = folder / "crosscheck.json"
        if not path.exists():
            continue
        data = json.loads(path.read_text(encoding="utf-8"))
        target = xcheck.TARGETS.get(str(data.get("device")), target)
        for item in data.get("results", []):
            ratios = _ratios(item)
            within = [abs(r["ratio"] - 1) <= target for r in ratios.values()]
            met, total = met + sum(within), total + len(within)
            rounds = [x for x in item.get("suite_rounds_ms") or [] if x]
            spread = (
                "—"
                if not rounds
                else f"{min(rounds):.2f}-{max(rounds):.2f} ({max(rounds) / min(rounds) - 1:.1%})"
            )
            text = "; ".join(
                f"{k} {v['ratio']:.3f} ({v['low']:.3f}-{v['high']:.3f})" for k, v in ratios.items()
            )
            body.append(
                (
                    run_id,
                    item["model"],
                    str(item["batch_size"]),
                    item["timed"],
                    fmt(item.get("suite_ms"), 3),
                    spread,
                    fmt(item.get("benchmark_ms"), 3),
                    fmt(item.get("events_ms"), 3),
                    text or "—",
                    item.get("error") or ("yes" if within and all(within) else "NO"),
                )
            )
    if not body:
        return ["No cross-check came back."]
    header = (
        "run",
        "model",
        "batch",
        "timed",
        "suite median ms",
        "suite's rounds ms (apart)",
        "torch.utils.benchmark ms",
        "CUDA events ms",
        "suite / independent (lowest-highest round)",
        f"within ±{target:.0%}",
    )
    return [
        *md_table(header, body),
        "",
        f"{met} of {total} ratio(s) within ±{target:.0%} (the target); a ratio is the median over rounds of "
        "suite / independent; the suite's rounds: its lowest and highest round median, how far the machine "
        "moved under both timers (`crosscheck.md` in each cross-check's folder).",
    ]


def repeatability(runs: dict[str, Path]) -> list[str]:
    lines: list[str] = []
    for run_id, folder in runs.items():
        reps = sorted(p for p in folder.glob("rep-*") if (p / "raw").is_dir())
        if not reps:
            continue
        device = "cuda" if any(r.get("device") != "cpu" for rep in reps for r in rows_of(rep)) else "cpu"
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
                    fmt(None if s is None else 100 * s, 2, "%"),
                    fmt(None if c.speedup_spread is None else 100 * c.speedup_spread, 2, "%"),
                    ", ".join(c.health) or "—",
                    "—" if s is None else ("yes" if s <= target else "NO"),
                )
            )
        header = ("model", "batch", "mode", "median ms per run", "spread", "speed-up spread", "health")
        lines += md_table((*header, f"spread <= {target:.1%}"), body)
        judged = [c for c in spreads if c.median_spread is not None]
        met = sum(c.median_spread <= target for c in judged)  # type: ignore[operator]
        lines += [
            "",
            f"{met} of {len(judged)} cell(s) within {target:.1%} ({run_id}, {len(reps)} runs); "
            "spread = max / min - 1.",
        ]
    return lines or ["No repeatability run came back."]


def walls(
    rows: dict[str, list[dict[str, str]]], matrix: Any, reference_dir: Path, reports: Sequence[dict[str, Any]]
) -> list[str]:
    estimates: dict[tuple[str, str], float] = {}  # (run folder, cell) -> its parts' estimates
    for folder, rs in rows.items():
        for x in calibration_pairs({folder: rs}, matrix, reference_dir, reports):
            if x.kind != calibrate.STEP:
                estimates[(folder, x.what)] = estimates.get((folder, x.what), 0.0) + x.estimated
    body = []
    for run_id, rs in rows.items():
        for r in rs:
            wall = num(r.get("wall_s"))
            compile_s = sum(
                num(r.get(c)) or 0.0 for c in ("compile_s", "compile_warm_s", "compile_megacache_s")
            )
            est = estimates.get((run_id, f"{r['model']} bs={r['batch_size']} {r['mode']} {r['scenario']}"))
            body.append(
                (
                    run_id,
                    cell_label(r),
                    r["status"],
                    fmt(wall, 1),
                    fmt(num(r.get("eager_first_result_s")), 1),
                    fmt(compile_s or None, 1),
                    "—" if not wall or not compile_s else f"{compile_s / wall:.0%}",
                    "—" if est is None else format_duration(est),
                )
            )
    return [
        *md_table(
            (
                "run",
                "cell",
                "status",
                "wall s",
                "start-up s (eager first result)",
                "compiling s",
                "share",
                "estimate (this commit)",
            ),
            body,
        ),
        "",
        "wall s: the cell's processes, start to end (under `ahead`: its process's active time for it, "
        "the compile before its gate included in a compiled cell's); compiling s: its cold compile (+ "
        "the warm and mega-cache compiles where it has them); estimate: the cost model of this commit "
        "for the same part (the calibration above).",
    ]


HEALTH_COLUMNS = (
    ("SM clock, MHz (lowest - highest)", "gpu_sm_clock_mhz_min", "gpu_sm_clock_mhz_max"),
    ("hottest, °C", "gpu_temp_c_max", ""),
    ("mean power, W (range over cells)", "gpu_power_w_mean", ""),
    ("other compute processes (most)", "gpu_other_processes", ""),
    ("CPU steal, % (most)", "cpu_steal_pct", ""),
    ("CPU wait (PSI), % (most)", "cpu_wait_pct", ""),
    ("page faults per call (most)", "page_faults_per_call", ""),
)


def health(rows: Sequence[dict[str, str]]) -> list[str]:
    ok = [r for r in rows if r["status"] == "ok"]
    if not ok:
        return ["No cell ended ok."]
    verdicts: dict[str, int] = {}
    for r in ok:
        verdicts[r.get("health") or "—"] = verdicts.get(r.get("health") or "—", 0) + 1
    body = []
    for name, low, high in HEALTH_COLUMNS:
        lows = [v for v in (num(r.get(low)) for r in ok) if v is not None]
        highs = [v for v in (num(r.get(high)) for r in ok) if v is not None] if high else lows
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
        *md_table(("", "over the cells that ended ok"), body),
        "",
        "Read while each cell's calls were timed (suite/measure/health.py: NVML every 0.1 s, /proc); "
        "flags as the README's 'Machine health' defines them.",
    ]


def rows_of(folder: Path) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for csv_path in sorted((folder / "raw").glob("*.csv")):
        rows += read_rows(csv_path).rows
    return rows


def _latest(rows: Iterable[dict[str, str]]) -> dict[tuple[str, str, str], dict[str, str]]:
    """Each inference cell's last ok row (by its start), keyed by model, batch size and mode."""
    out: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in sorted(rows, key=lambda r: r.get("started_at", "")):
        if r.get("status") == "ok" and r.get("scenario") == "inference" and not r.get("dynamic"):
            out[(r["model"], r["batch_size"], r["mode"])] = r
    return out


def _interval(r: dict[str, str], column: str, low: str, high: str) -> tuple[float, float, float] | None:
    values = (num(r.get(column)), num(r.get(low)), num(r.get(high)))
    return None if None in values else values  # type: ignore[return-value]


def _moved(a: tuple[float, float, float] | None, b: tuple[float, float, float] | None) -> str:
    """ "held" where the two 95% intervals overlap, "moved" where they do not, "—" without both."""
    if a is None or b is None:
        return "—"
    return "held" if a[1] <= b[2] and b[1] <= a[2] else "moved"


def _ms(i: tuple[float, float, float] | None) -> str:
    return "—" if i is None else f"{i[0]:.2f}"


def beside(ours: Sequence[dict[str, str]], theirs: Sequence[dict[str, str]]) -> list[str]:
    """Each compiled cell both studies measured ok (its last row in each), side by side: eager and
    compiled medians and the speed-up with its 95% CI, then and now; a figure "held" where the two
    intervals overlap and "moved" where they do not."""
    now, then = _latest(ours), _latest(theirs)
    body, moved = [], {"eager": 0, "compiled": 0, "speed-up": 0}
    both = [k for k in now if k in then and k[2] != "eager"]
    for key in sorted(both, key=lambda k: (k[2], int(k[1]), k[0])):
        a, b = then[key], now[key]
        figures = {
            "eager": [
                _interval(r, "eager_median_ms", "eager_ci95_low_ms", "eager_ci95_high_ms") for r in (a, b)
            ],
            "compiled": [_interval(r, "median_ms", "ci95_low_ms", "ci95_high_ms") for r in (a, b)],
            "speed-up": [_interval(r, "speedup", "speedup_ci95_low", "speedup_ci95_high") for r in (a, b)],
        }
        said = {name: _moved(*pair) for name, pair in figures.items()}
        for name, word in said.items():
            moved[name] += word == "moved"
        ratio = num(b.get("speedup")) and num(a.get("speedup"))
        body.append(
            (
                f"{key[0]} bs={key[1]} {key[2]}",
                *(f"{_ms(figures[n][0])} → {_ms(figures[n][1])} ({said[n]})" for n in ("eager", "compiled")),
                f"{_speedup_cell(a, 'speedup')} → {_speedup_cell(b, 'speedup')} ({said['speed-up']})",
                "—" if not ratio else f"{float(b['speedup']) / float(a['speedup']):.2f}",
                f"{a.get('health') or '—'} → {b.get('health') or '—'}",
            )
        )
    if not body:
        return ["No compiled cell was measured ok in both."]
    head = ("cell", "eager ms, then → now", "compiled ms", "speed-up [95% CI]", "now / then", "health")
    return [
        *md_table(head, body),
        "",
        f"{len(body)} compiled cell(s) in both; of their figures, moved beyond both 95% intervals: "
        f"eager {moved['eager']}, compiled {moved['compiled']}, speed-up {moved['speed-up']} (each "
        "row's last run in each study; a median's interval is its run's own sampling error, not the "
        "between-run noise, so a machine whose host moved shows as moved).",
    ]
