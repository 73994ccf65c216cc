"""matrix.yaml: load and validate.

Validation happens here, where the data enters: every problem is reported as
`<file>: <field path>: <what is wrong>` (a `UsageError`, exit status 2) before any
model is built (the settings' keys: suite.spec.load_settings). Standard library + PyYAML
only (runs inside the containers).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from suite.spec import limits
from suite.spec.builds import read_build
from suite.spec.fields import Reader, kind, number
from suite.spec.load_settings import read_settings, settings_from
from suite.spec.model import Matrix, ModelSpec, Profile, Selection, deep_merge
from suite.spec.settings import Settings
from suite.spec.vocab import DTYPES, MODES, PRECISION, SCENARIOS, TASKS, autocast_to
from suite.spec.yamlfile import load_yaml


def _read_model(r: Reader, name: str) -> ModelSpec:
    task = r.str("task", choices=tuple(TASKS))
    hub_id = r.raw("id", "") or ""
    model_type = r.raw("model_type", "") or ""
    for key, value in (("id", hub_id), ("model_type", model_type)):
        if not isinstance(value, str):
            r.fail(f"must be a string, got {kind(value)}", key)
    if not hub_id and not model_type:
        r.fail("needs an `id` (hub checkpoint) or a `model_type` (offline config), or both")
    model_class = r.str("class") if r.has("class") else ""
    revision = r.str("revision") if r.has("revision") else ""
    config = r.mapping("config")
    processor = r.mapping("processor")
    if processor and "class" in processor and not isinstance(processor["class"], str):
        r.fail("must be a class name string", "processor.class")
    queries = r.raw("text_queries", [])
    if not isinstance(queries, list) or not all(isinstance(q, str) and q for q in queries):
        r.fail("must be a list of non-empty strings", "text_queries")
    params = r.float("params_m", maximum=limits.MAX_PARAMS_M) if r.has("params_m") else None
    tolerance, reason = _read_tolerance(r) if r.has("tolerance") else (None, "")
    smoke = r.mapping("smoke")
    for key in smoke:
        if key not in ("config", "processor"):
            r.fail(f"unknown key {key!r} (allowed: config, processor)", f"smoke.{key}")
        if not isinstance(smoke[key], Mapping):
            r.fail(f"must be a mapping, got {kind(smoke[key])}", f"smoke.{key}")
    _check_ranges(r, "config", config)
    _check_ranges(r, "processor", processor)
    _check_ranges(r, "smoke.config", smoke.get("config", {}))
    _check_ranges(r, "smoke.processor", smoke.get("processor", {}))
    r.done()
    return ModelSpec(
        name=name,
        task=task,
        hub_id=hub_id,
        model_type=model_type,
        model_class=model_class,
        revision=revision,
        config=config,
        processor=processor,
        text_queries=tuple(queries),
        published_params_m=params,
        smoke=smoke,
        tolerance=tolerance,
        tolerance_reason=reason,
    )


def _read_tolerance(r: Reader) -> tuple[float, str]:
    """A model's own accuracy tolerance (`tolerance: {value: 0.004, reason: ...}`): it replaces
    the settings' for the model's cells, and must say why (docs/accuracy.md)."""
    t = r.sub("tolerance")
    value = t.float("value", maximum=limits.MAX_TOLERANCE)
    reason = t.str("reason")
    t.done()
    return value, reason


def _check_ranges(r: Reader, key: str, values: Mapping[str, Any]) -> None:
    """Counts and sizes in range (suite.spec.limits). In a config only the upper bounds:
    whether 0 means "none" for a field depends on its class's default, which the child
    check (suite.measure.config_check) knows; a processor's sizes are all >= 1."""
    lower = key.endswith("processor")
    for path, problem in limits.range_problems(values, lower=lower):
        r.fail(problem, f"{key}.{path}" if key else path)


