"""matrix.yaml validation and expansion: every error names the file and the field."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import yaml
from support import call_output
from support.matrices import LOAD_MINIMAL as MINIMAL

from suite.cli import main
from suite.errors import UsageError
from suite.spec import Filters, expand, load_matrix
from suite.spec.request import Request

REPO = Path(__file__).resolve().parents[2]


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "matrix.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def mutate(tmp_path: Path, edit) -> Path:
    data = yaml.safe_load(MINIMAL)
    edit(data)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def error_of(path: Path) -> str:
    with pytest.raises(UsageError) as info:
        load_matrix(path)
    return str(info.value)


def test_minimal_matrix_loads_and_expands(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, MINIMAL))
    cells = expand(m, "smoke", "stable")
    assert [(c.model.name, c.batch_size, c.mode) for c in cells] == [
        ("ViT", 1, "eager"),
        ("ViT", 1, "default"),
    ]
    assert cells[0].settings.iterations == 5 and cells[0].settings.weights == "random"
    assert cells[0].settings.dtype == "float32"  # default


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda d: d.update(version=3), "version", "not supported"),
        (lambda d: d.pop("builds"), "builds", "is required"),
        (
            lambda d: d["builds"]["stable"].update(kind="weekly"),
            "builds.stable.kind",
            "'weekly' is not one of",
        ),
        (lambda d: d["builds"]["stable"].update(python=3.1), "builds.stable.python", "in quotes"),
        (lambda d: d["models"]["ViT"].update(task="Image Captioning"), "models.ViT.task", "is not one of"),
        (lambda d: d["models"]["ViT"].pop("task"), "models.ViT.task", "is required"),
        (lambda d: d["models"]["ViT"].update(confg={}), "models.ViT.confg", "unknown key"),
        (lambda d: d["models"]["ViT"].update(config=[1]), "models.ViT.config", "must be a mapping"),
        (
            lambda d: (d["models"]["ViT"].pop("id"), d["models"]["ViT"].pop("model_type")),
            "models.ViT",
            "needs an `id`",
        ),
        (lambda d: d["models"]["ViT"].update(params_m=-3), "models.ViT.params_m", "must be > 0"),
        (lambda d: d["models"]["ViT"].update(smoke={"layers": 2}), "models.ViT.smoke.layers", "unknown key"),
        (
            lambda d: d["profiles"]["smoke"]["select"][0].update(modes=["fast"]),
            "profiles.smoke.select[0].modes",
            "'fast' is not a mode",
        ),
        (
            lambda d: d["profiles"]["smoke"]["select"][0].update(batch_sizes=[0]),
            "profiles.smoke.select[0].batch_sizes",
            "integers >= 1",
        ),
        (
            lambda d: d["profiles"]["smoke"]["select"][0].update(batch_sizes=["4"]),
            "profiles.smoke.select[0].batch_sizes",
            "integers >= 1",
        ),
        (
            lambda d: d["profiles"]["smoke"]["select"][0].update(models=["DeiT"]),
            "profiles.smoke.select[0].models",
            "'DeiT' is not defined",
        ),
        (
            lambda d: d["profiles"]["smoke"]["settings"].update(iterations=0),
            "profiles.smoke.settings.iterations",
            "must be >= 2",
        ),
        (
            lambda d: d["profiles"]["smoke"]["settings"].update(iterations=True),
            "profiles.smoke.settings.iterations",
            "must be an integer",
        ),
        (
            lambda d: d["profiles"]["smoke"]["settings"].update(dtype="float8"),
            "profiles.smoke.settings.dtype",
            "is not one of",
        ),
        (
            lambda d: d["profiles"]["smoke"]["settings"].update(timeout_s=float("nan")),
            "profiles.smoke.settings.timeout_s",
            "finite",
        ),
        (lambda d: d["profiles"]["smoke"].update(select=[]), "profiles.smoke.select", "non-empty list"),
        (
            lambda d: d["profiles"]["smoke"]["select"][0].update(scenarios=["serve"]),
            "profiles.smoke.select[0].scenarios",
            "'serve' is not a scenario",
        ),
        (lambda d: d.update(extra=1), "extra", "unknown key"),
        # a model's own accuracy tolerance must say why (docs/accuracy.md)
        (
            lambda d: d["models"]["ViT"].update(tolerance={"value": 0.004}),
            "models.ViT.tolerance.reason",
            "is required",
        ),
        (
            lambda d: d["models"]["ViT"].update(tolerance={"value": 0, "reason": "x"}),
            "models.ViT.tolerance.value",
            "must be > 0",
        ),
        (lambda d: d["models"]["ViT"].update(tolerance=0.004), "models.ViT.tolerance", "must be a mapping"),
        (
            lambda d: d["models"]["ViT"].update(tolerance={"value": 0.004, "reason": "r", "why": "w"}),
            "models.ViT.tolerance.why",
            "unknown key",
        ),
    ],
)
def test_bad_fields_are_named(tmp_path: Path, edit, field: str, message: str) -> None:
    path = mutate(tmp_path, edit)
    text = error_of(path)
    assert text.startswith(f"{path}: {field}"), text
    assert message in text


def test_yaml_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\nbuilds: [unclosed\n")
    text = error_of(path)
    assert text.startswith(f"{path}:") and "not valid YAML" in text


def test_missing_file(tmp_path: Path) -> None:
    assert "no such file" in error_of(tmp_path / "nope.yaml")


def test_top_level_must_be_a_mapping(tmp_path: Path) -> None:
    assert "must be a mapping" in error_of(write(tmp_path, "- 1\n- 2\n"))


def test_shrink_requires_random_weights(tmp_path: Path) -> None:
    path = mutate(tmp_path, lambda d: d["profiles"]["smoke"]["settings"].update(weights="pretrained"))
    with pytest.raises(UsageError, match="shrink"):
        expand(load_matrix(path), "smoke", "stable")


def test_filters_narrow_and_accept_hub_ids_in_any_case(tmp_path: Path) -> None:
    m = load_matrix(write(tmp_path, MINIMAL))
    cells = expand(m, "smoke", "stable", Filters(models=("GOOGLE/VIT-BASE-PATCH16-224",), modes=("default",)))
    assert [c.mode for c in cells] == ["default"]
    with pytest.raises(UsageError, match="--models: 'BEiT' is not a model"):
        expand(m, "smoke", "stable", Filters(models=("BEiT",)))


def test_a_narrowing_flag_the_profile_lacks_is_said_in_one_line(tmp_path: Path) -> None:
    """`nox -s bench-local -- --batch-sizes 1,4` on a CPU runs the smoke profile (batch size 1):
    the cells run without 4, and `plan` and `run` say so in one line instead of dropping it."""
    m = load_matrix(REPO / "matrix.yaml")
    request = Request(m, filters=Filters(batch_sizes=(1, 4)))
    cells = request.cells("smoke", "current")
    assert cells and {c.batch_size for c in cells} == {1}
    said = "profile 'smoke': --batch-sizes 4 selects no cell, run without it (batch size 1 only)"
    assert request.narrowed(cells, "smoke") == said
    assert Request(m, filters=Filters(batch_sizes=(1,))).narrowed(cells, "smoke") == ""
    code, _, err = call_output(["plan", "--profile", "smoke", "--device", "cpu", "--batch-sizes", "1,4"])
    assert code == 0 and err.splitlines()[0] == f"suite plan: warning: {said}", err


def test_custom_configuration_gets_its_own_name(tmp_path: Path) -> None:
    text = MINIMAL + "custom:\n  vit-6-layers: {base: ViT, num_hidden_layers: 6}\n"
    m = load_matrix(write(tmp_path, text))
    spec = m.models["vit-6-layers"]
    assert spec.base == "ViT" and spec.config["num_hidden_layers"] == 6 and not spec.hub_id


def test_repository_matrix_has_the_guides_study() -> None:
    m = load_matrix(REPO / "matrix.yaml")
    full = expand(m, "full", "stable")
    guide = {
        "Image Classification": {"ViT", "BeiT", "ConvNeXT", "ResNet"},
        "Image Segmentation": {"Segformer", "Mask2former", "Maskformer", "MobileNet"},
        "Object Detection": {"OwlViT", "DETR", "Resnet-101", "Conditional-DETR"},
    }
    got: dict[str, set[str]] = {}
    for c in full:
        got.setdefault(c.model.task, set()).add(c.model.name)
    assert got == guide
    assert {c.batch_size for c in full} == {1, 4, 16}
    assert {c.mode for c in full} >= {"eager", "default", "reduce-overhead"}
    assert all(c.settings.iterations == 300 and c.settings.dtype == "float32" for c in full)
    ids = {c.model.name: c.model.hub_id for c in full}
    assert ids["DETR"] == "facebook/detr-resnet-50" and ids["Resnet-101"] == "facebook/detr-resnet-101"
    smoke = expand(m, "smoke", "stable")
    assert {c.model.name for c in smoke} == set().union(*guide.values())
    assert {c.batch_size for c in smoke} == {1}
    assert {c.mode for c in smoke} == {"eager", "default", "reduce-overhead"}
    assert all(c.settings.shrink and c.settings.weights == "random" for c in smoke)
    assert all(c.model.smoke for c in smoke), "every model needs shrink overrides for the smoke profile"


@pytest.mark.parametrize("verb", ["plan", "run"])
def test_cli_bad_matrix_exits_2_with_one_line(tmp_path: Path, capsys, verb: str) -> None:
    path = mutate(tmp_path, lambda d: d["models"]["ViT"].update(task="Nope"))
    code = main([verb, "--matrix", str(path), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert err.count("\n") == 1 and f"{path}: models.ViT.task" in err


@pytest.mark.parametrize(
    ("args", "where"),
    [
        (["--batch-sizes", "1,x"], "--batch-sizes: 'x'"),
        (["--batch-sizes", "0"], "--batch-sizes: '0'"),
        (["--modes", "turbo"], "--modes: 'turbo'"),
        (["--iterations", "-4"], "--iterations"),
        (["--timeout", "soon"], "--timeout"),
        (["--run-id", "../escape"], "--run-id"),
        (["--profile", "huge"], "--profile: 'huge'"),
        (["--build", "nightly-1999"], "--build: 'nightly-1999'"),
        (["--device", "tpu"], "argument --device"),
        (["--models", "NotAModel"], "--models: 'NotAModel'"),
        (["--image", "/no/such/photo.jpg"], "--image"),
        (["--scenarios", "fly"], "--scenarios: 'fly'"),
        (["--scenarios", ","], "--scenarios: needs at least one value"),
    ],
)
def test_cli_bad_flags_exit_2_with_one_line(tmp_path: Path, capsys, args: list[str], where: str) -> None:
    code = main(["plan", "--matrix", str(write(tmp_path, MINIMAL)), *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1 and where in err, err
    assert "Traceback" not in err


def test_plan_lists_cells(tmp_path: Path, capsys) -> None:
    assert main(["plan", "--matrix", str(write(tmp_path, MINIMAL))]) == 0
    out = capsys.readouterr().out
    assert "profile smoke: 2 cell(s)" in out and "ViT" in out and "default" in out


def test_every_verb_has_help(capsys) -> None:
    for verb in ("plan", "run", "env"):
        with pytest.raises(SystemExit) as info:
            main([verb, "--help"])
        assert info.value.code == 0
        assert "usage: suite " + verb in capsys.readouterr().out


def test_a_models_own_tolerance_judges_its_cells_and_carries_its_reason(tmp_path: Path) -> None:
    """It replaces the settings' tolerance for the model's cells, survives the worker's JSON, and
    its reason goes to the rows (suite.measure.accuracy_pass)."""
    from suite.spec import Cell

    reason = "measured: its box head's outputs carry 4x float32's rounding"
    path = mutate(tmp_path, lambda d: d["models"]["ViT"].update(tolerance={"value": 0.004, "reason": reason}))
    cells = expand(load_matrix(path), "smoke", "stable")
    assert {c.settings.tolerance for c in cells} == {0.004}
    again = Cell.from_json(cells[1].to_json())
    assert (again.model.tolerance, again.model.tolerance_reason) == (0.004, reason)
