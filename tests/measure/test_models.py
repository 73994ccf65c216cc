"""The guide's twelve models, built offline from matrix.yaml: the checkpoints' own sizes and
input resolutions, and models the repository's matrix does not list, by model type or by
a checkpoint folder (the `pretrained` path, which is what a hub id resolves to).

Building the twelve at full size takes about half a minute on a 2-core CPU; nothing is
downloaded.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from suite.measure import inputs, models
from suite.spec import Settings, load_matrix

REPO = Path(__file__).resolve().parents[2]
MATRIX = load_matrix(REPO / "matrix.yaml")

# The guide's tables: display name -> (task, hub id). "DETR" is detr-resnet-50 and
# "Resnet-101" is detr-resnet-101 (the guide's list names eleven ids for twelve rows).
GUIDE = {
    "ViT": ("Image Classification", "google/vit-base-patch16-224"),
    "BeiT": ("Image Classification", "microsoft/beit-base-patch16-224-pt22k-ft22k"),
    "ConvNeXT": ("Image Classification", "facebook/convnext-large-224"),
    "ResNet": ("Image Classification", "microsoft/resnet-50"),
    "Segformer": ("Image Segmentation", "nvidia/segformer-b0-finetuned-ade-512-512"),
    "Mask2former": ("Image Segmentation", "facebook/mask2former-swin-tiny-coco-panoptic"),
    "Maskformer": ("Image Segmentation", "facebook/maskformer-swin-base-ade"),
    "MobileNet": ("Image Segmentation", "google/deeplabv3_mobilenet_v2_1.0_513"),
    "OwlViT": ("Object Detection", "google/owlvit-base-patch32"),
    "DETR": ("Object Detection", "facebook/detr-resnet-50"),
    "Resnet-101": ("Object Detection", "facebook/detr-resnet-101"),
    "Conditional-DETR": ("Object Detection", "microsoft/conditional-detr-resnet-50"),
}

# What each checkpoint's preprocessor makes of the guide's 640 x 480 photo (height, width).
INPUT_HW = {
    "ViT": (224, 224),
    "BeiT": (224, 224),
    "ConvNeXT": (224, 224),
    "ResNet": (224, 224),
    "Segformer": (512, 512),
    "Mask2former": (384, 384),
    "Maskformer": (640, 864),  # short side 640, long side rounded up to a multiple of 32
    "MobileNet": (513, 513),
    "OwlViT": (768, 768),
    "DETR": (800, 1066),
    "Resnet-101": (800, 1066),
    "Conditional-DETR": (800, 1066),
}


def test_the_matrix_lists_the_guides_twelve() -> None:
    guide_models = {n: s for n, s in MATRIX.models.items() if not s.base}
    assert {n: (s.task, s.hub_id) for n, s in guide_models.items()} == GUIDE
    for spec in guide_models.values():
        assert spec.model_type and spec.config, f"{spec.name}: no offline config"
        assert spec.published_params_m, f"{spec.name}: no published size"


@pytest.mark.parametrize("name", list(GUIDE))
def test_offline_build_has_the_checkpoints_size(name: str) -> None:
    spec = MATRIX.models[name]
    model = models.build_model(spec, Settings(weights="random"))
    got = models.count_params_m(model)
    assert got == pytest.approx(spec.published_params_m, rel=0.02), f"{name}: {got:.3f} M parameters"


@pytest.mark.parametrize("name", list(GUIDE))
def test_processor_gives_the_checkpoints_input_size(name: str) -> None:
    spec = MATRIX.models[name]
    processor, text_offline = models.build_processor(spec, Settings(weights="random"))
    image, _ = inputs.load_image(MATRIX.defaults.image, offline=True)
    assert image.size == (640, 480)
    batch = inputs.make_batch(processor, image, 4, spec.text_queries, text_offline)
    assert tuple(batch["pixel_values"].shape) == (4, 3, *INPUT_HW[name])
    if spec.text_queries:  # OwlViT: one row of 16 token ids per query and image
        assert tuple(batch["input_ids"].shape) == (4 * len(spec.text_queries), 16)


def _run(matrix: Path, out: Path, *args: str, path: Path | None = None) -> list[dict[str, str]]:
    """`suite run` in a child process; `path`: a folder put first on its PYTHONPATH."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([*([str(path)] if path else []), str(REPO)]))
    env["HF_HUB_OFFLINE"] = "1"
    env.pop("SUITE_FAULT", None)
    cmd = [sys.executable, "-m", "suite", "run", "--matrix", str(matrix), "--device", "cpu",
           "--out", str(out), "--run-id", "r", *args]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    (path,) = (out / "r" / "raw").glob("*.csv")
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def _checkpoint_matrix(tmp_path: Path, name: str, task: str, ckpt: Path) -> Path:
    """A matrix whose one model is a saved checkpoint folder, run as `weights: pretrained`
    (the folder stands in for the hub, which tests cannot reach)."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        f"""
