"""Generated inputs for the pages' tests and their benchmark: a run's raw CSVs (any number of
GPUs, builds, models, batch sizes and modes, with failed, suspect and missing cells where asked)
and a history view by the contract's columns (a year of nights, change points, failed and
suspect nights). The figures are made up, from a seeded generator, and are never results:
they exist to load the pages with the shape and size of real ones.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import NamedTuple

import pandas as pd

from suite.results import COLUMNS, RowWriter
from suite.results.series_key import CHANGE_COLUMNS
from suite.spec.load import load_matrix
from suite.stats import breakeven_calls

ROOT = Path(__file__).resolve().parents[2]
A100 = "NVIDIA A100-SXM4-80GB"
TORCH = {"stable": "2.0.1+cu118", "nightly": "2.1.0.dev20230605+cu118"}


class CellId(NamedTuple):
    """One cell of a sample run; a plain tuple of the same values is the same key (of `failed`,
    `unhealthy`, `accuracy_failed`)."""

    build: str
    gpu: str
    model: str
    batch_size: int
    mode: str


def matrix_models() -> tuple[tuple[str, str], ...]:
    """The guide's 12 models as (task, display name), from matrix.yaml (not the custom ones)."""
    matrix = load_matrix(ROOT / "matrix.yaml")
    return tuple((spec.task, name) for name, spec in matrix.models.items() if not spec.base)


@dataclass(frozen=True)
class SampleRun:
    """What to generate: the full profile (12 models x batch 1/4/16 x eager, default,
    reduce-overhead = 108 cells a build) on two builds and one GPU by default."""

    gpus: tuple[str, ...] = (A100,)
    builds: tuple[str, ...] = ("stable", "nightly")
    models: tuple[tuple[str, str], ...] = field(default_factory=matrix_models)
    batch_sizes: tuple[int, ...] = (1, 4, 16)
    modes: tuple[str, ...] = ("eager", "default", "reduce-overhead")
    failed: dict[CellId, str] = field(default_factory=dict)  # cell -> oom | error | timeout | skipped
    unhealthy: dict[CellId, str] = field(default_factory=dict)  # cell -> health flags ("busy,steal")
    accuracy_failed: frozenset[CellId] = frozenset()
    absent: frozenset[tuple[str, str]] = frozenset()  # (build, gpu): no row at all (a job that failed)
    seed: int = 0

    def __post_init__(self) -> None:
        if not (self.gpus and self.builds and self.models and self.batch_sizes and self.modes):
            raise ValueError("a sample run needs GPUs, builds, models, batch sizes and modes")
        bad = [s for s in self.failed.values() if s not in ("oom", "error", "timeout", "skipped")]
        if bad:
            raise ValueError(f"failed statuses {bad}: oom, error, timeout or skipped")

    @property
    def cells_per_build(self) -> int:
        return len(self.models) * len(self.batch_sizes) * len(self.modes)


def write_sample_run(folder: Path, spec: SampleRun) -> Path:
    """`folder/raw/<build>__<gpu>.csv` as the runner writes them; returns the folder."""
    rng = random.Random(spec.seed)
    for gpu_i, gpu in enumerate(spec.gpus):
        for build in spec.builds:
            if (build, gpu) in spec.absent:
                continue
            path = folder / "raw" / f"{build}__cuda-gpu{gpu_i}.csv"
            with RowWriter(path) as writer:
                for m_i, (task, model) in enumerate(spec.models):
                    base = 4.0 + 3.0 * m_i  # ms of batch 1, eager
                    for bs in spec.batch_sizes:
                        eager_ms = base * bs**0.8 * (1.0 if build == "stable" else 0.97)
                        for mode in spec.modes:
                            cell = CellId(build, gpu, model, bs, mode)
                            writer.append(_row(spec, rng, cell, task, eager_ms))
    return folder


