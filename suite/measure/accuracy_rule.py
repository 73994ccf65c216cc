"""The accuracy rule of a compiled row: PyTorch's own (its benchmark harness's `same()`),
applied to every floating-point output tensor (docs/accuracy.md).

The reference is the model in float64 on the same inputs. A tensor of the compiled output
passes when it is allclose to the eager one at the tolerance (|eager - compiled| <= tol +
tol x |compiled|), or else when its RMSE from the float64 answer is within `multiplier` x
eager's RMSE from it, plus tol / 10: compiled may be wrong where float32 itself is, and by about
as much, not more. The multiplier is 2.0 for float32, 3.0 where the cell computes in float16 or
bfloat16 and for tiny tensors (under 1000 values, a 4-D tensor of 1 x 1 maps, or a tolerance of
0.02 or more), where rounding noise dominates. Without a float64 answer, the stated fallback:
allclose, or else the cosine similarity of compiled and eager at least 0.99.

Before the compiled output is judged, eager's two runs must agree bit for bit; if they do not,
nothing can be judged against eager and the row says `eager-nondeterministic`. A NaN or an
infinity where eager has none fails. An output whose spread (standard deviation of the
reference's values) is below `SPREAD_FLOOR` x the tolerance could not show a wrong answer: a
compiled output stuck at its mean would be within the tolerance everywhere; such a row says
`degenerate`, never pass. The row keeps the deciding tensor's numbers (the one nearest to or
furthest beyond its bound): both RMSEs, the multiplier, the cosine where used, the spread.

Tensors in, a verdict out: the runs themselves are suite.measure.accuracy_pass's. Judged on the
CPU in float64 (the outputs are copied there), so the rule's own arithmetic adds no error.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from suite.measure.accuracy import max_abs_diff, nonfinite, worse
from suite.results.sections.accuracy import DEGENERATE, FAIL, NONDETERMINISTIC, PASS, SKIPPED_ACCURACY

MULTIPLIER = 2.0  # float32: compiled's RMSE from float64 may be this many times eager's
REDUCED_MULTIPLIER = 3.0  # float16, bfloat16 (autocast included) and tiny tensors
TINY_VALUES = 1000  # fewer values than this: a tiny tensor
LARGE_TOLERANCE = 2e-2  # a tolerance this large (a model that needs it) takes the larger multiplier
SLACK_DIVISOR = 10.0  # the RMSE bound's absolute slack: tolerance / 10
COSINE_FLOOR = 0.99  # the fallback without a float64 answer
SPREAD_FLOOR = 10.0  # an output whose spread is below this x the tolerance is degenerate


@dataclass(frozen=True)
class Rule:
    """The rule's settings for one row: its tolerance and whether it computes in reduced precision."""

    tolerance: float
    reduced: bool = False

    def __post_init__(self) -> None:
        if not self.tolerance > 0:
            raise ValueError(f"the tolerance must be > 0, got {self.tolerance!r}")

    @property
    def floor(self) -> float:
        """The least spread an output may have and still be judged (the module docstring)."""
        return SPREAD_FLOOR * self.tolerance

    def multiplier(self, shape: tuple[int, ...]) -> float:
        numel = math.prod(shape)
        ones = len(shape) == 4 and shape[-1] == shape[-2] == 1
        if self.reduced or numel < TINY_VALUES or ones or self.tolerance >= LARGE_TOLERANCE:
            return REDUCED_MULTIPLIER
        return MULTIPLIER


@dataclass(frozen=True)
class Outputs:
    """One accuracy pass's outputs, each a list of tensors in the same order: eager twice,
    compiled once, and float64 eager (None: none could be had)."""

    eager: list[Any]
    again: list[Any]
    compiled: list[Any]
    fp64: list[Any] | None = None