def _names(
    r: Reader, key: str, value: object, known: Iterable[str], everything: Iterable[str] | None = None
) -> tuple[str, ...]:
    """Names from `known`; `all` means `everything` (default: all of `known`)."""
    known = tuple(known)
    if value == "all":
        return tuple(everything) if everything is not None else known
    if not isinstance(value, list) or not value:
        r.fail(f"must be `all` or a non-empty list, got {kind(value)}", key)
    for item in value:
        if item not in known:
            r.fail(f"{item!r} is not defined (known: {', '.join(known)})", key)
    return tuple(value)


def _known(r: Reader, key: str, values: list[Any], known: Sequence[str], noun: str) -> list[Any]:
    for value in values:
        if value not in known:
            r.fail(f"{value!r} is not {noun} (known: {', '.join(known)})", key)
    return values


def _read_selection(r: Reader, models: Mapping[str, ModelSpec]) -> Selection:
    batch_sizes = r.list("batch_sizes")
    for b in batch_sizes:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            r.fail(f"batch sizes must be integers >= 1, got {kind(b)}", "batch_sizes")
        if b > limits.MAX_BATCH_SIZE:
            r.fail(f"batch sizes must be at most {limits.MAX_BATCH_SIZE}, got {number(b)}", "batch_sizes")
    modes = _known(r, "modes", r.list("modes"), MODES, "a mode")
    scenarios = _known(r, "scenarios", r.list("scenarios", ["inference"]), SCENARIOS, "a scenario")
    dtypes = _known(r, "dtypes", r.list("dtypes") if r.has("dtypes") else [], DTYPES, "a dtype")
    others = [s for s in scenarios if s != PRECISION]
    autocast = [d for d in dtypes if autocast_to(d)]
    if autocast and others:
        r.fail(f"{autocast[0]!r} runs in the {PRECISION} scenario only, not {others[0]!r}", "dtypes")
    hub = tuple(name for name, spec in models.items() if not spec.base)
    sel = Selection(
        models=_names(r, "models", r.raw("models"), models, everything=hub),
        batch_sizes=tuple(dict.fromkeys(batch_sizes)),
        modes=tuple(dict.fromkeys(modes)),
        scenarios=tuple(dict.fromkeys(scenarios)),
        dtypes=tuple(dict.fromkeys(dtypes)),
    )
    r.done()
    return sel


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate matrix.yaml. Raises UsageError naming the file and field."""
    path = Path(path)
    file = str(path)
    data = load_yaml(path)  # bounded: size, aliases, nesting, duplicate keys
    top = Reader(file, "", data)
    version = top.raw("version", 1)
    if version != 1:
        top.fail(f"version {version!r} is not supported (this suite reads version 1)", "version")

    defaults_r = top.sub("defaults")
    read = read_settings(defaults_r, Settings())
    defaults_r.done()
    defaults = settings_from(defaults_r, Settings(), read)

    builds_r = top.sub("builds", required=True)
    builds = {name: read_build(builds_r.sub(name), name) for name in builds_r.names()}
    if not builds:
        builds_r.fail("must declare at least one build")
    builds_r._seen.update(builds)

    models = _read_models(top)
    profiles = _read_profiles(top, defaults, models)
    top.done()
    return Matrix(path=path, defaults=defaults, builds=builds, models=models, profiles=profiles)


def _read_models(top: Reader) -> dict[str, ModelSpec]:
    """`models:` then `custom:` (configurations built on a model)."""
    models_r = top.sub("models", required=True)
    models = {name: _read_model(models_r.sub(name), name) for name in models_r.names()}
    if not models:
        models_r.fail("must declare at least one model")
    models_r._seen.update(models)
    for name, spec in models.items():
        if "|" in name or "," in name:
            models_r.fail("a model name may not contain '|' or ','", name)
        del spec

    custom_r = top.sub("custom")
    hub_models = dict(models)
    for name in custom_r.names():
        if name in hub_models:
            custom_r.fail("a custom configuration may not reuse a model's name", name)
        if "|" in name or "," in name:
            custom_r.fail("a custom configuration's name may not contain '|' or ','", name)
        models = {**models, name: _read_custom(custom_r.sub(name), name, hub_models)}
    custom_r._seen.update(custom_r.data)
    return models


def _read_profiles(top: Reader, defaults: Settings, models: Mapping[str, ModelSpec]) -> dict[str, Profile]:
    file = top.file
    profiles_r = top.sub("profiles", required=True)
    profiles: dict[str, Profile] = {}
    for name in profiles_r.names():
        pr = profiles_r.sub(name)
        settings_r = pr.sub("settings")
        settings = read_settings(settings_r, defaults)
        settings_r.done()
        settings_from(settings_r, defaults, settings)  # the profile's settings keep the rules
        select = pr.list("select")
        selections = tuple(
            _read_selection(Reader(file, f"{pr.path}.select[{i}]", s), models) for i, s in enumerate(select)
        )
        description = pr.raw("description", "") or ""
        cells = sum(len(s.models) * len(s.batch_sizes) * len(s.modes) * len(s.scenarios) for s in selections)
        if cells > limits.MAX_CELLS:
            pr.fail(f"selects {cells:,} cells, more than a profile may ({limits.MAX_CELLS:,})", "select")
        pr.done()
        profiles[name] = Profile(name, str(description), settings, selections)
    if not profiles:
        profiles_r.fail("must declare at least one profile")
    profiles_r._seen.update(profiles)
    return profiles


CUSTOM_KEYS: tuple[str, ...] = ("base", "processor")  # every other key overrides the config


def _read_custom(r: Reader, name: str, models: Mapping[str, ModelSpec]) -> ModelSpec:
    """A named custom configuration: a hub model (`base`) plus config overrides, always built
    from the base's offline config with random weights (there is no checkpoint for it).

    `processor` (optional) overrides the base's processor settings, e.g. its size when
    `image_size` changes. Under a shrunk (smoke) profile the base's smoke overrides apply
    first and this configuration's overrides after them, so what makes it differ from its
    base survives the shrinking. Whether each override is a field of the base's config
    class, with a value of the right type and range, needs transformers:
    `suite.run.preflight.check_models` checks it when a profile selects the configuration.
    """
    base_name = r.str("base", choices=tuple(models))
    base = models[base_name]
    if not base.model_type:
        r.fail(f"base {base_name!r} has no model_type, so it cannot be rebuilt from a config", "base")
    processor = r.mapping("processor")
    _check_ranges(r, "processor", processor)
    overrides: dict[str, Any] = {}
    for key, value in r.data.items():
        if key in CUSTOM_KEYS:
            continue
        if not isinstance(key, str) or not key.isidentifier():
            r.fail(f"a config field name must be an identifier, got {kind(key)}", str(key))
        problem = _override_problem(value)
        if problem:
            r.fail(problem, key)
        _check_ranges(r, "", {key: value})
        overrides[key] = value
        r._seen.add(key)
    if not overrides and not processor:
        r.fail("needs at least one config override (e.g. num_hidden_layers: 6) beside `base`")
    r.done()
    smoke = {
        "config": deep_merge(base.smoke.get("config", {}), overrides),
        "processor": deep_merge(base.smoke.get("processor", {}), processor),
    }
    return replace(
        base,
        name=name,
        hub_id="",
        revision="",
        config=deep_merge(base.config, overrides),
        processor=deep_merge(base.processor, processor),
        published_params_m=None,
        smoke=smoke,
        base=base_name,
        overrides=overrides,
    )


def _override_problem(value: object, depth: int = 0) -> str:
    """Why a config override value cannot be passed to a config class ("" if it can)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        if isinstance(value, float) and (value != value or value in (float("inf"), float("-inf"))):
            return f"must be a finite number, got {value}"
        return ""
    if depth > 8:
        return "is nested too deeply"
    if isinstance(value, list):
        return next((p for p in (_override_problem(v, depth + 1) for v in value) if p), "")
    if isinstance(value, Mapping):
        if any(not isinstance(k, str) for k in value):
            return "keys of a nested mapping must be strings"
        return next((p for p in (_override_problem(v, depth + 1) for v in value.values()) if p), "")
    return f"must be a number, string, boolean, list or mapping, got {kind(value)}"