def _row(spec: SampleRun, rng: random.Random, cell: CellId, task: str, eager: float) -> dict[str, object]:
    build, gpu, model, bs, mode = cell
    row: dict[str, object] = {
        "run_id": "sample",
        "build": build,
        "device": "cuda",
        "gpu_name": gpu,
        "task": task,
        "model": model,
        "model_id": model.lower(),
        "weights": "pretrained",
        "batch_size": bs,
        "mode": mode,
        "dtype": "float32",
        "scenario": "inference",
        "torch_version": TORCH.get(build, "2.13.0+cu128"),
        "started_at": "2026-01-01T00:00:00+00:00",
        "iterations": 300,
        "health": spec.unhealthy.get(cell, "ok"),
    }
    status = spec.failed.get(cell)
    if status is not None:
        return {**row, "status": status, "error": f"{status}: generated failure of {model} bs={bs} {mode}"}
    row["status"] = "ok"
    if mode == "eager":
        median = eager * rng.uniform(0.98, 1.02)
        return {**row, **_timing(median)}
    speedup = rng.uniform(0.8, 2.4) * (1.1 if mode == "reduce-overhead" else 1.0)
    paired_eager = eager * rng.uniform(0.98, 1.02)
    median = paired_eager / speedup
    compile_s = rng.uniform(15.0, 90.0)
    return {
        **row,
        **_timing(median),
        "eager_median_ms": round(paired_eager, 4),
        "eager_ci95_low_ms": round(paired_eager * 0.99, 4),
        "eager_ci95_high_ms": round(paired_eager * 1.01, 4),
        "speedup": round(speedup, 4),
        "speedup_ci95_low": round(speedup * 0.97, 4),
        "speedup_ci95_high": round(speedup * 1.03, 4),
        "compile_s": round(compile_s, 2),
        "breakeven_calls": _round(breakeven_calls(compile_s, paired_eager, median)),
        "accuracy": "fail" if cell in spec.accuracy_failed else "pass",
        "max_abs_diff": 1e-6,
        "graph_breaks": 0,
        "recompiles": 0,
    }


def _round(value: float | None) -> object:
    return "" if value is None else round(value, 1)


def _timing(median: float) -> dict[str, object]:
    return {
        "mean_ms": round(median * 1.01, 4),
        "median_ms": round(median, 4),
        "ci95_low_ms": round(median * 0.99, 4),
        "ci95_high_ms": round(median * 1.01, 4),
        "p10_ms": round(median * 0.98, 4),
        "p90_ms": round(median * 1.03, 4),
        "min_ms": round(median * 0.97, 4),
        "std_ms": round(median * 0.01, 4),
        "peak_mem_mb": 1000.0,
    }


assert "health" in COLUMNS and "breakeven_calls" in COLUMNS  # the columns written above


# --- a history view --------------------------------------------------------------------------------


@dataclass(frozen=True)
class SampleHistory:
    """A HistoryView-like pair of frames (docs/pages.md, "The history view")."""

    points: pd.DataFrame
    changes: pd.DataFrame


LINES: tuple[tuple[str, str], ...] = (("stable", "stable"), ("nightly 2.10", "nightly"))