@dataclass(frozen=True)
class Judged:
    """One output tensor's judgement."""

    index: int
    shape: tuple[int, ...]
    passed: bool
    how: str  # allclose | rmse | cosine | nonfinite
    spread: float
    rmse: float | None = None  # compiled vs float64
    rmse_eager: float | None = None  # eager vs float64
    multiplier: float | None = None
    cosine: float | None = None
    bound: float | None = None  # the RMSE compiled may have: multiplier x rmse_eager + tol / 10

    @property
    def margin(self) -> float:
        """How near (< 1) or how far beyond (> 1) its bound the tensor is: what makes it decide."""
        if self.how == "nonfinite":
            return math.inf
        if self.rmse is not None and self.bound:
            return self.rmse / self.bound
        if self.cosine is not None:
            return (1.0 - self.cosine) / (1.0 - COSINE_FLOOR)
        return 0.0


STATUSES = (PASS, FAIL, DEGENERATE, NONDETERMINISTIC, SKIPPED_ACCURACY)


@dataclass(frozen=True)
class Verdict:
    """A row's accuracy: its status and the numbers that decided it (`fields`: its columns)."""

    status: str
    max_abs_diff: float | None = None
    decided_by: Judged | None = None
    reference: str = ""  # what the float64 answer ran on, or the fallback
    context: str = ""  # what the accuracy pass ran with (suite.measure.accuracy_pass)
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"accuracy status {self.status!r} is not one of {', '.join(STATUSES)}")
        if self.status == SKIPPED_ACCURACY and not self.notes:
            raise ValueError("a skipped accuracy check needs its reason")

    @staticmethod
    def skipped(why: str, max_abs_diff: float | None = None) -> Verdict:
        return Verdict(SKIPPED_ACCURACY, max_abs_diff, notes=(why,))

    def noted(self, *notes: str, reference: str = "", context: str = "") -> Verdict:
        """This verdict with more notes (and what the reference and the pass ran on)."""
        more = tuple(n for n in notes if n)
        return replace(
            self,
            notes=self.notes + more,
            reference=reference or self.reference,
            context=context or self.context,
        )

    def fields(self) -> dict[str, Any]:
        d = self.decided_by
        return {
            "accuracy": self.status,
            "max_abs_diff": self.max_abs_diff,
            "accuracy_rmse": d.rmse if d else None,
            "accuracy_rmse_eager": d.rmse_eager if d else None,
            "accuracy_multiplier": d.multiplier if d else None,
            "accuracy_cosine": d.cosine if d else None,
            "accuracy_spread": d.spread if d else None,
            "accuracy_reference": self.reference or None,
            "accuracy_context": self.context or None,
            "accuracy_note": "; ".join(self.notes) or None,
        }


def judge(out: Outputs, rule: Rule) -> Verdict:
    """The row's verdict (the module docstring's order: shapes, eager's two runs, each tensor)."""
    tensors = [out.eager, out.again, out.compiled] + ([out.fp64] if out.fp64 is not None else [])
    shapes = [[tuple(t.shape) for t in ts] for ts in tensors]
    if any(s != shapes[0] for s in shapes[1:]):
        return Verdict(FAIL, math.inf, notes=(f"outputs differ in number or shape: {_shapes(shapes)}",))
    if not out.eager:
        return Verdict.skipped("the model returned no floating-point output")
    judged = [_judge_tensor(i, out, rule) for i in range(len(out.eager))]
    worst = 0.0
    for a, b in zip(out.eager, out.compiled, strict=True):
        worst = worse(worst, max_abs_diff(a, b))
    unstable = _unstable(out.eager, out.again)
    if unstable:
        return Verdict(NONDETERMINISTIC, worst, _decisive(judged), notes=(unstable,))
    failed = [j for j in judged if not j.passed]
    if failed:
        decisive = _decisive(failed)
        return Verdict(FAIL, worst, decisive, notes=(_describe(decisive, len(judged), rule, out),))
    flat = [j for j in judged if j.spread < rule.floor]
    if flat:
        which = ", ".join(f"{j.index + 1} {j.shape} spread {j.spread:.3g}" for j in flat[:3])
        why = f"{len(flat)} of {len(judged)} outputs below the spread floor {rule.floor:g}: {which}"
        return Verdict(DEGENERATE, worst, min(flat, key=lambda j: j.spread), notes=(why,))
    decisive = _decisive(judged)
    return Verdict(PASS, worst, decisive, notes=(_describe(decisive, len(judged), rule, out),))


