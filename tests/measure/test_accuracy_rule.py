"""The accuracy rule (suite.measure.accuracy_rule) on hand-made tensors: each way a row can come
out (pass, fail, degenerate, eager-nondeterministic, skipped), the multipliers, the cosine
fallback, NaN, and the columns a verdict fills. The pass that makes the tensors (eager twice,
compiled, float64) is tests/measure/test_random_init.py's and the end-to-end tests'."""

from __future__ import annotations

import math

import pytest
import torch

from suite.measure.accuracy_rule import (
    COSINE_FLOOR,
    MULTIPLIER,
    REDUCED_MULTIPLIER,
    SPREAD_FLOOR,
    Outputs,
    Rule,
    Verdict,
    judge,
)
from suite.measure.cell import compiled_fields
from suite.results import DEGENERATE, FAIL, NONDETERMINISTIC, PASS, SKIPPED_ACCURACY, TIMING_COLUMNS

RULE = Rule(1e-3)


def answer(n: int = 4000, seed: int = 0) -> torch.Tensor:
    """A float64 'true' answer with a spread of about 1."""
    return torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def noisy(exact: torch.Tensor, rms: float, seed: int) -> torch.Tensor:
    """`exact` in float32 with noise of root mean square about `rms`."""
    noise = torch.randn(exact.shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return (exact + rms * noise).float()


def outputs(exact: torch.Tensor, eager: torch.Tensor, compiled: torch.Tensor, fp64: bool = True) -> Outputs:
    return Outputs([eager], [eager.clone()], [compiled], [exact] if fp64 else None)


def test_compiled_as_close_as_allclose_passes_and_says_by_what() -> None:
    exact = answer()
    eager = exact.float()
    v = judge(outputs(exact, eager, eager + 1e-5), RULE)
    assert v.status == PASS and v.max_abs_diff == pytest.approx(1e-5, rel=0.1)
    assert "allclose at 0.001" in v.notes[0] and v.decided_by is not None and v.decided_by.rmse is not None


def test_beyond_allclose_the_float64_rmse_decides_within_its_multiplier() -> None:
    """Eager is 1e-3 off the float64 answer (rms): compiled twice as far is within 2 x + tol / 10,
    compiled five times as far is not, though both fail allclose at 1e-4."""
    exact, rule = answer(), Rule(1e-4)
    eager = noisy(exact, 1e-3, 1)
    near, far = noisy(exact, 1.9e-3, 2), noisy(exact, 5e-3, 3)
    ok = judge(outputs(exact, eager, near), rule)
    bad = judge(outputs(exact, eager, far), rule)
    assert ok.status == PASS and "within 2 x eager's" in ok.notes[0]
    assert bad.status == FAIL and "beyond 2 x eager's" in bad.notes[0]
    fields = bad.fields()
    assert fields["accuracy"] == FAIL and fields["accuracy_multiplier"] == MULTIPLIER
    assert fields["accuracy_rmse"] == pytest.approx(5e-3, rel=0.05)
    assert fields["accuracy_rmse_eager"] == pytest.approx(1e-3, rel=0.05)
    assert fields["accuracy_spread"] == pytest.approx(1.0, rel=0.05)


def test_the_larger_multiplier_for_reduced_precision_and_tiny_tensors() -> None:
    assert RULE.multiplier((1, 1000)) == MULTIPLIER
    assert Rule(1e-3, reduced=True).multiplier((1, 1000)) == REDUCED_MULTIPLIER
    assert RULE.multiplier((1, 999)) == REDUCED_MULTIPLIER  # under 1000 values
    assert RULE.multiplier((8, 256, 1, 1)) == REDUCED_MULTIPLIER  # 1 x 1 maps
    assert Rule(0.02).multiplier((1, 4000)) == REDUCED_MULTIPLIER  # a large tolerance
    exact, rule = answer(), Rule(1e-4, reduced=True)
    eager, compiled = noisy(exact, 1e-3, 1), noisy(exact, 2.5e-3, 2)
    assert judge(outputs(exact, eager, compiled), Rule(1e-4)).status == FAIL
    assert judge(outputs(exact, eager, compiled), rule).status == PASS


def test_a_miscompiled_relu_fails() -> None:
    """relu(x) computed as x + 1 (inductor's testing-only bug) somewhere in the graph."""
    exact = answer()
    eager = exact.float()
    wrong = torch.where(eager > 0, eager, eager + 1)
    v = judge(outputs(exact, eager, wrong), RULE)
    assert v.status == FAIL and v.decided_by is not None and v.decided_by.rmse > 0.1


def test_eager_disagreeing_with_itself_is_said_and_not_failed() -> None:
    exact = answer()
    eager = exact.float()
    out = Outputs([eager], [eager + 1e-6], [eager + 1.0], [exact])
    v = judge(out, RULE)
    assert v.status == NONDETERMINISTIC and "eager's two runs differ" in v.notes[0]
    assert v.max_abs_diff == pytest.approx(1.0)  # the numbers stay


def test_an_output_too_flat_to_show_a_wrong_answer_is_degenerate_never_pass() -> None:
    """A random-weight MobileNet's ~1e-25 answers: any compiled output as flat passes allclose."""
    exact = answer() * 1e-25
    eager = exact.float()
    v = judge(outputs(exact, eager, torch.zeros_like(eager)), RULE)
    assert v.status == DEGENERATE and f"spread floor {SPREAD_FLOOR * 1e-3:g}" in v.notes[0]
    assert RULE.floor == SPREAD_FLOOR * 1e-3
    # one flat output among others makes the row degenerate; a real failure still fails
    flat, wide = exact, answer(seed=1)
    two = Outputs(
        [flat.float(), wide.float()], [flat.float(), wide.float()], [flat.float(), wide.float()], [flat, wide]
    )
    assert judge(two, RULE).status == DEGENERATE
    broken = Outputs(
        [flat.float(), wide.float()],
        [flat.float(), wide.float()],
        [flat.float(), wide.float() + 1],
        [flat, wide],
    )
    assert judge(broken, RULE).status == FAIL


def test_nan_where_eager_has_none_fails_and_nan_in_both_is_agreement() -> None:
    exact = answer()
    eager = exact.float()
    compiled = eager.clone()
    compiled[7] = float("nan")
    v = judge(outputs(exact, eager, compiled), RULE)
    assert v.status == FAIL and math.isnan(v.max_abs_diff) and "compiled has 1 NaN" in v.notes[0]
    both = eager.clone()
    both[7] = float("nan")
    assert judge(outputs(exact, both, both.clone()), RULE).status == PASS


def test_without_a_float64_answer_the_cosine_fallback() -> None:
    exact = answer()
    eager = exact.float()
    close = noisy(exact, 0.05, 2)  # beyond allclose, cosine ~0.999
    v = judge(outputs(exact, eager, close, fp64=False), RULE)
    assert v.status == PASS and v.fields()["accuracy_cosine"] >= COSINE_FLOOR and "cosine" in v.notes[0]
    assert v.fields()["accuracy_rmse"] is None
    assert judge(outputs(exact, eager, -eager, fp64=False), RULE).status == FAIL


def test_outputs_of_another_shape_fail() -> None:
    exact = answer()
    eager = exact.float()
    v = judge(Outputs([eager], [eager], [eager[:10]], [exact]), RULE)
    assert v.status == FAIL and v.max_abs_diff == math.inf and "shape" in v.notes[0]


def test_a_verdict_keeps_its_words_and_a_skip_its_reason() -> None:
    with pytest.raises(ValueError, match="not one of"):
        Verdict("maybe")
    with pytest.raises(ValueError, match="reason"):
        Verdict(SKIPPED_ACCURACY)
    with pytest.raises(ValueError, match="> 0"):
        Rule(0.0)
    skipped = Verdict.skipped("no floating-point output")
    assert skipped.fields()["accuracy"] == SKIPPED_ACCURACY
    assert skipped.fields()["accuracy_note"] == "no floating-point output"
    noted = skipped.noted("", "more", reference="float64 on cpu", context="cpu")
    assert noted.fields()["accuracy_note"] == "no floating-point output; more"
    assert noted.fields()["accuracy_reference"] == "float64 on cpu"


def test_a_compiled_row_carries_the_verdicts_columns_all_measured() -> None:
    exact = answer()
    v = judge(outputs(exact, exact.float(), exact.float()), RULE).noted(
        reference="float64 on cpu", context="cpu"
    )
    fields = compiled_fields([2.0, 2.0], [1.0, 1.0], 10.0, (0, 1, 1), v)
    assert fields["accuracy"] == PASS and fields["accuracy_reference"] == "float64 on cpu"
    verdict_columns = set(v.fields())
    assert verdict_columns <= set(TIMING_COLUMNS) | {"accuracy_note"}  # emptied on a failed row


@pytest.mark.parametrize("replays", [False, True], ids=["default", "cuda-graphs"])
def test_the_pass_switches_cudnn_for_itself_and_puts_it_back(replays: bool) -> None:
    """cuDNN's flags are process-wide switches (settable without a GPU): TF32 off (kept as timed
    where CUDA graphs replay their recording), deterministic on, benchmark off; then as they were.
    Matmul TF32 stays as timed: dynamo guards it (switching it would compile again)."""
    from suite.measure.accuracy_pass import strict

    cudnn = torch.backends.cudnn
    before = (cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark)
    cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark = True, False, True
    try:
        with strict("cuda:0", replays) as context:
            assert (cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark) == (replays, True, False)
        assert (cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark) == (True, False, True)
        assert ("as timed (CUDA graphs replay" in context) == replays and "matmul TF32 off" in context
        with strict("cpu", replays) as context:
            assert context == "cpu: no TF32; torch's CPU kernels"
    finally:
        cudnn.allow_tf32, cudnn.deterministic, cudnn.benchmark = before
