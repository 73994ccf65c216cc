"""Random weights whose outputs mean something (suite.measure.random_init), and the accuracy
pass around them (suite.measure.accuracy_pass): every model of matrix.yaml, shrunk as the smoke
profile builds it, answers with every output far above the rule's spread floor, has a float64
answer, and passes the rule against itself; pretrained weights are left as the checkpoint's.
Eager only (compiling the twelve is the end-to-end tests' part); about a minute on 2 cores."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from suite.measure import accuracy_pass, models, random_init
from suite.measure import cell as parts
from suite.measure.accuracy_rule import Rule, judge
from suite.results import PASS
from suite.spec import Filters, expand, load_matrix

REPO = Path(__file__).resolve().parents[2]
SMOKE = {
    c.model.name: c
    for c in expand(load_matrix(REPO / "matrix.yaml"), "smoke", "x", Filters(modes=("eager",)))
}


@pytest.fixture(scope="module", autouse=True)
def one_thread() -> None:
    torch.set_num_threads(1)


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_every_smoke_model_answers_far_above_the_spread_floor(name: str) -> None:
    cell = SMOKE[name]
    model, batch, _ = parts.prepare(cell, "cpu")

    def eager() -> object:
        return model(**batch)

    ran = accuracy_pass.run(eager, eager, lambda: accuracy_pass.float64_answer(model, batch), ("cpu", False))
    rule = Rule(cell.settings.tolerance)
    assert ran.reference == "float64 on cpu", ran.reference
    spreads = [float(t.std()) for t in ran.outputs.fp64]
    assert min(spreads) > 10 * rule.floor, (name, spreads)  # far from it: ten times the floor at least
    verdict = judge(ran.outputs, rule)
    assert verdict.status == PASS, verdict.notes


def test_the_same_cell_gets_the_same_weights_in_every_process() -> None:
    """Seeded: the weights' own seed, then the calibration's images from a generator of its own."""
    cell = SMOKE["MobileNet"]
    first, _, _ = parts.prepare(cell, "cpu")
    torch.manual_seed(123)  # whatever the process did before
    torch.randn(10)
    second, _, _ = parts.prepare(cell, "cpu")
    for (name, a), (_, b) in zip(first.state_dict().items(), second.state_dict().items(), strict=True):
        assert torch.equal(a, b), name


def test_the_pass_sets_batchnorm_statistics_and_scales_layers_but_not_zero_ones() -> None:
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3), torch.nn.BatchNorm2d(8), torch.nn.ReLU(), torch.nn.Conv2d(8, 4, 1)
    )
    for conv in (net[0], net[3]):
        torch.nn.init.normal_(conv.weight, std=0.02)  # transformers' init
    net[3].weight.data.zero_()  # an architecture's deliberate zero init stays
    net.eval()

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.net = net

        def forward(self, pixel_values: torch.Tensor) -> torch.Tensor:
            return self.net(pixel_values)

    model = Model()
    done = random_init.calibrate(model, {"pixel_values": torch.zeros(1, 3, 16, 16)})
    assert (done.scaled, done.norms) == (1, 1)
    assert not torch.equal(net[1].running_var, torch.ones(8))
    assert float(net[3].weight.detach().abs().max()) == 0.0
    x = random_init.calibration_batch({"pixel_values": torch.zeros(1, 3, 16, 16)})["pixel_values"]
    with torch.no_grad():
        normed = net[1](net[0](x))
    assert float(normed.std()) == pytest.approx(1.0, rel=0.05)


def test_pretrained_weights_are_the_checkpoints(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only `weights: random` is calibrated: a checkpoint's weights reach the device as loaded."""
    from dataclasses import replace

    cell = SMOKE["ResNet"]
    built = parts.prepare(cell, "cpu")[0]
    state = {k: v.clone() for k, v in built.state_dict().items()}
    loaded = SimpleNamespace(model=built, processor=models.build_processor(cell.model, cell.settings)[0],
                             tokenizer_offline=False, params_m=1.0)  # fmt: skip
    monkeypatch.setattr(models, "load", lambda spec, settings: loaded)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # the local photograph
    calls = []
    monkeypatch.setattr(parts, "calibrate", lambda *a: calls.append(a))
    pretrained = replace(cell, settings=replace(cell.settings, weights="pretrained", shrink=False))
    model, _, _ = parts.prepare(pretrained, "cpu")
    assert calls == []
    assert all(torch.equal(v, model.state_dict()[k]) for k, v in state.items())


def test_a_models_own_tolerance_is_said_with_its_reason_in_the_row() -> None:
    from dataclasses import replace

    cell = SMOKE["ViT"]
    own = replace(cell.model, tolerance=0.004, tolerance_reason="measured, see docs")
    cell = replace(cell, model=own, settings=replace(cell.settings, tolerance=0.004))
    model, batch, _ = parts.prepare(cell, "cpu")

    def eager() -> object:
        return model(**batch)

    verdict, _ = accuracy_pass.verdict(cell, model, batch, (eager, eager))
    fields = verdict.fields()
    assert fields["accuracy"] == PASS and "tolerance 0.004: measured, see docs" in fields["accuracy_note"]
    assert fields["accuracy_context"] == "cpu: no TF32; torch's CPU kernels"
