"""An estimate of how long one cell takes, in seconds: for balancing shards and for the ETA.

This is a rough model of what the worker does, not a measurement. The constants are of
the order an A100-class GPU shows for the guide's models (a cold `torch.compile` takes
tens of seconds, max-autotune several minutes); on another device every cell scales by
roughly the same factor, so the *ratios* between cells, which are all that sharding and
the runner's ETA use, still hold. Only the cell's matrix data is read (never the running
device), so every machine computes the same figures and therefore the same shards.

    seconds = startup + load + compile + forwards * seconds per forward
"""

from __future__ import annotations

from suite.spec.model import Cell
from suite.spec.warmup import warmup_calls

STARTUP_S = 15.0  # child process, torch + transformers imports, model build, inputs
LOAD_S_PER_M_PARAMS = 0.02  # weights read from the cache and moved to the device
UNKNOWN_PARAMS_M = 100.0  # a model without `params_m` (custom configs): a ViT-base-sized guess
SHRUNK_PARAMS_M = 1.0  # smoke models are shrunk to a few layers of width 64

FORWARD_OVERHEAD_S = 0.004  # kernel launches of one forward, whatever its size
# A training step (forward + loss + backward + optimizer) costs about three forwards, and its
# compile about twice a forward's (AOTAutograd compiles the backward graph as well).
TRAIN_STEP_FORWARDS = 3.0
TRAIN_COMPILE_FACTOR = 2.0
FORWARD_S_PER_M_PARAMS_IMAGE = 2e-5  # compute: ViT-base (86 M) x 16 images ~ 28 ms

COMPILE_BASE_S = 30.0  # a cold compile of the smallest graph (dynamo + inductor + triton)
COMPILE_S_PER_M_PARAMS = 0.3  # bigger models have more layers, so bigger graphs
# Compile cost of each mode relative to `default`; a mode not named here counts as default.
COMPILE_FACTOR: dict[str, float] = {
    "eager": 0.0,
    "default": 1.0,
    "reduce-overhead": 1.2,  # + CUDA-graph recording
    "max-autotune": 6.0,  # + benchmarking kernel choices for every matmul and conv
    "max-autotune-no-cudagraphs": 5.5,
}


def params_m(cell: Cell) -> float:
    """Model size in millions of parameters, as far as the matrix knows it."""
    if cell.settings.shrink:
        return SHRUNK_PARAMS_M
    return cell.model.published_params_m or UNKNOWN_PARAMS_M


def forwards(cell: Cell) -> int:
    """Forward calls the worker makes (suite.measure.scenarios.base.measure; a train cell
    makes as many steps): eager cells warm up and time one function; compiled cells warm up
    both (the warm-up policy, suite.spec.warmup) and time both, interleaved."""
    s = cell.settings
    eager_warmup = warmup_calls(s.warmup, compiled=False)
    if cell.mode == "eager":
        return eager_warmup + s.iterations
    compiled_warmup = warmup_calls(s.warmup, compiled=True)
    return eager_warmup + compiled_warmup + 2 * s.iterations + 4  # + eager, first compiled, 2 accuracy


def estimate_seconds(cell: Cell) -> float:
    """Expected wall time of one cell (an estimate; see the module docstring)."""
    size = params_m(cell)
    forward_s = FORWARD_OVERHEAD_S + FORWARD_S_PER_M_PARAMS_IMAGE * size * cell.batch_size
    compile_s = COMPILE_FACTOR.get(cell.mode, 1.0) * (COMPILE_BASE_S + COMPILE_S_PER_M_PARAMS * size)
    if cell.scenario == "train":
        forward_s *= TRAIN_STEP_FORWARDS
        compile_s *= TRAIN_COMPILE_FACTOR
    return STARTUP_S + LOAD_S_PER_M_PARAMS * size + compile_s + forwards(cell) * forward_s


def format_duration(seconds: float) -> str:
    """h:mm:ss, for estimates and elapsed times alike."""
    seconds = round(max(0.0, seconds))
    return f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
