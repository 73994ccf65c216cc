"""matrix.yaml: load, validate, expand into cells.

Validation happens here, where the data enters: every problem is reported as
`<file>: <field path>: <what is wrong>` (a `UsageError`, exit status 2) before any
model is built. Standard library + PyYAML only (runs inside the containers).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

import yaml

from suite.errors import UsageError

TASKS: dict[str, str] = {
    # task (as in the guide's tables) -> default auto class
    "Image Classification": "AutoModelForImageClassification",
    "Image Segmentation": "AutoModelForSemanticSegmentation",
    "Object Detection": "AutoModelForObjectDetection",
}
MODES: tuple[str, ...] = (
    "eager",
    "default",
    "reduce-overhead",
    "max-autotune",
    "max-autotune-no-cudagraphs",
)
DTYPES: tuple[str, ...] = ("float32", "float16", "bfloat16")
WEIGHTS: tuple[str, ...] = ("pretrained", "random")
SCENARIOS: tuple[str, ...] = ("inference", "train")
BUILD_KINDS: tuple[str, ...] = ("stable", "nightly", "release")
COMPILE_CACHES: tuple[str, ...] = ("cold", "run")
DEVICES: tuple[str, ...] = ("auto", "cpu", "cuda")


# ---------------------------------------------------------------------------------------
# Dataclasses: what the rest of the suite sees.


@dataclass(frozen=True)
class ImageSpec:
    """The photograph every iteration feeds: a URL (downloaded once, cached) and a local file."""

    url: str = ""
    path: str = ""


@dataclass(frozen=True)
class Settings:
    """Per-cell measurement settings: matrix defaults, then profile, then CLI overrides."""

    dtype: str = "float32"
    weights: str = "pretrained"
    warmup: int = 10
    iterations: int = 300
    timeout_s: float = 1800.0
    tolerance: float = 1e-3
    shrink: bool = False
    compile_cache: str = "cold"  # cold: a fresh inductor/triton cache per cell; run: shared
    image: ImageSpec = field(default_factory=ImageSpec)


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
    """One measurement: (build, model, task, batch_size, mode, dtype, scenario) + settings."""

    build: str
    model: ModelSpec
    batch_size: int
    mode: str
    scenario: str
    settings: Settings

    @property
    def label(self) -> str:
        return f"{self.model.name} bs={self.batch_size} {self.mode} {self.scenario}"

    @property
    def variant(self) -> str:
        """The CSV's `variant`: "smoke" for a shrunk model, "custom of <base>" for a custom
        configuration, both joined by ", " when a custom configuration is shrunk."""
        parts = ["smoke"] if self.settings.shrink else []
        if self.model.base:
            parts.append(f"custom of {self.model.base}")
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
        }

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @staticmethod
    def from_json(text: str) -> Cell:
        raw = json.loads(text)
        model = ModelSpec(**{**raw["model"], "text_queries": tuple(raw["model"]["text_queries"])})
        settings = Settings(**{**raw["settings"], "image": ImageSpec(**raw["settings"]["image"])})
        return Cell(
            build=raw["build"],
            model=model,
            batch_size=raw["batch_size"],
            mode=raw["mode"],
            scenario=raw["scenario"],
            settings=settings,
        )


# ---------------------------------------------------------------------------------------
# Validation helpers: every read names its field path.


class _Reader:
    """Typed access to one YAML mapping, with the file and field path in every error."""

    def __init__(self, file: str, path: str, data: object) -> None:
        self.file, self.path = file, path
        if not isinstance(data, Mapping):
            self.fail(f"must be a mapping, got {_kind(data)}")
        self.data: Mapping[str, Any] = data
        self._seen: set[str] = set()

    def where(self, key: object = "") -> str:
        return f"{self.file}: {_join(self.path, key) or '(document)'}"

    def fail(self, message: str, key: object = "") -> None:
        raise UsageError(self.where(key), message)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        self._seen.add(key)
        return self.data.get(key, default)

    def sub(self, key: object, required: bool = False) -> _Reader:
        if required and key not in self.data:
            self.fail("is required", key)
        return _Reader(self.file, _join(self.path, key), self.raw(key, {}))

    def str(self, key: str, default: str | None = None, choices: Sequence[str] = ()) -> str:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"must be a non-empty string, got {_kind(value)}", key)
        if choices and value not in choices:
            self.fail(f"{value!r} is not one of: {', '.join(choices)}", key)
        return value

    def int(self, key: str, default: int | None = None, minimum: int = 1) -> int:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"must be an integer, got {_kind(value)}", key)
        if value < minimum:
            self.fail(f"must be >= {minimum}, got {value}", key)
        return value

    def float(self, key: str, default: float | None = None, positive: bool = True) -> float:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"must be a number, got {_kind(value)}", key)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(f"must be a finite number, got {value}", key)
        if positive and value <= 0:
            self.fail(f"must be > 0, got {value}", key)
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            self.fail(f"must be true or false, got {_kind(value)}", key)
        return value

    def list(self, key: str, default: list[Any] | None = None) -> list[Any]:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if not isinstance(value, list) or not value:
            self.fail(f"must be a non-empty list, got {_kind(value)}", key)
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.raw(key, {})
        if not isinstance(value, Mapping):
            self.fail(f"must be a mapping, got {_kind(value)}", key)
        if any(not isinstance(k, str) for k in value):
            self.fail("keys must be strings", key)
        return dict(value)

    def names(self) -> list[str]:
        """The keys of a section of named entries (builds, models, profiles): non-empty strings."""
        for key in self.data:
            if not isinstance(key, str) or not key.strip():
                self.fail(f"a name must be a non-empty string, got {_kind(key)}", key)
        return list(self.data)

    def done(self) -> None:
        """Unknown keys are errors: a typo must not silently fall back to a default."""
        unknown = [k for k in self.data if k not in self._seen]
        if unknown:
            self.fail(f"unknown key {unknown[0]!r}", unknown[0])


_PLAIN_KEY = re.compile(r"^[\w.+-]+(?:\[\d+\])?$")


def _join(path: str, key: object) -> str:
    """`path.key`, the key quoted when it is not a plain name (a space, a newline, a
    number), so the field path stays on one line and says exactly which key."""
    if key in ("", None):
        return path
    text = key if isinstance(key, str) and _PLAIN_KEY.match(key) else repr(key)
    return f"{path}.{text}" if path else text


def _kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, (int, float, str)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


def _read_settings(r: _Reader, base: Settings) -> dict[str, Any]:
    """Validated setting overrides present in `r` (only those keys)."""
    out: dict[str, Any] = {}
    if r.has("dtype"):
        out["dtype"] = r.str("dtype", choices=DTYPES)
    if r.has("weights"):
        out["weights"] = r.str("weights", choices=WEIGHTS)
    if r.has("warmup"):
        out["warmup"] = r.int("warmup", minimum=0)
    if r.has("iterations"):
        out["iterations"] = r.int("iterations", minimum=2)
    if r.has("timeout_s"):
        out["timeout_s"] = r.float("timeout_s")
    if r.has("tolerance"):
        out["tolerance"] = r.float("tolerance")
    if r.has("shrink"):
        out["shrink"] = r.bool("shrink", False)
    if r.has("compile_cache"):
        out["compile_cache"] = r.str("compile_cache", choices=COMPILE_CACHES)
    if r.has("image"):
        img = r.sub("image")
        url = img.raw("url", base.image.url) or ""
        path = img.raw("path", base.image.path) or ""
        for key, value in (("url", url), ("path", path)):
            if not isinstance(value, str):
                img.fail(f"must be a string, got {_kind(value)}", key)
        if not url and not path:
            img.fail("needs a url, a path, or both")
        img.done()
        out["image"] = ImageSpec(url=url, path=path)
    return out


def _read_model(r: _Reader, name: str) -> ModelSpec:
    task = r.str("task", choices=tuple(TASKS))
    hub_id = r.raw("id", "") or ""
    model_type = r.raw("model_type", "") or ""
    for key, value in (("id", hub_id), ("model_type", model_type)):
        if not isinstance(value, str):
            r.fail(f"must be a string, got {_kind(value)}", key)
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
    params = r.float("params_m") if r.has("params_m") else None
    smoke = r.mapping("smoke")
    for key in smoke:
        if key not in ("config", "processor"):
            r.fail(f"unknown key {key!r} (allowed: config, processor)", f"smoke.{key}")
        if not isinstance(smoke[key], Mapping):
            r.fail(f"must be a mapping, got {_kind(smoke[key])}", f"smoke.{key}")
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
    )


# Docker build arguments that nox sets from other fields of the build (see suite/docker.py).
DERIVED_BUILD_ARGS: tuple[str, ...] = (
    "BUILD_NAME",
    "TORCH_VERSION",
    "CUDA_VERSION",
    "PYTHON_VERSION",
    "TORCH_INDEX_URL",
    "SUITE_IMAGE",
)
_BUILD_ARG_NAME = re.compile(r"^[A-Z][A-Z0-9_]*$")
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
# A build argument is stored in the image's history (`docker history`): never a secret.
_SECRET_NAME = re.compile(r"(TOKEN|KEY|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


def _read_build_args(r: _Reader) -> dict[str, str]:
    args = r.mapping("build_args")
    for key, value in args.items():
        where = f"build_args.{key}"
        if not _BUILD_ARG_NAME.match(key):
            r.fail("a build argument name is upper case letters, digits and '_'", where)
        if key in DERIVED_BUILD_ARGS:
            r.fail("is set by nox from the build's other fields; remove it here", where)
        if _SECRET_NAME.search(key):
            r.fail(
                "looks like a secret; build arguments are readable in the image's history: "
                "pass secrets at run time (docker run -e NAME)",
                where,
            )
        if not isinstance(value, str) or not value.strip():
            r.fail(f"must be a non-empty string (in quotes), got {_kind(value)}", where)
    # A wheel given by URL is installed with --require-hashes: URL and sha256 come in pairs.
    for key, value in args.items():
        where = f"build_args.{key}"
        if key.endswith("_WHEEL_URL"):
            if not value.endswith(".whl"):
                r.fail("must be the URL of a wheel (.whl)", where)
            if key[: -len("URL")] + "SHA256" not in args:
                r.fail(f"needs {key[: -len('URL')]}SHA256 beside it (installed with --require-hashes)", where)
        if key.endswith("_WHEEL_SHA256"):
            if not _SHA256.match(value):
                r.fail(f"must be the wheel's sha256 (64 lower-case hex digits), got {value!r}", where)
            if key[: -len("SHA256")] + "URL" not in args:
                r.fail(f"goes with a {key[: -len('SHA256')]}URL, which is missing", where)
    return args


def _read_build(r: _Reader, name: str) -> BuildSpec:
    pins = r.raw("pins", [])
    if not isinstance(pins, list) or not all(isinstance(p, str) and p for p in pins):
        r.fail("must be a list of requirement strings", "pins")
    python = r.raw("python")
    if isinstance(python, float):  # 3.10 written unquoted parses as 3.1
        r.fail('write the version in quotes, e.g. "3.10"', "python")
    cuda = r.raw("cuda", "")
    if isinstance(cuda, float):  # 11.8 unquoted is a number; 12.10 would become 12.1
        r.fail('write the version in quotes, e.g. "11.8"', "cuda")
    container = r.str("container") if r.has("container") else ""
    local = r.bool("local", True)
    build_args = _read_build_args(r)
    if build_args and not container:
        r.fail("build arguments need a `container` folder to build", "build_args")
    if not local and not container:
        r.fail("a build that is not local needs a `container` folder, or nothing can run it", "local")
    spec = BuildSpec(
        name=name,
        kind=r.str("kind", choices=BUILD_KINDS),
        python=r.str("python"),
        torch=r.str("torch"),
        container=container,
        cuda=str(cuda or ""),
        index_url=r.str("index_url") if r.has("index_url") else "",
        pins=tuple(pins),
        description=str(r.raw("description", "") or ""),
        local=local,
        build_args=build_args,
    )
    r.done()
    return spec


def _names(
    r: _Reader, key: str, value: object, known: Iterable[str], everything: Iterable[str] | None = None
) -> tuple[str, ...]:
    """Names from `known`; `all` means `everything` (default: all of `known`)."""
    known = tuple(known)
    if value == "all":
        return tuple(everything) if everything is not None else known
    if not isinstance(value, list) or not value:
        r.fail(f"must be `all` or a non-empty list, got {_kind(value)}", key)
    for item in value:
        if item not in known:
            r.fail(f"{item!r} is not defined (known: {', '.join(known)})", key)
    return tuple(value)


def _read_selection(r: _Reader, models: Mapping[str, ModelSpec]) -> Selection:
    batch_sizes = r.list("batch_sizes")
    for b in batch_sizes:
        if isinstance(b, bool) or not isinstance(b, int) or b < 1:
            r.fail(f"batch sizes must be integers >= 1, got {_kind(b)}", "batch_sizes")
    modes = r.list("modes")
    for m in modes:
        if m not in MODES:
            r.fail(f"{m!r} is not a mode (known: {', '.join(MODES)})", "modes")
    scenarios = r.list("scenarios", ["inference"])
    for s in scenarios:
        if s not in SCENARIOS:
            r.fail(f"{s!r} is not a scenario (known: {', '.join(SCENARIOS)})", "scenarios")
    hub = tuple(name for name, spec in models.items() if not spec.base)
    sel = Selection(
        models=_names(r, "models", r.raw("models"), models, everything=hub),
        batch_sizes=tuple(dict.fromkeys(batch_sizes)),
        modes=tuple(dict.fromkeys(modes)),
        scenarios=tuple(dict.fromkeys(scenarios)),
    )
    r.done()
    return sel


def load_matrix(path: str | Path) -> Matrix:
    """Read and validate matrix.yaml. Raises UsageError naming the file and field."""
    path = Path(path)
    file = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(file, "no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(file, f"cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{file}:{mark.line + 1}" if mark else file
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise UsageError(where, f"not valid YAML: {problem}") from None
    top = _Reader(file, "", data)
    version = top.raw("version", 1)
    if version != 1:
        top.fail(f"version {version!r} is not supported (this suite reads version 1)", "version")

    defaults_r = top.sub("defaults")
    defaults = replace(Settings(), **_read_settings(defaults_r, Settings()))
    defaults_r.done()

    builds_r = top.sub("builds", required=True)
    builds = {name: _read_build(builds_r.sub(name), name) for name in builds_r.names()}
    if not builds:
        builds_r.fail("must declare at least one build")
    builds_r._seen.update(builds)

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

    profiles_r = top.sub("profiles", required=True)
    profiles: dict[str, Profile] = {}
    for name in profiles_r.names():
        pr = profiles_r.sub(name)
        settings_r = pr.sub("settings")
        settings = _read_settings(settings_r, defaults)
        settings_r.done()
        select = pr.list("select")
        selections = tuple(
            _read_selection(_Reader(file, f"{pr.path}.select[{i}]", s), models) for i, s in enumerate(select)
        )
        description = pr.raw("description", "") or ""
        pr.done()
        profiles[name] = Profile(name, str(description), settings, selections)
    if not profiles:
        profiles_r.fail("must declare at least one profile")
    profiles_r._seen.update(profiles)
    top.done()
    return Matrix(path=path, defaults=defaults, builds=builds, models=models, profiles=profiles)


CUSTOM_KEYS: tuple[str, ...] = ("base", "processor")  # every other key overrides the config


def _read_custom(r: _Reader, name: str, models: Mapping[str, ModelSpec]) -> ModelSpec:
    """A named custom configuration: a hub model (`base`) plus config overrides, always built
    from the base's offline config with random weights (there is no checkpoint for it).

    `processor` (optional) overrides the base's processor settings, e.g. its size when
    `image_size` changes. Under a shrunk (smoke) profile the base's smoke overrides apply
    first and this configuration's overrides after them, so what makes it differ from its
    base survives the shrinking. Whether each override is a field of the base's config
    class, with a value of the right type, needs transformers: `suite.custom` checks it
    when a profile selects the configuration.
    """
    base_name = r.str("base", choices=tuple(models))
    base = models[base_name]
    if not base.model_type:
        r.fail(f"base {base_name!r} has no model_type, so it cannot be rebuilt from a config", "base")
    processor = r.mapping("processor")
    overrides: dict[str, Any] = {}
    for key, value in r.data.items():
        if key in CUSTOM_KEYS:
            continue
        if not isinstance(key, str) or not key.isidentifier():
            r.fail(f"a config field name must be an identifier, got {_kind(key)}", str(key))
        problem = _override_problem(value)
        if problem:
            r.fail(problem, key)
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
    return f"must be a number, string, boolean, list or mapping, got {_kind(value)}"


def deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    """`over` onto `base`, recursing into nested mappings (nested configs)."""
    out = copy.deepcopy(dict(base))
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ---------------------------------------------------------------------------------------
# Expansion: profile (+ CLI filters) -> cells.


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
    overrides: Mapping[str, Any] = field(default_factory=dict)


def resolve_settings(matrix: Matrix, profile: Profile, overrides: Mapping[str, Any]) -> Settings:
    settings = replace(matrix.defaults, **dict(profile.settings))
    settings = replace(settings, **dict(overrides))
    if settings.shrink and settings.weights != "random":
        raise UsageError(
            f"{matrix.path}: profiles.{profile.name}.settings.shrink",
            "a shrunk (smoke) model has no checkpoint: set weights: random",
        )
    return settings


def expand(
    matrix: Matrix,
    profile_name: str,
    build: str,
    filters: Filters = Filters(),
    check_custom: bool = True,
) -> list[Cell]:
    """All cells of a profile for one build, in a stable order, as the filters ask.

    A custom configuration always gets `weights: random` (it has no checkpoint), and with
    `check_custom` its overrides are checked against its config class first (`suite.custom`,
    in a child process with transformers; UsageError naming the field if one is wrong).
    """
    if profile_name not in matrix.profiles:
        raise UsageError(
            "--profile",
            f"{profile_name!r} is not a profile of {matrix.path} (known: {', '.join(matrix.profiles)})",
        )
    profile = matrix.profiles[profile_name]
    settings = resolve_settings(matrix, profile, filters.overrides)
    wanted_models = None
    if filters.models is not None:
        wanted_models = set()
        for name in filters.models:
            spec = matrix.find_model(name)
            if spec is None:
                raise UsageError(
                    "--models",
                    f"{name!r} is not a model of {matrix.path} (known: {', '.join(matrix.models)})",
                )
            wanted_models.add(spec.name)
    cells: dict[tuple[object, ...], Cell] = {}
    for sel in profile.selections:
        for model_name in _with_named_customs(matrix, sel.models, wanted_models):
            if wanted_models is not None and model_name not in wanted_models:
                continue
            spec = matrix.models[model_name]
            cell_settings = replace(settings, weights="random") if spec.base else settings
            scenarios = filters.scenarios if filters.scenarios is not None else sel.scenarios
            for scenario in scenarios:
                for bs in sel.batch_sizes:
                    if filters.batch_sizes is not None and bs not in filters.batch_sizes:
                        continue
                    for mode in sel.modes:
                        if filters.modes is not None and mode not in filters.modes:
                            continue
                        key = (model_name, scenario, bs, mode)
                        cells.setdefault(key, Cell(build, spec, bs, mode, scenario, cell_settings))
    if check_custom:
        from suite.custom import check_selected

        check_selected(matrix, cells.values())
    return list(cells.values())


def _with_named_customs(matrix: Matrix, names: Sequence[str], wanted: set[str] | None) -> list[str]:
    """A selection's models, plus each custom configuration named with --models whose base the
    selection has (right after it): `--profile smoke --models ViT,ViT-6-layers` runs the custom
    configuration wherever, and however, the profile runs its base."""
    out: list[str] = []
    for name in names:
        out.append(name)
        for extra in sorted(wanted or ()):
            if matrix.models[extra].base == name and extra not in names and extra not in out:
                out.append(extra)
    return out


def setting_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Settings))
