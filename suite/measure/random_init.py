"""Random weights whose outputs mean something: one seeded calibration pass after the model is
built from its config.

transformers initialises a model built from a config with N(0, 0.02) for every linear layer and
convolution, depthwise ones included, and leaves BatchNorm at mean 0, variance 1 (the identity
in eval mode). Through a deep stack that shrinks the signal layer after layer: a random-weight
MobileNetV2 answers ~1e-25 everywhere, and no accuracy check can see a wrong answer among
values that small (docs/accuracy.md). The pass fixes the scale the way the literature does
for a network without trained weights: layer-sequential unit variance (LSUV: Mishkin and Matas,
"All you need is a good init", 2016), each Linear and Conv layer's weight and bias divided by
the standard deviation of its output on the calibration batch, in the order the forward calls
them; and BatchNorm statistics recalibrated from the same batch (each BatchNorm's, the DETR
family's frozen ones included, set to the mean and variance of its input, as train mode would
use them), so every normalised activation has unit variance. A layer whose weights are all zero
(an architecture's deliberate zero init, e.g. the deformable attention's weights) is left as it
is. The batch: `IMAGES` images of standard normal noise at the model's input size (a
processor's normalised pixels are of that scale), drawn from a generator of its own seed on the
CPU, so the weights are the same wherever the model runs, whatever the process did before.

Only random weights are calibrated: pretrained ones are the checkpoint's, untouched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SEED = 1729  # the calibration images' generator (the weights' own seed is suite.measure.cell's)
IMAGES = 4  # a BatchNorm after global pooling sees one value per image: more than one is needed
WEIGHTS_INIT = "unit-variance"  # the rows' weights_init (docs/accuracy.md)


@dataclass(frozen=True)
class Calibrated:
    """What the pass changed: linear and conv layers scaled, BatchNorm layers recalibrated."""

    scaled: int
    norms: int

    def __post_init__(self) -> None:
        if self.scaled < 0 or self.norms < 0:
            raise ValueError("a count of layers cannot be negative")


def is_batchnorm(module: Any) -> bool:
    """A BatchNorm of torch's, or a frozen one (buffers only, as the DETR family's backbones)."""
    import torch

    if isinstance(module, torch.nn.modules.batchnorm._BatchNorm):
        return module.running_mean is not None and module.running_var is not None
    return "BatchNorm" in type(module).__name__ and all(
        isinstance(getattr(module, name, None), torch.Tensor) for name in ("running_mean", "running_var")
    )


def calibration_batch(batch: dict[str, Any]) -> dict[str, Any]:
    """`IMAGES` images of seeded noise at the batch's pixel size; every other input (a pixel mask,
    text queries) the first image's, repeated."""
    import torch

    pixels = batch["pixel_values"]
    noise = torch.randn(
        (IMAGES, *pixels.shape[1:]), generator=torch.Generator().manual_seed(SEED), dtype=torch.float32
    ).to(device=pixels.device, dtype=pixels.dtype)
    out = {}
    for key, value in batch.items():
        out[key] = noise if key == "pixel_values" else _repeat_first(value, batch, pixels)
    return out


def _repeat_first(value: Any, batch: dict[str, Any], pixels: Any) -> Any:
    """An input of one row per image, its first row `IMAGES` times; one that is not per image
    (OwlViT's text queries: one row per query of every image) as it is, queries repeated."""
    if value.shape[0] == pixels.shape[0]:
        return value[:1].expand(IMAGES, *value.shape[1:]).contiguous()
    per_image = value.shape[0] // pixels.shape[0]
    return value[:per_image].repeat(IMAGES, *([1] * (value.dim() - 1)))


def calibrate(model: Any, batch: dict[str, Any]) -> Calibrated:
    """Scale `model` (float32, eval mode, on its device) in place: one forward of the calibration
    batch with hooks (module docstring). Deterministic for a given model, batch shape and device."""
    import torch

    layers = (torch.nn.Linear, torch.nn.modules.conv._ConvNd)
    scaled: set[int] = set()  # weights already scaled (a module called twice, a tied weight)
    norms = [m for m in model.modules() if is_batchnorm(m)]

    def unit_variance(module: Any, _inputs: Any, out: Any) -> Any:
        weight = module.weight
        if id(weight) in scaled or not torch.is_tensor(out) or not bool(weight.detach().abs().max() > 0):
            return None
        scaled.add(id(weight))
        std = float(out.detach().double().std())
        if not std > 0.0 or std != std:  # a constant output (zero input): nothing to scale by
            return None
        weight.data.div_(std)
        if module.bias is not None:
            module.bias.data.div_(std)
        return out / std

    def set_statistics(module: Any, inputs: tuple[Any, ...]) -> None:
        x = inputs[0].detach()
        dims = [d for d in range(x.dim()) if d != 1]
        module.running_mean.copy_(x.mean(dims))
        module.running_var.copy_(x.var(dims, unbiased=False))

    hooks = [m.register_forward_hook(unit_variance) for m in model.modules() if isinstance(m, layers)]
    hooks += [m.register_forward_pre_hook(set_statistics) for m in norms]
    try:
        with torch.no_grad():
            model(**calibration_batch(batch))
    finally:
        for hook in hooks:
            hook.remove()
    return Calibrated(scaled=len(scaled), norms=len(norms))
