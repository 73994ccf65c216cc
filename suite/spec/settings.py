"""A cell's measurement settings (`Settings`: matrix defaults, then profile, then flags) with
their rules in `__post_init__`, and the typed parts they hold (`ImageSpec`, `Serving`,
`RunNoise`); `SettingError` names the fields a broken rule involves. Standard library and
the bounds of suite.spec.limits only.
"""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, field, fields

from suite.spec.limits import setting_bounds
from suite.spec.vocab import (
    COMPILE_CACHES,
    DTYPES,
    MALLOC_SYSTEM,
    MALLOCS,
    STOP_FIXED,
    STOP_RULES,
    WEIGHTS,
)

MAX_RESOLUTION_SCALE = 4.0
# The parity rule's thresholds (the `precision` scenario's `parity` column): the least
# agreement with float32 eager a cell may show, per figure, each in [0, 1]
PARITY_SETTINGS: tuple[str, ...] = (
    "parity_top1",
    "parity_top5",
    "parity_box_iou",
    "parity_labels",
    "parity_mask_iou",
)
# ... and the most the outputs may differ from float32 eager's, in units of the cell dtype's
# machine epsilon (never below `tolerance`), relative to max(1, max |float32 eager|)
PARITY_MAX_EPS_LIMIT = 1e6
COUNT_SETTINGS: tuple[str, ...] = ("warmup", "iterations", "min_iterations", "processes")


@dataclass(frozen=True)
class ImageSpec:
    """The photograph every iteration feeds: a URL (downloaded once, cached) and a local file."""

    url: str = ""
    path: str = ""


# A serving cell's default p99 target: this many times eager's batch-1 p99 latency, measured in
# the cell's own process (MLPerf's ResNet-50 server target, 15 ms, is about 5x a datacenter GPU's
# batch-1 latency; a p99, not a median: on a loaded machine a lone call's tail is many medians, and
# a multiple of the median is then met by no rate); `serving.p99_ms` sets a fixed target instead.
SERVING_TARGET_MULTIPLE = 5.0
SERVING_MAX_BATCH, SERVING_MAX_REQUESTS = 1024, 1_000_000


@dataclass(frozen=True)
class Serving:
    """The serving scenario's settings (`serving:` in matrix.yaml): the p99 latency target (None:
    SERVING_TARGET_MULTIPLE x eager's batch-1 p99), the dynamic batcher's largest batch and
    longest wait for one, its queue (0: 16 x max_batch; a request arriving to a full queue is
    dropped), `burst` requests arriving together (1: plain Poisson arrivals), and the most
    requests one trial rate sends (early stopping may send fewer)."""

    p99_ms: float | None = None
    max_batch: int = 8
    max_wait_ms: float = 2.0
    max_queue: int = 0
    burst: int = 1
    requests: int = 2000

    def __post_init__(self) -> None:
        for name in ("max_batch", "max_queue", "burst", "requests"):
            value, low = getattr(self, name), 0 if name == "max_queue" else 1
            high = SERVING_MAX_REQUESTS if name == "requests" else SERVING_MAX_BATCH * 64
            if name == "max_batch":
                high = SERVING_MAX_BATCH
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise SettingError(
                    (f"serving.{name}",), f"must be an integer from {low} to {high}, got {value!r}"
                )
        for name in ("p99_ms", "max_wait_ms"):
            value = getattr(self, name)
            if value is None and name == "p99_ms":
                continue
            number = not isinstance(value, bool) and isinstance(value, (int, float))
            if not number or not math.isfinite(value) or value < 0 or (name == "p99_ms" and value == 0):
                raise SettingError(
                    (f"serving.{name}",),
                    f"must be a finite number {'> 0' if name == 'p99_ms' else '>= 0'}, got {value!r}",
                )
        if self.max_queue and self.max_queue < self.max_batch:
            raise SettingError(
                ("serving.max_queue", "serving.max_batch"),
                f"must be 0 (16 x max_batch) or at least max_batch ({self.max_batch}), got {self.max_queue}",
            )

    @property
    def queue(self) -> int:
        """The queue's capacity in requests."""
        return self.max_queue or 16 * self.max_batch


