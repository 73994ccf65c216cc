"""How often the change-point rule is wrong, measured on this suite's own noise.

The noise is real: the night-to-night spread of each figure (median latency, paired speed-up,
compile time) between runs of the same cells on the same build and machine, as `suite repeat`
makes them (folders of `rep-<i>/` runs). Each pair of repetitions of a cell gives one log ratio;
divided by sqrt(2) it is one night's deviation from the cell's level (the difference of two
nights has twice the variance of one), taken with both signs. An A/A history draws its nights
from that pool, independently; a history with a planted step multiplies every night from a known
one on by 1 + step. The rule (suite.history.changes) is run on each, and the rates counted:

- false alarms: A/A histories with any confirmed change (the new level held `confirm_nights`);
- detection: histories whose planted step is found at its night (and within two nights of it),
  in the right direction, with the new level held `nights after` nights.

Independent draws leave out what real nights may have besides: a drift over weeks, a machine
change. The noise pool's own figures (count, spread) are printed beside the rates.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from suite.compare.settings import differences, settings_of
from suite.errors import UsageError
from suite.history.changes import Rule, detect
from suite.report.load import load
from suite.results import OK

METRICS = ("median_ms", "speedup", "compile_s")
TRUST = Path("results") / "2026-11-24-cpu-intel-xeon-trust"
DEFAULT_REPEATS = tuple(TRUST / name for name in ("repeat-steady", "repeat-system", "gate/aa", "gate/slowed"))
HEALTHY = ("", "ok")
CELL = ("task", "model", "batch_size", "mode", "dtype", "scenario", "variant", "weights", "dynamic")


@dataclass(frozen=True)
class NoisePool:
    """One night's log deviation from its cell's level, per metric, from repeat runs."""

    deviations: dict[str, np.ndarray]
    sources: tuple[str, ...]
    pairs: int

    def __post_init__(self) -> None:
        for metric, values in self.deviations.items():
            if len(values) < 2:
                raise UsageError(metric, "the repeat runs give no noise for this figure (fewer than 2 pairs)")

    def spread(self, metric: str) -> str:
        d = self.deviations[metric]
        q95, q99 = np.quantile(np.abs(d), [0.95, 0.99])
        return (
            f"{len(d)} deviations, sd {np.std(d):.2%}, |d| 95th percentile {q95:.2%}, "
            f"99th {q99:.2%}, largest {np.max(np.abs(d)):.2%}"
        )


def repetitions(folder: Path) -> list[Path]:
    """The runs of a `suite repeat` folder (rep-1, rep-2, ...), or the folder's own run folders."""
    reps = sorted((p for p in folder.glob("rep-*") if (p / "raw").is_dir()), key=lambda p: p.name)
    if len(reps) < 2:
        raise UsageError(
            str(folder), "needs two or more repetitions (rep-<i>/raw/*.csv, as `suite repeat` writes)"
        )
    return reps


def _alike(both: pd.DataFrame) -> np.ndarray:
    """Which merged pairs of rows were measured under the same settings (suite.compare.settings):
    a pair that differs in one is no sample of the noise, as the gate judges no such pair."""
    names = [c for c in both.columns if c.endswith("_a")]
    records = both.to_dict("records")
    return np.array(
        [
            not differences(
                settings_of({n[:-2]: r[n] for n in names}),
                settings_of({n[:-2]: r[n[:-2] + "_b"] for n in names}),
            )
            for r in records
        ],
        dtype=bool,
    )


