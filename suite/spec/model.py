"""The matrix as the rest of the suite sees it: frozen dataclasses and the vocabularies
(tasks, modes, dtypes, ...). Standard library and the bounds of suite.spec.limits only, so
every layer (and the code inside the containers) can use it.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from suite.spec.limits import setting_bounds

TASKS: dict[str, str] = {
    # task (as in the guide's tables) -> default auto class
    "Image Classification": "AutoModelForImageClassification",
    "Image Segmentation": "AutoModelForSemanticSegmentation",
    "Object Detection": "AutoModelForObjectDetection",
    # issue 40: a bare backbone named with --models (suite.spec.outside): its features
    "Image Feature Extraction": "AutoModel",
}
FEATURES = "Image Feature Extraction"
MODES: tuple[str, ...] = (
    "eager",
    "default",
    "reduce-overhead",
    "max-autotune",
    "max-autotune-no-cudagraphs",
    # issue 40: torch.export + AOTInductor's package, loaded back in the timing process (suite.measure.aot)
    "aot-inductor",
)
# autocast-<dtype> (issue 28): float32 weights and inputs, the forward under
# torch.autocast(device, dtype=<dtype>), so matmuls and convolutions run in <dtype> and the rest
# in float32. A value of `dtype`, not a column of its own: the CSV's key stays one column and
# every table that groups by dtype keeps doing so. Precision cells only (Cell's rule below).
AUTOCAST_PREFIX = "autocast-"
AUTOCAST_DTYPES: tuple[str, ...] = ("autocast-float16", "autocast-bfloat16")
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16", *AUTOCAST_DTYPES)
WEIGHTS: tuple[str, ...] = ("pretrained", "random")
DYNAMIC_BATCH = "dynamic-batch"  # one process serves several batch sizes in turn: a row per size
# issue 28: `precision` is inference plus the task's answer judged against float32 eager
# (suite.measure.parity); `pipeline` times a whole request: preprocess, forward, post-process
PRECISION, PIPELINE = "precision", "pipeline"
# issue 40: `serving` searches the highest Poisson arrival rate whose p99 latency (queueing
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
    # system (the default, issue 27): malloc as a plain python process has it; steady: glibc's
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


@dataclass(frozen=True)
class ModelSpec:
    """One model: where it comes from (hub id, or model_type + config), and how it is fed."""

    name: str
    task: str
    hub_id: str = ""
    model_type: str = ""
    model_class: str = ""
    revision: str = ""
    config: Mapping[str, Any] = field(default_factory=dict)
    processor: Mapping[str, Any] = field(default_factory=dict)
    text_queries: tuple[str, ...] = ()
    published_params_m: float | None = None
    smoke: Mapping[str, Any] = field(default_factory=dict)
    base: str = ""  # a custom configuration: the model it derives from
    overrides: Mapping[str, Any] = field(default_factory=dict)  # a custom configuration's own changes
    # a hub id or a local folder named with --models, not in matrix.yaml (suite.spec.outside)
    outside: bool = False

    @property
    def auto_class(self) -> str:
        return self.model_class or TASKS[self.task]

    @property
    def model_id(self) -> str:
        """What the CSV's model_id column shows: the hub id, else the model type."""
        return self.hub_id or f"{self.model_type} (config)"


@dataclass(frozen=True)
class BuildSpec:
    """A torch build: its container folder (+ docker build arguments) and the pins of its
    local virtualenv. `local` builds are the ones `nox -s bench-local` runs by default."""

    name: str
    kind: str
    python: str
    torch: str
    container: str = ""
    cuda: str = ""
    index_url: str = ""
    pins: tuple[str, ...] = ()
    description: str = ""
    local: bool = True
    build_args: Mapping[str, str] = field(default_factory=dict)

    def matches(self, torch_version: str) -> bool:
        """True when the running torch is this build's version (any local suffix)."""
        return torch_version == self.torch or torch_version.startswith(
            (self.torch + "+", self.torch + ".dev", self.torch + "a", self.torch + "rc")
        )


@dataclass(frozen=True)
class Selection:
    """One block of a profile: the cross product of these lists."""

    models: tuple[str, ...]
    batch_sizes: tuple[int, ...]
    modes: tuple[str, ...]
    scenarios: tuple[str, ...] = ("inference",)
    dtypes: tuple[str, ...] = ()  # empty: the settings' one dtype; else a cell per dtype


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    settings: Mapping[str, Any]
    selections: tuple[Selection, ...]


@dataclass(frozen=True)
class Matrix:
    path: Path
    defaults: Settings
    builds: Mapping[str, BuildSpec]
    models: Mapping[str, ModelSpec]
    profiles: Mapping[str, Profile]

    @property
    def hub_models(self) -> tuple[str, ...]:
        """The `models:` section (what `models: all` means); custom configurations are not in it."""
        return tuple(name for name, spec in self.models.items() if not spec.base)

    def find_model(self, name: str) -> ModelSpec | None:
        """By display name or hub id, any case."""
        want = name.strip().lower()
        for spec in self.models.values():
            if want in (spec.name.lower(), spec.hub_id.lower()):
                return spec
        return None


