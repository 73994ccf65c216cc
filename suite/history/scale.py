"""The history at scale (a benchmark, not a test): `python -m suite.history.scale [--nights 365]
[--store PATH|URL] [--work DIR]`, or `nox -s history-scale`.

Generates a year of nights of the full profile's size (108 cells: the committed smoke run's 36
rows at batch sizes 1, 4 and 16) for three builds on two GPUs, 648 rows a night, each night moved
by noise from the suite's own repeat runs (suite.history.synth); then ingests them night by night
into a fresh store, one `read_run` + `ingest` call per night in this process (as the nightly
workflow ingests one run a night), and prints the total (wall and CPU seconds: on a shared
machine the CPU time says what an idle one would take) and the slowest night; then times `python -m
suite history report` on the full store, as a user runs it (a new process: imports included), and
the same report computed in this process. Goals (issue 25): ingest < 60 s in all, report < 5 s.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

from suite.history.calibrate import DEFAULT_REPEATS, noise_pool
from suite.history.changes import Rule
from suite.history.ingest import read_run
from suite.history.report import render
from suite.history.series import all_changes, points
from suite.history.store import open_store
from suite.history.synth import Build, History, full_profile_template
from suite.history.trends import trends

SMOKE = Path("results") / "2026-11-21-cpu-amd-epyc-smoke" / "raw" / "current__cpu.csv"
BUILDS = (
    Build("stable", "2.0.1+cu118"),
    Build("nightly", "2.1.0+cu118"),
    Build("nightly-current", "2.14.0.dev{date}+cu130", (180, "2.15.0.dev{date}+cu130")),
)
GPUS = (("cuda", "NVIDIA H100 80GB HBM3"), ("cuda", "NVIDIA A100-SXM4-80GB"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.history.scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--store", default=None, help="default: a DuckDB file in the work folder")
    parser.add_argument(
        "--work", type=Path, default=None, help="where the generated runs go (default: a temp dir)"
    )
    parser.add_argument("--reuse", action="store_true", help="the work folder's generated runs, if there")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="history-scale-"))
    runs_dir, store_url = work / "runs", args.store or str(work / "history.duckdb")
    if args.store is None:
        Path(store_url).unlink(missing_ok=True)
    load0 = os.getloadavg()[0]
    started = time.perf_counter()
    template = full_profile_template(SMOKE)
    runs = sorted(runs_dir.glob("synthetic-*")) if args.reuse and runs_dir.is_dir() else []
    if len(runs) != args.nights:
        shutil.rmtree(runs_dir, ignore_errors=True)
        noise = noise_pool(DEFAULT_REPEATS).deviations
        runs = History(template, BUILDS, GPUS, date(2026, 1, 1), args.nights, noise).write(runs_dir)
    print(
        f"generated {len(runs)} nights x {len(BUILDS)} builds x {len(GPUS)} GPUs x {len(template)} cells"
        f" = {len(runs) * len(BUILDS) * len(GPUS) * len(template)} rows"
        f" in {time.perf_counter() - started:.0f} s ({runs_dir})",
        flush=True,
    )
    store = open_store(store_url)
    load1 = os.getloadavg()[0]
    total, slowest, rows = 0.0, (0.0, ""), 0
    cpu = time.process_time()
    for run in runs:
        t = time.perf_counter()
        results = store.ingest(read_run([run]).nights)
        took = time.perf_counter() - t
        total += took
        rows += sum(r.added for r in results)
        slowest = max(slowest, (took, run.name))
    cpu = time.process_time() - cpu
    print(
        f"ingest, night by night: {len(runs)} nights, {rows} rows in {total:.1f} s wall, {cpu:.1f} s CPU "
        f"({total / len(runs) * 1000:.0f} ms a night, slowest {slowest[0] * 1000:.0f} ms: {slowest[1]}); "
        f"1-minute load {load1:.1f} before, {os.getloadavg()[0]:.1f} after ({os.cpu_count()} cores)",
        flush=True,
    )
    load2 = os.getloadavg()[0]
    t = time.perf_counter()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [sys.executable, "-m", "suite", "history", "report", "--store", store_url, "-o", os.devnull]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    cli = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cli_cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return 1
    t, cpu = time.perf_counter(), time.process_time()
    con = store.connect()
    pts = points(con)
    con.close()
    changes = all_changes(pts, Rule())
    series = trends(pts, changes)
    text = render(store_url, pts, changes, series, Rule())
    inside, inside_cpu = time.perf_counter() - t, time.process_time() - cpu
    print(
        f"history report: {cli:.1f} s wall, {cli_cpu:.1f} s CPU as `python -m suite history report` (a new "
        f"process, imports included); {inside:.1f} s wall, {inside_cpu:.1f} s CPU in this process; "
        f"{len(pts)} points, {len(series)} series, "
        f"{len(changes)} change points, {len(text) // 1024} KiB of Markdown; 1-minute load {load2:.1f} "
        f"before, {os.getloadavg()[0]:.1f} after",
        flush=True,
    )
    print(f"(load when generating: {load0:.1f}; the work folder: {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
