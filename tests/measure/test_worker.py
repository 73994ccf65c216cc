"""Worker helpers that need no model: failure reasons and the accuracy check."""

from __future__ import annotations

import torch

from suite.measure.accuracy import compare
from suite.measure.failures import describe_exception


def test_a_bare_wrapper_exception_reports_its_root_cause() -> None:
    class InternalTorchDynamoError(RuntimeError):
        pass

    try:
        try:
            raise AttributeError("'wrapper_descriptor' object has no attribute '__code__'")
        except AttributeError as inner:
            raise InternalTorchDynamoError() from inner
    except InternalTorchDynamoError as exc:
        reason = describe_exception(exc)
    assert reason == (
        "InternalTorchDynamoError (cause: AttributeError: "
        "'wrapper_descriptor' object has no attribute '__code__')"
    )


def test_a_plain_exception_is_its_type_and_first_line() -> None:
    assert describe_exception(ValueError("bad shape\nmore detail")) == "ValueError: bad shape"
    assert describe_exception(KeyError()) == "KeyError"


def test_accuracy_check_scales_the_tolerance_by_the_reference() -> None:
    ref = [torch.tensor([100.0, -50.0]), torch.tensor([0.5])]
    close = [torch.tensor([100.05, -50.0]), torch.tensor([0.5])]
    far = [torch.tensor([100.0, -50.0]), torch.tensor([0.6])]
    assert compare(ref, close, 1e-3)[1]
    diff, passed = compare(ref, far, 1e-3)
    assert not passed and abs(diff - 0.1) < 1e-6
    # a shape or count mismatch can never pass
    assert compare(ref, ref[:1], 1e-3) == (float("inf"), False)
    # NaN where the reference has NaN is agreement; NaN elsewhere is a failure
    nan_ref = [torch.tensor([float("nan"), 1.0])]
    assert compare(nan_ref, [torch.tensor([float("nan"), 1.0])], 1e-3)[1]
    assert not compare([torch.tensor([0.0, 1.0])], [torch.tensor([float("nan"), 1.0])], 1e-3)[1]


def test_the_scale_relative_check_passes_what_it_cannot_judge_unless_it_is_nan() -> None:
    """Training steps and the mixed sizes keep this check: small outputs judged on their own
    scale, vanishing ones (a random-weight MobileNet's old ~1e-25) checked for NaN only."""
    small = [torch.tensor([2e-3, -1e-3])]
    assert compare(small, [torch.tensor([2e-3, -1e-3 + 1e-9])], 1e-3)[1] is True
    assert compare(small, [torch.tensor([2e-3 + 1e-5, -1e-3])], 1e-3)[1] is False  # 0.5% off
    vanishing = [torch.tensor([1.2e-25, -3e-26])]
    diff, passed = compare(vanishing, [torch.tensor([-1.44e-25, 0.0])], 1e-3)
    assert passed is True and abs(diff - 2.64e-25) < 1e-30
    assert compare(vanishing, [torch.tensor([float("nan"), 0.0])], 1e-3)[1] is False  # NaN still fails
