"""The models a run selects, checked against transformers before any cell (the child check,
suite.measure.config_check): unknown model types and classes, counts that would build a
model without layers, widths that do not split into their heads, absurd sizes. In-process
for speed (transformers is imported once); `plan` runs it in a child, as `run` does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from suite.cli import main
from suite.measure.config_check import Problem, model_problems
from suite.spec import load_matrix
from suite.spec.model import ModelSpec

REPO = Path(__file__).resolve().parents[2]
MATRIX = load_matrix(REPO / "matrix.yaml")
VIT = MATRIX.models["ViT"]
DETR = MATRIX.models["DETR"]


def custom(**overrides: object) -> ModelSpec:
    """A custom configuration of ViT, as the loader builds one."""
    return replace(
        VIT,
        name="c",
        base="ViT",
        hub_id="",
        overrides=overrides,
        config={**VIT.config, **overrides},
        smoke={"config": {**VIT.smoke["config"], **overrides}, "processor": VIT.smoke["processor"]},
    )


@pytest.mark.parametrize("name", list(MATRIX.models))
@pytest.mark.parametrize("shrink", [False, True])
def test_every_shipped_model_passes(name: str, shrink: bool) -> None:
    """No false alarm on the guide's models, full size or shrunk, built offline or from the hub."""
    spec = MATRIX.models[name]
    assert model_problems(spec, shrink, from_config=True) == []
    assert model_problems(spec, shrink, from_config=False) == []


@pytest.mark.parametrize(
    ("spec", "shrink", "field", "message"),
    [
        (custom(num_hidden_layers=0), False, "custom.c.num_hidden_layers", "must be >= 1"),
        (custom(num_hidden_layers=-3), True, "custom.c.num_hidden_layers", "got -3"),
        (custom(num_attention_heads=0), False, "custom.c.num_attention_heads", "must be >= 1"),
        (custom(hidden_size=384, num_attention_heads=5), False, "custom.c.num_attention_heads",
         "5 heads do not divide hidden_size 384"),
        (custom(hidden_size=99), True, "custom.c.hidden_size", "2 heads do not divide hidden_size 99"),
        (replace(VIT, smoke={"config": {**VIT.smoke["config"], "num_hidden_layers": 0}}), True,
         "models.ViT.smoke.config.num_hidden_layers", "must be >= 1"),
        (replace(VIT, config={**VIT.config, "image_size": 0}), False, "models.ViT.config.image_size",
         "must be >= 1"),
        (custom(hidden_act="gelu_neww"), False, "custom.c.hidden_act",
         "'gelu_neww' is not an activation transformers"),
        (custom(hidden_act="swiglu"), True, "custom.c.hidden_act", "is not an activation"),
        (replace(DETR, config={**DETR.config, "activation_function": "rellu"}), False,
         "models.DETR.config.activation_function", "did you mean 'relu'?"),
        (custom(layer_norm_eps=-1e-12), False, "custom.c.layer_norm_eps", "must be at least 0"),
        (replace(VIT, model_type="vitt"), False, "models.ViT.model_type",
         "'vitt' is unknown to transformers"),
        (replace(VIT, model_class="ViTForImageClasification"), False, "models.ViT.class",
         "did you mean 'ViTForImageClassification'?"),
        (replace(VIT, processor={"class": "ViTImageProcesor"}), False, "models.ViT.processor.class",
         "no class 'ViTImageProcesor'"),
        (replace(DETR, config={**DETR.config, "encoder_attention_heads": 7}), False,
         "models.DETR.config.encoder_attention_heads", "7 heads do not divide d_model 256"),
        (replace(MATRIX.models["Segformer"], config={**MATRIX.models["Segformer"].config,
                                                     "num_attention_heads": [1, 2, 3, 8]}),
         False, "models.Segformer.config.num_attention_heads", "do not divide hidden_sizes"),
        (replace(MATRIX.models["Mask2former"], smoke={**MATRIX.models["Mask2former"].smoke, "config": {
            **MATRIX.models["Mask2former"].smoke["config"],
            "backbone_config": {"embed_dim": 16, "depths": [1, 1, 1, 1], "num_heads": [1, 1, 3, 2],
                                "window_size": 4}}}),
         True, "models.Mask2former.smoke.config.backbone_config.num_heads", "(64 / 3)"),
    ],
)  # fmt: skip
def test_problems_name_the_field(spec: ModelSpec, shrink: bool, field: str, message: str) -> None:
    problems = model_problems(spec, shrink, from_config=True)
    assert problems, "not caught"
    assert problems[0].field == field and message in problems[0].message, problems


def test_zero_is_allowed_where_the_class_itself_uses_it() -> None:
    """ViTDet's `window_size` is 0 by default (global attention): 0 is a setting there, -1 is not."""
    spec = ModelSpec(name="D", task="Image Classification", model_type="vitdet", config={"window_size": 0})
    assert model_problems(spec, False, from_config=True) == []
    bad = replace(spec, config={"window_size": -1})
    assert model_problems(bad, False, from_config=True) == [
        Problem("models.D.config.window_size", "must be >= 0 (it counts or sizes something), got -1")
    ]


def test_a_hub_checkpoint_is_not_checked_for_its_config() -> None:
    """With pretrained weights the checkpoint brings its config: only the names are checked."""
    spec = replace(VIT, config={**VIT.config, "num_hidden_layers": 0})
    assert model_problems(spec, False, from_config=False) == []
    assert (
        model_problems(replace(spec, model_type="vitt"), False, from_config=False)[0].field
        == "models.ViT.model_type"
    )


def test_plan_stops_on_a_layerless_custom_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """End to end, in a child process: the issue's case, which used to record `ok` rows."""
    text = (
        (REPO / "matrix.yaml")
        .read_text()
        .replace("num_hidden_layers: 6                 # half", "num_hidden_layers: 0                 # half")
    )
    path = tmp_path / "matrix.yaml"
    path.write_text(text)
    code = main(["plan", "--matrix", str(path), "--profile", "custom-smoke"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.splitlines() == [
        f"suite plan: error: {path}: custom.ViT-6-layers.num_hidden_layers: must be >= 1 "
        "(it counts or sizes something), got 0"
    ]


def test_a_python_without_transformers_is_warned_about_only_where_asked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture
) -> None:
    """`plan` runs on hosts without transformers, quietly; `run` warns once its probe found torch
    (the workers would report a bad model only in their rows)."""
    from suite.run import preflight
    from suite.spec import expand

    unavailable = "transformers cannot be imported: x"
    monkeypatch.setattr(preflight.Child, "problems", lambda child, models: unavailable)
    cells = expand(MATRIX, "custom-smoke", "current")
    preflight.check_models(MATRIX, cells)
    assert capsys.readouterr().err == ""
    preflight.check_models(MATRIX, cells, warn_unchecked=True)
    assert (
        capsys.readouterr().err == "suite: warning: models not checked (transformers cannot be imported: x)\n"
    )
