"""The training step the `train` scenario times: synthetic labels, forward + loss + backward +
optimizer step.

Runs inside the worker (torch imported lazily); works from torch 2.0.1 + transformers 4.31 on.

- Labels are synthetic but valid for the model's head, drawn from a seeded generator so every
  run feeds the same ones: class ids (classification); a class map per pixel (semantic
  segmentation: Segformer, MobileNetV2-DeepLab); one binary mask and a class per region
  (MaskFormer, Mask2Former: `mask_labels` + `class_labels`); DETR-style targets, class ids and
  normalized (cx, cy, w, h) boxes (DETR, Conditional DETR; their Hungarian matcher runs scipy).
- The loss is the model's own (`labels` passed to its forward, as a Trainer does), so the
  compiled cells compile it with the model.
- The optimizer is AdamW (lr 1e-4, torch's defaults otherwise): the Trainer's optimizer, and
  two state tensors per parameter, which is what a batch-size decision has to budget for.
- A model whose forward takes no labels (OwlViT's detection head has no loss in transformers)
  or that cannot take a training step at this batch size raises `Unsupported`: the cell is
  recorded as `skipped`, with the reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

LEARNING_RATE = 1e-4
LABEL_SEED = 1234
REGIONS = 3  # masks or boxes per image for MaskFormer/Mask2Former and DETR-style targets
# BatchNorm in training mode over a single value per channel: undefined, torch refuses.
BATCHNORM_ONE_VALUE = "Expected more than 1 value per channel when training"


class Unsupported(Exception):
    """This model has no training step here; the message says why (-> status `skipped`)."""


# --- labels ---------------------------------------------------------------------------------


def label_kind(model: Any, task: str) -> str:
    """How `model` takes its labels: classes | semantic | masks | detection (else Unsupported)."""
    import transformers

    params = inspect.signature(model.forward).parameters
    if "mask_labels" in params and "class_labels" in params:
        return "masks"
    if "labels" not in params:
        raise Unsupported(
            f"{type(model).__name__}.forward takes no labels in transformers {transformers.__version__}: "
            "the model computes no loss, so there is no training step to time"
        )
    if task == "Image Classification":
        return "classes"
    if task == "Image Segmentation":
        return "semantic"
    if task == "Object Detection":
        return "detection"
    raise Unsupported(f"no synthetic labels for task {task!r}")


def make_labels(model: Any, task: str, pixel_values: Any) -> dict[str, Any]:
    """Keyword arguments that make `model`'s forward compute its training loss."""
    import torch

    kind = label_kind(model, task)
    batch, _, height, width = pixel_values.shape
    device, dtype = pixel_values.device, pixel_values.dtype
    num_labels = int(model.config.num_labels)
    gen = torch.Generator().manual_seed(LABEL_SEED)

    def ids(*shape: int) -> Any:
        return torch.randint(0, num_labels, shape, generator=gen).to(device)

    if kind == "classes":
        return {"labels": ids(batch)}
    if kind == "semantic":
        return {"labels": ids(batch, height, width)}
    if kind == "masks":
        regions = max(1, min(REGIONS, num_labels))
        # vertical stripes that tile the image: disjoint masks, each with its own class
        edges = torch.linspace(0, width, regions + 1).round().long().tolist()
        stripes = torch.zeros(regions, height, width, dtype=dtype)
        for r in range(regions):
            stripes[r, :, edges[r] : edges[r + 1]] = 1
        mask_labels, class_labels = [], []
        for _ in range(batch):
            mask_labels.append(stripes.to(device))
            class_labels.append(torch.randperm(num_labels, generator=gen)[:regions].to(device))
        return {"mask_labels": mask_labels, "class_labels": class_labels}
    # detection: DETR-style targets, one dict per image
    targets = []
    for _ in range(batch):
        centers = 0.25 + 0.5 * torch.rand(REGIONS, 2, generator=gen)
        sizes = 0.1 + 0.3 * torch.rand(REGIONS, 2, generator=gen)
        boxes = torch.cat([centers, sizes], dim=1).to(device=device, dtype=dtype)
        targets.append({"class_labels": ids(REGIONS), "boxes": boxes})
    return {"labels": targets}


# --- the step -------------------------------------------------------------------------------


def make_optimizer(model: Any) -> Any:
    import torch

    return torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)


def loss_of(output: Any) -> Any:
    loss = getattr(output, "loss", None)
    if loss is None and isinstance(output, dict):
        loss = output.get("loss")
    if loss is None:
        raise Unsupported("the model returned no loss for the synthetic labels")
    return loss


@dataclass
class TrainStep:
    """One optimizer step of `forward` (the model itself, or its compiled wrapper).

    The eager and the compiled step share the model's parameters and the optimizer, so
    interleaved timing alternates two ways of taking the same kind of step. `on_grads`, when
    set, sees the model's gradients between backward and the optimizer (the accuracy check).
    Returns the loss, detached.
    """

    forward: Callable[..., Any]
    model: Any
    inputs: dict[str, Any]
    labels: dict[str, Any]
    optimizer: Any
    on_grads: Callable[[Any], None] | None = None

    def __call__(self) -> Any:
        loss = loss_of(self.forward(**self.inputs, **self.labels))
        loss.backward()
        if self.on_grads is not None:
            self.on_grads(self.model)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)
        return loss.detach()


def eager_loss_and_grads(model: Any, inputs: dict[str, Any], labels: dict[str, Any]) -> tuple[Any, list[Any]]:
    """The eager loss and gradients at the current weights, without an optimizer step."""
    loss = loss_of(model(**inputs, **labels))
    loss.backward()
    grads = grad_snapshot(model)
    model.zero_grad(set_to_none=True)
    return loss.detach().float().clone(), grads


def grad_snapshot(model: Any) -> list[Any]:
    """Copies of every parameter's gradient (zeros where a parameter got none)."""
    import torch

    return [
        (p.grad if p.grad is not None else torch.zeros_like(p)).detach().float().clone()
        for p in model.parameters()
        if p.requires_grad
    ]


def explain(exc: BaseException, batch_size: int) -> None:
    """Turn a known "cannot train like this" error into Unsupported; otherwise do nothing."""
    if BATCHNORM_ONE_VALUE in str(exc):
        raise Unsupported(
            f"a BatchNorm layer sees one value per channel at batch size {batch_size} (e.g. after global "
            f"pooling), which training mode cannot normalize; use a larger batch size ({exc})"
        ) from exc


def set_fallback_random() -> None:
    """Make inductor draw dropout masks with eager's kernels and generator, so a compiled step
    sees the masks an eager step would from the same seed: the loss can then be compared
    exactly. (torch 2.0.1 has the same switch.)"""
    import torch._inductor.config as inductor_config

    inductor_config.fallback_random = True