@dataclass(frozen=True)
class RunNoise:
    """How far a cell's figure (its median: `run_noise_pct`; its paired speed-up:
    `speedup_noise_pct`) moves between runs on this machine beyond what the run itself shows (tau,
    a percentage), per device type: what a row's rerun interval adds to its CI
    (suite.stats.rerun_interval, docs/intervals.md). None: not measured on this kind of device, so
    rows get no rerun interval. `nox -s coverage` measures both."""

    cpu: float | None = None
    cuda: float | None = None

    def __post_init__(self) -> None:
        for name in RUN_NOISE_DEVICES:
            pct = getattr(self, name)
            ok = pct is None or (
                not isinstance(pct, bool) and isinstance(pct, (int, float)) and 0 <= pct <= 100
            )
            if not ok:
                raise SettingError(
                    ("run_noise_pct",), f"{name}: must be from 0 to 100 (percent), got {pct!r}"
                )

    def tau(self, device_type: str) -> float | None:
        """The log-scale standard deviation for `device_type` ("cpu" or "cuda"), None if unmeasured."""
        pct = getattr(self, device_type, None) if device_type in RUN_NOISE_DEVICES else None
        return None if pct is None else math.log1p(pct / 100)


RUN_NOISE_DEVICES: tuple[str, ...] = ("cpu", "cuda")
NOISE_SETTINGS: tuple[str, ...] = ("run_noise_pct", "speedup_noise_pct")


class SettingError(ValueError):
    """A `Settings` value that breaks a rule: the fields the rule involves (the first the one a
    message names by default) and what is wrong. Whoever made the settings relabels it with the
    file and field, or the flag (suite.spec.load, suite.spec.expand)."""

    def __init__(self, fields: tuple[str, ...], message: str) -> None:
        super().__init__(message)
        self.fields, self.message = fields, message

    def field_among(self, given: Collection[str]) -> str:
        """The field to name: the first of the rule's that `given` set, else the rule's first."""
        return next((f for f in self.fields if f in given), self.fields[0])


def _choice(name: str, value: object, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise SettingError((name,), f"{value!r} is not one of: {', '.join(choices)}")


def _within(name: str, value: object) -> None:
    """A count (warmup, iterations) or an amount > 0 (timeout_s, tolerance) within its bounds."""
    low, high = setting_bounds(name)
    count = name in COUNT_SETTINGS
    kinds = (int,) if count else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds):
        raise SettingError((name,), f"must be {'an integer' if count else 'a number'}, got {value!r}")
    if not ((value >= low) if count else (value > low)) or not value <= high:
        raise SettingError(
            (name,), f"must be {'>=' if count else '>'} {low:g} and at most {high:g}, got {value}"
        )