def _judge_tensor(i: int, out: Outputs, rule: Rule) -> Judged:
    import torch

    a, b = out.eager[i].double(), out.compiled[i].double()
    r = out.fp64[i].double() if out.fp64 is not None else None
    shape = tuple(a.shape)
    if not _same_nonfinite(a, b):
        return Judged(i, shape, False, "nonfinite", spread(r if r is not None else a))
    finite = torch.isfinite(a) & torch.isfinite(b)
    if r is not None:
        finite &= torch.isfinite(r)
    a, b = a[finite], b[finite]
    tol = rule.tolerance
    close = bool(torch.allclose(a, b, atol=tol, rtol=tol))
    if r is None:
        cosine = 1.0 if close else _cosine(a, b)
        how = "allclose" if close else "cosine"
        return Judged(i, shape, close or cosine >= COSINE_FLOOR, how, spread(a), cosine=cosine)
    r = r[finite]
    rmse, rmse_eager, multiplier = _rmse(r, b), _rmse(r, a), rule.multiplier(shape)
    bound = multiplier * rmse_eager + tol / SLACK_DIVISOR
    passed = close or rmse <= bound
    how = "allclose" if close else "rmse"
    return Judged(i, shape, passed, how, spread(r), rmse, rmse_eager, multiplier, bound=bound)


def _rmse(ref: Any, res: Any) -> float:
    return float((ref - res).pow(2).mean().sqrt()) if ref.numel() else 0.0


def _cosine(a: Any, b: Any) -> float:
    import torch

    if not a.numel():
        return 1.0
    return float(torch.nn.functional.cosine_similarity(a.flatten(), b.flatten(), dim=0, eps=1e-6))


def spread(t: Any) -> float:
    """The standard deviation of a tensor's finite values (a single value: its magnitude)."""
    import torch

    values = t[torch.isfinite(t)].double()
    if values.numel() < 2:
        return float(values.abs().sum())
    return float(values.std(unbiased=False))


def _same_nonfinite(a: Any, b: Any) -> bool:
    """Every NaN or infinity of either output is the other's too (values equal in both, or NaN in
    both, differ by nothing)."""
    import torch

    odd = ~torch.isfinite(a) | ~torch.isfinite(b)
    same = (a == b) | (torch.isnan(a) & torch.isnan(b))
    return bool(same[odd].all())


def _unstable(eager: list[Any], again: list[Any]) -> str:
    """Why eager's two runs are not the same answer ("" if they are, bit for bit)."""
    for i, (a, b) in enumerate(zip(eager, again, strict=True)):
        d = max_abs_diff(a, b)
        if d != 0.0:
            return f"eager's two runs differ: output {i + 1} of {len(eager)} by up to {d:.3g}"
    return ""


def _decisive(judged: list[Judged]) -> Judged | None:
    return max(judged, key=lambda j: j.margin) if judged else None


def _describe(j: Judged | None, n: int, rule: Rule, out: Outputs) -> str:
    """One line: which output decided, and by what."""
    if j is None:
        return ""
    where = f"output {j.index + 1} of {n} {list(j.shape)}"
    if j.how == "nonfinite":
        return f"{where}: {nonfinite(out.eager[j.index], out.compiled[j.index])}"
    if j.rmse is None:  # no float64 answer: the fallback
        return f"{where}: cosine {j.cosine:.6f} (floor {COSINE_FLOOR}), no float64 answer"
    if j.how == "allclose":
        return f"{where}: allclose at {rule.tolerance:g} (RMSE {j.rmse:.3g}, eager's {j.rmse_eager:.3g})"
    verb = "within" if j.passed else "beyond"
    return (
        f"{where}: RMSE {j.rmse:.3g} {verb} {j.multiplier:g} x eager's {j.rmse_eager:.3g} + "
        f"{rule.tolerance / SLACK_DIVISOR:g}"
    )


def _shapes(shapes: list[list[tuple[int, ...]]]) -> str:
    names = ("eager", "eager again", "compiled", "float64")
    return "; ".join(f"{n} {s}" for n, s in zip(names, shapes, strict=False))
