"""SUITE_FAULT=slow:<factor>[:<model>]: the test hook that slows the compiled calls by a known
factor, so the regression gate's detection can be shown (suite.measure.faults.slowed)."""

from __future__ import annotations

import time

import pytest

from suite.measure import faults


def _work() -> str:
    end = time.perf_counter() + 0.02
    while time.perf_counter() < end:
        pass
    return "out"


def _duration(fn) -> float:
    start = time.perf_counter()
    assert fn() == "out"
    return time.perf_counter() - start


@pytest.mark.parametrize(
    ("spec", "slowed"), [("slow:1.5", True), ("slow:1.5:vit", True), ("slow:1.5:BeiT", False)]
)
def test_slow_multiplies_each_call_of_the_model_it_names(
    monkeypatch: pytest.MonkeyPatch, spec: str, slowed: bool
) -> None:
    monkeypatch.setenv("SUITE_FAULT", spec)
    synced: list[int] = []
    fn = faults.slowed(_work, "ViT", lambda: synced.append(1))
    assert (fn is not _work) == slowed
    if slowed:
        took = _duration(fn)
        assert took >= 0.03  # at least 1.5 x the 20 ms call, waited after a synchronization
        assert synced == [1]
    faults.inject_fault("ViT")  # the other hook does nothing for `slow`


def test_no_fault_no_wrapper(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUITE_FAULT", raising=False)
    assert faults.slowed(_work, "ViT", lambda: None) is _work
    monkeypatch.setenv("SUITE_FAULT", "raise:ViT")
    assert faults.slowed(_work, "ViT", lambda: None) is _work


@pytest.mark.parametrize("spec", ["slow:x", "slow:0.5", "slow:"])
def test_a_bad_factor_is_refused(monkeypatch: pytest.MonkeyPatch, spec: str) -> None:
    monkeypatch.setenv("SUITE_FAULT", spec)
    with pytest.raises(ValueError, match="SUITE_FAULT=slow"):
        faults.slowed(_work, "ViT", lambda: None)


def test_several_faults_each_for_the_model_it_names(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SUITE_FAULT", "raise:A, slow:1.5:B,hang")
    assert faults._fault("a") == ("raise", "")
    assert faults._fault("B") == ("slow", "1.5")
    assert faults._fault("C") == ("hang", "")  # no model: every model not named before
    monkeypatch.setenv("SUITE_FAULT", "raise:A,oom:B")
    assert faults._fault("C") == ("", "")
    with pytest.raises(RuntimeError, match="injected fault"):
        faults.inject_fault("A")