@dataclass(frozen=True)
class Settings:
    """Per-cell measurement settings: matrix defaults, then profile, then CLI overrides.

    Its rules hold however it is made (`replace(settings, ...)` included): choices, bounds, a
    cold cache for the compile cost, random weights for a shrunk model, two or more batch sizes
    for a dynamic-batch cell."""

    dtype: str = "float32"
    weights: str = "pretrained"
    warmup: int = 10
    iterations: int = 300
    timeout_s: float = 1800.0
    tolerance: float = 1e-3
    shrink: bool = False
    compile_cache: str = "cold"  # cold: a fresh inductor/triton cache per cell; run: shared
    # system (the default, docs/trust.md): malloc as a plain python process has it; steady: glibc's
    # thresholds fixed for the worker
    malloc: str = MALLOC_SYSTEM
    image: ImageSpec = field(default_factory=ImageSpec)
    # compiled cells also run a warm and a mega-cache process (suite.run.cell_path)
    compile_cost: bool = False
    # the batch sizes a dynamic-batch cell serves in turn; empty: its selection's batch sizes
    dynamic_batch_sizes: tuple[int, ...] = ()
    # the parity rule (precision cells): the least agreement with float32 eager that passes
    parity_top1: float = 0.9
    parity_top5: float = 0.8
    parity_box_iou: float = 0.8
    parity_labels: float = 0.8
    parity_mask_iou: float = 0.8
    parity_max_eps: float = 64.0
    # the timed loop's stopping rule (STOP_RULES above; recorded per row: stop_reason, calls)
    stop_rule: str = STOP_FIXED
    min_iterations: int = 10
    ci_target_pct: float = 1.0
    max_timing_s: float = 300.0
    # worker processes a cell is timed in (suite.run.cell_path): the first cold (its compile is
    # compile_s), the others warm on its compile caches; the row's figures pool all of them
    processes: int = 1
    # the machine's between-run noise, per device type (a rerun interval's second part)
    run_noise: RunNoise = field(default_factory=RunNoise)
    speedup_noise: RunNoise = field(default_factory=RunNoise)  # the same, of the paired speed-up
    serving: Serving = field(default_factory=Serving)  # the serving scenario's target and batcher
    # the mixed-resolution scenario's sizes, as multiples of the model's own input size (empty:
    # its task's default)
    resolution_scales: tuple[float, ...] = ()

    def __post_init__(self) -> None:
        _choice("dtype", self.dtype, DTYPES)
        for name, noise in zip(NOISE_SETTINGS, (self.run_noise, self.speedup_noise), strict=True):
            if not isinstance(noise, RunNoise):
                raise SettingError((name,), f"must be a mapping of cpu/cuda to percent, got {noise!r}")
        self._check_parity()
        _choice("weights", self.weights, WEIGHTS)
        _choice("compile_cache", self.compile_cache, COMPILE_CACHES)
        _choice("malloc", self.malloc, MALLOCS)
        _choice("stop_rule", self.stop_rule, STOP_RULES)
        names = ("warmup", "iterations", "timeout_s", "tolerance", "min_iterations", "ci_target_pct")
        for name in (*names, "max_timing_s", "processes"):
            _within(name, getattr(self, name))
        # min_iterations above iterations is no error: the minimum is then the maximum (a profile's
        # or a flag's small `iterations` must not need a second setting to go with it)
        self._check_sizes()
        if not isinstance(self.serving, Serving):
            raise SettingError(
                ("serving",), f"must be a mapping (p99_ms, max_batch, ...), got {self.serving!r}"
            )
        if not isinstance(self.image, ImageSpec):
            raise SettingError(("image",), f"must be an image (url and/or path), got {self.image!r}")
        if self.compile_cost and self.compile_cache != "cold":
            raise SettingError(
                ("compile_cost", "compile_cache"),
                "compile_cost measures a cold compile, then a warm one: it needs compile_cache: cold "
                "(or compile_cost: false)",
            )
        if self.shrink and self.weights != "random":
            raise SettingError(
                ("shrink", "weights"), "a shrunk (smoke) model has no checkpoint: set weights: random"
            )

    def _check_parity(self) -> None:
        for name in PARITY_SETTINGS:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
                raise SettingError((name,), f"must be from 0 to 1 (an agreement rate), got {value!r}")
        eps = self.parity_max_eps
        if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not 0 < eps <= PARITY_MAX_EPS_LIMIT:
            raise SettingError(
                ("parity_max_eps",), f"must be > 0 and at most {PARITY_MAX_EPS_LIMIT:g}, got {eps!r}"
            )

    def _check_sizes(self) -> None:
        """The mixed-resolution scales and the dynamic-batch sizes: two or more different ones."""
        scales = self.resolution_scales
        numbers = all(
            not isinstance(x, bool) and isinstance(x, (int, float)) and 0 < x <= MAX_RESOLUTION_SCALE
            for x in scales
        )
        if scales and (not numbers or len(set(scales)) < 2):
            raise SettingError(
                ("resolution_scales",),
                f"needs two or more different scales > 0 and at most {MAX_RESOLUTION_SCALE:g}, "
                f"got {list(scales)}",
            )
        sizes = self.dynamic_batch_sizes
        integers = all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in sizes)
        if sizes and (not integers or len(set(sizes)) < 2):
            raise SettingError(
                ("dynamic_batch_sizes",), f"needs two or more different batch sizes >= 1, got {list(sizes)}"
            )


def setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Settings))
