"""The matrix's vocabularies: tasks, modes, dtypes (autocast's among them), scenarios, build
kinds and which kind is compared with which, caches, allocators, devices, stop rules. Plain
names only (standard library, no imports): every layer and the code inside the containers
use them.
"""

from __future__ import annotations

TASKS: dict[str, str] = {
    # task (as in the guide's tables) -> default auto class
    "Image Classification": "AutoModelForImageClassification",
    "Image Segmentation": "AutoModelForSemanticSegmentation",
    "Object Detection": "AutoModelForObjectDetection",
    # a bare backbone named with --models (suite.spec.outside): its features
    "Image Feature Extraction": "AutoModel",
}
FEATURES = "Image Feature Extraction"
MODES: tuple[str, ...] = (
    "eager",
    "default",
    "reduce-overhead",
    "max-autotune",
    "max-autotune-no-cudagraphs",
    # torch.export + AOTInductor's package, loaded back in the timing process (suite.measure.aot)
    "aot-inductor",
)
# autocast-<dtype> (docs/precision.md): float32 weights and inputs, the forward under
# torch.autocast(device, dtype=<dtype>), so matmuls and convolutions run in <dtype> and the rest
# in float32. A value of `dtype`, not a column of its own: the CSV's key stays one column and
# every table that groups by dtype keeps doing so. Precision cells only (Cell's rule below).
AUTOCAST_PREFIX = "autocast-"
AUTOCAST_DTYPES: tuple[str, ...] = ("autocast-float16", "autocast-bfloat16")
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", *AUTOCAST_DTYPES)
WEIGHTS: tuple[str, ...] = ("pretrained", "random")
DYNAMIC_BATCH = "dynamic-batch"  # one process serves several batch sizes in turn: a row per size
# `precision` is inference plus the task's answer judged against float32 eager
# (suite.measure.parity); `pipeline` times a whole request: preprocess, forward, post-process
PRECISION, PIPELINE = "precision", "pipeline"
# `serving` searches the highest Poisson arrival rate whose p99 latency (queueing
# included) stays under a target, in front of a dynamic batcher (suite.measure.loadgen)
SERVING = "serving"
# ... and `mixed-resolution` serves a fixed sequence of image sizes in one process under a
# `dynamic` setting (suite.measure.scenarios.mixed_resolution): one row per setting
MIXED_RESOLUTION = "mixed-resolution"
SCENARIOS: tuple[str, ...] = (
    "inference",
    "train",
    DYNAMIC_BATCH,
    PRECISION,
    PIPELINE,
    SERVING,
    MIXED_RESOLUTION,
)
# How the dynamic-batch scenario compiles (the CSV's `dynamic`): torch.compile(dynamic=False);
# torch's default (dynamic after a second shape, from torch 2.1); the default plus
# torch._dynamo.mark_dynamic on every input's batch dimension.
DYNAMIC_SETTINGS: tuple[str, ...] = ("static", "auto", "marked")
# Scenarios whose compiled cells get the compile-cost processes (warm, mega-cache) when the
# `compile_cost` setting is on; the dynamic-batch scenario has compile figures of its own.
COMPILE_COST_SCENARIOS: tuple[str, ...] = ("inference", "train")
BUILD_KINDS: tuple[str, ...] = ("stable", "nightly", "release")
# What a build is compared with: each build against every build of an earlier kind here (the
# guide's stable release, then the current release, then a nightly). The nightly job runs
# `release` and `nightly-current`, the guide's pair `stable` and `nightly`: both get their table.
BASE_ORDER: tuple[str, ...] = ("stable", "release", "nightly")


def is_base_of(base_kind: str, kind: str) -> bool:
    """Whether a build of `base_kind` is a base that a build of `kind` is compared with."""
    order = {k: i for i, k in enumerate(BASE_ORDER)}
    return order.get(base_kind, len(order)) < order.get(kind, len(order))


COMPILE_CACHES: tuple[str, ...] = ("cold", "run")
# How the worker's C heap behaves (suite.measure.allocator): fixed glibc thresholds, or as is.
MALLOC_STEADY, MALLOC_SYSTEM = "steady", "system"
MALLOCS: tuple[str, ...] = (MALLOC_STEADY, MALLOC_SYSTEM)
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")
# When a cell's timed loop stops (suite.measure.timing.StopRule): after `iterations` calls of each
# function (the guide's 300), or once the 95% CI of every timed function's median is within
# `ci_target_pct` of it (at least min(min_iterations, iterations) calls, at most `iterations` calls
# or `max_timing_s` seconds of timing).
STOP_FIXED, STOP_CI = "fixed", "ci"
STOP_RULES: tuple[str, ...] = (STOP_FIXED, STOP_CI)


def autocast_to(dtype: str) -> str:
    """The dtype an autocast value runs its matmuls in ("bfloat16" for "autocast-bfloat16"), ""
    for a plain dtype."""
    return dtype.removeprefix(AUTOCAST_PREFIX) if dtype.startswith(AUTOCAST_PREFIX) else ""


def weights_dtype(dtype: str) -> str:
    """The dtype a cell's weights and inputs are cast to: float32 under autocast, else `dtype`."""
    return "float32" if autocast_to(dtype) else dtype


def compute_dtype(dtype: str) -> str:
    """The lowest precision a cell computes in (its machine epsilon bounds the parity diff)."""
    return autocast_to(dtype) or dtype
