"""The training step (suite/measure/training.py) for each of the guide's architectures at toy size: valid
synthetic labels, a finite loss, gradients, an AdamW step that moves the weights, and a
`skipped` reason where a model cannot take a step (OwlViT: no loss; BatchNorm at batch 1)."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")

from suite.measure import training as train  # noqa: E402
from suite.measure import worker  # noqa: E402
from suite.measure.cell import prepare  # noqa: E402
from suite.spec import Cell, expand, load_matrix  # noqa: E402

MATRIX = Path(__file__).resolve().parents[1] / "data" / "train-matrix.yaml"
TRAINABLE = [
    "ViT",
    "BeiT",
    "ConvNeXT",
    "ResNet",
    "Segformer",
    "Mask2former",
    "Maskformer",
    "MobileNet",
    "DETR",
    "Conditional-DETR",
]
KINDS = {
    "ViT": "classes",
    "BeiT": "classes",
    "ConvNeXT": "classes",
    "ResNet": "classes",
    "Segformer": "semantic",
    "MobileNet": "semantic",
    "Mask2former": "masks",
    "Maskformer": "masks",
    "DETR": "detection",
    "Conditional-DETR": "detection",
}


def cell(name: str, batch_size: int = 2, mode: str = "eager") -> Cell:
    cells = expand(load_matrix(MATRIX), "tiny", "test")
    (found,) = [c for c in cells if c.model.name == name and c.mode == "eager"]
    return replace(found, batch_size=batch_size, mode=mode)


def prepared(name: str, batch_size: int = 2):
    c = cell(name, batch_size)
    model, batch, _ = prepare(c, "cpu")
    model.train()
    return c, model, batch, train.make_labels(model, c.model.task, batch["pixel_values"])


def test_the_toy_matrix_has_every_architecture_of_the_guide() -> None:
    types = {c.model.model_type for c in expand(load_matrix(MATRIX), "tiny", "t")}
    assert types == {
        "vit",
        "beit",
        "convnext",
        "resnet",
        "segformer",
        "mask2former",
        "maskformer",
        "mobilenet_v2",
        "owlvit",
        "detr",
        "conditional_detr",
    }


@pytest.mark.parametrize("name", TRAINABLE)
def test_labels_are_valid_for_the_head(name: str) -> None:
    c, model, batch, labels = prepared(name)
    pixels = batch["pixel_values"]
    b, _, h, w = pixels.shape
    n = model.config.num_labels
    kind = train.label_kind(model, c.model.task)
    assert kind == KINDS[name]
    if kind == "classes":
        (y,) = labels.values()
        assert y.shape == (b,) and y.dtype == torch.long and int(y.min()) >= 0 and int(y.max()) < n
    elif kind == "semantic":
        (y,) = labels.values()
        assert y.shape == (b, h, w) and y.dtype == torch.long and int(y.min()) >= 0 and int(y.max()) < n
    elif kind == "masks":
        assert len(labels["mask_labels"]) == len(labels["class_labels"]) == b
        for masks, classes in zip(labels["mask_labels"], labels["class_labels"], strict=True):
            assert masks.shape == (train.REGIONS, h, w) and masks.dtype == pixels.dtype
            assert torch.equal(masks.sum(0), torch.ones(h, w)), "masks must tile the image, disjoint"
            assert classes.shape == (train.REGIONS,) and len(set(classes.tolist())) == train.REGIONS
            assert int(classes.min()) >= 0 and int(classes.max()) < n
    else:
        (targets,) = labels.values()
        assert len(targets) == b
        for t in targets:
            boxes, classes = t["boxes"], t["class_labels"]
            assert boxes.shape == (train.REGIONS, 4) and classes.shape == (train.REGIONS,)
            cx, cy, bw, bh = boxes.unbind(1)
            assert bool((bw > 0).all() and (bh > 0).all())
            assert bool((cx - bw / 2 >= 0).all() and (cx + bw / 2 <= 1).all())
            assert bool((cy - bh / 2 >= 0).all() and (cy + bh / 2 <= 1).all())
            assert int(classes.min()) >= 0 and int(classes.max()) < n


def test_labels_are_the_same_on_every_call() -> None:
    _, model, batch, first = prepared("DETR")
    again = train.make_labels(model, "Object Detection", batch["pixel_values"])
    for a, b in zip(first["labels"], again["labels"], strict=True):
        assert torch.equal(a["boxes"], b["boxes"]) and torch.equal(a["class_labels"], b["class_labels"])


@pytest.mark.parametrize("name", TRAINABLE)
def test_one_step_has_a_finite_loss_gradients_and_moves_the_weights(name: str) -> None:
    _, model, batch, labels = prepared(name)
    optimizer = train.make_optimizer(model)
    before = [p.detach().clone() for p in model.parameters()]
    loss, grads = train.eager_loss_and_grads(model, batch, labels)
    assert math.isfinite(float(loss)) and float(loss) > 0
    assert sum(float(g.abs().sum()) for g in grads) > 0, "no gradient reached the weights"
    assert all(p.grad is None for p in model.parameters()), "gradients must be cleared after the check"
    step = train.TrainStep(model, model, batch, labels, optimizer)
    second = step()
    assert math.isfinite(float(second)) and not second.requires_grad
    moved = sum(not torch.equal(b, p) for b, p in zip(before, model.parameters(), strict=True))
    assert moved > 0.5 * len(before), f"only {moved} of {len(before)} tensors changed"
    assert all(p.grad is None for p in model.parameters()), "a step ends with the gradients freed"
    state = optimizer.state[next(p for p in model.parameters() if p.requires_grad)]
    assert set(state) >= {"exp_avg", "exp_avg_sq"}, "AdamW keeps two state tensors per parameter"


def test_owlvit_has_no_loss_and_says_so() -> None:
    row = worker.run(cell("OwlViT"), "cpu")
    assert row["status"] == "skipped"
    assert row["error"].startswith("OwlViTForObjectDetection.forward takes no labels in transformers")
    assert "no training step" in row["error"] and "\n" not in row["error"]


def test_batchnorm_at_batch_size_1_is_skipped_with_the_reason() -> None:
    row = worker.run(cell("MobileNet", batch_size=1), "cpu")
    assert row["status"] == "skipped", row
    assert "BatchNorm" in row["error"] and "batch size 1" in row["error"]


def test_an_eager_train_cell_measures_a_step() -> None:
    c = replace(cell("ResNet"), settings=replace(cell("ResNet").settings, iterations=3, warmup=1))
    row = worker.run(c, "cpu")
    assert row["status"] == "ok", row
    assert row["iterations"] == 3 and 0 < row["min_ms"] <= row["median_ms"]
    assert row["peak_mem_mb"] > 0 and row["params_m"] > 0
    assert "speedup" not in row and "accuracy" not in row
