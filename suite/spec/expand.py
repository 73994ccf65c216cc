"""Expand a profile (and the command line's filters) into cells: pure, no child process.

Checking the models (custom configurations, configs, classes) against transformers needs a
child process; that is
`suite.run.preflight.check_models`, called on the cells this returns.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

from suite.errors import UsageError
from suite.spec.model import BuildSpec, Cell, Matrix, ModelSpec, Profile, Selection
from suite.spec.outside import outside_model
from suite.spec.settings import ImageSpec, SettingError, Settings
from suite.spec.vocab import DYNAMIC_BATCH, DYNAMIC_SETTINGS, MIXED_RESOLUTION, SERVING


@dataclass(frozen=True)
class Overrides(Mapping[str, Any]):
    """The settings the command line overrides (None: as the profile says); a mapping of those
    given, so `replace(settings, **overrides)` applies them (resolve_settings)."""

    weights: str | None = None
    iterations: int | None = None
    warmup: int | None = None
    timeout_s: float | None = None
    compile_cost: bool | None = None
    compile_cache: str | None = None
    malloc: str | None = None
    image: ImageSpec | None = None
    processes: int | None = None
    stop_rule: str | None = None

    def _given(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self) if getattr(self, f.name) is not None}

    def __getitem__(self, key: str) -> Any:
        return self._given()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._given())

    def __len__(self) -> int:
        return len(self._given())


@dataclass(frozen=True)
class Filters:
    """CLI choices on top of a profile; None means "as the profile says".

    `models`, `batch_sizes` and `modes` narrow the profile's selections. `scenarios` *sets*
    the scenario axis of every selection instead: a profile is written once (mostly for
    inference), and `--scenarios train` runs the same cells as training steps. A custom
    configuration named in `models` runs wherever the profile runs its base, even where the
    profile does not name it.
    """

    models: tuple[str, ...] | None = None
    batch_sizes: tuple[int, ...] | None = None
    modes: tuple[str, ...] | None = None
    scenarios: tuple[str, ...] | None = None
    overrides: Overrides = field(default_factory=Overrides)
    dynamic: tuple[str, ...] | None = None  # narrows a dynamic-batch cell's settings (docs/compile-cost.md)

    def __post_init__(self) -> None:
        if not isinstance(self.overrides, Overrides):  # a plain mapping of setting -> value
            object.__setattr__(self, "overrides", Overrides(**dict(self.overrides)))

    @property
    def flags(self) -> list[str]:
        """The selection flags given (for a message about what they selected)."""
        given = zip(
            ("--models", "--batch-sizes", "--modes", "--scenarios", "--dynamic"),
            (self.models, self.batch_sizes, self.modes, self.scenarios, self.dynamic),
            strict=True,
        )
        return [flag for flag, value in given if value is not None]


def pick_build(matrix: Matrix, name: str) -> BuildSpec:
    """The build named on the command line (`--build`), or the one-line error every entry
    point gives for an unknown one (`suite plan`, `suite run`, the nox sessions)."""
    if name not in matrix.builds:
        raise UsageError(
            "--build", f"{name!r} is not a build of {matrix.path} (known: {', '.join(matrix.builds)})"
        )
    return matrix.builds[name]


# The flag that overrides each setting (suite.cli.args), for the one-line errors.
FLAG_OF_SETTING: Mapping[str, str] = {
    "weights": "--weights",
    "iterations": "--iterations",
    "warmup": "--warmup",
    "timeout_s": "--timeout",
    "compile_cost": "--compile-cost",
    "compile_cache": "--compile-cache",
    "malloc": "--malloc",
    "processes": "--processes",
    "stop_rule": "--stop-rule",
    "image": "--image",
}


def resolve_settings(matrix: Matrix, profile: Profile, overrides: Mapping[str, Any]) -> Settings:
    """The matrix's defaults, then the profile's settings, then the command line's. A rule of
    `Settings` the flags break is named by the flag; a shrunk profile's need for random weights
    by the profile's `shrink`, which no flag sets."""
    where = f"{matrix.path}: profiles.{profile.name}.settings"
    try:
        settings = replace(matrix.defaults, **dict(profile.settings))
    except SettingError as exc:
        raise UsageError(f"{where}.{exc.field_among(profile.settings)}", exc.message) from None
    try:
        return replace(settings, **dict(overrides))
    except SettingError as exc:
        if exc.fields[0] == "shrink":
            raise UsageError(f"{where}.shrink", exc.message) from None
        field = exc.field_among(overrides)
        raise UsageError(FLAG_OF_SETTING.get(field, field), exc.message) from None


