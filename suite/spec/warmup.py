"""The warm-up policy: how many untimed calls a function gets before it is timed.

One rule for every reader: the worker's timing loop runs these calls (suite.measure.timing),
the crosscheck warms its functions by it, and the cost model counts them (suite.spec.cost).
It lives in the spec layer, below both the child side and the cost model, so neither has to
re-derive it; the CSV's `warmup` column reports the figure the loop ran.
"""

from __future__ import annotations

# An eager function is called at least once before it is timed (lazy initialization, the
# allocator's first blocks, cuDNN's algorithm search).
EAGER_MIN_CALLS = 1
# CUDA-graph trees warm up on the 1st call after compiling, record on the 2nd, replay from the
# 3rd: a compiled function gets at least 3 warm-up calls before anything is timed.
COMPILED_MIN_CALLS = 3


def warmup_calls(setting: int, compiled: bool) -> int:
    """Warm-up calls of one function: the cell's `warmup` setting, but at least the minimum
    its kind needs (a compiled function: counted after the first call, which compiles it)."""
    return max(COMPILED_MIN_CALLS if compiled else EAGER_MIN_CALLS, setting)


# The timing loop's blocks (suite.measure.timing.TimingLoop.until): per function and round, this
# many synchronized calls (latency) and one block of as many back-to-back calls (throughput),
# plus a switch call in every other round where two functions alternate (the cost model,
# suite.spec.cost, counts them all: calls_made).
BLOCK_CALLS = 5
# After a switch call, a function is called, untimed, until this many milliseconds have passed
# since the switch call began (TimingLoop.settle; at most SETTLE_MAX_CALLS calls). Measured on
# this project's 2-vCPU VM (torch 2.13, 2026-11-27): after a block of eager calls, a shrunk
# compiled ResNet's or ViT's next calls ran 30-36% slower than back to back and took ~40 calls
# (~40 ms) to recover; after 25 ms of settling they were within 1% of back to back. Eager
# recovered at once.
SETTLE_MS = 25.0
SETTLE_MAX_CALLS = 2000


def settle_seconds(paired: bool, timed_calls: int) -> float:
    """Seconds a cell's timing spends settling where two functions alternate: a switch a round
    (a round per BLOCK_CALLS latency calls, the order reversing each round) and one more in the
    first; none for one function."""
    if not paired:
        return 0.0
    return (timed_calls / BLOCK_CALLS + 1) * SETTLE_MS / 1e3


def calls_made(latency_calls: int, paired: bool) -> int:
    """Timed calls one function makes for `latency_calls` latency calls (TimingLoop.until): its
    latency calls, a throughput block of as many a round (BLOCK_CALLS each), and where two
    functions alternate a switch call every other round. A GPU row of 100 iterations says
    `calls` 421 for its two functions: 2 x (100 + 100 + 10) + 1."""
    rounds = -(-latency_calls // BLOCK_CALLS)
    return latency_calls + rounds * min(BLOCK_CALLS, latency_calls) + (rounds // 2 if paired else 0)
