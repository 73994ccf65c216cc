"""The merged study: each cell's row typed, looked up by what the tables, plots and the
comparison ask for (build, GPU, setup, model, batch size, mode), and each build's kind.

Host side only. `suite.report.load` turns raw CSVs into the typed frame this reads.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pandas as pd

from suite.errors import UsageError
from suite.report.measurement import Measurement, measurement_of
from suite.report.paths import shown
from suite.results import slug
from suite.spec.load import load_matrix
from suite.spec.vocab import BUILD_KINDS

EAGER = "eager"
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
    # on a CPU it decides whether compiling pays (docs/trust.md), so every setup line names it
    malloc: str = ""
    # what float32 convolutions and matmuls ran as on a GPU (`tf32_label`; "" on a CPU, where TF32
    # does not apply, and in rows from before the columns): results differ with it (docs/measurement.md)
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
