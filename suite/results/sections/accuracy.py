"""The accuracy section: whether the compiled model still gives the eager model's answer, by
PyTorch's float64 rule (suite.measure.accuracy_rule, docs/accuracy.md), and the numbers that
decided it. Standard library only."""

from __future__ import annotations

from suite.results.sections.base import NUMBER, Column, Section, extra, extra_timed

PASS, FAIL = "pass", "fail"  # compiled output within the rule or not
# the verdict's other words: outputs too flat to show a wrong answer, eager disagreeing with
# itself, no check (accuracy_note: why)
DEGENERATE, NONDETERMINISTIC, SKIPPED_ACCURACY = "degenerate", "eager-nondeterministic", "skipped"
ACCURACY_WORDS: tuple[str, ...] = (PASS, FAIL, DEGENERATE, NONDETERMINISTIC, SKIPPED_ACCURACY)


def _figure(name: str, doc: str, unit: str = "") -> Column:
    """One of the rule's numbers: a measured figure that may be 0 (unit x: a ratio, > 0)."""
    return extra_timed(name, unit, doc, positive=unit == "x")


SECTION = Section(
    name="accuracy",
    title="Accuracy",
    about="Compiled rows of the inference scenarios and `dynamic-batch` rows "
    "([accuracy.md](accuracy.md)); empty on eager rows, on a failed row and, past `accuracy`, in "
    "rows from before the rule (a training step's row has `accuracy_reference` alone: its own check).",
    columns=(
        Column(
            "max_abs_diff",
            NUMBER,
            timing=True,
            nonfinite=True,
            doc="max \\|compiled - eager\\| over every output (`nan` / `inf`: the compiled outputs "
            "turned NaN / infinite where eager's did not)",
        ),
        Column(
            "accuracy",
            timing=True,
            choices=ACCURACY_WORDS,
            doc="the float64 rule's verdict: `pass`, `fail`, `degenerate` (an output too flat to show a "
            "wrong answer), `eager-nondeterministic` (eager's two runs differ) or `skipped` (why: "
            "`accuracy_note`); never empty on an ok compiled row since the rule (older runs: `pass` / "
            "`fail`, empty when no output could be judged)",
        ),
        extra(
            "accuracy_note",
            "which output decided the verdict and by what (allclose, or its RMSE against the bound), "
            "which outputs are below the spread floor, why eager is nondeterministic or the check "
            "skipped, a model's own tolerance and its reason; in runs before the float64 rule, \"not "
            'judgeable: every output vanishes"',
        ),
        _figure("accuracy_rmse", "the deciding output's RMSE from the float64 answer, compiled's"),
        _figure(
            "accuracy_rmse_eager",
            "the same of eager's (the output nearest to, or furthest beyond, its bound)",
        ),
        _figure(
            "accuracy_multiplier",
            "how many times `accuracy_rmse_eager` `accuracy_rmse` may be, plus `tolerance` / 10: 2 in "
            "float32, 3 in float16 and bfloat16 and for tiny outputs",
            unit="x",
        ),
        _figure(
            "accuracy_cosine",
            "where no float64 answer could be had: the cosine similarity of compiled and eager (at "
            "least 0.99 passes)",
        ),
        _figure(
            "accuracy_spread",
            "the deciding output's spread: the standard deviation of its float64 values (of eager's "
            "without them); a `degenerate` row's flattest output; below 10 x `tolerance` is degenerate",
        ),
        Column(
            "accuracy_reference",
            contract=False,
            timing=True,
            doc="`float64 on cuda`, `float64 on cpu` (the device could not), or "
            "`none (cosine fallback): <why>`",
        ),
        Column(
            "accuracy_context",
            contract=False,
            timing=True,
            doc="what the accuracy pass ran with, apart from the timed calls': on a GPU cuDNN TF32 off "
            "(as timed where CUDA graphs replay), cuDNN deterministic, no cuDNN benchmark; matmul TF32 "
            "and `torch.use_deterministic_algorithms` as timed",
        ),
    ),
)
