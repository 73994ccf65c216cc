"""Reduced precision judged by the task (suite/measure/parity.py, the `precision`
scenario) and the whole request timed per stage (the `pipeline` scenario), their settings,
profiles and tables. Unit tests on tiny tensors and the tiny matrix's 2-layer ViT in this
process; one end-to-end run (slow) of three tiny cells through the CLI and the merge."""

from __future__ import annotations

import csv
import importlib.util
import os
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from support import REPO, TINY

from suite.errors import UsageError
from suite.measure import parity
from suite.measure.faults import lower_precision
from suite.measure.scenarios.pipeline import Pipeline
from suite.measure.scenarios.precision import Precision
from suite.measure.timing import TimingLoop
from suite.spec import Cell, expand, load_matrix
from suite.spec.settings import Settings

CLS, DET, SEG = parity.CLASSIFICATION, parity.DETECTION, parity.SEGMENTATION


def test_variants_are_deterministic_and_keep_the_size() -> None:
    from PIL import Image

    image = Image.new("RGB", (40, 30), (10, 20, 30))
    image.putpixel((0, 0), (255, 0, 0))
    made = parity.variants(image)
    assert [name for name, _ in made] == list(parity.VARIANTS)
    assert all(v.size == (40, 30) for _, v in made)
    again = parity.variants(image)
    assert all(a.tobytes() == b.tobytes() for (_, a), (_, b) in zip(made, again, strict=True))
    assert made[1][1].getpixel((39, 0)) == (255, 0, 0)  # the flip moved the red corner


def test_classification_agreement_and_rule() -> None:
    ref = [[1, 2, 3, 4, 5], [7, 8, 9, 10, 11]]
    out = [[1, 2, 3, 4, 6], [8, 7, 9, 10, 11]]
    judged = parity.agreement(CLS, ref, out, (0.0, 0.0))
    assert judged.top1 == 0.5 and judged.top5 == pytest.approx(0.9)
    assert not judged.passed(Settings())  # top-1 0.5 < 0.9
    assert judged.passed(Settings(parity_top1=0.5))
    nan = parity.agreement(CLS, ref, ref, (float("nan"), float("nan")))
    assert not nan.passed(Settings())


def test_a_top1_change_between_classes_one_number_in_the_dtype_is_a_tie() -> None:
    """A flip between logits closer than a unit in the dtype's last place agrees; a wider one,
    or the same gap judged in a finer dtype, does not."""
    assert parity.ulp("bfloat16", 1.87) == 2.0**-7 and parity.ulp("bfloat16", 0.5) == 2.0**-8
    assert parity.ulp("float16", 1.0) == 2.0**-10 and parity.ulp("float32", 3.0) == 2.0**-23 * 2
    ref = [[3, 0, 1, 2, 4], [1, 0, 2, 3, 4]]
    out = [[0, 3, 1, 2, 4], [1, 0, 2, 3, 4]]  # the first image's top-1 changed, 3 -> 0
    tied = torch.tensor([[1.8689, 0.1, 0.2, 1.8700, 0.0], [0.5, 1.9, 0.1, 0.0, -1.0]])
    apart = tied.clone()
    apart[0, 3] = 1.9000  # 0.031 apart: four units of bfloat16 at 1.9
    bf16, f32 = Settings(dtype="bfloat16"), Settings()
    judged = parity.agreement(CLS, ref, out, (0.01, 0.01), parity.logit_rows(CLS, [tied], 2))
    assert judged.top1 == 0.5 and judged.passed(bf16), "the share stays; the rule counts the tie"
    assert "1 of 2 image(s)" in judged.tie_note(bf16) and "bfloat16" in judged.tie_note(bf16)
    assert not judged.passed(f32) and judged.tie_note(f32) == "", "0.0011 is no tie in float32"
    wide = parity.agreement(CLS, ref, out, (0.01, 0.01), parity.logit_rows(CLS, [apart], 2))
    assert not wide.passed(bf16) and wide.tie_note(bf16) == ""
    unknown = parity.agreement(CLS, ref, out, (0.01, 0.01))  # no logits: no tie allowed
    assert not unknown.passed(bf16)
    assert parity.logit_rows(CLS, [tied[0]], 2) is None and parity.logit_rows(DET, [tied], 2) is None
    assert parity.ulp("bfloat16", float("inf")) == parity.ulp("bfloat16", float("nan")) == 0.0
    broken = tied.clone()
    broken[0, 0] = float("nan")
    nan = parity.agreement(CLS, ref, out, (0.01, 0.01), parity.logit_rows(CLS, [broken], 2))
    assert nan.ties(bf16) == [] and not nan.passed(bf16)


