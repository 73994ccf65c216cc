"""The merged study: each cell's row typed, looked up by what the tables, plots and the
comparison ask for (build, GPU, setup, model, batch size, mode), and each build's kind.

Host side only. `suite.report.load` turns raw CSVs into the typed frame this reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import pandas as pd

from suite.errors import UsageError
from suite.measure import cudagraphs, energy, phases
from suite.report.paths import shown
from suite.results import FAIL, OK, slug
from suite.results.health import HEALTHY
from suite.spec.load import load_matrix
from suite.spec.vocab import BUILD_KINDS

EAGER = "eager"
# issue 38: throughput beside latency, the switch penalty, the host's speed (suite.measure.timing)
THROUGHPUT_COLUMNS: tuple[str, ...] = (
    "throughput_ms",
    "throughput_ci95_low_ms",
    "throughput_ci95_high_ms",
    "eager_throughput_ms",
    "eager_throughput_ci95_low_ms",
    "eager_throughput_ci95_high_ms",
    "throughput_speedup",
    "throughput_speedup_ci95_low",
    "throughput_speedup_ci95_high",
    "switch_penalty_pct",
    "eager_switch_penalty_pct",
    "host_speed_moved_pct",
    "phase_first_run_s",
)
MORE_COLUMNS: tuple[str, ...] = (
    *phases.COLUMNS,
    *cudagraphs.COLUMNS,
    *energy.COLUMNS,
)
KIND_ORDER: tuple[str, ...] = BUILD_KINDS  # the order builds are listed in: stable, nightly, release


@dataclass(frozen=True)
class Gpu:
    """Where a row ran: the device type and its name (a CPU's model on CPU rows)."""

    device: str
    name: str

    @property
    def is_gpu(self) -> bool:
        """A GPU row's device is its name's slug ("nvidia-h200"), or "cuda" in older rows."""
        return self.device in ("cuda", slug(self.name))

    @property
    def label(self) -> str:
        return self.name if self.is_gpu else f"{self.device.upper()}: {self.name}"


CUSTOM_PREFIX = "custom of "


def setup_variant(variant: str) -> str:
    """The part of a row's `variant` that sets it apart from other rows ("smoke"); the
    "custom of <base>" part belongs to the model, which is benchmarked beside the others."""
    return ", ".join(p for p in _variant_parts(variant) if not p.startswith(CUSTOM_PREFIX))


def custom_base(variant: str) -> str:
    """The base model of a custom configuration's row ("" for any other row)."""
    return next((p[len(CUSTOM_PREFIX) :] for p in _variant_parts(variant) if p.startswith(CUSTOM_PREFIX)), "")


def _variant_parts(variant: str) -> list[str]:
    return [p.strip() for p in variant.split(",") if p.strip()]


@dataclass(frozen=True)
class Setup:
    """What else must match for two rows to be comparable."""

    dtype: str
    scenario: str
    weights: str
    variant: str
    # the workers' C allocator (the CSV's `malloc`: steady | system; "" in rows from before it):
    # on a CPU it decides whether compiling pays (issue 27), so every setup line names it
    malloc: str = ""
    # what float32 convolutions and matmuls ran as on a GPU (`tf32_label`; "" on a CPU, where TF32
    # does not apply, and in rows from before the columns): results differ with it (issue 38)
    tf32: str = ""

    @property
    def guide_like(self) -> bool:
        """Comparable with the guide's figures: float32 inference of the real models."""
        return self.dtype == "float32" and self.scenario == "inference" and not self.variant

    @property
    def label(self) -> str:
        parts = [self.dtype, self.scenario, f"{self.weights} weights"]
        if self.variant:
            parts.append(f"{self.variant} models" if self.variant == "smoke" else self.variant)
        if self.malloc:
            parts.append(f"malloc {self.malloc}")
        if self.tf32:
            parts.append(self.tf32)
        return ", ".join(p for p in parts if p.strip())


def tf32_label(r: Any) -> str:
    """ "TF32: matmul off, cuDNN on" for a CUDA row that recorded it (`tf32_matmul`, `tf32_cudnn`,
    `matmul_precision`); "" elsewhere."""
    if str(getattr(r, "device", "")) != "cuda":
        return ""
    matmul, cudnn = (str(getattr(r, c, "") or "") for c in ("tf32_matmul", "tf32_cudnn"))
    if not matmul and not cudnn:
        return ""
    word = {"true": "on", "false": "off"}
    precision = str(getattr(r, "matmul_precision", "") or "")
    text = f"TF32: matmul {word.get(matmul, '?')}, cuDNN {word.get(cudnn, '?')}"
    return text + (f" (float32 matmul precision {precision})" if precision and precision != "highest" else "")


@dataclass(frozen=True)
class Measurement:
    """One cell's row, typed; durations in ms, None where not measured."""

    status: str
    error: str
    mean_ms: float | None
    median_ms: float | None
    ci_low_ms: float | None
    ci_high_ms: float | None
    speedup: float | None
    speedup_low: float | None
    speedup_high: float | None
    accuracy: str
    max_abs_diff: float | None
    source: str
    peak_mem_mb: float | None = None
    params_m: float | None = None
    eager_median_ms: float | None = None  # a compiled cell's: the eager calls interleaved with its own
    eager_ci_low_ms: float | None = None
    eager_ci_high_ms: float | None = None
    compile_s: float | None = None
    health: str = ""  # ok, the flags that make the figures suspect, or "" (not measured)
    breakeven_calls: float | None = None
    # what compiling costs (README "What compiling costs"); None where not measured
    recompiles: float | None = None
    compile_warm_s: float | None = None
    compile_megacache_s: float | None = None
    first_result_s: float | None = None
    eager_first_result_s: float | None = None
    breakeven_calls_warm: float | None = None
    compile_note: str = ""
    # issue 27: the machine's between-run noise of the median the run was given (run_noise_pct)
    run_noise_pct: float | None = None
    speedup_noise_pct: float | None = None  # and of the paired speed-up (speedup_noise_pct)
    # issue 29's columns (compile phases, CUDA graphs, energy: suite.report.tables.phases, energy),
    # by column name: numbers as floats (None where empty), notes as text
    more: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)

    @property
    def ok(self) -> bool:
        return self.status == OK

    @property
    def accuracy_failed(self) -> bool:
        return self.accuracy == FAIL

    @property
    def unhealthy(self) -> bool:
        """Timed on a machine with a health flag (suite.measure.health): the figures are suspect."""
        return self.ok and self.health not in ("", HEALTHY)


