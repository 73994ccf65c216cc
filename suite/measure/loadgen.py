"""The serving scenario's load generator, dynamic batcher and search (standard library only, so
it runs in every image and is tested with a fake model).

Open loop on a virtual clock: request i arrives at its own time from a Poisson process (or in
bursts of `burst` requests), whatever the server is doing. The batcher (Triton's dynamic batcher):
when the model is free and a request waits, it starts a batch once `max_batch` requests wait or
the oldest has waited `max_wait_ms`; a request arriving to a full queue is dropped. A batch of n
requests runs at the smallest bucket >= n (powers of two up to max_batch, and max_batch: padded,
so a compiled model sees a few shapes, each compiled before the search). The service time is a
real, synchronized model call at that size, timed when the batch starts; the virtual clock jumps
over idle time, so a trial costs only its model calls. A request's latency = its wait in the
queue + its batch's service time.

Early stopping (LoadGen's rule, one-sided binomial): with n requests finished and k over the
target (dropped ones count as over), a rate fails at once when P(X >= k) < 1 - CONFIDENCE for X ~
Binomial(n, 1 - QUANTILE): more than 1% are over, with 99% confidence; it passes at once when
P(X <= k) < 1 - CONFIDENCE. Neither before a quarter of the trial's requests (at least
EARLY_MIN_REQUESTS): the queue starts empty, and one slow batch is many requests over at once.
Otherwise the trial sends all its requests and passes when k <= 1% of n.

The search: bisection on the rate between the highest rate that passed and the lowest that
failed (starting at half the batcher's capacity, max_batch / service time at max_batch), geometric
once both are known, until they are within RESOLUTION of each other or MAX_TRIALS are spent or
the time budget is.
"""

from __future__ import annotations

import math
import random
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

QUANTILE, CONFIDENCE = 0.99, 0.99
EARLY_MIN_REQUESTS = 100
RESOLUTION = 0.05  # the search stops when the failing rate is within 5% of the passing one
MAX_TRIALS = 12
FIRST_FRACTION = 0.5  # the first trial rate, as a fraction of the estimated capacity


def buckets(max_batch: int) -> tuple[int, ...]:
    """The batch sizes the model is called at: powers of two below max_batch, and max_batch."""
    sizes, b = [], 1
    while b < max_batch:
        sizes.append(b)
        b *= 2
    return (*sizes, max_batch)


def bucket_of(n: int, sizes: Sequence[int]) -> int:
    return next(b for b in sizes if b >= n)


def arrival_times(unit_gaps: Sequence[float], rate_per_s: float, burst: int, count: int) -> list[float]:
    """`count` arrival times (ms) at `rate_per_s` requests a second: groups of `burst` requests
    arrive together, the gaps between groups exponential (the unit gaps scaled, so every rate of a
    search sees the same random sequence)."""
    mean_gap_ms = 1000.0 * burst / rate_per_s
    times: list[float] = []
    now = 0.0
    for gap in unit_gaps:
        now += gap * mean_gap_ms
        times.extend([now] * min(burst, count - len(times)))
        if len(times) >= count:
            break
    return times


def unit_gaps(count: int, seed: int = 0) -> list[float]:
    rng = random.Random(seed)
    return [rng.expovariate(1.0) for _ in range(count)]


def _log_pmf(i: int, n: int, p: float) -> float:
    return (
        math.lgamma(n + 1)
        - math.lgamma(i + 1)
        - math.lgamma(n - i + 1)
        + i * math.log(p)
        + (n - i) * math.log1p(-p)
    )


def binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k), X ~ Binomial(n, p)."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    return min(1.0, sum(math.exp(_log_pmf(i, n, p)) for i in range(k + 1)))