version: 1
defaults: {{image: {{path: suite/assets/chelsea-640x480.jpg}}}}
builds: {{any: {{kind: release, python: "3.11", torch: "0.0.0"}}}}
models:
  {name}:
    task: {task}
    id: {ckpt}
profiles:
  p:
    settings: {{weights: pretrained, iterations: 5, warmup: 1, timeout_s: 300}}
    select: [{{models: all, batch_sizes: [1], modes: [eager]}}]
""",
        encoding="utf-8",
    )
    return matrix


def test_a_model_the_matrix_does_not_list_runs_from_its_model_type(tmp_path: Path) -> None:
    """Swin is not one of the guide's models: a matrix entry alone makes it benchmarkable."""
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(
        """
version: 1
defaults: {image: {path: suite/assets/chelsea-640x480.jpg}}
builds: {any: {kind: release, python: "3.11", torch: "0.0.0"}}
models:
  TinySwin:
    task: Image Classification
    model_type: swin
    config: {embed_dim: 16, depths: [1, 1], num_heads: [1, 2], image_size: 64, window_size: 4, num_labels: 7}
    processor: {size: {height: 64, width: 64}}
profiles:
  p:
    settings: {weights: random, iterations: 5, warmup: 1, timeout_s: 300}
    select: [{models: all, batch_sizes: [2], modes: [eager]}]
""",
        encoding="utf-8",
    )
    (row,) = _run(matrix, tmp_path / "out", "--profile", "p")
    assert row["status"] == "ok", row["error"]
    assert row["model"] == "TinySwin" and row["model_id"] == "swin (config)" and row["batch_size"] == "2"
    assert float(row["median_ms"]) > 0 and float(row["params_m"]) > 0


def test_the_docs_example_of_adding_a_model_runs(tmp_path: Path) -> None:
    """docs/models.md's "Adding a model" entry, pasted into matrix.yaml as a user would, loads and
    its smoke variant runs offline (the full-size entry is checked by size: Swin-T, 28.3 M)."""
    import re

    page = (REPO / "docs" / "models.md").read_text(encoding="utf-8")
    found = re.search(r"```yaml\nmodels:\n(.*?)```", page, re.S)
    assert found, "docs/models.md: the yaml example under 'Adding a model' is gone"
    text = (REPO / "matrix.yaml").read_text(encoding="utf-8")
    matrix = tmp_path / "matrix.yaml"
    matrix.write_text(text.replace("\nmodels:\n", "\nmodels:\n" + found.group(1), 1), encoding="utf-8")
    (name,) = [n for n in load_matrix(matrix).models if n not in MATRIX.models]
    args = ("--profile", "smoke", "--models", name, "--modes", "eager", "--iterations", "2", "--warmup", "1")
    (row,) = _run(matrix, tmp_path / "out", *args, "--image", str(REPO / "suite/assets/chelsea-640x480.jpg"))
    assert row["status"] == "ok", row["error"]
    assert row["variant"] == "smoke" and float(row["median_ms"]) > 0
    spec = load_matrix(matrix).models[name]
    got = models.count_params_m(models.build_model(spec, Settings(weights="random")))
    assert got == pytest.approx(spec.published_params_m, rel=0.02), f"{name}: {got:.3f} M parameters"


def test_a_checkpoint_folder_runs_through_the_pretrained_path(tmp_path: Path) -> None:
    """`weights: pretrained` loads model and processor with from_pretrained, exactly as
    for a hub id; a saved folder stands in for the hub, which tests cannot reach."""
    from transformers import AutoConfig, AutoModelForImageClassification, ViTImageProcessor

    ckpt = tmp_path / "tiny-vit"
    config = AutoConfig.for_model(
        "vit", hidden_size=32, num_hidden_layers=1, num_attention_heads=2, intermediate_size=64,
        image_size=32, patch_size=8, num_labels=3,
    )  # fmt: skip
    AutoModelForImageClassification.from_config(config).save_pretrained(ckpt)
    ViTImageProcessor(size={"height": 32, "width": 32}).save_pretrained(ckpt)
    matrix = _checkpoint_matrix(tmp_path, "Saved", "Image Classification", ckpt)
    (row,) = _run(matrix, tmp_path / "out", "--profile", "p")
    assert row["status"] == "ok", row["error"]
    assert row["weights"] == "pretrained" and row["model_id"] == str(ckpt)
    assert float(row["params_m"]) == pytest.approx(models.count_params_m(
        AutoModelForImageClassification.from_pretrained(ckpt)), rel=1e-4)  # fmt: skip


# --- checkpoints with a timm backbone (the DETR family on the hub) ----------------------------