@dataclass(frozen=True)
class Cell:
    """One measurement: (build, model, task, batch_size, mode, dtype, scenario) + settings.

    A dynamic-batch cell is (model, mode, `dynamic` setting) over `batch_sizes`: its one
    process serves them in turn, then the first again, and it owes one row per batch size
    (`row_keys`); its `batch_size` is the first of them."""

    build: str
    model: ModelSpec
    batch_size: int
    mode: str
    scenario: str
    settings: Settings
    dynamic: str = ""  # a dynamic-batch cell's setting (DYNAMIC_SETTINGS), else ""
    batch_sizes: tuple[int, ...] = ()  # a dynamic-batch cell's distinct batch sizes, in order

    def __post_init__(self) -> None:
        # autocast is judged by the precision scenario only: its probe says when this torch would
        # silently run float32 instead (suite.measure.autocast); no other scenario has one
        if autocast_to(self.settings.dtype) and self.scenario != PRECISION:
            raise SettingError(
                ("dtype",),
                f"{self.settings.dtype!r} runs in the {PRECISION} scenario only, not {self.scenario!r}",
            )

    @property
    def label(self) -> str:
        if self.dynamic:
            sizes = ">".join(str(b) for b in self.served)
            return f"{self.model.name} bs={sizes} {self.mode} {self.scenario} ({self.dynamic})"
        dtype = "" if self.settings.dtype == "float32" else f" {self.settings.dtype}"  # a precision cell's
        return f"{self.model.name} bs={self.batch_size} {self.mode} {self.scenario}{dtype}"

    @property
    def served(self) -> tuple[int, ...]:
        """The batch sizes in the order the cell's process serves them: each once, then the
        first again (does coming back recompile?); a single-batch cell's own."""
        if not self.batch_sizes:
            return (self.batch_size,)
        return (*self.batch_sizes, self.batch_sizes[0])

    @property
    def compile_cost(self) -> bool:
        """Does this cell get the warm and mega-cache processes after its own?"""
        # an aot-inductor package is built once, ahead: no warm or mega-cache JIT compile to measure
        jit = self.mode not in ("eager", "aot-inductor")
        return self.settings.compile_cost and jit and self.scenario in COMPILE_COST_SCENARIOS

    def row_keys(self, device: str) -> list[dict[str, object]]:
        """The key of every row this cell owes: one per batch size it serves."""
        sizes = self.batch_sizes or (self.batch_size,)
        return [{**self.key_fields(device), "batch_size": b} for b in sizes]

    @property
    def variant(self) -> str:
        """The CSV's `variant`: "smoke" for a shrunk model, "custom of <base>" for a custom
        configuration, both joined by ", " when a custom configuration is shrunk."""
        parts = ["smoke"] if self.settings.shrink else []
        if self.model.base:
            parts.append(f"custom of {self.model.base}")
        if self.model.outside:
            parts.append("outside the guide's set")
        return ", ".join(parts)

    def key_fields(self, device: str) -> dict[str, object]:
        """The CSV columns that identify this cell (see results.KEY_COLUMNS)."""
        return {
            "build": self.build,
            "device": device,
            "model": self.model.name,
            "model_id": self.model.model_id,
            "weights": self.settings.weights,
            "batch_size": self.batch_size,
            "mode": self.mode,
            "dtype": self.settings.dtype,
            "scenario": self.scenario,
            "dynamic": self.dynamic,
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Cell:
        raw = json.loads(text)
        model = ModelSpec(**{**raw["model"], "text_queries": tuple(raw["model"]["text_queries"])})
        settings = Settings(
            **{
                **raw["settings"],
                "image": ImageSpec(**raw["settings"]["image"]),
                "run_noise": RunNoise(**raw["settings"].get("run_noise", {})),
                "speedup_noise": RunNoise(**raw["settings"].get("speedup_noise", {})),
                "dynamic_batch_sizes": tuple(raw["settings"].get("dynamic_batch_sizes", ())),
                "serving": Serving(**raw["settings"].get("serving", {})),
                "resolution_scales": tuple(raw["settings"].get("resolution_scales", ())),
            }
        )
        return Cell(
            build=raw["build"],
            model=model,
            batch_size=raw["batch_size"],
            mode=raw["mode"],
            scenario=raw["scenario"],
            settings=settings,
            dynamic=raw.get("dynamic", ""),
            batch_sizes=tuple(raw.get("batch_sizes", ())),
        )


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` onto `base`, recursing into nested mappings (nested configs)."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Settings))