def image_field(matrix: Matrix, profile_name: str, overrides: Mapping[str, Any]) -> str:
    """Where the cells' `image` setting was given (for messages): the flag, the profile's
    settings, or the matrix's defaults (resolve_settings' order, last wins)."""
    if "image" in overrides:
        return "--image"
    profile = matrix.profiles.get(profile_name)
    if profile is not None and "image" in profile.settings:
        return f"{matrix.path}: profiles.{profile_name}.settings.image"
    return f"{matrix.path}: defaults.image"


def expand(
    matrix: Matrix,
    profile_name: str,
    build: str,
    filters: Filters = Filters(),
) -> list[Cell]:
    """All cells of a profile for one build, in a stable order, as the filters ask.

    A custom configuration always gets `weights: random` (it has no checkpoint).
    """
    if profile_name not in matrix.profiles:
        raise UsageError(
            "--profile",
            f"{profile_name!r} is not a profile of {matrix.path} (known: {', '.join(matrix.profiles)})",
        )
    profile = matrix.profiles[profile_name]
    settings = resolve_settings(matrix, profile, filters.overrides)
    wanted_models, outside = _wanted_models(matrix, filters)
    plan = _Plan(matrix, profile, build, filters)
    cells: dict[tuple[object, ...], Cell] = {}
    for sel in profile.selections:
        # a model from outside the matrix runs as each selection runs the matrix's models
        for model_name in [*_with_named_customs(matrix, sel.models, wanted_models), *outside]:
            if wanted_models is not None and model_name not in wanted_models:
                continue
            spec = outside.get(model_name) or matrix.models[model_name]
            cell_settings = replace(settings, weights="random") if spec.base else settings
            if spec.tolerance is not None:  # the model's own, with its reason (docs/accuracy.md)
                cell_settings = replace(cell_settings, tolerance=spec.tolerance)
            scenarios = filters.scenarios if filters.scenarios is not None else sel.scenarios
            for scenario in scenarios:
                for key, cell in _scenario_cells(plan, model_name, spec, sel, cell_settings, scenario):
                    cells.setdefault(key, cell)
    return list(cells.values())


@dataclass(frozen=True)
class _Plan:
    """What every cell of one expansion shares: the matrix, the profile, the build, the filters."""

    matrix: Matrix
    profile: Profile
    build: str
    filters: Filters


def _wanted_models(matrix: Matrix, filters: Filters) -> tuple[set[str] | None, dict[str, ModelSpec]]:
    """The names --models asks for (None: every model), and those from outside the matrix."""
    outside: dict[str, ModelSpec] = {}
    if filters.models is None:
        return None, outside
    wanted_models = set()
    for name in filters.models:
        spec = matrix.find_model(name)
        if spec is None:
            spec = outside_model(name, matrix.models)  # a saved folder or a hub id
            if spec is None:
                raise UsageError(
                    "--models",
                    f"{name!r} is not a model of {matrix.path}, a folder or a hub id "
                    f"(known: {', '.join(matrix.models)})",
                )
            outside[spec.name] = spec
        wanted_models.add(spec.name)
    return wanted_models, outside


def _scenario_cells(
    plan: _Plan, name: str, spec: ModelSpec, sel: Selection, settings: Settings, scenario: str
) -> list[tuple[tuple[object, ...], Cell]]:
    """One model's cells of one scenario of a selection, each with the key that dedupes it."""
    filters = plan.filters
    if scenario == DYNAMIC_BATCH:
        cells = _dynamic_cells(plan, spec, sel, settings)
        return [((name, scenario, c.batch_sizes, c.mode, c.dynamic), c) for c in cells]
    if scenario == MIXED_RESOLUTION:
        cells = _mixed_cells(plan, spec, sel, settings)
        return [((name, scenario, c.batch_size, c.mode, c.dynamic), c) for c in cells]
    # a serving cell's requests are one image each (its batcher makes the batches, up to
    # the `serving.max_batch` setting): one cell per mode, batch size 1
    sizes = (1,) if scenario == SERVING else sel.batch_sizes
    if scenario != SERVING and filters.batch_sizes is not None:
        sizes = tuple(bs for bs in sizes if bs in filters.batch_sizes)
    modes = [m for m in sel.modes if filters.modes is None or m in filters.modes]
    out = []
    for bs in sizes:
        for mode in modes:
            for dtype in sel.dtypes or (settings.dtype,):
                # a selection's dtypes replace the settings' one dtype
                at = replace(settings, dtype=dtype) if sel.dtypes else settings
                cell = _cell(plan, spec, bs, mode, scenario, at)
                out.append(((name, scenario, bs, mode, dtype), cell))
    return out