def _num(value: object) -> float | None:
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else float(value)


def _extra(r: Any, name: str) -> float | None:
    """A number from a column after the contract's: the merge does not type those, and an
    older file may lack them (then None), as may a malformed one."""
    value = getattr(r, name, None)
    try:
        return None if value in (None, "") else _num(float(value))
    except (TypeError, ValueError):
        return None


@dataclass(frozen=True)
class Durations:
    """The two durations of a compile-vs-eager row, and where they come from.

    One rule for every table and plot: when the compiled cell has its paired eager median
    (eager and compiled calls timed interleaved in its one process), both durations are that
    pair, so the durations, their ratio and the speed-up shown beside them agree. Otherwise
    (the compiled cell failed, is missing, or predates the column) each side is its own
    cell's median, and `paired` is False. Each side carries its 95% CI where known."""

    eager_ms: float | None
    eager_low: float | None
    eager_high: float | None
    compiled_ms: float | None
    compiled_low: float | None
    compiled_high: float | None
    paired: bool
    source_eager: Measurement | None  # the measurement each side's figure (and marks) come from
    source_compiled: Measurement | None


def paired_durations(eager: Measurement | None, compiled: Measurement | None) -> Durations:
    """The durations a row shows for an eager cell and a compiled cell of one model (see
    `Durations`); a side without a figure is None (its measurement says why)."""
    c = compiled if compiled is not None and compiled.ok else None
    if c is not None and c.eager_median_ms is not None and c.median_ms is not None:
        return Durations(
            c.eager_median_ms,
            c.eager_ci_low_ms,
            c.eager_ci_high_ms,
            c.median_ms,
            c.ci_low_ms,
            c.ci_high_ms,
            paired=True,
            source_eager=c,
            source_compiled=c,
        )
    e = eager if eager is not None and eager.ok else None
    return Durations(
        e.median_ms if e else None,
        e.ci_low_ms if e else None,
        e.ci_high_ms if e else None,
        c.median_ms if c else None,
        c.ci_low_ms if c else None,
        c.ci_high_ms if c else None,
        paired=False,
        source_eager=eager,
        source_compiled=compiled,
    )


