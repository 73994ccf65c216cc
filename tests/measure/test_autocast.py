"""Autocast cells (suite/measure/autocast.py): float32 weights and inputs, every call
under torch.autocast, judged against float32 eager like the other precisions. The matrix's rules
and one-line errors, the tiny matrix's 2-layer ViT in this process (eager, and the compiled
call's wrapping with the model standing in for its compiled self), a torch that cannot autocast
(torch 2.0's CPU float16, and a torch that would run float32, simulated) as a skipped row, the
planted precision bug caught in an autocast cell, and the table's row. A core test (nox -s
tests-stable): torch 2.0.1 too."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import warnings
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import torch
from support import REPO, TINY

from suite.errors import UsageError
from suite.measure import autocast, parity, worker
from suite.measure import cell as parts
from suite.measure.scenarios.precision import Precision, Unsupported
from suite.measure.timing import TimingLoop
from suite.run.launch import cell_stem
from suite.spec import Cell, Filters, expand, load_matrix
from suite.spec.settings import SettingError, Settings
from suite.spec.vocab import compute_dtype, weights_dtype

SELECT = "    select:\n      - {models: all, batch_sizes: [1], modes: [eager]}"
LOOP = TimingLoop(lambda: None, 1)


def _matrix(tmp_path: Path, select: str, settings: str = "") -> Path:
    """The tiny matrix with the `tiny` profile's selection (and settings) replaced."""
    text = TINY.read_text().replace(SELECT, f"    select:\n      - {select}")
    if settings:
        text = text.replace("timeout_s: 120}", f"timeout_s: 120, {settings}}}")
    path = tmp_path / "m.yaml"
    path.write_text(text)
    return path


def test_autocast_dtypes_in_the_matrix(tmp_path: Path) -> None:
    sel = "{models: [TinyViT], batch_sizes: [1], modes: [eager, default], scenarios: [precision], "
    path = _matrix(tmp_path, sel + "dtypes: [float32, autocast-bfloat16]}")
    cells = expand(load_matrix(path), "tiny", "any")
    assert [(c.mode, c.settings.dtype) for c in cells] == [
        ("eager", "float32"),
        ("eager", "autocast-bfloat16"),
        ("default", "float32"),
        ("default", "autocast-bfloat16"),
    ]
    assert Cell.from_json(cells[1].to_json()) == cells[1]
    assert cells[1].key_fields("cpu")["dtype"] == "autocast-bfloat16"  # the CSV's one dtype column
    assert cells[1].label == "TinyViT bs=1 eager precision autocast-bfloat16"  # progress lines, logs
    assert cell_stem(cells[1], 1) == "001-tinyvit-bs1-eager-precision-autocast-bfloat16"
    assert cell_stem(cells[0], 0) == "000-tinyvit-bs1-eager-precision"  # float32's as it was
    assert (weights_dtype("autocast-float16"), compute_dtype("autocast-float16")) == ("float32", "float16")
    assert (weights_dtype("bfloat16"), compute_dtype("bfloat16")) == ("bfloat16", "bfloat16")
    # the diff bound is the autocast dtype's: what the cast model is allowed
    bound = parity.diff_bound(Settings(dtype="autocast-bfloat16"))
    assert bound == parity.diff_bound(Settings(dtype="bfloat16")) == 64 * 2**-7
    with pytest.raises(SettingError, match="precision scenario only"):
        replace(cells[1], scenario="inference")


