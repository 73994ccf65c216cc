"""Any HF vision model (docs/models.md#any-model): `--models` takes a folder saved with
`save_pretrained` or a hub id beside the matrix's names; the task from the config's
architectures; an unknown architecture, an unreadable hub config: one line (UsageError, exit 2);
the rows marked outside the guide's set."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from suite.errors import UsageError
from suite.spec import load_matrix
from suite.spec.expand import Filters, expand
from suite.spec.outside import OUTSIDE, task_of

TINY = Path(__file__).resolve().parents[1] / "data" / "tiny-matrix.yaml"


def test_tasks_from_architectures() -> None:
    assert task_of(["ConvNextForImageClassification"], "x") == (
        "Image Classification",
        "ConvNextForImageClassification",
    )
    assert task_of(["DeformableDetrForObjectDetection"], "x")[0] == "Object Detection"
    assert task_of(["Mask2FormerForUniversalSegmentation"], "x")[0] == "Image Segmentation"
    assert task_of(["Dinov2Model"], "x") == ("Image Feature Extraction", "Dinov2Model")
    for bad in (["BeitForMaskedImageModeling"], None, []):
        with pytest.raises(UsageError, match="is not one this suite measures") as err:
            task_of(bad, "folder")
        assert "\n" not in str(err.value)


def _folder(tmp_path: Path, architectures: list[str]) -> Path:
    folder = tmp_path / "my-model"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_type": "resnet", "architectures": architectures}))
    return folder


def test_a_folder_runs_as_the_profile_runs_the_matrix_models(tmp_path: Path) -> None:
    folder = _folder(tmp_path, ["ResNetForImageClassification"])
    cells = expand(load_matrix(TINY), "tiny", "t", Filters(models=(str(folder), "TinyViT")))
    assert [c.model.name for c in cells] == ["TinyViT", "my-model"]
    mine = cells[1]
    assert mine.model.task == "Image Classification" and mine.model.hub_id == str(folder.resolve())
    assert mine.model.model_class == "ResNetForImageClassification" and OUTSIDE in mine.variant
    assert type(mine).from_json(mine.to_json()) == mine
    bad = tmp_path / "b"
    bad.mkdir()
    (bad / "config.json").write_text(json.dumps({"architectures": ["BeitForMaskedImageModeling"]}))
    with pytest.raises(UsageError, match=r"--models: .*BeitForMaskedImageModeling is not one"):
        expand(load_matrix(TINY), "tiny", "t", Filters(models=(str(bad),)))
    with pytest.raises(UsageError, match=r"not a model of .*, a folder or a hub id"):
        expand(load_matrix(TINY), "tiny", "t", Filters(models=("nothing-here",)))


def test_a_hub_id_whose_config_cannot_be_read(monkeypatch: pytest.MonkeyPatch) -> None:
    hub = pytest.importorskip("huggingface_hub")

    def offline(*args: object, **kwargs: object) -> str:
        raise OSError("We couldn't connect to the hub")

    monkeypatch.setattr(hub, "hf_hub_download", offline)
    with pytest.raises(
        UsageError, match=r"'facebook/dinov2-small': .*could not be read from the hub \(We couldn't"
    ):
        expand(load_matrix(TINY), "tiny", "t", Filters(models=("facebook/dinov2-small",)))


def test_a_saved_model_is_measured(tmp_path: Path) -> None:
    """A ResNet saved with save_pretrained and no processor: its weights, the default processor
    of its model type, one eager cell through the worker."""
    transformers = pytest.importorskip("transformers")
    from suite.measure import worker

    config = transformers.ResNetConfig(
        embedding_size=8, hidden_sizes=[8, 16], depths=[1, 1], layer_type="basic", num_labels=3
    )
    transformers.ResNetForImageClassification(config).save_pretrained(tmp_path / "saved")
    (cell,) = expand(load_matrix(TINY), "tiny", "t", Filters(models=(str(tmp_path / "saved"),)))
    cell = replace(cell, settings=replace(cell.settings, weights="pretrained", iterations=2))
    row = worker.run(cell, "cpu")
    assert row["status"] == "ok", row.get("error")
    assert row["median_ms"] > 0 and row["params_m"] == pytest.approx(
        sum(p.numel() for p in transformers.ResNetForImageClassification(config).parameters()) / 1e6
    )