def _sha(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()


def sample_history(
    nights: int = 365,
    gpus: tuple[str, ...] = (A100,),
    lines: tuple[tuple[str, str], ...] = LINES,
    models: tuple[tuple[str, str], ...] | None = None,
    batch_sizes: tuple[int, ...] = (1, 4, 16),
    modes: tuple[str, ...] = ("eager", "default", "reduce-overhead"),
    start: date = date(2026, 1, 1),
    seed: int = 0,
) -> SampleHistory:
    """`nights` nights of every series; on the nightly line the first model's compiled cells get
    12% slower from the night two thirds in (a change point, in `changes`), one night in 40 fails
    and one in 25 is timed on a busy machine."""
    rng = random.Random(seed)
    models = models if models is not None else matrix_models()
    step = (nights * 2) // 3
    records: list[dict[str, object]] = []
    changes: list[dict[str, object]] = []
    for gpu in gpus:
        for line, build in lines:
            for n in range(nights):
                day = start + timedelta(days=n)
                run_id = f"nightly-{day:%Y%m%d}-{build}"
                git = "" if line == "stable" else _sha(f"{line}{day}")
                for m_i, (task, model) in enumerate(models):
                    for bs in batch_sizes:
                        eager = (4.0 + 3.0 * m_i) * bs**0.8
                        for mode in modes:
                            slower = line != "stable" and m_i == 0 and mode != "eager" and n >= step
                            records.append(
                                _point(
                                    rng,
                                    _Night(gpu, line, build, day, run_id, git, n),
                                    _Cell(task, model, bs, mode, eager, slower),
                                )
                            )
            if line != "stable" and nights > 2:
                good, bad = start + timedelta(days=step - 1), start + timedelta(days=step)
                for bs in batch_sizes:
                    for mode in (m for m in modes if m != "eager"):
                        task, model = models[0]
                        changes.append(
                            {
                                **_series(gpu, line, build, (task, model, bs, mode)),
                                "metric": "median_ms",
                                "last_good_date": pd.Timestamp(good),
                                "first_bad_date": pd.Timestamp(bad),
                                "last_good_git": _sha(f"{line}{good}"),
                                "first_bad_git": _sha(f"{line}{bad}"),
                                "commit_range_url": "https://github.com/pytorch/pytorch/compare/"
                                f"{_sha(f'{line}{good}')}...{_sha(f'{line}{bad}')}",
                                "change_pct": 12.0,
                                "change_ci_low_pct": 9.5,
                                "change_ci_high_pct": 14.6,
                                "direction": "slower",
                                "confirm_command": f"nox -s bisect -- --good {good} --bad {bad} "
                                f"--models {model}",
                            }
                        )
    points = pd.DataFrame.from_records(records)
    points["date"] = pd.to_datetime(points["date"])
    return SampleHistory(
        points=points, changes=pd.DataFrame.from_records(changes, columns=list(CHANGE_COLUMNS))
    )


NAN = float("nan")


class _Night(NamedTuple):
    gpu: str
    line: str
    build: str
    day: date
    run_id: str
    git: str
    n: int  # its position in the history


class _Cell(NamedTuple):
    task: str
    model: str
    bs: int
    mode: str
    eager: float  # its eager median, ms
    slower: bool  # after the change point


def _series(gpu: str, line: str, build: str, cell: tuple[str, str, int, str]) -> dict[str, object]:
    """A series' key columns (suite.results.series_key): a sample's float32 inference cell."""
    task, model, bs, mode = cell
    return {
        "gpu": gpu,
        "build_line": line,
        "build": build,
        "model": model,
        "task": task,
        "batch_size": bs,
        "mode": mode,
        "dtype": "float32",
        "scenario": "inference",
    }


def _point(rng: random.Random, night: _Night, cell: _Cell) -> dict[str, object]:
    gpu, line, build, day, run_id, git, n = night
    task, model, bs, mode, eager, slower = cell
    failed = n % 40 == 17 and mode != "eager"
    busy = n % 25 == 3
    point: dict[str, object] = {
        **_series(gpu, line, build, (task, model, bs, mode)),
        "date": day.isoformat(),
        "run_id": run_id,
        "torch_version": "2.0.1+cu118" if line == "stable" else f"2.10.0.dev{day:%Y%m%d}+cu128",
        "torch_git": git,
        "run_page": f"runs/{run_id}/tables/index.html",
        "status": "oom" if failed else "ok",
        "health": "" if failed else ("busy" if busy else "ok"),
    }
    if failed:
        nan_figures = dict.fromkeys(
            (
                "median_ms",
                "median_ci_low_ms",
                "median_ci_high_ms",
                "speedup",
                "speedup_ci_low",
                "speedup_ci_high",
            ),
            NAN,
        )
        return {**point, **nan_figures, "compile_s": NAN}
    noise = rng.gauss(1.0, 0.015)
    if mode == "eager":
        median = eager * noise
        return {
            **point,
            "median_ms": median,
            "median_ci_low_ms": median * 0.99,
            "median_ci_high_ms": median * 1.01,
            "speedup": NAN,
            "speedup_ci_low": NAN,
            "speedup_ci_high": NAN,
            "compile_s": NAN,
        }
    speedup = 1.5 * rng.gauss(1.0, 0.01) / (1.12 if slower else 1.0)
    median = eager / speedup * noise
    return {
        **point,
        "median_ms": median,
        "median_ci_low_ms": median * 0.99,
        "median_ci_high_ms": median * 1.01,
        "speedup": speedup,
        "speedup_ci_low": speedup * 0.98,
        "speedup_ci_high": speedup * 1.02,
        "compile_s": 40.0 * rng.gauss(1.0, 0.03),
    }
