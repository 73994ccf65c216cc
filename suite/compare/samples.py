"""A cell judged from its kept samples: the ratio of the two runs' pooled medians, new / base,
with a bootstrap interval from the per-call samples (as pyperf compares kept values, not
summaries).

Where both runs kept their samples (suite.results.samples, the `.samples.jsonl` beside each raw
CSV), each run's median is resampled as its CI was made (suite.stats.hierarchical_median_ci):
processes drawn with replacement, then calls within each drawn process; the two runs
independently, `RESAMPLES` times, with a fixed seed (the same input, the same interval). The
percentile interval of new / base is the sampling part of the rule; the between-run noise and the
runs' noise floor are added to it by suite.compare.rule exactly as for the medians' CIs, so a
cell's verdict from its samples differs only where the two CIs, composed conservatively
([new low / base high, new high / base low]), were wider than the samples show. Host side
(numpy).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from suite.results import KEY_COLUMNS
from suite.stats import z_of

RESAMPLES = 2000
SEED = 0
CHUNK_VALUES = 4_000_000  # values drawn at once (memory: a few tens of MB)
Z95 = z_of(0.95)

# a row's samples: (its resume key as the CSV writes it, its run id) -> one array per process
SampleKey = tuple[tuple[str, ...], str]
Groups = dict[SampleKey, list[np.ndarray]]


@dataclass(frozen=True)
class Sampled:
    """new / base of the pooled medians, its 95% bootstrap interval and the calls behind it."""

    ratio: float
    low: float
    high: float
    base_calls: int
    new_calls: int

    @property
    def log_se(self) -> float:
        """The log-scale standard error the interval implies (its half-width over 1.96)."""
        return (math.log(self.high) - math.log(self.low)) / (2 * Z95)


def groups_of(calls: pd.DataFrame) -> Groups:
    """A samples table (suite.report.samples.read_beside) as each row's own series per process:
    the compiled calls of a compiled row, the eager calls of an eager row."""
    if calls.empty:
        return {}
    own = calls[(calls["series"] == "eager") == (calls["mode"] == "eager")]
    out: Groups = {}
    for (*key, run_id, _process), rows in own.groupby([*KEY_COLUMNS, "run_id", "process"], sort=True):
        out.setdefault((tuple(str(k) for k in key), str(run_id)), []).append(rows["ms"].to_numpy(float))
    return out


def _medians(groups: Sequence[np.ndarray], rng: np.random.Generator, count: int) -> np.ndarray:
    """`count` bootstrap medians of the pooled calls: processes drawn with replacement, then
    calls within each drawn process (one process: calls only)."""
    k = len(groups)
    sizes = np.array([len(g) for g in groups])
    width = int(sizes.max())
    padded = np.full((k, width), np.nan)
    for i, g in enumerate(groups):
        padded[i, : len(g)] = g
    out = []
    step = max(1, CHUNK_VALUES // (k * width))
    for start in range(0, count, step):
        b = min(step, count - start)
        chosen = rng.integers(0, k, size=(b, k)) if k > 1 else np.zeros((b, 1), dtype=int)
        n = sizes[chosen][:, :, None]
        idx = (rng.random((b, k, width)) * n).astype(int)
        values = padded[chosen[:, :, None], idx]
        values = np.where(np.arange(width)[None, None, :] < n, values, np.nan).reshape(b, -1)
        out.append(np.nanmedian(values, axis=1))
    return np.concatenate(out)


def sampled_ratio(base: Sequence[np.ndarray], new: Sequence[np.ndarray]) -> Sampled | None:
    """new / base of the pooled medians with its 95% percentile-bootstrap interval; None without
    samples on either side."""
    base = [g for g in base if len(g)]
    new = [g for g in new if len(g)]
    if not base or not new:
        return None
    rng = np.random.default_rng(SEED)
    b, n = _medians(base, rng, RESAMPLES), _medians(new, rng, RESAMPLES)
    ratios = n / b
    low, high = np.quantile(ratios, [0.025, 0.975])
    ratio = float(np.median(np.concatenate(new)) / np.median(np.concatenate(base)))
    calls = sum(len(g) for g in base), sum(len(g) for g in new)
    return Sampled(ratio, float(low), float(high), *calls)