def noise_pool(folders: Sequence[Path]) -> NoisePool:
    """Every pair of repetitions of every cell, ok in both and measured under the same settings
    (and, for latency and compile time, timed on a healthy machine in both: the gate judges no
    other)."""
    found: dict[str, list[float]] = {m: [] for m in METRICS}
    pairs = 0
    for folder in folders:
        frames = [load([rep]).frame for rep in repetitions(folder)]
        for a, b in itertools.combinations(frames, 2):
            both = a.merge(b, on=[*CELL, "build", "gpu_name"], suffixes=("_a", "_b"))
            both = both[(both["status_a"] == OK) & (both["status_b"] == OK)]
            both = both[_alike(both)] if len(both) else both
            pairs += 1
            for metric in METRICS:
                x, y = both[f"{metric}_a"].to_numpy(float), both[f"{metric}_b"].to_numpy(float)
                keep = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
                if metric != "speedup":
                    keep &= (
                        both["health_a"].isin(HEALTHY).to_numpy() & both["health_b"].isin(HEALTHY).to_numpy()
                    )
                d = np.log(x[keep] / y[keep]) / math.sqrt(2)
                found[metric] += [*d, *(-d)]
    return NoisePool({m: np.asarray(v) for m, v in found.items()}, tuple(map(str, folders)), pairs)


def history(
    pool: np.ndarray, nights: int, rng: np.random.Generator, step: float = 0.0, at: int = 0
) -> np.ndarray:
    """One synthetic series: level 1, each night's noise drawn from the pool, x (1 + step) from
    night `at` on."""
    values = np.exp(rng.choice(pool, size=nights, replace=True))
    if step:
        values[at:] *= 1 + step
    return values


@dataclass
class Rates:
    histories: int = 0
    alarms: int = 0  # histories with any change (A/A: false alarms)
    exact: int = 0  # the planted step found at its night, right direction
    near: int = 0  # within two nights of it
    extra: int = 0  # histories with a step where a change was found elsewhere too
    sizes: list[float] = field(default_factory=list)

    def rate(self, n: int) -> str:
        return f"{n}/{self.histories} ({n / self.histories:.1%})" if self.histories else "-"


def aa_rates(pool: np.ndarray, nights: int, count: int, rule: Rule, seed: int = 0) -> Rates:
    rng = np.random.default_rng(seed)
    out = Rates()
    for _ in range(count):
        out.histories += 1
        out.alarms += any(s.confirmed(rule) for s in detect(history(pool, nights, rng), rule))
    return out


def step_rates(
    pool: np.ndarray, before: int, after: int, step: float, count: int, rule: Rule, seed: int = 0
) -> Rates:
    rng = np.random.default_rng(seed)
    out = Rates()
    for _ in range(count):
        out.histories += 1
        shifts = [
            s for s in detect(history(pool, before + after, rng, step, before), rule) if s.confirmed(rule)
        ]
        right = [s for s in shifts if (s.change > 0) == (step > 0)]
        out.alarms += bool(shifts)
        hit = next((s for s in right if s.at == before), None)
        near = next((s for s in right if abs(s.at - before) <= 2), None)
        out.exact += hit is not None
        out.near += near is not None
        out.extra += any(abs(s.at - before) > 2 for s in shifts)
        if near is not None:
            out.sizes.append(near.change)
    return out


def nightly_aa_rates(
    pool: np.ndarray, nights: int, count: int, rule: Rule, recent: int, seed: int = 0
) -> Rates:
    """A/A histories as the nightly workflow sees them: the rule run after every night on the
    nights so far, an alarm whenever it finds a change among the last `recent` nights (what
    would open an issue). Counts the histories that ever alarmed."""
    rng = np.random.default_rng(seed)
    out = Rates()
    for _ in range(count):
        values = history(pool, nights, rng)
        out.histories += 1
        out.alarms += any(
            s.at >= t - recent for t in range(rule.min_nights, nights + 1) for s in detect(values[:t], rule)
        )
    return out


def nightly_step_rates(
    pool: np.ndarray, before: int, after: int, step: float, count: int, rule: Rule, recent: int, seed: int = 0
) -> tuple[Rates, list[int]]:
    """Steps as the nightly workflow meets them: the rule run after each night from the step on;
    the first night a confirmed change in the step's direction is found among the last `recent`
    nights opens the issue. Returns the rates (exact: at the step's night) and the nights it took."""
    rng = np.random.default_rng(seed)
    out, delays = Rates(), []
    for _ in range(count):
        values = history(pool, before + after, rng, step, before)
        out.histories += 1
        for t in range(before + rule.min_segment, before + after + 1):
            found = [
                s
                for s in detect(values[:t], rule)
                if s.at >= t - recent and s.confirmed(rule) and (s.change > 0) == (step > 0)
            ]
            if found:
                out.alarms += 1
                out.exact += any(s.at == before for s in found)
                out.near += any(abs(s.at - before) <= 2 for s in found)
                delays.append(t - before)
                break
    return out, delays


