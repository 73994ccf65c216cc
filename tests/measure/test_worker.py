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


def test_accuracy_is_judged_on_each_outputs_own_scale_or_said_not_judgeable() -> None:
    """A random-weight MobileNet's outputs are ~1e-25: a check within 1e-3 x max(1, |eager|) can
    never fail there. Small outputs are judged on their own scale; vanishing ones not at all."""
    from suite.measure.accuracy import judge
    from suite.measure.cell import compiled_fields

    small = [torch.tensor([2e-3, -1e-3])]
    assert judge(small, [torch.tensor([2e-3, -1e-3 + 1e-9])], 1e-3).passed is True
    assert judge(small, [torch.tensor([2e-3 + 1e-5, -1e-3])], 1e-3).passed is False  # 0.5% off
    vanishing = [torch.tensor([1.2e-25, -3e-26])]
    j = judge(vanishing, [torch.tensor([-1.44e-25, 0.0])], 1e-3)
    assert j.passed is None and abs(j.max_diff - 2.64e-25) < 1e-30
    assert j.note == "not judgeable: every output vanishes (max |eager| 1.2e-25 < 1e-06)"
    assert judge(vanishing, [torch.tensor([float("nan"), 0.0])], 1e-3).passed is False  # NaN still fails
    mixed = judge([vanishing[0], torch.tensor([1.0])], [vanishing[0], torch.tensor([1.0])], 1e-3)
    assert mixed.passed is True and mixed.note == "1 of 2 outputs vanish (not judged)"
    assert compare(vanishing, vanishing, 1e-3) == (0.0, True)  # train / dynamic: no verdict to leave empty
    fields = compiled_fields([2.0, 2.0], [1.0, 1.0], 10.0, (0, 1, 1), (j.max_diff, j.passed))
    assert fields["accuracy"] is None and fields["max_abs_diff"] == j.max_diff