def test_boxes_matched_by_iou_and_label() -> None:
    ref = {
        "scores": torch.tensor([0.9, 0.8]),
        "labels": torch.tensor([1, 2]),
        "boxes": torch.tensor([[0.0, 0.0, 0.5, 0.5], [0.5, 0.5, 1.0, 1.0]]),
    }
    assert parity.match_boxes(ref, ref) == (1.0, 1.0)
    moved = dict(
        ref, boxes=torch.tensor([[0.5, 0.5, 1.0, 1.0], [0.0, 0.0, 0.5, 0.25]]), labels=torch.tensor([2, 3])
    )
    iou, labels = parity.match_boxes(ref, moved)
    assert iou == pytest.approx((0.5 + 1.0) / 2) and labels == 0.5  # the second keeps its label


def test_mask_iou() -> None:
    a = torch.tensor([[0, 0], [1, 1]])
    assert parity.mask_iou(a, a) == 1.0
    assert parity.mask_iou(a, torch.tensor([[0, 1], [1, 1]])) == pytest.approx((1 / 2 + 2 / 3) / 2)


def test_scaled_diff_and_the_dtype_bound() -> None:
    ref = [torch.tensor([4.0, -2.0]), torch.tensor([0.5])]
    worst, scaled = parity.scaled_diff(ref, [torch.tensor([4.4, -2.0]), torch.tensor([0.7])])
    assert worst == pytest.approx(0.4) and scaled == pytest.approx(0.2)  # 0.2 / max(1, 0.5)
    assert parity.diff_bound(Settings(dtype="float32")) == 1e-3  # never below the tolerance
    assert parity.diff_bound(Settings(dtype="bfloat16")) == 64 * 2**-7


def test_planted_precision_bug_changes_the_output(monkeypatch: pytest.MonkeyPatch) -> None:
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.Linear(4, 2))
    x = torch.randn(3, 4, generator=torch.Generator().manual_seed(0))
    clean = model(x)
    monkeypatch.delenv("SUITE_FAULT", raising=False)
    assert not lower_precision(model, "M")
    monkeypatch.setenv("SUITE_FAULT", "lowp:other")
    assert not lower_precision(model, "M")
    monkeypatch.setenv("SUITE_FAULT", "lowp:M")
    assert lower_precision(model, "M")
    assert not torch.equal(model(x), clean)


def test_dtypes_and_thresholds_from_the_matrix(tmp_path: Path) -> None:
    text = TINY.read_text().replace(
        "    select:\n      - {models: all, batch_sizes: [1], modes: [eager]}",
        "    select:\n      - {models: [TinyViT], batch_sizes: [1], modes: [eager],"
        " dtypes: [float32, bfloat16], scenarios: [precision]}",
    )
    path = tmp_path / "m.yaml"
    path.write_text(text.replace("timeout_s: 120}", "timeout_s: 120, parity_top1: 0.5}"))
    cells = expand(load_matrix(path), "tiny", "any")
    assert [(c.scenario, c.settings.dtype) for c in cells] == [
        ("precision", "float32"),
        ("precision", "bfloat16"),
    ]
    assert {c.settings.parity_top1 for c in cells} == {0.5}
    assert Cell.from_json(cells[1].to_json()) == cells[1]
    path.write_text(text.replace("timeout_s: 120}", "timeout_s: 120, parity_top1: 1.5}"))
    with pytest.raises(UsageError, match=r"m\.yaml.*parity_top1"):
        load_matrix(path)
    path.write_text(text.replace("dtypes: [float32, bfloat16]", "dtypes: [float8]"))
    with pytest.raises(UsageError, match=r"m\.yaml.*dtypes"):
        load_matrix(path)