STEPS = (0.03, 0.05, 0.10)
DIRECTION = {"median_ms": 1, "speedup": -1, "compile_s": 1}  # a regression's sign per figure
NAMES = {"median_ms": "median latency", "speedup": "paired speed-up", "compile_s": "compile time"}


def report(
    folders: Sequence[Path], count: int, seed: int = 0, rule: Rule | None = None, recent: int = 14
) -> str:
    """The rates, as Markdown (docs/history.md quotes them with the command and the load)."""
    import os
    import time

    rule = rule or Rule()
    started = time.monotonic()
    load_before = os.getloadavg()[0]
    pool = noise_pool(folders)
    out = [
        "# The change-point rule's error rates, on this suite's own noise",
        "",
        f"Noise: {pool.pairs} pairs of repetitions in {', '.join(pool.sources)}; one night's log deviation "
        "from its cell's level (pair's log ratio / sqrt 2, both signs):",
        "",
    ]
    out += [f"- {NAMES[m]}: {pool.spread(m)}" for m in METRICS]
    out += [
        "",
        f"Rule: {rule}. {count} histories per case, seed {seed}; nights drawn independently from the pool.",
        "",
        "## False alarms (A/A: the same level every night)",
        "",
        "| figure | 60 nights: histories with a change | 365 "
        "nights | nightly use, 120 nights: histories that "
        f"would have opened an issue (a confirmed change among the last {recent} nights, after any night) |",
        "|---|---|---|---|",
    ]
    for m in METRICS:
        p = pool.deviations[m]
        a60 = aa_rates(p, 60, count, rule, seed)
        a365 = aa_rates(p, 365, max(10, count // 4), rule, seed + 1)
        night = nightly_aa_rates(p, 120, count, rule, recent, seed + 2)
        out.append(
            f"| {NAMES[m]} | {a60.rate(a60.alarms)} | {a365.rate(a365.alarms)} | {night.rate(night.alarms)} |"
        )
    out += [
        "",
        "## Detection: a step planted at night 31 of 60 (30 nights after it)",
        "",
        "| figure | step | found at its night | within 2 nights "
        "| another change found too | size found (median) |",
        "|---|---|---|---|---|---|",
    ]
    for m in METRICS:
        for step in STEPS:
            r = step_rates(pool.deviations[m], 30, 30, DIRECTION[m] * step, count, rule, seed + 3)
            size = f"{np.median(r.sizes):+.1%}" if r.sizes else "—"
            out.append(
                f"| {NAMES[m]} | {DIRECTION[m] * step:+.0%} | {r.rate(r.exact)} | {r.rate(r.near)} | "
                f"{r.rate(r.extra)} | {size} |"
            )
    out += [
        "",
        "## How soon the nightly workflow tells: the same steps "
        "after 30 good nights, the rule run after every night",
        "",
        "| figure | step | issue opened within 30 nights | at "
        "the step's night | nights it took (median, max) |",
        "|---|---|---|---|---|",
    ]
    for m in METRICS:
        for step in STEPS:
            r, delays = nightly_step_rates(
                pool.deviations[m], 30, 30, DIRECTION[m] * step, count, rule, recent, seed + 4
            )
            took = f"{int(np.median(delays))}, {max(delays)}" if delays else "—"
            out.append(
                f"| {NAMES[m]} | {DIRECTION[m] * step:+.0%} | "
                f"{r.rate(r.alarms)} | {r.rate(r.exact)} | {took} |"
            )
    out += [
        "",
        f"Made by `python -m suite history calibrate --histories {count} --seed {seed}` in "
        f"{time.monotonic() - started:.0f} s; 1-minute load "
        f"{load_before:.1f} before, {os.getloadavg()[0]:.1f} after "
        f"({os.cpu_count()} cores).",
    ]
    return "\n".join(out) + "\n"
