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
# plus a switch call in every other round where two functions alternate. Here for the same
# reason as the warm-up: the loop runs them and the cost model counts them.
BLOCK_CALLS = 5


def loop_calls(latency_calls: int, functions: int) -> int:
    """Calls the blocked loop makes over all `functions` for `latency_calls` latency calls each:
    those, a throughput block per function and round, and the switch calls (where two or more
    functions alternate: every function in the first round, all but the round's first later)."""
    if latency_calls <= 0 or functions <= 0:
        return 0
    rounds = -(-latency_calls // BLOCK_CALLS)
    switches = functions + (rounds - 1) * (functions - 1) if functions > 1 else 0
    return functions * (latency_calls + rounds * min(BLOCK_CALLS, latency_calls)) + switches
