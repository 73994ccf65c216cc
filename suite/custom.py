"""Check custom configurations against their config classes, before any cell runs.

matrix.yaml's `custom:` entries are a base model plus config overrides. Only transformers
knows which fields a config class has and of which type, and a typo there (`num_hidden_layer: 6`)
would otherwise be accepted silently as a new attribute and benchmark the base model under
another name. The parent process (plan, run) never imports torch, so the check runs in a child
process, with the same Python the workers use: `python -m suite.custom` reads the configurations
as JSON on stdin and prints the problems as one JSON line. Each problem becomes a UsageError that
names the file and field (exit status 2).
"""

from __future__ import annotations

import difflib
import inspect
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.matrix import Cell, Matrix, ModelSpec

PACKAGE_ROOT = Path(__file__).resolve().parent.parent
CHECK_TIMEOUT_S = 300
_checked: set[str] = set()  # payloads already checked in this process (cmd_run expands twice)


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

    from suite.models import build_config

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
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        problems.append(Problem(spec.name, "", f"{cls.__name__} rejects the overrides: {first}"))
    return problems


def check_selected(matrix: Matrix, cells: Iterable[Cell]) -> None:
    """Raise UsageError for the first problem among the custom configurations `cells` use."""
    wanted: dict[tuple[str, bool], ModelSpec] = {}
    for cell in cells:
        if cell.model.base:
            wanted.setdefault((cell.model.name, cell.settings.shrink), cell.model)
    if not wanted:
        return
    # insertion order (the matrix's) keeps the payload stable; default=str: a base config may
    # hold YAML values JSON has no type for (the child then sees their text)
    payload = json.dumps(
        [{"spec": asdict(spec), "shrink": shrink} for (_, shrink), spec in wanted.items()], default=str
    )
    if payload in _checked:
        return
    problems = _run_child(payload)
    if problems is None:
        return
    if problems:
        p = problems[0]
        more = f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""
        field = ".".join(x for x in ("custom", p.name, p.key) if x)
        raise UsageError(f"{matrix.path}: {field}", p.message + more)
    _checked.add(payload)


def _run_child(payload: str) -> list[Problem] | None:
    """Problems found by `python -m suite.custom`; None when it could not check (no transformers
    here: the workers will report a bad configuration in their rows instead)."""
    import os

    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "suite.custom"],
            input=payload,
            capture_output=True,
            text=True,
            env=env,
            timeout=CHECK_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        print(
            f"suite: warning: checking custom configurations took over {CHECK_TIMEOUT_S} s", file=sys.stderr
        )
        return None
    lines = proc.stdout.strip().splitlines()
    try:
        answer = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        answer = None
    if not isinstance(answer, dict):
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        print(f"suite: warning: custom configurations not checked ({tail})", file=sys.stderr)
        return None
    if "unavailable" in answer:
        print(f"suite: warning: custom configurations not checked ({answer['unavailable']})", file=sys.stderr)
        return None
    return [Problem(**p) for p in answer["problems"]]


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
