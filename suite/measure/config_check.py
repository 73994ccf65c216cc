"""Check the models a run selects against transformers, before any cell: the child side.

Only transformers knows which model types and classes exist, which fields a config class
has and of which type, and what each field defaults to. Without this check a typo
(`model_type: vitt`, `num_hidden_layer: 6`) or an absurd value (`num_hidden_layers: 0`,
which builds a ViT without encoder layers whose row then says `ok`) surfaces only in the
cells, or never. The parent (plan, run) never imports torch, so
`suite.run.preflight.check_models` runs `python -m suite.measure.config_check`, which reads
the models as JSON on stdin and prints the problems as one JSON line; transformers' config
modules import no torch, so the check takes seconds. Under `run` the same child probes the
device first (`--probe D`), so that the parent expands the cells once, for what it found.
"""

from __future__ import annotations

import copy
import difflib
import functools
import inspect
import json
import re
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any

from suite.errors import first_line
from suite.spec import limits
from suite.spec.model import ModelSpec, deep_merge


@dataclass(frozen=True)
class Problem:
    field: str  # where in matrix.yaml: "custom.ViT-6-layers.num_hidden_layers", "models.ViT.model_type"
    message: str


def _type_problem(key: str, value: Any, default: Any) -> str:
    """Why `value` cannot replace `default` ("" if it can): the default's type decides."""
    if default is None or value is None:
        return ""
    if isinstance(default, bool):
        ok = isinstance(value, bool)
        want = "true or false"
    elif isinstance(default, int):
        ok = isinstance(value, int) and not isinstance(value, bool)
        want = "an integer"
    elif isinstance(default, float):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool)
        want = "a number"
    elif isinstance(default, str):
        ok = isinstance(value, str)
        want = "a string"
    elif isinstance(default, (list, tuple)):
        ok = isinstance(value, list)
        want = "a list"
    elif isinstance(default, Mapping):
        ok = isinstance(value, Mapping)
        want = "a mapping"
    else:
        return ""
    if ok:
        return ""
    shown = (
        f"{type(value).__name__} {value!r}" if not isinstance(value, (list, dict)) else type(value).__name__
    )
    return f"must be {want} (the default is {default!r}), got {shown}"


def _origin(spec: ModelSpec, shrink: bool, path: str) -> str:
    """Where in matrix.yaml the config field `path` (dotted) was written: a custom
    configuration's own override, else its base's (or the model's) smoke or full config."""
    top = path.split(".")[0]
    if spec.base and top in spec.overrides:
        return f"custom.{spec.name}.{path}"
    home = f"models.{spec.base or spec.name}"
    smoke = spec.smoke.get("config", {})
    if shrink and top in smoke:
        return f"{home}.smoke.config.{path}"
    return f"{home}.config.{path}"