def measurement_of(r: Any) -> Measurement:
    """A typed row (a `Loaded.frame.itertuples()` item) as a Measurement."""
    return Measurement(
        status=r.status,
        error=r.error,
        mean_ms=_num(r.mean_ms),
        median_ms=_num(r.median_ms),
        ci_low_ms=_num(r.ci95_low_ms),
        ci_high_ms=_num(r.ci95_high_ms),
        speedup=_num(r.speedup),
        speedup_low=_num(r.speedup_ci95_low),
        speedup_high=_num(r.speedup_ci95_high),
        accuracy=r.accuracy,
        max_abs_diff=_num(r.max_abs_diff),
        source=r.source,
        peak_mem_mb=_num(r.peak_mem_mb),
        params_m=_num(r.params_m),
        eager_median_ms=_num(r.eager_median_ms),
        eager_ci_low_ms=_extra(r, "eager_ci95_low_ms"),
        eager_ci_high_ms=_extra(r, "eager_ci95_high_ms"),
        compile_s=_num(r.compile_s),
        health=str(getattr(r, "health", "") or ""),
        breakeven_calls=_num(getattr(r, "breakeven_calls", None)),
        recompiles=_num(r.recompiles),
        **{name: _num(getattr(r, name, None)) for name in COMPILE_COST_FIGURES},
        compile_note=str(getattr(r, "compile_note", "") or ""),
        run_noise_pct=_extra(r, "run_noise_pct"),
        speedup_noise_pct=_extra(r, "speedup_noise_pct"),
        more=more_of(r),
    )


def more_of(r: Any) -> dict[str, Any]:
    """Issue 29's and issue 38's columns of a typed row (an older file lacks them: None, "")."""
    from suite.results import BY_NAME, TEXT

    return {
        name: (str(getattr(r, name, "") or "") if BY_NAME[name].kind == TEXT else _extra(r, name))
        for name in (*MORE_COLUMNS, *THROUGHPUT_COLUMNS)
    }


# the compile-cost figures a Measurement carries beside compile_s and breakeven_calls
COMPILE_COST_FIGURES: tuple[str, ...] = (
    "compile_warm_s",
    "compile_megacache_s",
    "first_result_s",
    "eager_first_result_s",
    "breakeven_calls_warm",
)


def ratio_interval(num: Measurement, den: Measurement) -> tuple[float | None, float | None]:
    """Bounds of num.median / den.median from the two medians' 95% CIs (None if absent)."""
    if None in (num.ci_low_ms, num.ci_high_ms, den.ci_low_ms, den.ci_high_ms):
        return None, None
    return num.ci_low_ms / den.ci_high_ms, num.ci_high_ms / den.ci_low_ms  # type: ignore[operator]


@dataclass(frozen=True)
class CellKey:
    """A row's cell as the report sees it: build, where it ran, its setup, model, batch size,
    mode, and for a dynamic-batch row its `dynamic` setting ("" for every other row)."""

    build: str
    gpu: Gpu
    setup: Setup
    task: str
    model: str
    batch_size: int
    mode: str
    dynamic: str = ""

    def at(self, **change: Any) -> CellKey:
        """The same cell with some fields changed (`key.at(mode="eager")`: its eager cell)."""
        return replace(self, **change)


def key_of(r: Any) -> CellKey:
    """A typed row's key (a `Loaded.frame.itertuples()` item)."""
    return CellKey(
        build=r.build,
        gpu=Gpu(r.device, r.gpu_name),
        setup=Setup(
            r.dtype,
            r.scenario,
            r.weights,
            setup_variant(r.variant),
            str(getattr(r, "malloc", "") or ""),
            tf32_label(r),
        ),
        task=r.task,
        model=r.model,
        batch_size=int(r.batch_size),
        mode=r.mode,
        dynamic=str(getattr(r, "dynamic", "") or ""),
    )