def early_verdict(n: int, over: int, planned: int) -> str:
    """ "fail" or "pass" when the binomial bound decides the trial already, else ""."""
    if n < max(EARLY_MIN_REQUESTS, planned // 4) or n >= planned:
        return ""
    p, alpha = 1.0 - QUANTILE, 1.0 - CONFIDENCE
    if 1.0 - binom_cdf(over - 1, n, p) < alpha:
        return "fail"
    if binom_cdf(over, n, p) < alpha:
        return "pass"
    return ""


def percentile(samples: Sequence[float], q: float) -> float:
    """The nearest-rank percentile of `samples` (not empty)."""
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


@dataclass(frozen=True)
class Batcher:
    max_batch: int
    max_wait_ms: float
    queue: int


@dataclass
class Trial:
    """One arrival rate's outcome."""

    rate_per_s: float
    planned: int
    latencies_ms: list[float] = field(default_factory=list)
    dropped: int = 0
    over: int = 0
    batches: int = 0
    span_ms: float = 0.0  # first arrival to last completion
    stopped: str = ""  # early pass | early fail | "" (all requests sent)

    @property
    def finished(self) -> int:
        return len(self.latencies_ms) + self.dropped

    @property
    def passed(self) -> bool:
        if self.stopped:
            return self.stopped == "early pass"
        return self.over <= math.floor((1.0 - QUANTILE) * self.finished + 1e-9)

    def percentile(self, q: float) -> float | None:
        return percentile(self.latencies_ms, q) if self.latencies_ms else None

    @property
    def throughput_per_s(self) -> float | None:
        return 1000.0 * len(self.latencies_ms) / self.span_ms if self.span_ms > 0 else None

    @property
    def mean_batch(self) -> float | None:
        return len(self.latencies_ms) / self.batches if self.batches else None

    def summary(self) -> str:
        p99 = self.percentile(QUANTILE)
        how = f", {self.stopped}" if self.stopped else ""
        p99_text = "-" if p99 is None else f"{p99:.3g}"
        verdict = "pass" if self.passed else "fail"
        return f"{self.rate_per_s:.4g}/s {verdict} (p99 {p99_text} ms, n {self.finished}{how})"


def run_trial(
    serve: Callable[[int], float], batcher: Batcher, times: Sequence[float], target_ms: float
) -> Trial:
    """Send `times`' requests through the batcher to `serve` (a batch's size -> its service ms)."""
    trial = Trial(rate_per_s=0.0, planned=len(times))
    waiting: deque[float] = deque()
    nxt, free_at = 0, 0.0

    def admit_until(t: float) -> None:
        nonlocal nxt
        while nxt < len(times) and times[nxt] <= t:
            if len(waiting) >= batcher.queue:
                trial.dropped += 1
                trial.over += 1
            else:
                waiting.append(times[nxt])
            nxt += 1

    while nxt < len(times) or waiting:
        admit_until(free_at)
        if not waiting:
            free_at = times[nxt]
            admit_until(free_at)
        deadline = waiting[0] + batcher.max_wait_ms
        start = free_at
        if len(waiting) < batcher.max_batch and free_at < deadline:
            while len(waiting) < batcher.max_batch and nxt < len(times) and times[nxt] <= deadline:
                waiting.append(times[nxt])  # the queue holds fewer than max_batch: none dropped
                nxt += 1
            start = waiting[-1] if len(waiting) >= batcher.max_batch else deadline
            start = max(start, free_at)
        batch = [waiting.popleft() for _ in range(min(batcher.max_batch, len(waiting)))]
        free_at = start + serve(len(batch))
        trial.batches += 1
        for arrived in batch:
            latency = free_at - arrived
            trial.latencies_ms.append(latency)
            trial.over += latency > target_ms
        trial.span_ms = free_at - times[0]
        verdict = early_verdict(trial.finished, trial.over, trial.planned)
        if verdict:
            trial.stopped = f"early {verdict}"
            break
    return trial


@dataclass
class Search:
    """The trials of one search, in order, and the highest rate that passed (None: none did)."""

    target_ms: float
    trials: list[Trial] = field(default_factory=list)
    note: str = ""

    @property
    def best(self) -> Trial | None:
        passed = [t for t in self.trials if t.passed]
        return max(passed, key=lambda t: t.rate_per_s) if passed else None


@dataclass(frozen=True)
class Load:
    """What a search sends: requests per trial, requests per burst, the seed of the arrivals."""

    requests: int
    burst: int = 1
    seed: int = 0
    budget_s: float = 300.0  # no new trial after this many wall seconds


def search(
    serve: Callable[[int], float], batcher: Batcher, target_ms: float, load: Load, capacity_per_s: float
) -> Search:
    """The highest arrival rate whose p99 latency stays under `target_ms` (module docstring)."""
    out = Search(target_ms)
    gaps = unit_gaps(load.requests, load.seed)
    lo, hi = 0.0, math.inf
    rate = FIRST_FRACTION * capacity_per_s
    began = time.monotonic()
    while len(out.trials) < MAX_TRIALS:
        if time.monotonic() - began > load.budget_s:
            out.note = f"time budget ({load.budget_s:g} s) spent"
            break
        trial = run_trial(serve, batcher, arrival_times(gaps, rate, load.burst, load.requests), target_ms)
        trial.rate_per_s = rate
        out.trials.append(trial)
        if trial.passed:
            lo = rate
        else:
            hi = rate
        if lo > 0 and hi < math.inf and hi / lo <= 1.0 + RESOLUTION:
            break
        rate = 2.0 * lo if hi == math.inf else (math.sqrt(lo * hi) if lo > 0 else hi / 2.0)
    return out