def _tiny(scenario: str, mode: str = "eager", dtype: str = "float32") -> Cell:
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyViT"]
    settings = replace(cell.settings, dtype=dtype, iterations=3, warmup=1)
    return replace(cell, scenario=scenario, mode=mode, settings=settings)


def _scenario(kind: type, cell: Cell) -> object:
    from suite.measure import cell as parts

    model, batch, _ = parts.prepare(cell, "cpu")
    with torch.no_grad():
        return kind(cell, model, batch)


def test_precision_scenario_passes_clean_and_fails_planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUITE_FAULT", raising=False)
    loop = TimingLoop(lambda: None, 1)
    cell = _tiny("precision")
    with torch.no_grad():
        clean = _scenario(Precision, cell).extra_fields(loop, None)
    assert clean["parity"] == "pass" and clean["parity_top1"] == 1.0 and clean["parity_max_abs_diff"] == 0.0
    assert clean["parity_inputs"] == len(parity.VARIANTS)
    with torch.no_grad():  # bfloat16 (emulated on an AVX2 CPU): judged, and within the rule
        reduced = _scenario(Precision, _tiny("precision", dtype="bfloat16")).extra_fields(loop, None)
    assert reduced["parity"] == "pass" and 0 < reduced["parity_scaled_diff"] <= reduced["parity_diff_bound"]
    monkeypatch.setenv("SUITE_FAULT", "lowp:TinyViT")
    with torch.no_grad():
        planted = _scenario(Precision, cell).extra_fields(loop, None)
    assert planted["parity"] == "fail", planted
    assert planted["parity_scaled_diff"] > planted["parity_diff_bound"]
    assert "planted precision bug" in planted["parity_note"]


def test_pipeline_stages_and_request() -> None:
    cell = _tiny("pipeline", mode="default")
    scenario = _scenario(Pipeline, cell)
    scenario.compiled_model = scenario.model  # the eager model stands in: no compile in a unit test
    with torch.no_grad():
        row = scenario.extra_fields(TimingLoop(lambda: None, 1), lambda: None)
    assert row["pipeline_post"] == "top-5"
    for stage in ("pre", "forward", "post", "e2e"):
        assert 0 < row[f"{stage}_ci95_low_ms"] <= row[f"{stage}_median_ms"] <= row[f"{stage}_ci95_high_ms"]
    assert row["e2e_eager_median_ms"] > 0 and row["e2e_speedup"] > 0
    assert bool(row["pre_fast_note"]) == ("pre_fast_median_ms" not in row)
    # the stages, timed in the same rounds, add up to the request within their CIs (loosely: a
    # shared CPU; 3 rounds)
    low = sum(row[f"{s}_ci95_low_ms"] for s in ("pre", "forward", "post"))
    high = sum(row[f"{s}_ci95_high_ms"] for s in ("pre", "forward", "post"))
    assert 0.5 * low <= row["e2e_median_ms"] <= 1.5 * high, (low, row["e2e_median_ms"], high)


def _frame(rows: list[dict[str, object]]) -> Any:
    import pandas as pd

    base = {"device": "cpu", "gpu_name": "CPU", "build": "b", "batch_size": 1, "status": "ok", "error": ""}
    return pd.DataFrame([{**base, **r} for r in rows]).fillna("")


