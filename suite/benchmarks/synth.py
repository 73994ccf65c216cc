"""Synthetic nights, for the tests' known answers and the scale benchmark: real rows of this suite
(a committed run's CSV), each night moved by noise drawn from the suite's own repeat runs
(suite.history.calibrate's pool), with steps planted at known nights, failed nights and a nightly
that changes line. Every generated run says so: its run id starts with `synthetic-`.
"""

from __future__ import annotations

import csv
import hashlib
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path

import numpy as np

from suite.results import COLUMNS, OK, format_value, raw_csv_name, read_rows, slug

# the figures a night's noise (or a planted step) moves, and the metric whose noise moves them
LATENCY = ("mean_ms", "median_ms", "p10_ms", "p90_ms", "std_ms", "min_ms", "ci95_low_ms", "ci95_high_ms")
SPEEDUP = ("speedup", "speedup_ci95_low", "speedup_ci95_high")


@dataclass(frozen=True)
class Step:
    """From `night` (its index) on, these cells' compiled calls take `factor` times as long: their
    median and paired speed-up move (eager calls are untouched); no models, modes or builds named:
    every one."""

    night: int
    factor: float
    models: tuple[str, ...] = ()
    modes: tuple[str, ...] = ()
    builds: tuple[str, ...] = ()

    def hits(self, row: Mapping[str, str], night: int) -> bool:
        return (
            night >= self.night
            and (not self.models or row["model"] in self.models)
            and (not self.modes or row["mode"] in self.modes)
            and (not self.builds or row["build"] in self.builds)
        )


@dataclass(frozen=True)
class Build:
    """A build as the generated nights show it: its name, and its torch version by night."""

    name: str
    torch: str  # "2.0.1+cu118"; a nightly: "2.15.0.dev{date}+cu130" (the night's date filled in)
    line_change: tuple[int, str] | None = None  # (night, torch pattern from that night on)
    lag: int = 0  # the nightly a night installs is this many days older than the night

    def version(self, night: int, day: date) -> str:
        pattern = self.torch
        if self.line_change is not None and night >= self.line_change[0]:
            pattern = self.line_change[1]
        return pattern.format(date=f"{day - timedelta(days=self.lag):%Y%m%d}")


def fake_sha(version: str) -> str:
    """A stand-in git SHA, one per torch version (the generated nights have no real commit)."""
    return hashlib.sha1(version.encode()).hexdigest()


@dataclass
class History:
    """What to generate: template rows, builds, GPUs, nights, and what happens on them."""

    template: list[dict[str, str]]
    builds: Sequence[Build]
    gpus: Sequence[tuple[str, str]]  # (device, gpu_name)
    start: date
    nights: int
    noise: Mapping[str, np.ndarray]  # metric -> one night's log deviations (calibrate.NoisePool)
    steps: Sequence[Step] = ()
    failed_nights: Sequence[int] = ()  # nights with no run at all
    seed: int = 0
    rng: np.random.Generator = field(init=False)

    def __post_init__(self) -> None:
        if self.nights < 1 or not self.template or not self.builds or not self.gpus:
            raise ValueError("a history needs nights, template rows, builds and GPUs")
        self.rng = np.random.default_rng(self.seed)

    def day(self, night: int) -> date:
        return self.start + timedelta(days=night)

    def rows(self, night: int, build: Build, device: str, gpu_name: str) -> list[dict[str, str]]:
        day = self.day(night)
        version = build.version(night, day)
        run_id = f"synthetic-{day:%Y%m%d}"
        out = []
        for cell, template in enumerate(self.template):
            row = {c: template.get(c, "") for c in COLUMNS}
            row.update(
                run_id=run_id,
                build=build.name,
                device=device,
                gpu_name=gpu_name,
                torch_version=version,
                torch_git=fake_sha(version),
                started_at=f"{day:%Y-%m-%d}T02:17:{cell % 60:02d}+00:00",
                health="ok" if row.get("status") == OK else "",
            )
            if row["status"] == OK:
                self._move(row, night)
            out.append(row)
        return out

    def _draw(self, metric: str) -> float:
        return float(math.exp(self.rng.choice(self.noise[metric])))

    def _move(self, row: dict[str, str], night: int) -> None:
        """One night's noise, and the planted steps, on a row's figures (CIs move with them)."""
        slow = self._draw("median_ms")
        factor = math.prod(s.factor for s in self.steps if s.hits(row, night))
        compiled = row["mode"] != "eager"
        paired = self._draw("speedup") if compiled and row.get("speedup") else 1.0
        for col in LATENCY:
            if row.get(col):
                row[col] = format_value(float(row[col]) * slow * (factor if compiled else 1.0))
        for col in SPEEDUP:
            if row.get(col):
                row[col] = format_value(float(row[col]) * paired / factor)
        if row.get("eager_median_ms") and row.get("speedup"):
            row["eager_median_ms"] = format_value(float(row["median_ms"]) * float(row["speedup"]))
        if row.get("compile_s") and float(row["compile_s"]) > 0:
            row["compile_s"] = format_value(float(row["compile_s"]) * self._draw("compile_s"))

    def write(self, root: Path) -> list[Path]:
        """One run folder per night (`<root>/synthetic-YYYYMMDD/raw/<build>__<device>.csv`), in
        night order; a failed night writes nothing."""
        runs = []
        for night in range(self.nights):
            if night in self.failed_nights:
                continue
            run_dir = root / f"synthetic-{self.day(night):%Y%m%d}"
            for build in self.builds:
                for device, gpu_name in self.gpus:
                    rows = self.rows(night, build, device, gpu_name)
                    name = raw_csv_name(build.name, device)
                    if len(self.gpus) > 1:  # two GPUs of one run: a file each
                        name = name.replace(".csv", f"__{slug(gpu_name)}.csv")
                    write_csv(run_dir / "raw" / name, rows)
            runs.append(run_dir)
        return runs


def write_csv(path: Path, rows: Sequence[Mapping[str, str]]) -> None:
    """Rows under the contract's header, in its order (what RowWriter writes, without a sync per
    row: these files are made thousands at a time)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(COLUMNS)
        writer.writerows([row.get(c, "") for c in COLUMNS] for row in rows)


def template_rows(
    csv_path: Path, models: Sequence[str] = (), modes: Sequence[str] = ()
) -> list[dict[str, str]]:
    """Real rows of a committed run to start from (the cells of `models` and `modes`, if given)."""
    rows = read_rows(csv_path).rows
    return [r for r in rows if (not models or r["model"] in models) and (not modes or r["mode"] in modes)]


def full_profile_template(csv_path: Path, batch_sizes: Sequence[int] = (1, 4, 16)) -> list[dict[str, str]]:
    """A full-profile-sized night from a smoke run's rows: every (model, mode) row of the run at
    each batch size (latency scaled by the batch size: a stand-in, the figures are not a GPU's)."""
    out = []
    for row in read_rows(csv_path).rows:
        for bs in batch_sizes:
            new = dict(row, batch_size=str(bs))
            if row["status"] == OK:
                for col in (*LATENCY, "eager_median_ms"):
                    if new.get(col):
                        new[col] = format_value(float(new[col]) * bs)
            out.append(new)
    return out
