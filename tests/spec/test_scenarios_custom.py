"""The scenario axis (inference, train) and named custom configurations in matrix.yaml:
expansion, what `--scenarios` does, and every bad custom entry named in one line (exit 2)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from support.matrices import CUSTOM as MATRIX

from suite.cli import main
from suite.errors import UsageError
from suite.spec import Filters, expand, load_matrix


def write(tmp_path: Path, text: str = MATRIX) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def cells_of(path: Path, profile: str, **filters: object):
    return expand(load_matrix(path), profile, "stable", Filters(**filters))


# --- scenarios ------------------------------------------------------------------------------


def test_the_default_scenario_is_inference(tmp_path: Path) -> None:
    assert {c.scenario for c in cells_of(write(tmp_path), "smoke")} == {"inference"}


def test_a_profile_declares_its_scenarios(tmp_path: Path) -> None:
    cells = cells_of(write(tmp_path), "both")
    assert [(c.scenario, c.mode) for c in cells] == [("inference", "eager"), ("train", "eager")]


def test_scenarios_flag_sets_the_axis_of_every_selection(tmp_path: Path) -> None:
    path = write(tmp_path)
    smoke = cells_of(path, "smoke")
    train = cells_of(path, "smoke", scenarios=("train",))
    assert [(c.model.name, c.batch_size, c.mode) for c in train] == [
        (c.model.name, c.batch_size, c.mode) for c in smoke
    ]
    assert {c.scenario for c in train} == {"train"}
    both = cells_of(path, "smoke", scenarios=("inference", "train"))
    assert len(both) == 2 * len(smoke)
    # it replaces what the profile declares, it does not intersect with it
    assert {c.scenario for c in cells_of(path, "both", scenarios=("train",))} == {"train"}


def test_plan_with_scenarios_lists_train_cells(tmp_path: Path, capsys) -> None:
    assert main(["plan", "--matrix", str(write(tmp_path)), "--profile", "smoke", "--scenarios", "train"]) == 0
    out = capsys.readouterr().out
    assert "profile smoke: 2 cell(s)" in out
    rows = [line for line in out.splitlines() if " ViT " in line]
    assert len(rows) == 2 and all(" train " in line for line in rows)


def test_train_cells_cost_more_than_inference_cells(tmp_path: Path) -> None:
    from suite.spec.cost import estimate_seconds

    path = write(tmp_path)
    for inf, tr in zip(cells_of(path, "smoke"), cells_of(path, "smoke", scenarios=("train",)), strict=True):
        assert estimate_seconds(tr) > estimate_seconds(inf)


# --- custom configurations ------------------------------------------------------------------


def test_custom_configuration_is_its_base_plus_overrides(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path))
    spec = m.models["vit-6-layers"]
    assert spec.base == "ViT" and spec.task == "Image Classification" and spec.model_type == "vit"
    assert dict(spec.config) == {"num_labels": 1000, "num_hidden_layers": 6}
    assert dict(spec.overrides) == {"num_hidden_layers": 6}
    assert not spec.hub_id and spec.model_id == "vit (config)" and spec.published_params_m is None
    wide = m.models["vit-384"]
    assert wide.config["image_size"] == 384 and wide.processor["size"] == {"height": 384, "width": 384}
    assert wide.processor["class"] == "ViTImageProcessor"


def test_all_means_the_hub_models_and_customs_run_where_named(tmp_path: Path) -> None:
    path = write(tmp_path)
    assert {c.model.name for c in cells_of(path, "full")} == {"ViT", "HubOnly"}
    assert [c.model.name for c in cells_of(path, "custom")] == ["ViT", "vit-6-layers"]


def test_custom_configuration_always_has_random_weights_and_says_whose_it_is(tmp_path: Path) -> None:
    path = write(tmp_path)
    base, custom = cells_of(path, "custom")  # the profile keeps the default: pretrained
    assert base.settings.weights == "pretrained" and base.variant == ""
    assert custom.settings.weights == "random" and custom.variant == "custom of ViT"
    assert custom.key_fields("cpu")["weights"] == "random"
    assert custom.key_fields("cpu")["model"] == "vit-6-layers"


def test_a_shrunk_custom_configuration_keeps_its_overrides(tmp_path: Path) -> None:
    from suite.measure.models import build_config

    m = load_matrix(write(tmp_path))
    spec = m.models["vit-6-layers"]
    shrunk = build_config(spec, shrink=True)
    assert shrunk.num_hidden_layers == 6 and shrunk.hidden_size == 64  # smoke width, custom depth
    assert build_config(spec, shrink=False).num_hidden_layers == 6
    assert build_config(m.models["ViT"], shrink=True).num_hidden_layers == 2
    (cell,) = cells_of(
        write(tmp_path, MATRIX.replace("models: [ViT], batch", "models: [vit-6-layers], batch")),
        "smoke",
        modes=("eager",),
    )
    assert cell.variant == "smoke, custom of ViT"


@pytest.mark.parametrize(
    ("entry", "field", "message"),
    [
        ("{base: DeiT, num_hidden_layers: 6}", "custom.bad.base", "'DeiT' is not one of"),
        ("{num_hidden_layers: 6}", "custom.bad.base", "is required"),
        ("{base: HubOnly, num_hidden_layers: 6}", "custom.bad.base", "has no model_type"),
        ("{base: ViT}", "custom.bad", "needs at least one config override"),
        ("{base: ViT, num_hidden_layers: 2024-01-01}", "custom.bad.num_hidden_layers", "must be a number"),
        ("{base: ViT, layer_norm_eps: .nan}", "custom.bad.layer_norm_eps", "finite"),
        ("{base: ViT, processor: [1]}", "custom.bad.processor", "must be a mapping"),
        ("[ViT]", "custom.bad", "must be a mapping"),
    ],
)
def test_bad_custom_entries_are_named(tmp_path: Path, entry: str, field: str, message: str) -> None:
    path = write(tmp_path, MATRIX.replace("\ncustom:\n", f"\ncustom:\n  bad: {entry}\n"))
    with pytest.raises(UsageError) as info:
        load_matrix(path)
    text = str(info.value)
    assert text.startswith(f"{path}: {field}"), text
    assert message in text


def test_custom_name_may_not_reuse_a_model_name(tmp_path: Path) -> None:
    path = write(
        tmp_path, MATRIX.replace("\ncustom:\n", "\ncustom:\n  ViT: {base: ViT, num_hidden_layers: 3}\n")
    )
    with pytest.raises(UsageError, match=r"custom\.ViT: a custom configuration may not reuse"):
        load_matrix(path)


@pytest.mark.parametrize(
    ("override", "field", "message"),
    [
        ("num_hidden_layer: 6", "custom.vit-6-layers.num_hidden_layer", "did you mean 'num_hidden_layers'"),
        ("num_hidden_layers: six", "custom.vit-6-layers.num_hidden_layers", "must be an integer"),
        ("num_hidden_layers: 6.5", "custom.vit-6-layers.num_hidden_layers", "must be an integer"),
        ("qkv_bias: 1", "custom.vit-6-layers.qkv_bias", "must be true or false"),
    ],
)
def test_overrides_are_checked_against_the_config_class(
    tmp_path: Path, capsys, override: str, field: str, message: str
) -> None:
    """plan/run check the selected custom configurations with transformers (in a child process)."""
    path = write(tmp_path, MATRIX.replace("num_hidden_layers: 6}", override + "}"))
    code = main(["plan", "--matrix", str(path), "--profile", "custom"])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and f"{path}: {field}" in err and message in err, err
    assert "Traceback" not in err


def test_good_overrides_pass_the_check(tmp_path: Path, capsys) -> None:
    assert main(["plan", "--matrix", str(write(tmp_path)), "--profile", "custom"]) == 0
    assert "vit-6-layers" in capsys.readouterr().out


def test_models_flag_runs_a_custom_configuration_wherever_its_base_runs(tmp_path: Path) -> None:
    path = write(tmp_path)
    cells = cells_of(path, "smoke", models=("ViT", "vit-6-layers"))
    assert [(c.model.name, c.mode) for c in cells] == [
        ("ViT", "eager"),
        ("ViT", "default"),
        ("vit-6-layers", "eager"),
        ("vit-6-layers", "default"),
    ]
    assert all(c.settings.shrink for c in cells)
    alone = cells_of(path, "smoke", models=("vit-6-layers",), modes=("eager",))
    assert [(c.model.name, c.variant) for c in alone] == [("vit-6-layers", "smoke, custom of ViT")]
    assert cells_of(path, "smoke") == cells_of(path, "smoke", models=("ViT",))  # not without asking
