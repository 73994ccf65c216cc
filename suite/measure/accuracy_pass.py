"""The accuracy pass of a compiled row: eager twice, compiled once and the model in float64, under
settings of its own, apart from the timed calls (the rule: suite.measure.accuracy_rule).

The timed calls keep the settings the user runs with (the row's tf32_* and matmul_precision
columns). The pass switches what makes eager and compiled pick different arithmetic without
changing what was compiled: cuDNN's TF32 off (on by default for convolutions), cuDNN's
deterministic algorithms on, its benchmark off; the previous values come back after it. Two
switches stay as timed, said in the row's `accuracy_context`: matmul TF32
(`torch.backends.cuda.matmul.allow_tf32`, off unless the user turned it on) and
`torch.use_deterministic_algorithms`: dynamo guards on both, so switching either would compile
the model again inside the pass. A function replaying CUDA graphs (reduce-overhead) replays the
kernels it recorded, TF32 included: there eager keeps cuDNN's TF32 as timed too, so that like is
judged against like (the context says so). On a CPU none of these switches exist.

The float64 answer comes from a float64 copy of the model on the same inputs, on the model's
device, else on the CPU (the device's memory, or a kernel without float64); where neither can
give one, the rule falls back to the cosine similarity and the row says why. Every output is
copied to the CPU as it comes (a CUDA graph's outputs are overwritten by its next replay).
"""

from __future__ import annotations

import contextlib
import copy
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from suite.measure.accuracy import flatten_tensors
from suite.measure.accuracy_rule import Outputs, Rule, Verdict, judge
from suite.measure.phases import records_cudagraphs
from suite.measure.provenance import matmul_fields
from suite.results import one_line
from suite.spec.model import Cell
from suite.spec.vocab import compute_dtype


def host_copy(obj: Any, dtype: Any = None) -> list[Any]:
    """Every floating-point tensor of an output, copied to the CPU (float32, or `dtype`)."""
    import torch

    return [t.detach().to(device="cpu", dtype=dtype or torch.float32) for t in flatten_tensors(obj)]


@contextlib.contextmanager
def strict(device: str, replays_graphs: bool) -> Iterator[str]:
    """The pass's settings (module docstring), restored after; yields them in words for the row.
    A torch that refuses a switch (its TF32 flags set through both of its APIs) keeps them as
    timed, and the words say why."""
    import torch

    if not device.startswith("cuda"):
        yield "cpu: no TF32; torch's CPU kernels"
        return
    cudnn = torch.backends.cudnn
    tf32_matmul = {"true": "on", "false": "off"}.get(str(matmul_fields()["tf32_matmul"]), "unknown")
    kept = f"matmul TF32 {tf32_matmul} and deterministic algorithms as timed (dynamo guards them)"
    with warnings.catch_warnings():  # torch 2.9+ deprecates the TF32 flags for fp32_precision
        warnings.simplefilter("ignore")
        try:
            saved = (cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark)
            cudnn.allow_tf32 = cudnn.allow_tf32 if replays_graphs else False
            cudnn.deterministic, cudnn.benchmark = True, False
        except RuntimeError as exc:
            yield one_line(f"as timed: cuDNN's flags could not be switched ({exc}); {kept}", 200)
            return
    conv = "cuDNN TF32 as timed (CUDA graphs replay their recording)" if replays_graphs else "cuDNN TF32 off"
    try:
        yield f"{conv}, cuDNN deterministic, no cuDNN benchmark; {kept}"
    finally:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark = saved


def _float64(batch: dict[str, Any], device: str) -> dict[str, Any]:
    import torch

    return {
        k: v.to(device=device, dtype=torch.float64 if v.is_floating_point() else v.dtype)
        for k, v in batch.items()
    }


def float64_answer(model: Any, batch: dict[str, Any]) -> tuple[list[Any] | None, str]:
    """(the float64 copy's outputs on the CPU, what they ran on), or (None, why none)."""
    import torch

    device = str(next(model.parameters()).device)
    tried = []
    for where in dict.fromkeys([device, "cpu"]):
        twin = None
        try:
            twin = copy.deepcopy(model).to(device=where, dtype=torch.float64)
            with torch.no_grad():
                out = host_copy(twin(**_float64(batch, where)), torch.float64)
            return out, f"float64 on {where}"
        except Exception as exc:  # memory, a kernel without float64, a module that will not copy
            tried.append(f"{where}: {type(exc).__name__}: {exc}")
        finally:
            del twin
            if where.startswith("cuda"):
                torch.cuda.empty_cache()
    return None, one_line(f"none (cosine fallback): {'; '.join(tried)}", 200)


@dataclass(frozen=True)
class Ran:
    """What the pass gives the rule and the row: the outputs, what `keep` made of eager's first
    and compiled's output (the task's answers), and what the reference and the pass ran with."""

    outputs: Outputs
    eager_kept: Any
    compiled_kept: Any
    reference: str
    context: str


def run(
    eager: Callable[[], Any],
    compiled: Callable[[], Any],
    reference: Callable[[], tuple[list[Any] | None, str]],
    where: tuple[str, bool],
    keep: Callable[[Any], Any] | None = None,
) -> Ran:
    """Eager twice, compiled once, then the float64 `reference`, under `strict(*where)` (device,
    replays CUDA graphs); `keep` sees eager's first and compiled's output right away."""
    import torch

    keep = keep or (lambda _out: None)
    with strict(*where) as context, torch.no_grad():
        first = eager()
        eager_out, eager_kept = host_copy(first), keep(first)
        del first
        again = host_copy(eager())
        out = compiled()
        compiled_out, compiled_kept = host_copy(out), keep(out)
        del out
        fp64, ran_on = reference()
    return Ran(Outputs(eager_out, again, compiled_out, fp64), eager_kept, compiled_kept, ran_on, context)


def verdict(
    cell: Cell,
    model: Any,
    batch: dict[str, Any],
    calls: tuple[Callable[[], Any], Callable[[], Any]],
    keep: Callable[[Any], Any] | None = None,
) -> tuple[Verdict, Ran]:
    """The rule's verdict on a compiled row whose `calls` (eager, compiled) run `model` on `batch`:
    the pass on the model's device, the cell's tolerance (a model's own says its reason), the
    larger multiplier where the cell computes in float16 or bfloat16."""
    s = cell.settings
    device = str(next(model.parameters()).device)
    replays = device.startswith("cuda") and records_cudagraphs(cell.mode)
    ran = run(*calls, lambda: float64_answer(model, batch), (device, replays), keep)
    rule = Rule(s.tolerance, reduced=compute_dtype(s.dtype) in ("float16", "bfloat16"))
    why = cell.model.tolerance_reason if cell.model.tolerance == s.tolerance else ""
    judged = judge(ran.outputs, rule).noted(
        f"tolerance {s.tolerance:g}: {why}" if why else "", reference=ran.reference, context=ran.context
    )
    return judged, ran