class Study:
    """The merged rows, typed and keyed by `CellKey`, with the orders the tables follow (first
    appearance in the input). `cells`: the rows of one-process cells, which every table but the
    dynamic-shapes one reads (the orders are theirs); `dynamic`: the dynamic-batch rows."""

    def __init__(self, frame: pd.DataFrame, kinds: dict[str, str]) -> None:
        self.kinds = kinds
        self.rows: dict[CellKey, Measurement] = {}
        self.torch: dict[str, list[str]] = {}
        self.bases: dict[str, str] = {}  # custom configuration -> its base model
        records = list(frame.itertuples(index=False))
        # the one-process rows first: a build's torch versions in their order, then the others'
        for r in sorted(records, key=lambda r: bool(getattr(r, "dynamic", ""))):
            if custom_base(r.variant):
                self.bases[r.model] = custom_base(r.variant)
            self.rows[key_of(r)] = measurement_of(r)
            versions = self.torch.setdefault(r.build, [])
            if r.torch_version and r.torch_version not in versions:
                versions.append(r.torch_version)
        self.cells = {k: m for k, m in self.rows.items() if not k.dynamic}
        self.dynamic = {k: m for k, m in self.rows.items() if k.dynamic}
        keys = list(self.cells)
        builds = list(dict.fromkeys(k.build for k in keys))
        self.builds = sorted(builds, key=lambda b: (KIND_ORDER.index(self.kind(b)), builds.index(b)))
        self.gpus = list(dict.fromkeys(k.gpu for k in keys))
        self.setups = list(dict.fromkeys(k.setup for k in keys))
        self.models = list(dict.fromkeys((k.task, k.model) for k in keys))
        self.modes = list(dict.fromkeys(k.mode for k in keys))
        self.batch_sizes = sorted({k.batch_size for k in keys})

    def model_label(self, task: str, model: str) -> str:
        """`Task/Model`, with "(custom of <base>)" after a custom configuration's name."""
        base = self.bases.get(model)
        return f"{task}/{model}" + (f" ({CUSTOM_PREFIX}{base})" if base else "")

    def get(self, key: CellKey) -> Measurement | None:
        return self.rows.get(key)

    def keys_where(self, **match: object) -> list[CellKey]:
        """The one-process cells' keys whose fields are as given."""
        return [k for k in self.cells if all(getattr(k, f) == v for f, v in match.items())]

    def torch_label(self, build: str) -> str:
        """`stable (torch 2.0.1+cu118)`: the build name and the torch it ran."""
        versions = self.torch.get(build) or []
        return f"{build} (torch {', '.join(versions)})" if versions else build

    def kind(self, build: str) -> str:
        return self.kinds.get(build, kind_from_name(build))


def kind_from_name(build: str) -> str:
    """A build's kind when the matrix does not say: by its name."""
    name = build.lower()
    if name.startswith("stable"):
        return "stable"
    if "nightly" in name:
        return "nightly"
    return "release"


def build_kinds(
    builds: Sequence[str], matrix_path: Path | None, explicit: bool
) -> tuple[dict[str, str], str]:
    """Each build's kind from matrix.yaml (builds.<name>.kind), else from its name.

    Returns the kinds and a one-line note on where they came from. A matrix given with
    --matrix must load; the default one may be absent or broken (the names then decide).
    """
    declared: dict[str, str] = {}
    note = ""
    if matrix_path is not None:
        try:
            declared = {name: spec.kind for name, spec in load_matrix(matrix_path).builds.items()}
        except (UsageError, OSError) as exc:
            if explicit:
                raise
            note = f"could not read {shown(matrix_path)} ({exc}); "
    kinds = {b: declared.get(b, kind_from_name(b)) for b in builds}
    by_name = [b for b in builds if b not in declared]
    source = f"kinds from {shown(matrix_path)}" if declared else "kinds"
    if by_name:
        source += f"{' and' if declared else ''} by name for: {', '.join(by_name)}"
    return kinds, note + source