def _cell(plan: _Plan, *args: Any, **kwargs: Any) -> Cell:
    """Cell(plan.build, *args, **kwargs), or the one-line error naming where a cell's rule was
    broken: an autocast dtype given to a scenario other than precision by --scenarios, or by the
    settings' `dtype` (a selection's own `dtypes` are checked when the file loads)."""
    matrix, profile, filters = plan.matrix, plan.profile, plan.filters
    try:
        return Cell(plan.build, *args, **kwargs)
    except SettingError as exc:
        if filters.scenarios is not None:
            where = "--scenarios"
        elif "dtype" in profile.settings:
            where = f"{matrix.path}: profiles.{profile.name}.settings.dtype"
        else:
            where = f"{matrix.path}: defaults.dtype"
        raise UsageError(where, exc.message) from None


def _dynamic_cells(plan: _Plan, spec: ModelSpec, sel: Selection, settings: Settings) -> list[Cell]:
    """A selection's dynamic-batch cells: one per compiled mode and `dynamic` setting, each
    serving the batch sizes in turn (the `dynamic_batch_sizes` setting, else the selection's;
    narrowed by --batch-sizes). Eager has no compile to make dynamic: no cell."""
    filters = plan.filters
    sizes = settings.dynamic_batch_sizes or sel.batch_sizes
    if filters.batch_sizes is not None:
        sizes = tuple(b for b in sizes if b in filters.batch_sizes)
    modes = [m for m in sel.modes if m != "eager" and (filters.modes is None or m in filters.modes)]
    if not modes:
        return []
    if len(sizes) < 2:
        where = (
            "--batch-sizes"
            if filters.batch_sizes is not None
            else f"{plan.matrix.path}: profiles.{plan.profile.name}"
        )
        raise UsageError(
            where,
            f"the {DYNAMIC_BATCH} scenario serves two or more batch sizes in turn, this selection gives "
            f"{list(sizes)}: set settings.dynamic_batch_sizes (e.g. [1, 4, 16]) or list more batch sizes",
        )
    wanted = [d for d in DYNAMIC_SETTINGS if filters.dynamic is None or d in filters.dynamic]
    return [
        _cell(plan, spec, sizes[0], mode, DYNAMIC_BATCH, settings, dynamic=d, batch_sizes=tuple(sizes))
        for mode in modes
        for d in wanted
    ]


def _mixed_cells(plan: _Plan, spec: ModelSpec, sel: Selection, settings: Settings) -> list[Cell]:
    """A selection's mixed-resolution cells: one per batch size, compiled mode and `dynamic`
    setting (eager has no compile to make dynamic: no cell)."""
    filters = plan.filters
    sizes = [b for b in sel.batch_sizes if filters.batch_sizes is None or b in filters.batch_sizes]
    modes = [m for m in sel.modes if m != "eager" and (filters.modes is None or m in filters.modes)]
    wanted = [d for d in DYNAMIC_SETTINGS if filters.dynamic is None or d in filters.dynamic]
    return [
        _cell(plan, spec, bs, mode, MIXED_RESOLUTION, settings, dynamic=d)
        for bs in sizes
        for mode in modes
        for d in wanted
    ]


def unmatched(cells: Sequence[Cell], filters: Filters) -> list[str]:
    """What a narrowing flag asked for that no cell has (the profile lacks it: `--batch-sizes 1,4`
    on a profile of batch size 1), each as one phrase naming the flag, the values and what the
    cells have instead; empty when every value asked for selected a cell."""
    sizes = {b for c in cells for b in (c.batch_sizes or (c.batch_size,))}
    modes = {c.mode for c in cells}
    said = []
    flags = (
        ("--batch-sizes", "batch size", filters.batch_sizes, sizes),
        ("--modes", "mode", filters.modes, modes),
    )
    for flag, what, asked, have in flags:
        missing = [str(v) for v in asked or () if v not in have]
        if missing and have:
            shown = ", ".join(str(v) for v in sorted(have, key=str))
            said.append(f"{flag} {','.join(missing)} selects no cell, run without it ({what} {shown} only)")
    return said


def _with_named_customs(matrix: Matrix, names: Sequence[str], wanted: set[str] | None) -> list[str]:
    """A selection's models, plus each custom configuration named with --models whose base the
    selection has (right after it): `--profile smoke --models ViT,ViT-6-layers` runs the custom
    configuration wherever, and however, the profile runs its base."""
    out: list[str] = []
    for name in names:
        out.append(name)
        for extra in sorted(wanted or ()):
            custom = matrix.models.get(extra)
            if custom is not None and custom.base == name and extra not in names and extra not in out:
                out.append(extra)
    return out
