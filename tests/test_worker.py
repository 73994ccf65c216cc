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