def test_autocast_outside_precision_is_a_one_line_error(tmp_path: Path) -> None:
    sel = "{models: [TinyViT], batch_sizes: [1], modes: [eager], dtypes: [autocast-float16], "
    where = r"m\.yaml: profiles\.tiny\.select\[0\]\.dtypes: "
    with pytest.raises(UsageError, match=where + "'autocast-float16' runs in the precision scenario only"):
        load_matrix(_matrix(tmp_path, sel + "scenarios: [precision, inference]}"))
    path = _matrix(tmp_path, sel + "scenarios: [precision]}")
    with pytest.raises(UsageError, match=r"--scenarios: 'autocast-float16' runs in the precision"):
        expand(load_matrix(path), "tiny", "any", Filters(scenarios=("train",)))
    plain = "{models: [TinyViT], batch_sizes: [1], modes: [eager]}"
    path = _matrix(tmp_path, plain, "dtype: autocast-bfloat16")
    with pytest.raises(UsageError, match=r"m\.yaml: profiles\.tiny\.settings\.dtype: .*not 'inference'"):
        expand(load_matrix(path), "tiny", "any")
    path.write_text(path.read_text().replace("autocast-bfloat16", "autocast-float8"))
    with pytest.raises(UsageError, match=r"m\.yaml: profiles\.tiny\.settings\.dtype"):
        load_matrix(path)
    # and at the command line: exit 2, one line, no traceback
    plan = [sys.executable, "-m", "suite", "plan", "--matrix", str(path), "--profile", "tiny"]
    done = subprocess.run(
        [*plan, "--device", "cpu"],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip().count("\n") == 0 and "settings.dtype" in done.stderr


def _tiny(dtype: str, **settings: Any) -> Cell:
    (cell,) = [c for c in expand(load_matrix(TINY), "tiny", "t") if c.model.name == "TinyViT"]
    at = replace(cell.settings, dtype=dtype, iterations=3, warmup=1, **settings)
    return replace(cell, scenario="precision", settings=at)


def _precision(cell: Cell) -> Precision:
    model, batch, _ = parts.prepare(cell, "cpu")
    return Precision(cell, model, batch)


def test_autocast_cell_keeps_float32_weights_and_runs_under_autocast(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SUITE_FAULT", raising=False)
    scenario = _precision(_tiny("autocast-bfloat16"))
    assert {p.dtype for p in scenario.model.parameters()} == {torch.float32}
    assert all(v.dtype == torch.float32 for v in scenario.batch.values() if v.is_floating_point())
    with torch.no_grad():
        assert scenario.eager().logits.dtype == torch.bfloat16  # the classifier's Linear, autocast
        assert scenario.model(**scenario.batch).logits.dtype == torch.float32  # outside: float32
        row = scenario.extra_fields(LOOP, None)
    # every top-1 kept, or changed only between classes that are one number in bfloat16 (a tie:
    # under torch 2.0.1 one of the random-weight ViT's six images flips between logits 0.0011 apart)
    assert row["parity"] == "pass", row
    assert row["parity_top1"] == 1.0 or "counted as agreeing" in row["parity_note"], row
    assert 0 < row["parity_scaled_diff"] <= row["parity_diff_bound"] == 64 * 2**-7
    assert "torch.autocast('cpu', bfloat16)" in row["parity_note"]
    # the compiled cell's calls are under autocast too (the model stands in for its compiled self:
    # no compile in a unit test)
    monkeypatch.setattr(parts, "compile_model", lambda model, mode: model)
    compiled = scenario.compile()
    with torch.no_grad():
        assert compiled().logits.dtype == torch.bfloat16
        assert scenario.extra_fields(LOOP, compiled)["parity"] == "pass"


WARNING = (
    "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
    "CPU Autocast only supports dtype of torch.bfloat16 currently."
)


class _Torch20Autocast(contextlib.AbstractContextManager):
    """torch.autocast as torch 2.0 and 2.1 have it on a CPU for any dtype but bfloat16: a warning
    when made, then an error when entered (pytorch/pytorch#100565, #115991)."""

    def __init__(self, device_type: str, dtype: Any = None, **kwargs: Any) -> None:
        warnings.warn(WARNING, stacklevel=2)

    def __enter__(self) -> None:
        raise RuntimeError("Currently, AutocastCPU only support Bfloat16 as the autocast_cpu_dtype")

    def __exit__(self, *exc: object) -> None:
        return None


def _as_torch(old: bool, real: Any) -> Any:
    """torch.autocast as a torch that cannot autocast a CPU to float16 has it: `old`, torch 2.0's
    (warns, then raises); else a later torch's for a dtype it lacks (warns, then runs float32)."""

    def autocast_like(device_type: str, dtype: Any = None, **kwargs: Any) -> Any:
        if device_type != "cpu" or dtype is torch.bfloat16:
            return real(device_type, dtype=dtype, **kwargs)
        if old:
            return _Torch20Autocast(device_type, dtype)
        warnings.warn(WARNING, stacklevel=2)
        return contextlib.nullcontext()

    return autocast_like


@pytest.mark.parametrize("old", [True, False], ids=["raises-on-enter", "warns-and-runs-float32"])
def test_a_torch_that_cannot_autocast_gives_a_skipped_row(monkeypatch: pytest.MonkeyPatch, old: bool) -> None:
    monkeypatch.setattr(torch, "autocast", _as_torch(old, torch.autocast))
    assert autocast.unsupported("cpu", "bfloat16") == ""
    why = autocast.unsupported("cpu", "float16")
    if old:
        assert why.startswith(f"torch {torch.__version__} cannot autocast to float16 on cpu: Currently, ")
    else:
        assert "does not autocast to float16 on cpu (it would run float32)" in why
    assert "only supports dtype of torch.bfloat16" in why and "\n" not in why, why
    row = worker.run(_tiny("autocast-float16"), "cpu")
    assert row["status"] == "skipped" and row["error"] == why, row
    assert "median_ms" not in row and "parity" not in row  # an empty row, its reason said


def test_a_gpu_without_bfloat16(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuses(device_type: str, dtype: Any = None, **kwargs: Any) -> Any:  # torch's words for it
        raise RuntimeError("Current CUDA Device does not support bfloat16. Please switch dtype to float16.")

    monkeypatch.setattr(torch, "autocast", refuses)
    why = autocast.unsupported("cpu", "bfloat16")
    assert "cannot autocast to bfloat16 on cpu: Current CUDA Device does not support bfloat16" in why
    with pytest.raises(Unsupported, match="cannot autocast"):
        _precision(_tiny("autocast-bfloat16"))


def test_planted_precision_bug_caught_in_an_autocast_cell(monkeypatch: pytest.MonkeyPatch) -> None:
    """SUITE_FAULT=lowp rounds the first layer's output to two mantissa bits. In an autocast-float16
    cell of the tiny ViT, its random weights scaled to unit variance (measured: clean 2.1e-3,
    planted 0.134 scaled diff, torch 2.13 CPU), the default rule (64 epsilons: 0.0625) passes the
    clean cell and fails the planted one (docs/precision.md)."""
    why = autocast.unsupported("cpu", "float16")
    if why:  # torch 2.0.1: its CPU autocasts to bfloat16 only
        pytest.skip(why)
    monkeypatch.delenv("SUITE_FAULT", raising=False)
    cell = _tiny("autocast-float16")
    with torch.no_grad():
        clean = _precision(cell).extra_fields(LOOP, None)
    assert clean["parity"] == "pass" and 0 < clean["parity_scaled_diff"] <= clean["parity_diff_bound"], clean
    monkeypatch.setenv("SUITE_FAULT", "lowp:TinyViT")
    with torch.no_grad():
        planted = _precision(cell).extra_fields(LOOP, None)
    assert planted["parity"] == "fail", planted
    assert planted["parity_scaled_diff"] > planted["parity_diff_bound"]
    assert "planted precision bug" in planted["parity_note"]


def test_autocast_rows_in_the_table() -> None:
    pd = pytest.importorskip("pandas")  # the host side's (tests-stable runs the rest under torch 2.0.1)
    from suite.report.tables.precision import precision_tables

    base = {"device": "cpu", "gpu_name": "CPU", "build": "b", "batch_size": 1, "scenario": "precision"}
    base.update(task=parity.CLASSIFICATION, model="ViT", mode="eager", parity_top5=1.0)
    base.update(parity_max_abs_diff=0.0)
    rows = [
        {**base, "dtype": "autocast-float16", "status": "skipped", "error": "torch 2.0.1 does not autocast"}
        | {"median_ms": "", "parity": ""},
        {**base, "dtype": "autocast-bfloat16", "status": "ok", "median_ms": 5.0, "parity": "pass"},
        {**base, "dtype": "float32", "status": "ok", "median_ms": 10.0, "parity": "pass"},
        {**base, "dtype": "bfloat16", "status": "ok", "median_ms": 8.0, "parity": "pass"},
    ]
    frame = pd.DataFrame([{"error": "", "parity_top1": 1.0, **r} for r in rows]).fillna("")
    (table,) = precision_tables(frame)
    lines = [line for line in table.markdown().splitlines() if line.startswith("| Image Classification/ViT")]
    assert [line.split("|")[3].strip() for line in lines] == [
        "float32",
        "bfloat16",
        "autocast-float16",
        "autocast-bfloat16",
    ]
    assert lines[3].endswith("| pass | top-1 1.00 · top-5 1.00 | 0 | 5.000 | 2.00x |"), lines[3]
    assert "skipped: torch 2.0.1 does not autocast" in lines[2] and lines[2].endswith("| — | — | — | — |")
