"""The serving section: the highest Poisson arrival rate whose p99 latency, queueing included,
met the target behind a dynamic batcher, and that trial's figures (`serving` rows,
suite.measure.scenarios.serving). Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Section, counted, extra, extra_timed

SECTION = Section(
    name="serving",
    title="Serving",
    about="`serving` rows ([serving.md](serving.md#columns)); the worker's log has every trial: rate, "
    "verdict, p99, requests, how it stopped.",
    columns=(
        extra_timed(
            "serving_target_ms", "ms", "the p99 target the search used (set, or 5 x eager batch-1 p99)"
        ),
        extra_timed(
            "serving_rate_per_s",
            "/s",
            "the highest arrival rate (requests = images a second) that met it; 0: none did",
            positive=False,
        ),
        extra_timed(
            "serving_throughput_per_s",
            "/s",
            "images served a second in that trial (served / first arrival to last completion)",
        ),
        extra_timed(
            "serving_p50_ms", "ms", "latency at that rate, queueing included (served requests): median"
        ),
        extra_timed("serving_p90_ms", "ms", "latency at that rate, queueing included: p90"),
        extra_timed("serving_p99_ms", "ms", "latency at that rate, queueing included: p99"),
        counted("serving_dropped", "requests dropped (queue full) at that rate"),
        counted("serving_requests", "requests that trial finished"),
        extra_timed("serving_mean_batch", "", "the mean batch the batcher formed at that rate"),
        counted("serving_trials", "arrival rates the search tried"),
        extra(
            "serving_note",
            "the target's origin, the batcher, the rate that failed above it, graphs compiled for the "
            "batch sizes, a spent time budget",
        ),
        extra_timed(
            "serving_floor_ms",
            "ms",
            "a lone request's p99: `max_wait_ms` + the served function's batch-1 p99 (the lowest p99 any "
            "rate can reach)",
        ),
        extra_timed(
            "serving_lowest_rate_per_s",
            "/s",
            "only where no rate met the target: the lowest rate tried",
            positive=False,
        ),
        extra_timed(
            "serving_lowest_p99_ms", "ms", "only where no rate met the target: the lowest rate's p99"
        ),
        extra_timed(
            "serving_failed_rate_per_s",
            "/s",
            "the lowest rate above `serving_rate_per_s` that failed; empty where none above it was tried "
            "(the time budget ran out first): the rate is then a lower bound, `>=` in the table",
        ),
    ),
)