def _class_problems(spec: ModelSpec, from_config: bool, names: frozenset[str], version: str) -> list[Problem]:
    """The model class (and, for a model built from its config, the processor class) exist in
    this transformers: looked up by name, since importing them would import torch."""
    home = f"models.{spec.base or spec.name}"
    wanted = [(f"{home}.class" if spec.model_class else f"{home}.task", spec.auto_class)]
    processor = spec.processor.get("class") if from_config else None
    if isinstance(processor, str) and processor:  # a custom configuration's comes from its base
        wanted.append((f"{home}.processor.class", processor))
    problems = []
    for field, name in wanted:
        if name not in names:
            close = difflib.get_close_matches(name, sorted(names), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(Problem(field, f"transformers {version} has no class {name!r}{hint}"))
    return problems


def _override_problems(
    spec: ModelSpec, cls: type, defaults: Mapping[str, Any], version: str
) -> list[Problem]:
    """A custom configuration's overrides: fields of the config class, of the right type."""
    aliases: Mapping[str, str] = getattr(cls, "attribute_map", {}) or {}
    params = {
        n
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"
    }
    known = set(defaults) | set(aliases) | params
    problems: list[Problem] = []
    for key, value in spec.overrides.items():
        field = f"custom.{spec.name}.{key}"
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(Problem(field, f"not a field of {cls.__name__} (transformers {version}){hint}"))
            continue
        problem = _type_problem(key, value, defaults.get(aliases.get(key, key)))
        if problem:
            problems.append(Problem(field, problem))
    return problems


# Fields that name an activation function (`hidden_act: gelu`, DETR's `activation_function`):
# the models look the name up in transformers' ACT2FN when they are built, so a name it lacks
# fails every cell of the model (a KeyError in the worker), or never shows in `plan`.
_ACTIVATION_NAME = re.compile(r"^(\w+_act|activation|activation_function)$")


def _activation_fields(values: Mapping[str, Any], path: str = "") -> list[tuple[str, str]]:
    """(dotted field path, name) of each activation named in `values` and its sub-configs."""
    out: list[tuple[str, str]] = []
    for key, value in values.items():
        if isinstance(value, Mapping):
            out += _activation_fields(value, f"{path}{key}.")
        elif isinstance(value, str) and _ACTIVATION_NAME.match(str(key)):
            out.append((f"{path}{key}", value))
    return out


def _activation_problems(values: Mapping[str, Any], version: str) -> list[tuple[str, str]]:
    """(dotted path, problem) for each activation the matrix names that transformers lacks."""
    fields = _activation_fields(values)
    if not fields:
        return []
    # imports torch (seconds): done only when the matrix names an activation (matrix.yaml does not)
    from transformers.activations import ACT2FN

    known = sorted(ACT2FN.keys())
    out = []
    for path, name in fields:
        if name not in known:
            close = difflib.get_close_matches(name, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            out.append((path, f"{name!r} is not an activation transformers {version} has{hint}"))
    return out


@functools.lru_cache(maxsize=1)
def _transformers_names() -> frozenset[str]:
    """Every name transformers exports (its lazy module lists them without importing them;
    slow enough, half a second, to ask once)."""
    import transformers

    return frozenset(dir(transformers))


def model_problems(spec: ModelSpec, shrink: bool, from_config: bool) -> list[Problem]:
    """What transformers says is wrong with a model as the matrix gives it (imported here).
    `from_config`: the cells build it from its config (random weights), so the config, its
    ranges and its processor class count; a hub checkpoint brings its own."""
    import transformers
    from transformers import CONFIG_MAPPING, AutoConfig

    from suite.measure.models import build_config

    version = transformers.__version__
    home = f"models.{spec.base or spec.name}"
    problems = _class_problems(spec, from_config, _transformers_names(), version)
    if not spec.model_type:
        return problems
    try:
        defaults_obj = AutoConfig.for_model(spec.model_type)
    except Exception:  # an unknown model_type
        close = difflib.get_close_matches(spec.model_type, sorted(CONFIG_MAPPING.keys()), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return [
            Problem(f"{home}.model_type", f"{spec.model_type!r} is unknown to transformers {version}{hint}")
        ]
    if not from_config:
        return problems
    cls = type(defaults_obj)
    defaults = defaults_obj.to_dict()
    problems += _override_problems(spec, cls, defaults, version)
    values = deep_merge(spec.config, spec.smoke.get("config", {})) if shrink else dict(spec.config)
    problems += [
        Problem(_origin(spec, shrink, path), problem)
        for path, problem in limits.range_problems(values, defaults) + _activation_problems(values, version)
    ]
    if problems:
        return problems
    where = f"custom.{spec.name}" if spec.base else f"{home}.config"
    try:
        # a copy: some config classes pop from the dicts they get (transformers 4.31's
        # Mask2FormerConfig takes `model_type` out of `backbone_config`)
        config = build_config(
            replace(spec, config=copy.deepcopy(spec.config), smoke=copy.deepcopy(spec.smoke)), shrink
        )
        if callable(getattr(config, "validate", None)):  # transformers 5: the class's own validators
            config.validate()
    except Exception as exc:
        first = first_line(str(exc), type(exc).__name__)
        return [Problem(where, f"{cls.__name__} rejects the configuration: {first}")]
    problems = []
    for heads, width, problem in limits.head_problems(config.to_dict()):
        # name the one this custom configuration changed, if it changed one
        fields = [_origin(spec, shrink, heads), _origin(spec, shrink, width)]
        problems.append(Problem(next((f for f in fields if f.startswith("custom.")), fields[0]), problem))
    return problems


def check_items(items: list[dict[str, Any]]) -> list[Problem]:
    """The problems of every model in the parent's payload ([{spec, shrink, from_config}])."""
    problems: list[Problem] = []
    for item in items:
        raw = item["spec"]
        spec = ModelSpec(**{**raw, "text_queries": tuple(raw["text_queries"])})
        problems += model_problems(spec, bool(item["shrink"]), bool(item["from_config"]))
    return problems


def read_request(text: str) -> list[dict[str, Any]]:
    """The models to check, from main's stdin (nothing sent: none to check)."""
    return json.loads(text) if text.strip() else []


def probe(device: str) -> dict[str, Any]:
    """What `suite env --json --device D` says of this Python, or why it cannot: `run` then starts
    one Python before its first cell, not two."""
    from suite.measure import provenance

    try:
        return {"environment": asdict(provenance.collect(device))}
    except RuntimeError as exc:  # --device cuda without a GPU: said where `run` probes
        return {"device_error": str(exc)}
    except Exception as exc:  # any other surprise: the parent probes on its own, and says what
        return {"probe_failed": first_line(str(exc))}


def main(argv: list[str] | None = None) -> int:
    """Child side: `--probe D` first answers what the probe for device D found (one JSON line);
    then JSON [{spec, shrink, from_config}] on stdin -> {"problems": [...]} on stdout. The parent
    sends the models once it has expanded the cells for what the probe found."""
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--probe"] and len(args) == 2:
        print(json.dumps(probe(args[1])), flush=True)
    items = read_request(sys.stdin.read())
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"unavailable": f"transformers cannot be imported: {exc}"}))
        return 0
    print(json.dumps({"problems": [asdict(p) for p in check_items(items)]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
