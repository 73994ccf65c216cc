"""A model named on the command line that matrix.yaml does not have (docs/models.md#any-model):
a local folder saved with `save_pretrained`, or a hub id. Its task comes from the config's
`architectures` (the class transformers saved it as), its processor from the folder or the
repository, its weights as `--weights` says (random: built from the config, offline).

Standard library only, but for the hub's config.json (huggingface_hub, which transformers brings),
read only for a hub id.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.spec.model import ModelSpec
from suite.spec.vocab import FEATURES

OUTSIDE = "outside the guide's set"  # the CSV's `variant` of such a model's rows
# the class name's ending -> the task; the first that matches wins (the longest first)
ARCHITECTURE_TASKS: tuple[tuple[str, str], ...] = (
    ("ForImageClassificationWithTeacher", "Image Classification"),
    ("ForImageClassification", "Image Classification"),
    ("ForObjectDetection", "Object Detection"),
    ("ForSemanticSegmentation", "Image Segmentation"),
    ("ForUniversalSegmentation", "Image Segmentation"),
    ("ForInstanceSegmentation", "Image Segmentation"),
    ("Backbone", FEATURES),
    ("Model", FEATURES),
)
_HUB_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def task_of(architectures: Any, where: str) -> tuple[str, str]:
    """(task, class name) from a config's `architectures`; one line, exit 2, when none is known."""
    names = [a for a in architectures if isinstance(a, str)] if isinstance(architectures, list) else []
    for name in names:
        for ending, task in ARCHITECTURE_TASKS:
            if name.endswith(ending):
                return task, name
    known = ", ".join(e for e, _ in ARCHITECTURE_TASKS)
    shown = ", ".join(names) or "none"
    raise UsageError(
        "--models", f"{where}: architecture {shown} is not one this suite measures (known endings: {known})"
    )


def _hub_config(hub_id: str) -> dict[str, Any]:
    try:
        from huggingface_hub import hf_hub_download

        return json.loads(Path(hf_hub_download(hub_id, "config.json")).read_text())
    except Exception as exc:  # no package, no network, no such repository
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        where = "its config.json could not be read from the hub"
        raise UsageError(
            "--models", f"{hub_id!r}: not a model of matrix.yaml, and {where} ({why[:120]})"
        ) from None


def outside_model(name: str, taken: Collection[str] = ()) -> ModelSpec | None:
    """The spec of a folder or hub id `name`; None when `name` is neither (the caller says so).
    Its display name is the folder's name or the hub id, never one of `taken` (the matrix's)."""
    folder = Path(name).expanduser()
    if folder.is_dir():
        config_file = folder / "config.json"
        try:
            config = json.loads(config_file.read_text())
        except (OSError, ValueError) as exc:
            raise UsageError("--models", f"{config_file}: not a saved model's config ({exc})") from None
        if not isinstance(config, dict):
            raise UsageError("--models", f"{config_file}: not a saved model's config (not a mapping)")
        display, hub_id = folder.resolve().name, str(folder.resolve())
    elif _HUB_ID.match(name):
        config, display, hub_id = _hub_config(name), name, name
    else:
        return None
    task, cls = task_of(config.get("architectures"), hub_id)
    display = display.replace("|", "-").replace(",", "-")
    if display in taken:
        display = f"{display} ({'folder' if folder.is_dir() else 'hub'})"
    return ModelSpec(name=display, task=task, hub_id=hub_id, model_class=cls, outside=True)
