"""Raw CSV rows made by hand, and run folders of them, as the runner writes them: the merge's,
the plots' and compare's tests read them (their figures are the tests' own, not measurements)."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

from suite.results import RowWriter

A100 = "NVIDIA A100-SXM4-80GB"
T4 = "Tesla T4"
TASKS = {"ViT": "Image Classification", "DETR": "Object Detection"}
TORCH = {"stable": "2.0.1+cu118", "nightly": "2.1.0.dev20230605+cu118"}


def row(build: str, gpu: str, model: str, bs: int, mode: str, status: str = "ok", **measured: object) -> dict:
    """One raw-CSV row: the cell's identity plus what was measured (the rest left empty)."""
    return {
        "run_id": "t",
        "build": build,
        "device": "cuda",
        "gpu_name": gpu,
        "task": TASKS[model],
        "model": model,
        "model_id": model.lower(),
        "weights": "pretrained",
        "batch_size": bs,
        "mode": mode,
        "dtype": "float32",
        "scenario": "inference",
        "status": status,
        "error": "" if status == "ok" else f"{status} happened",
        "torch_version": TORCH[build],
        "started_at": "2026-01-01T00:00:00+00:00",
        **measured,
    }


def eager(build, gpu, model, bs, mean, median, lo, hi):
    return row(
        build, gpu, model, bs, "eager", mean_ms=mean, median_ms=median, ci95_low_ms=lo, ci95_high_ms=hi
    )


class At(NamedTuple):
    """A compiled cell's identity."""

    build: str
    gpu: str
    model: str
    bs: int
    mode: str


class Times(NamedTuple):
    """A cell's mean and median (ms) and the median's 95% CI."""

    mean: float
    median: float
    lo: float
    hi: float


class Speedup(NamedTuple):
    """A compiled cell's speed-up over its paired eager calls, and its 95% CI."""

    factor: float
    lo: float
    hi: float


def compiled(at: At, times: Times, speedup: Speedup, accuracy: str = "pass") -> dict:
    """A compiled cell's row, as the worker writes it: its paired eager median is median x speed-up
    (the speed-up is that ratio), with a 95% CI of +-0.1 ms."""
    paired_eager = round(times.median * speedup.factor, 6)
    return row(
        *at,
        mean_ms=times.mean,
        median_ms=times.median,
        ci95_low_ms=times.lo,
        ci95_high_ms=times.hi,
        speedup=speedup.factor,
        speedup_ci95_low=speedup.lo,
        speedup_ci95_high=speedup.hi,
        accuracy=accuracy,
        eager_median_ms=paired_eager,
        eager_ci95_low_ms=round(paired_eager - 0.1, 6),
        eager_ci95_high_ms=round(paired_eager + 0.1, 6),
    )


# The merge's hand-made study (tests/report/test_publish.py checks its tables cell by cell): two builds,
# two GPUs, three modes, every failure status.
ROWS = [
    # A100, stable, batch 1: ViT fine; DETR compiles to a wrong output (default), errors (reduce-overhead)
    eager("stable", A100, "ViT", 1, 10.0, 9.8, 9.7, 9.9),
    compiled(At("stable", A100, "ViT", 1, "default"), Times(8.0, 7.9, 7.8, 8.0), Speedup(1.25, 1.20, 1.30)),
    compiled(
        At("stable", A100, "ViT", 1, "reduce-overhead"), Times(6.0, 5.9, 5.8, 6.0), Speedup(1.6, 1.5, 1.7)
    ),
    eager("stable", A100, "DETR", 1, 40.0, 39.0, 38.0, 40.0),
    compiled(
        At("stable", A100, "DETR", 1, "default"),
        Times(20.0, 19.5, 19.0, 20.0),
        Speedup(2.0, 1.9, 2.1),
        accuracy="fail",
    ),
    row("stable", A100, "DETR", 1, "reduce-overhead", "error"),
    # A100, stable, batch 16: DETR does not fit
    row("stable", A100, "DETR", 16, "eager", "oom"),
    row("stable", A100, "DETR", 16, "default", "oom"),
    # A100, nightly, batch 1: compiled ViT is slower; DETR eager timed out
    eager("nightly", A100, "ViT", 1, 9.0, 8.8, 8.7, 8.9),
    compiled(
        At("nightly", A100, "ViT", 1, "default"), Times(11.0, 11.0, 10.9, 11.1), Speedup(0.8, 0.75, 0.85)
    ),
    row("nightly", A100, "DETR", 1, "eager", "timeout"),
    compiled(
        At("nightly", A100, "DETR", 1, "default"), Times(18.0, 17.5, 17.0, 18.0), Speedup(1.5, 1.4, 1.6)
    ),
    # T4, stable, batch 1: ViT compiled OOM, DETR not run
    eager("stable", T4, "ViT", 1, 16.0, 15.9, 15.8, 16.0),
    row("stable", T4, "ViT", 1, "default", "oom"),
    row("stable", T4, "DETR", 1, "eager", "skipped"),
]


def write_run(folder: Path, rows: list[dict]) -> Path:
    """A run folder with one raw CSV per (build, GPU), as the runner writes them."""
    for r in rows:
        gpu = "a100" if "A100" in r["gpu_name"] else "t4"
        with RowWriter(folder / "raw" / f"{r['build']}__cuda-{gpu}.csv") as w:
            w.append(r)
    return folder


# compare's rows: one cell of an A100 run, its median and 95% CI
def cell(
    model: str, median: float | None, lo: float | None, hi: float | None, status: str = "ok", **more
) -> dict:
    return {
        "run_id": "r",
        "build": more.pop("build", "stable"),
        "device": "cuda",
        "gpu_name": "NVIDIA A100-SXM4-80GB",
        "task": "Image Classification",
        "model": model,
        "model_id": model.lower(),
        "weights": "pretrained",
        "batch_size": more.pop("batch_size", 1),
        "mode": more.pop("mode", "default"),
        "dtype": "float32",
        "scenario": "inference",
        "status": status,
        "error": "" if status == "ok" else status,
        "mean_ms": median,
        "median_ms": median,
        "ci95_low_ms": lo,
        "ci95_high_ms": hi,
        **more,
    }


def write_by_build(folder: Path, rows: list[dict]) -> Path:
    """A run folder with one raw CSV per build (`<build>__cuda.csv`)."""
    for r in rows:
        with RowWriter(folder / "raw" / f"{r['build']}__cuda.csv") as w:
            w.append(r)
    return folder


def write_one_csv(folder: Path, rows: list[dict], name: str) -> Path:
    """A run folder whose rows are all in one raw CSV, `name`."""
    with RowWriter(folder / "raw" / name) as w:
        for r in rows:
            w.append(r)
    return folder
