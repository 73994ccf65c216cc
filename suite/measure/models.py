"""Build a model and its processor from a ModelSpec: from the hub, or offline from a config.

Runs inside the worker (torch + transformers imported lazily) and works with
transformers 4.31 through 5.x: only `AutoConfig.for_model`, `from_config`,
`from_pretrained` and processor classes by name are used.

Some checkpoints build their backbone with timm (the DETR family's hub checkpoints:
`use_timm_backbone`). Before such a model is built, timm must import (it needs a
torchvision that matches torch); if it does not, the cell fails with one line that says
what to install, instead of transformers' own error deep inside the model.
"""

from __future__ import annotations

import copy
import importlib
from dataclasses import dataclass
from typing import Any

from suite.spec.model import ModelSpec, deep_merge
from suite.spec.settings import Settings


@dataclass
class Loaded:
    """A ready model plus how it was obtained (for the CSV and the log)."""

    model: Any
    processor: Any
    tokenizer_offline: bool  # text queries need the stand-in tokenization
    params_m: float


def _transformers_attr(name: str, what: str) -> Any:
    import transformers

    try:
        return getattr(transformers, name)
    except AttributeError:
        raise LookupError(f"transformers {transformers.__version__} has no {what} {name!r}") from None


def build_config(spec: ModelSpec, shrink: bool) -> Any:
    """The architecture config: matrix config (offline) or the hub's config plus overrides."""
    from transformers import AutoConfig

    overrides = dict(spec.config)
    if shrink:
        overrides = deep_merge(overrides, spec.smoke.get("config", {}))
    # a deep copy: transformers 4.31's DETR-family configs pop `model_type` out of the nested
    # backbone_config they are given, which would break the spec's next build in this process
    overrides = copy.deepcopy(overrides)
    if spec.model_type:
        return AutoConfig.for_model(spec.model_type, **overrides)
    config = AutoConfig.from_pretrained(spec.hub_id, revision=spec.revision or None)
    for key, value in overrides.items():
        setattr(config, key, value)
    return config


# Model types whose modules are timm's: building one imports timm.
TIMM_MODEL_TYPES = frozenset({"timm_backbone", "timm_wrapper"})


def needs_timm(config: Any) -> bool:
    """Whether building `config`'s model imports timm, from the config alone: a DETR-family
    config with `use_timm_backbone` (transformers 4.x keeps the flag; 5.x turns it into a
    `timm_backbone` backbone_config), or a timm model or backbone itself."""
    if getattr(config, "use_timm_backbone", False) is True:
        return True
    for part in (config, getattr(config, "backbone_config", None)):
        model_type = part.get("model_type") if isinstance(part, dict) else getattr(part, "model_type", None)
        if model_type in TIMM_MODEL_TYPES:
            return True
    return False


def _import_timm() -> Any:
    return importlib.import_module("timm")


def require_timm(config: Any, model_id: str) -> None:
    """Raise ImportError, with one line that says what to do, when `config`'s model needs
    timm and timm cannot be imported (not installed, or no torchvision that fits torch).
    timm is imported only when the config needs it."""
    if not needs_timm(config):
        return
    try:
        _import_timm()
    except Exception as exc:  # ImportError, or torchvision's own error for another torch
        text = str(exc).strip().splitlines()
        why = f"{type(exc).__name__}: {text[0]}" if text else type(exc).__name__
        why = why if len(why) <= 70 else why[:67] + "..."  # the CSV's reason: one line, <= 300
        raise ImportError(
            f"{model_id} loads a timm backbone; import timm failed ({why}). Install timm and a "
            "torchvision matching torch, or set a `revision:` without timm (e.g. no_timm) for it in "
            "matrix.yaml"
        ) from None


def build_model(spec: ModelSpec, settings: Settings) -> Any:
    cls = _transformers_attr(spec.auto_class, "model class")
    if settings.weights == "pretrained":
        from transformers import AutoConfig

        # config.json only (from_pretrained reads it anyway): does the model need timm?
        require_timm(AutoConfig.from_pretrained(spec.hub_id, revision=spec.revision or None), spec.hub_id)
        return cls.from_pretrained(spec.hub_id, revision=spec.revision or None)
    config = build_config(spec, settings.shrink)
    require_timm(config, spec.model_id)
    if hasattr(cls, "from_config"):  # Auto* classes
        return cls.from_config(config)
    return cls(config)


def build_processor(spec: ModelSpec, settings: Settings) -> tuple[Any, bool]:
    """(processor, text_offline). Offline (random weights + a `processor` entry), the
    processor is built from its class and the checkpoint's settings in matrix.yaml;
    otherwise it comes from the hub checkpoint, like the model."""
    offline = settings.weights == "random" and (spec.processor or spec.model_type)
    if spec.outside and not _has_processor(spec.hub_id):
        return _default_processor(spec.hub_id), False
    if not offline:
        import transformers

        if spec.text_queries:
            return transformers.AutoProcessor.from_pretrained(
                spec.hub_id, revision=spec.revision or None
            ), False
        return transformers.AutoImageProcessor.from_pretrained(
            spec.hub_id, revision=spec.revision or None
        ), False
    kwargs = dict(spec.processor)
    if settings.shrink:
        kwargs = deep_merge(kwargs, spec.smoke.get("processor", {}))
    name = kwargs.pop("class", "") or _default_processor_class(spec.model_type)
    cls = _transformers_attr(name, "image processor")
    return cls(**kwargs), bool(spec.text_queries)


def _has_processor(hub_id: str) -> bool:
    """A hub id, or a folder with the processor's settings saved beside the model (a model
    saved alone with `save_pretrained` has none)."""
    from pathlib import Path

    folder = Path(hub_id)
    return not folder.is_dir() or (folder / "preprocessor_config.json").is_file()


def _default_processor(folder: str) -> Any:
    """The default image processor of the folder's model type (its own defaults), for a model
    folder saved without one."""
    import json
    from pathlib import Path

    model_type = json.loads((Path(folder) / "config.json").read_text()).get("model_type", "")
    print(
        f"note: {folder} has no preprocessor_config.json: the default processor of {model_type!r}", flush=True
    )
    return _transformers_attr(_default_processor_class(model_type), "image processor")()


def _default_processor_class(model_type: str) -> str:
    from transformers.models.auto.image_processing_auto import IMAGE_PROCESSOR_MAPPING_NAMES

    names = IMAGE_PROCESSOR_MAPPING_NAMES.get(model_type)
    if not names:
        raise LookupError(f"no image processor is registered for model type {model_type!r}")
    if isinstance(names, dict):  # transformers 5: {"pil": ..., "torchvision": ...}
        return names.get("pil") or next(iter(names.values()))
    if isinstance(names, (tuple, list)):  # 4.3x-4.5x: (slow, fast)
        return names[0] or names[1]
    return names


def count_params_m(model: Any) -> float:
    return sum(p.numel() for p in model.parameters()) / 1e6


def load(spec: ModelSpec, settings: Settings) -> Loaded:
    model = build_model(spec, settings)
    processor, text_offline = build_processor(spec, settings)
    return Loaded(
        model=model, processor=processor, tokenizer_offline=text_offline, params_m=count_params_m(model)
    )
