"""The history at scale (a benchmark, not a test): `python -m suite.benchmarks.history_scale [--nights 365]
[--work DIR] [--reuse]`, or `nox -s history-scale`.

Generates a year of nights of the full profile's size (108 cells: the committed smoke run's 36
rows at batch sizes 1, 4 and 16) for three builds on two GPUs, 648 rows a night, each night moved
by noise from the suite's own repeat runs (suite.benchmarks.synth), and one night more. Then, each
step as a user or the nightly workflow runs it (`python -m suite history ...`, a new process:
imports included), timed in wall and CPU seconds (user + system, every thread: `getrusage` of
the child; on a shared machine the CPU time says what an idle one would take), with the 1-minute
load before and after:

1. the year's backfill: `history ingest` of its run folders in one call into a fresh DuckDB file:
   night by night in date order, each run's nights read, merged with what is stored and
   committed in a transaction of their own, as the nightly ingests one run a night;
2. `history report` on the year, twice: the first reader after a backfill finds every series'
   change points and keeps them in the store; the second finds them kept;
3. the night after, as the nightly workflow and then a user run it: `history ingest` of that
   night's run, `history verdict` (the night judged; every series that gained a night searched
   again, and kept), then `history report`;
4. the year ingested again into a second store one run per call in this process (`read_run` +
   `Store.ingest`, the store opened, written and checkpointed per night: the nightly's ingest
   without its process start), for comparison with the suite before the backfill existed.

Goals (docs/history.md): the year ingested in under a minute, the report in under 5 s.
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

from suite.benchmarks.synth import Build, History, full_profile_template
from suite.history.calibrate import DEFAULT_REPEATS, noise_pool
from suite.history.ingest import read_run
from suite.history.store import open_store

SMOKE = Path("results") / "2026-11-21-cpu-amd-epyc-smoke" / "raw" / "current__cpu.csv"
BUILDS = (
    Build("stable", "2.0.1+cu118"),
    Build("nightly", "2.1.0+cu118"),
    Build("nightly-current", "2.14.0.dev{date}+cu130", (180, "2.15.0.dev{date}+cu130")),
)
GPUS = (("cuda", "NVIDIA H100 80GB HBM3"), ("cuda", "NVIDIA A100-SXM4-80GB"))


def load() -> float:
    return os.getloadavg()[0]


def timed(what: str, args: list[str], extra: str = "") -> subprocess.CompletedProcess[str]:
    """Run `python -m suite history ARGS` and print its wall and CPU seconds and the load."""
    before_load = load()
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "suite", "history", *args], capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - children.ru_utime - children.ru_stime
    if proc.returncode != 0:
        print(proc.stdout, proc.stderr, file=sys.stderr, sep="\n")
        raise SystemExit(f"`python -m suite history {args[0]} ...` failed (exit {proc.returncode})")
    print(
        f"{what}: {wall:.1f} s wall, {cpu:.1f} s CPU{extra}; 1-minute load {before_load:.1f} before, "
        f"{load():.1f} after",
        flush=True,
    )
    return proc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.benchmarks.history_scale", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument(
        "--work", type=Path, default=None, help="where the generated runs and stores go (default: a temp dir)"
    )
    parser.add_argument("--reuse", action="store_true", help="the work folder's generated runs, if there")
    parser.add_argument("--store", default=None, help="the store (path or URL; default: a fresh DuckDB file)")
    parser.add_argument("--no-per-night", action="store_true", help="leave out step 4")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="history-scale-"))
    runs_dir, per_night = work / "runs", work / "per-night.duckdb"
    url = args.store or str(work / "history.duckdb")
    name = Path(url).name if "://" not in url else url
    for path in (per_night, *([Path(url)] if args.store is None else [])):
        for leftover in (path, path.with_name(path.name + ".wal")):
            leftover.unlink(missing_ok=True)
    load0 = load()
    started = time.perf_counter()
    template = full_profile_template(SMOKE)
    runs = sorted(runs_dir.glob("synthetic-*")) if args.reuse and runs_dir.is_dir() else []
    if len(runs) != args.nights + 1:
        shutil.rmtree(runs_dir, ignore_errors=True)
        noise = noise_pool(DEFAULT_REPEATS).deviations
        history = History(template, BUILDS, GPUS, date(2026, 1, 1), args.nights + 1, noise)
        runs = history.write(runs_dir)
    year, after = runs[:-1], runs[-1]
    size = len(BUILDS) * len(GPUS) * len(template)
    print(
        f"{len(year)} nights x {len(BUILDS)} builds x {len(GPUS)} GPUs x {len(template)} cells = "
        f"{len(year) * size} rows, and a night after: generated in {time.perf_counter() - started:.0f} s "
        f"({runs_dir}); {os.cpu_count()} cores, 1-minute load {load0:.1f}",
        flush=True,
    )
    timed(
        f"1. `python -m suite history ingest --store {name} RUN...` of {len(year)} run folders "
        f"({len(year) * size} rows), night by night",
        ["ingest", "--store", url, *map(str, year)],
    )
    for which in ("first (finds and keeps every series' change points)", "again (finds them kept)"):
        timed(f"2. `python -m suite history report --store {name}`, {which}", ["report", "--store", url])
    timed(f"3. the night after: `python -m suite history ingest --store {name} {after.name}`", [
        "ingest", "--store", url, str(after),
    ])  # fmt: skip
    timed(f"   `python -m suite history verdict {after.name} --store {name}`", [
        "verdict", str(after), "--store", url, "-o", os.devnull,
    ])  # fmt: skip
    proc = timed(f"   `python -m suite history report --store {name}`", ["report", "--store", url])
    print(f"   (the report: {proc.stdout.splitlines()[2] if len(proc.stdout.splitlines()) > 2 else ''})")
    if args.no_per_night:
        print(f"(the work folder: {work})")
        return 0
    target = open_store(str(per_night))
    load1, cpu, total, slowest, rows = load(), time.process_time(), 0.0, (0.0, ""), 0
    for run in year:
        t = time.perf_counter()
        results = target.ingest(read_run([run]).nights)
        took = time.perf_counter() - t
        total += took
        rows += sum(r.added for r in results)
        slowest = max(slowest, (took, run.name))
    cpu = time.process_time() - cpu
    print(
        f"4. one run per call in this process (`read_run` + `Store.ingest`, {per_night.name}): {len(year)} "
        f"nights, {rows} rows in {total:.1f} s wall, {cpu:.1f} s CPU ({total / len(year) * 1000:.0f} ms a "
        f"night, slowest {slowest[0] * 1000:.0f} ms: {slowest[1]}); 1-minute load {load1:.1f} before, "
        f"{load():.1f} after",
        flush=True,
    )
    print(f"(the work folder: {work})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