def _timm_detr_checkpoint(path: Path) -> Path:
    """A tiny DETR saved as the hub's DETR checkpoints are, with `use_timm_backbone: true`: it
    cannot be built without timm, so it is saved with transformers' ResNet and its
    config.json is rewritten, as the hub's reads (timm's resnet50, no backbone_config)."""
    from transformers import DetrForObjectDetection, DetrImageProcessor

    config = models.build_config(MATRIX.models["DETR"], shrink=True)
    DetrForObjectDetection(config).save_pretrained(path)
    DetrImageProcessor(size={"shortest_edge": 64, "longest_edge": 96}).save_pretrained(path)
    saved = json.loads((path / "config.json").read_text())
    saved.pop("backbone_config", None)
    saved.update(use_timm_backbone=True, backbone="resnet50", use_pretrained_backbone=True)
    (path / "config.json").write_text(json.dumps(saved))
    return path


def test_a_timm_backbone_without_timm_is_one_line_in_the_error_row(tmp_path: Path) -> None:
    """`weights: pretrained` of a checkpoint that loads a timm backbone, where timm is there
    but does not import (no torchvision): the cell fails with what to do, and the sweep goes on."""
    ckpt = _timm_detr_checkpoint(tmp_path / "tiny-detr-timm")
    broken = tmp_path / "site" / "timm"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'torchvision'\")\n")
    matrix = _checkpoint_matrix(tmp_path, "SavedDETR", "Object Detection", ckpt)
    (row,) = _run(matrix, tmp_path / "out", "--profile", "p", path=tmp_path / "site")
    assert row["status"] == "error" and row["median_ms"] == ""
    assert row["error"].startswith(  # one line (a long tmp path may cut its end: <= 300 characters)
        f"ImportError: {ckpt} loads a timm backbone; import timm failed (ModuleNotFoundError: "
        "No module named 'torchvision'). Install timm and a torchvision matching torch"
    )


def test_building_a_config_twice_leaves_its_spec_as_it_was() -> None:
    """transformers 4.31's Mask(2)Former configs pop `model_type` out of the backbone_config
    dict they are given: a full-size build handed it the spec's own, and the spec's next build
    in that process failed with KeyError under the stable build."""
    for name in GUIDE:
        spec = MATRIX.models[name]
        before = json.dumps([spec.config, spec.smoke], sort_keys=True)
        for shrink in (False, True, False):
            models.build_config(spec, shrink=shrink)
        assert json.dumps([spec.config, spec.smoke], sort_keys=True) == before, name


def test_timm_is_needed_only_by_configs_with_a_timm_backbone(tmp_path: Path) -> None:
    """Read from the config alone, under transformers 4.x (`use_timm_backbone`) and 5.x (a
    `timm_backbone` backbone_config): the hub's DETR needs timm, the matrix's offline DETR
    (transformers' ResNet) and the other models do not."""
    from transformers import AutoConfig

    hub_style = AutoConfig.from_pretrained(_timm_detr_checkpoint(tmp_path / "ckpt"))
    assert models.needs_timm(hub_style)
    for name in GUIDE:
        assert not models.needs_timm(models.build_config(MATRIX.models[name], shrink=True)), name
    assert models.needs_timm(SimpleNamespace(backbone_config={"model_type": "timm_backbone"}))
    assert models.needs_timm(SimpleNamespace(model_type="timm_wrapper"))
    assert not models.needs_timm(SimpleNamespace(backbone_config={"model_type": "resnet"}))


def test_timm_is_imported_only_when_the_config_needs_it(monkeypatch: pytest.MonkeyPatch) -> None:
    imported: list[str] = []
    monkeypatch.setattr(models, "_import_timm", lambda: imported.append("timm"))
    models.require_timm(SimpleNamespace(model_type="detr", use_timm_backbone=False), "x/y")
    assert imported == []
    models.require_timm(SimpleNamespace(model_type="detr", use_timm_backbone=True), "x/y")
    assert imported == ["timm"]  # imports, so no error


def test_a_torchvision_that_fits_no_torch_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken() -> None:  # what torchvision raises when built for another torch
        raise RuntimeError("operator torchvision::nms does not exist\nmore lines")

    monkeypatch.setattr(models, "_import_timm", broken)
    hub_id = "microsoft/conditional-detr-resnet-50"  # the guide's longest hub id
    with pytest.raises(ImportError) as info:
        models.require_timm(SimpleNamespace(model_type="detr", use_timm_backbone=True), hub_id)
    assert str(info.value) == (
        f"{hub_id} loads a timm backbone; import timm failed (RuntimeError: operator torchvision::nms "
        "does not exist). Install timm and a torchvision matching torch, or set a `revision:` without "
        "timm (e.g. no_timm) for it in matrix.yaml"
    )
    monkeypatch.setattr(models, "_import_timm", lambda: exec("raise ImportError('x' * 500)"))
    with pytest.raises(ImportError) as info:
        models.require_timm(SimpleNamespace(model_type="detr", use_timm_backbone=True), hub_id)
    assert len(f"ImportError: {info.value}") < 300  # never cut in the CSV (results.one_line)