def test_tables_read_as_a_user_would() -> None:
    pytest.importorskip("pandas")  # the host side's (tests-stable runs the rest under torch 2.0.1)
    from suite.report.tables.precision import pipeline_tables, precision_tables

    common = {
        "scenario": "precision",
        "task": CLS,
        "model": "ViT",
        "parity_top5": 1.0,
        "parity_max_abs_diff": 0.0,
    }
    frame = _frame(
        [
            {
                **common,
                "mode": "eager",
                "dtype": "float32",
                "median_ms": 10.0,
                "parity": "pass",
                "parity_top1": 1.0,
            },
            {
                **common,
                "mode": "default",
                "dtype": "bfloat16",
                "median_ms": 4.0,
                "parity": "fail",
                "parity_top1": 0.5,
            },
            {  # one of six top-1 changes a tie (suite.measure.parity): the rule's pass, marked
                **common,
                "mode": "eager",
                "dtype": "bfloat16",
                "median_ms": 5.0,
                "parity": "pass",
                "parity_top1": 5 / 6,
                "parity_note": f"against float32 eager on 6 inputs x batch 1; top-1 changed: {parity.TIED}",
            },
        ]
    )
    frame["parity_top1"] = [1.0, 0.5, 5 / 6]
    (table,) = precision_tables(frame)
    text = table.markdown()
    assert "What reduced precision and compiling change in the answer" in text
    cells = "| default | bfloat16 | fail | top-1 0.50 · top-5 1.00 | 0 | 4.000 | 2.50x |"
    assert f"| Image Classification/ViT {cells}" in text
    assert "| eager | bfloat16 | pass | top-1 0.83 + ties · top-5 1.00 |" in text
    assert text.count("+ ties") == 2, "the tied row and the note's explanation, nothing else"
    stages = {f"{s}_median_ms": 1.0 for s in ("pre", "forward", "post")}
    pipe = _frame(
        [
            {
                "scenario": "pipeline", "task": CLS, "model": "ViT", "mode": "default", "dtype": "float32",
                **stages, "pre_fast_median_ms": "", "e2e_median_ms": 3.0, "e2e_eager_median_ms": 4.0,
                "eager_median_ms": 2.0, "median_ms": 1.0, "speedup": 2.0, "speedup_ci95_low": 1.9,
                "speedup_ci95_high": 2.1, "e2e_speedup": 1.33, "e2e_speedup_ci95_low": 1.3,
                "e2e_speedup_ci95_high": 1.4, "pre_fast_note": "none here",
            }
        ]
    )  # fmt: skip
    (table,) = pipeline_tables(pipe)
    text = table.markdown()
    assert "What compiling saves per request" in text
    assert "| 2.000 → 1.000 | 1.000 | 4.000 → 3.000 | 2.00x [1.90, 2.10] | 1.33x [1.30, 1.40] |" in text


@pytest.mark.slow
def test_planted_precision_bug_end_to_end(tmp_path: Path) -> None:
    """One tiny cell through `suite run` (its own worker process) and `suite merge`: a planted
    precision bug caught by the parity rule, in the row and in the table. A healthy cell passing
    (float32, bfloat16) and the pipeline's stages are the in-process tests' (CI's budget)."""
    matrix = tmp_path / "m.yaml"
    matrix.write_text(
        TINY.read_text()
        + "  e2e:\n"
        + "    settings: {weights: random, iterations: 10, warmup: 1, timeout_s: 300, compile_cache: run}\n"
        + "    select:\n"
        + "      - {models: [TinyViT], batch_sizes: [1], modes: [eager], scenarios: [precision]}\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO), SUITE_FAULT="lowp:TinyViT")
    run = [sys.executable, "-m", "suite", "run", "--matrix", str(matrix), "--profile", "e2e"]
    run += ["--device", "cpu", "--out", str(tmp_path), "--run-id", "r"]
    done = subprocess.run(run, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    with open(next((tmp_path / "r" / "raw").glob("*.csv"))) as f:
        rows = {(r["model"], r["scenario"]): r for r in csv.DictReader(f)}
    planted = rows[("TinyViT", "precision")]
    assert planted["status"] == "ok" and planted["parity"] == "fail", planted
    assert float(planted["parity_scaled_diff"]) > float(planted["parity_diff_bound"]), planted
    if importlib.util.find_spec("pandas") is None:  # the row is checked; the table needs the host's merge
        pytest.skip("merge is host-side (nox -s tests-stable has no pandas)")
    merged = subprocess.run(
        [sys.executable, "-m", "suite", "merge", str(tmp_path / "r"), "--matrix", str(matrix), "--no-plots"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert merged.returncode == 0, merged.stderr[-2000:]
    page = (tmp_path / "r" / "tables" / "tables.md").read_text()
    assert "What reduced precision and compiling change in the answer" in page
