"""Reduced precision (and compiling) judged by the task's answer, not by max |diff| alone.

A `precision` cell runs its model at its dtype (eager or compiled) on a handful of inputs and
judges what the task returns against float32 eager on the same inputs: the classifier's top-1
and top-5, the detector's boxes (matched by IoU) and their labels, the segmenter's masks (mean
IoU of the label maps). Several inputs, not one, so an agreement rate means something: the
repository's photograph and deterministic crops, flips and a rescale of it, all at the
photograph's size (one input shape: a compiled model compiles once). The rule's thresholds are
settings (`parity_*` in matrix.yaml). Runs inside the containers: torch, transformers, pillow.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from suite.spec.settings import Settings
from suite.spec.vocab import compute_dtype

CLASSIFICATION, DETECTION, SEGMENTATION = "Image Classification", "Object Detection", "Image Segmentation"
TOP_BOXES = 10  # the reference's most confident boxes a detection is judged on
VARIANTS = ("photo", "hflip", "crop-80", "crop-60-corner", "rescale-50", "rotate-180")
TIED = "counted as agreeing"  # how a note ends that tells of ties (the report's tables look for it)


def variants(image: Any) -> list[tuple[str, Any]]:
    """The inputs every precision cell is judged on (VARIANTS, in order): the photograph and
    deterministic derivations of it, each at the photograph's size."""
    from PIL import Image

    w, h = image.size
    flip = getattr(Image, "Transpose", Image).FLIP_LEFT_RIGHT  # Pillow < 9.1: Image.FLIP_...
    rot = getattr(Image, "Transpose", Image).ROTATE_180
    made = {
        "photo": image,
        "hflip": image.transpose(flip),
        "crop-80": image.crop((w // 10, h // 10, w - w // 10, h - h // 10)).resize((w, h)),
        "crop-60-corner": image.crop((0, 0, w * 6 // 10, h * 6 // 10)).resize((w, h)),
        "rescale-50": image.resize((w // 2, h // 2)).resize((w, h)),
        "rotate-180": image.transpose(rot),
    }
    return [(name, made[name]) for name in VARIANTS]


def float_outputs(out: Any) -> SimpleNamespace:
    """The output's top-level tensors, floating ones as float32 (the post-processing then runs
    the same arithmetic for every dtype; CPU half kernels are not all there)."""
    import torch

    items = out.items() if hasattr(out, "items") else []
    return SimpleNamespace(
        **{k: (v.detach().float() if v.is_floating_point() else v) for k, v in items if torch.is_tensor(v)}
    )


def answers(task: str, processor: Any, out: Any) -> list[Any]:
    """What the task returns, one per image of the batch: the top-5 class ids; the boxes
    (xyxy, in the processed image's unit square), labels and scores; the label map."""
    import torch

    o = float_outputs(out)
    if task == CLASSIFICATION:
        k = min(5, o.logits.shape[-1])
        return [row.tolist() for row in o.logits.topk(k, dim=-1).indices]
    if task == DETECTION:
        size = [(1, 1)] * o.pred_boxes.shape[0]
        found = processor.post_process_object_detection(o, threshold=0.0, target_sizes=size)
        return [{k: v for k, v in d.items() if k in ("scores", "labels", "boxes")} for d in found]
    post = getattr(processor, "post_process_semantic_segmentation", None)
    if post is not None:
        return list(post(o))
    return list(torch.as_tensor(o.logits).argmax(dim=1))  # a processor without it: per-pixel argmax


def _box_iou(a: Any, b: Any) -> Any:
    """IoU of every box of `a` against every box of `b` (xyxy)."""
    import torch

    lt = torch.max(a[:, None, :2], b[None, :, :2])
    rb = torch.min(a[:, None, 2:], b[None, :, 2:])
    inter = (rb - lt).clamp(min=0).prod(-1)
    area = lambda x: (x[:, 2:] - x[:, :2]).clamp(min=0).prod(-1)  # noqa: E731
    union = area(a)[:, None] + area(b)[None, :] - inter
    return inter / union.clamp(min=1e-12)


def match_boxes(ref: dict[str, Any], out: dict[str, Any], top: int = TOP_BOXES) -> tuple[float, float]:
    """(mean IoU, label agreement) of the reference's `top` most confident boxes, each matched
    greedily (most confident first) to the unmatched box of `out` it overlaps most; a
    reference box left without a match counts IoU 0 and a wrong label."""
    order = ref["scores"].argsort(descending=True)[:top]
    if len(order) == 0:
        return 1.0, 1.0
    cand = out["scores"].argsort(descending=True)[: max(top, len(order))]
    iou = _box_iou(ref["boxes"][order], out["boxes"][cand]) if len(cand) else None
    used: set[int] = set()
    ious, same = [], []
    for i in range(len(order)):
        best, best_j = 0.0, -1
        for j in range(len(cand)):
            value = float(iou[i, j]) if iou is not None else 0.0
            if j not in used and value > best:
                best, best_j = value, j
        if best_j >= 0:
            used.add(best_j)
        ious.append(best)
        same.append(best_j >= 0 and int(ref["labels"][order[i]]) == int(out["labels"][cand[best_j]]))
    return sum(ious) / len(ious), sum(same) / len(same)


def mask_iou(ref: Any, out: Any) -> float:
    """Mean IoU over the classes either label map shows (1.0 for two identical maps)."""
    import torch

    ref, out = torch.as_tensor(ref), torch.as_tensor(out)
    classes = torch.unique(torch.cat([ref.flatten(), out.flatten()]))
    ious = []
    for c in classes.tolist():
        a, b = ref == c, out == c
        ious.append(float((a & b).sum()) / max(1, int((a | b).sum())))
    return sum(ious) / len(ious) if ious else 1.0


@dataclass(frozen=True)
class Agreement:
    """The task's answers of a cell against float32 eager's, over `inputs` images."""

    task: str
    inputs: int
    top1: float | None = None
    top5: float | None = None
    box_iou: float | None = None
    labels: float | None = None
    mask_iou: float | None = None
    max_abs_diff: float = 0.0
    scaled_diff: float = 0.0  # max over outputs of |diff| / max(1, max |float32 eager|)
    # each image whose top-1 changed, where the reference's logits are known: the reference's
    # logits for its own top-1 class and for the new one (`ties` judges them by the cell's dtype)
    flips: tuple[tuple[float, float], ...] = ()

    def __post_init__(self) -> None:
        if self.task not in (CLASSIFICATION, DETECTION, SEGMENTATION):
            raise ValueError(f"no parity rule for task {self.task!r}")
        if self.inputs < 1:
            raise ValueError("an agreement needs at least one input")

    def passed(self, s: Settings) -> bool:
        """The task's rule: each of its figures at least its threshold, and the outputs within
        `diff_bound` of float32 eager's (a NaN fails)."""
        if math.isnan(self.scaled_diff) or self.scaled_diff > diff_bound(s):
            return False
        top1 = None if self.top1 is None else self.top1 + len(self.ties(s)) / self.inputs
        rules = {
            CLASSIFICATION: ((top1, s.parity_top1), (self.top5, s.parity_top5)),
            DETECTION: ((self.box_iou, s.parity_box_iou), (self.labels, s.parity_labels)),
            SEGMENTATION: ((self.mask_iou, s.parity_mask_iou),),
        }[self.task]
        return all(value is not None and value >= threshold for value, threshold in rules)

    def ties(self, s: Settings) -> list[tuple[float, float]]:
        """The top-1 changes whose two classes are one number in the cell's dtype: the
        reference's logits for them closer than a unit in that dtype's last place at their size.
        The dtype cannot tell such classes apart, so which one wins is its rounding, not a
        changed answer: the rule counts them as agreeing (`top1` stays the share unchanged)."""
        dtype = compute_dtype(s.dtype)
        return [(a, b) for a, b in self.flips if abs(a - b) < ulp(dtype, max(abs(a), abs(b)))]

    def tie_note(self, s: Settings) -> str:
        """What the row's note says of the ties ("" without any)."""
        ties = self.ties(s)
        if not ties:
            return ""
        dtype = compute_dtype(s.dtype)
        gap = max(abs(a - b) for a, b in ties)
        unit = min(ulp(dtype, max(abs(a), abs(b))) for a, b in ties)
        return (
            f"top-1 changed on {len(ties)} of {self.inputs} image(s) between classes that are one "
            f"number in {dtype} (the reference's logits {gap:.2g} apart at most, a unit in the last "
            f"place {unit:.2g}): {TIED}"
        )

    def fields(self, s: Settings) -> dict[str, Any]:
        return {
            "parity": "pass" if self.passed(s) else "fail",
            "parity_inputs": self.inputs,
            "parity_top1": self.top1,
            "parity_top5": self.top5,
            "parity_box_iou": self.box_iou,
            "parity_labels": self.labels,
            "parity_mask_iou": self.mask_iou,
            "parity_max_abs_diff": self.max_abs_diff,
            "parity_scaled_diff": self.scaled_diff,
            "parity_diff_bound": diff_bound(s),
        }


EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7}


def ulp(dtype: str, size: float) -> float:
    """The gap between `dtype`'s neighbouring numbers at `size` (a unit in the last place):
    its epsilon times the power of two at or below `size`; at 0, its epsilon times 2^-14 (only
    two logits of 0 are that close); 0 where `size` is not finite: nothing is a tie beside an
    infinity or a NaN."""
    if not math.isfinite(size):
        return 0.0
    return EPS[dtype] * 2.0 ** math.floor(math.log2(size)) if size > 0 else EPS[dtype] * 2.0**-14


def logit_rows(task: str, tensors: list[Any], images: int) -> list[Any] | None:
    """Each image's logits among a classifier's output tensors (`scaled_diff`'s, in
    suite.measure.accuracy.flatten_tensors' order: the logits first), None where there are none
    of that shape (not a classifier, or an output of another form: no tie is then allowed)."""
    if task != CLASSIFICATION or not tensors:
        return None
    logits = tensors[0]
    if logits.dim() != 2 or logits.shape[0] != images:
        return None
    return list(logits.float())


def diff_bound(s: Settings) -> float:
    """The most an output may differ from float32 eager's, relative to max(1, max |ref|):
    `parity_max_eps` machine epsilons of the cell's dtype, never below the accuracy `tolerance`
    (a compiled float32 cell is held to what the accuracy check holds it to). An autocast cell's
    epsilon is its matmuls' dtype's: autocast-bfloat16 is allowed what bfloat16 is."""
    return max(s.tolerance, s.parity_max_eps * EPS[compute_dtype(s.dtype)])


def scaled_diff(ref: list[Any], out: list[Any]) -> tuple[float, float]:
    """(max |diff|, max of |diff| / max(1, max finite |ref|)) over the outputs' tensors; a NaN
    where the reference has none is NaN, different shapes inf (suite.measure.accuracy)."""
    from suite.measure.accuracy import compare, worse

    worst, scaled = 0.0, 0.0
    if len(ref) != len(out):
        return math.inf, math.inf
    for a, b in zip(ref, out, strict=True):
        diff, _ = compare([a], [b], math.inf)
        finite = a[a.isfinite()].abs()
        scale = max(1.0, float(finite.max()) if finite.numel() else 0.0)
        worst, scaled = worse(worst, diff), worse(scaled, diff / scale)
    return worst, scaled


def agreement(
    task: str, ref: list[Any], out: list[Any], diffs: tuple[float, float], ref_logits: list[Any] | None = None
) -> Agreement:
    """The per-image answers `out` against `ref` (`answers` of each, same images, same order);
    `diffs`: (max |diff|, scaled diff) of the outputs (`scaled_diff`); `ref_logits`: a
    classifier's reference logits per image (`logit_rows`), which tell a tie from a change."""
    if len(ref) != len(out) or not ref:
        raise ValueError(f"{len(out)} answers judged against {len(ref)}")
    n, (max_abs_diff, scaled) = len(ref), diffs
    if task == CLASSIFICATION:
        pairs = list(zip(ref, out, strict=True))
        top1 = sum(r[0] == o[0] for r, o in pairs) / n
        top5 = sum(len(set(r) & set(o)) / len(r) for r, o in pairs) / n
        flips = tuple(
            (float(row[r[0]]), float(row[o[0]]))
            for (r, o), row in zip(pairs, ref_logits or [None] * n, strict=True)
            if r[0] != o[0] and row is not None
        )
        return Agreement(
            task, n, top1=top1, top5=top5, max_abs_diff=max_abs_diff, scaled_diff=scaled, flips=flips
        )
    if task == DETECTION:
        pairs = [match_boxes(r, o) for r, o in zip(ref, out, strict=True)]
        return Agreement(
            task,
            n,
            box_iou=sum(p[0] for p in pairs) / n,
            labels=sum(p[1] for p in pairs) / n,
            max_abs_diff=max_abs_diff,
            scaled_diff=scaled,
        )
    ious = [mask_iou(r, o) for r, o in zip(ref, out, strict=True)]
    return Agreement(task, n, mask_iou=sum(ious) / n, max_abs_diff=max_abs_diff, scaled_diff=scaled)
