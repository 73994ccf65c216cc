"""The matrix as the rest of the suite sees it: frozen dataclasses of its models, builds,
profiles and cells (the vocabularies are suite.spec.vocab's, the settings suite.spec.settings').
Standard library only, so every layer (and the code inside the containers) can use it.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from suite.spec.settings import ImageSpec, RunNoise, Serving, SettingError, Settings
from suite.spec.vocab import COMPILE_COST_SCENARIOS, PRECISION, TASKS, autocast_to


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
    # the model's own accuracy tolerance, replacing the settings' for its cells, and why
    # (matrix.yaml's `tolerance: {value, reason}`, docs/accuracy.md)
    tolerance: float | None = None
    tolerance_reason: str = ""

    def __post_init__(self) -> None:
        if self.tolerance is not None and not self.tolerance_reason.strip():
            raise SettingError(("tolerance",), f"{self.name}'s own tolerance needs its reason")

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
