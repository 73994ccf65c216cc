"""Check custom configurations against their config classes: the child side.

matrix.yaml's `custom:` entries are a base model plus config overrides. Only transformers
knows which fields a config class has and of which type, and a typo there (`num_hidden_layer: 6`)
would otherwise be accepted silently as a new attribute and benchmark the base model under
another name. The parent (plan, run) never imports torch, so `suite.run.preflight.check_custom`
runs `python -m suite.measure.config_check`, which reads the configurations as JSON on stdin and
prints the problems as one JSON line.
"""

from __future__ import annotations

import difflib
import inspect
import json
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from suite.errors import first_line
from suite.spec.model import ModelSpec


@dataclass(frozen=True)
class Problem:
    name: str  # the custom configuration
    key: str  # its field ("" for the entry as a whole)
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


def config_problems(spec: ModelSpec, shrink: bool) -> list[Problem]:
    """What is wrong with a custom configuration's overrides, per transformers (imported here)."""
    import transformers
    from transformers import AutoConfig

    from suite.measure.models import build_config

    version = transformers.__version__
    try:
        defaults_obj = AutoConfig.for_model(spec.model_type)
    except Exception as exc:  # an unknown model_type: the base is wrong, not the override
        return [Problem(spec.name, "base", f"model type {spec.model_type!r} unknown to transformers: {exc}")]
    cls = type(defaults_obj)
    defaults = defaults_obj.to_dict()
    aliases: Mapping[str, str] = getattr(cls, "attribute_map", {}) or {}
    params = {
        n
        for n, p in inspect.signature(cls.__init__).parameters.items()
        if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL) and n != "self"
    }
    known = set(defaults) | set(aliases) | params
    problems: list[Problem] = []
    for key, value in spec.overrides.items():
        if key not in known:
            close = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            problems.append(
                Problem(spec.name, key, f"not a field of {cls.__name__} (transformers {version}){hint}")
            )
            continue
        default = defaults.get(aliases.get(key, key))
        problem = _type_problem(key, value, default)
        if problem:
            problems.append(Problem(spec.name, key, problem))
    if problems:
        return problems
    try:
        build_config(spec, shrink)
    except Exception as exc:
        first = first_line(str(exc), type(exc).__name__)
        problems.append(Problem(spec.name, "", f"{cls.__name__} rejects the overrides: {first}"))
    return problems


def main() -> int:
    """Child side: JSON [{spec, shrink}] on stdin -> {"problems": [...]} on stdout."""
    items = json.loads(sys.stdin.read())
    try:
        import transformers  # noqa: F401
    except ImportError as exc:
        print(json.dumps({"unavailable": f"transformers cannot be imported: {exc}"}))
        return 0
    problems: list[Problem] = []
    for item in items:
        raw = item["spec"]
        spec = ModelSpec(**{**raw, "text_queries": tuple(raw["text_queries"])})
        problems += config_problems(spec, bool(item["shrink"]))
    print(json.dumps({"problems": [asdict(p) for p in problems]}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
