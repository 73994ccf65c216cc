"""The GPU study (issue 30): its plan, the packing for the device tool, the deadline and the resume,
one real step through the suite's CLI, and `finish` on the rows of a real run."""

from __future__ import annotations

import json
import os
import shutil
import stat
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from suite.cli import build_parser
from suite.cli.args import DEFAULT_MATRIX, DEFAULT_REFERENCE, filters_of
from suite.errors import UsageError
from suite.results import read_rows
from suite.gpustudy import call as run_study
from suite.gpustudy import packing
from suite.gpustudy import plan as study
from suite.spec import expand, load_matrix
from suite.spec.cost import estimate_seconds

ROOT = Path(__file__).resolve().parents[1]
SMOKE_CSV = ROOT / "results" / "2026-11-21-cpu-amd-epyc-smoke" / "raw" / "current__cpu.csv"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(DEFAULT_MATRIX)


def _cells(matrix, variant):
    """{call: [(run id, verb, cell key)]} of the whole plan."""
    out = {}
    for call in study.CALLS:
        planned = study.plan_call(matrix, call, variant, DEFAULT_REFERENCE)
        out[call.number] = [
            (p.step.run_id, p.step.verb, (c.model.name, c.batch_size, c.mode, c.scenario, c.dynamic))
            for p in planned
            for c in p.cells
        ]
    return out


@pytest.mark.parametrize("variant", study.VARIANTS)
def test_the_plan_has_the_issues_cells_each_once(matrix, variant):
    cells = _cells(matrix, variant)
    runs = [(run_id, key) for call in cells.values() for run_id, verb, key in call if verb == "run"]
    merged = [key for run_id, key in runs]
    assert len(merged) == len(set(merged)), "a cell measured twice in the merged runs would shadow the other"
    models = [name for name, spec in matrix.models.items() if not spec.base]  # the guide's 12
    call1 = {key for _, _, key in cells[1]}
    assert call1 == {(m, 1, mode, "inference", "") for m in models for mode in ("eager", "default")}
    call2 = {(verb, key) for _, verb, key in cells[2]}
    for m in study.RO_MODELS:
        assert {
            ("run", (m, 1, "reduce-overhead", "inference", "")),
            ("run", (m, 4, "reduce-overhead", "inference", "")),
        } <= call2
        assert ("run", (m, 4, "eager", "inference", "")) in call2
    assert {key[0] for verb, key in call2 if verb == "crosscheck"} == set(study.CROSSCHECK_MODELS)
    call3 = [(verb, key) for _, verb, key in cells[3]]
    for m in study.CLASSIFICATION:  # batch 4 and 16, default and eager, once each (in call 2 or 3)
        for bs in (4, 16):
            for mode in ("default", "eager"):
                assert merged.count((m, bs, mode, "inference", "")) == 1, (m, bs, mode)
    assert [key for verb, key in call3 if key[3] == "dynamic-batch"] == [
        ("ResNet", 1, "default", "dynamic-batch", "auto")
    ]
    assert len([key for verb, key in call3 if verb == "repeat"]) == 4
    steps = [s for c in study.CALLS for s in c.steps]
    assert [s.times for s in steps if s.verb == "repeat"] == [3]
    assert sum("--compile-cost" in s.extra for s in steps) == 1


def test_each_steps_command_selects_what_its_estimate_counts(matrix):
    """The printed command, parsed by the suite's own parser, expands to the step's cells."""
    parser = build_parser()
    for variant in study.VARIANTS:
        for call in study.CALLS:
            for p in study.plan_call(matrix, call, variant, DEFAULT_REFERENCE):
                args = parser.parse_args(p.step.argv(variant, "/tmp/out"))
                assert args.device == study.DEVICE[variant] and args.run_id == p.step.run_id
                cells = expand(matrix, args.profile, "?", filters_of(args))
                assert cells == list(p.cells), p.step.what
                assert p.seconds >= sum(estimate_seconds(c) for c in cells)


def test_the_gpu_estimate_takes_the_guides_per_call_time(matrix):
    """Maskformer at 640 x 864: the guide's 76 ms a call, far above the cost model's own figure."""
    guide = study.guide_forward_ms(DEFAULT_REFERENCE)
    assert guide[("Maskformer", 1)] == pytest.approx(75.764)
    (cell,) = expand(
        matrix,
        "gpu-study",
        "?",
        study.Step(
            "run", "x", "", ("--models", "Maskformer", "--batch-sizes", "1", "--modes", "eager")
        ).filters("gpu"),
    )
    assert study.cell_seconds(cell, guide) - estimate_seconds(cell) > 100 * 0.07
    assert study.cell_seconds(cell, {}) == estimate_seconds(cell)


def test_steps_are_checked():
    with pytest.raises(ValueError, match="rounds"):
        study.Step("crosscheck", "x", "", ())
    with pytest.raises(ValueError, match="times"):
        study.Step("run", "x", "", (), times=3)
    with pytest.raises(UsageError):
        study.call_of(4)


# ---------------------------------------------------------------------------------------------
# What comes back from the device machine


def _run_folder(work: Path, run_id: str) -> None:
    (work / run_id / "raw").mkdir(parents=True)
    (work / run_id / "raw" / "b__cpu.csv").write_text("row\n")
    (work / run_id / "raw" / ".b__cpu.csv.lock").write_text("pid")
    (work / run_id / "logs" / "b__cpu").mkdir(parents=True)
    (work / run_id / "logs" / "b__cpu" / "000.log").write_text("log\n")
    (work / run_id / ".scratch").mkdir()
    (work / run_id / ".scratch" / "cell.json").write_text("{}")
    (work / run_id / ".compile-cache").mkdir()
    (work / run_id / ".compile-cache" / "kernel.so").write_bytes(b"x" * 100)


def test_pack_keeps_results_only_and_comes_back_whole(tmp_path):
    work, out = tmp_path / "work", tmp_path / "out"
    out.mkdir()
    _run_folder(work, "call2")
    _run_folder(work, "call2-crosscheck-resnet")
    assert (
        packing.pack(
            work, ["call2", "call2-crosscheck-resnet", "absent"], out / "call2.tar.gz", {"call2.json": b"{}"}
        )
        == ""
    )
    with tarfile.open(out / "call2.tar.gz") as tar:
        names = set(tar.getnames())
    assert "call2/raw/b__cpu.csv" in names and "call2/logs/b__cpu/000.log" in names and "call2.json" in names
    assert not [n for n in names if ".scratch" in n or ".compile-cache" in n or n.endswith(".lock")]
    assert packing.check_shape(out) == []
    again = tmp_path / "again"
    assert packing.unpack(out / "call2.tar.gz", again) == ["call2", "call2-crosscheck-resnet"]
    assert (again / "call2" / "raw" / "b__cpu.csv").read_text() == "row\n"


def test_an_oversized_pack_leaves_the_logs_out(tmp_path, monkeypatch):
    work = tmp_path / "work"
    _run_folder(work, "call1")
    (work / "call1" / "logs" / "b__cpu" / "big.log").write_bytes(os.urandom(50_000))
    monkeypatch.setattr(packing, "PACK_LIMIT_BYTES", 20_000)
    note = packing.pack(work, ["call1"], tmp_path / "call1.tar.gz")
    assert "logs were left out" in note
    with tarfile.open(tmp_path / "call1.tar.gz") as tar:
        assert [n for n in tar.getnames() if n.endswith(".csv")] and not [
            n for n in tar.getnames() if n.endswith(".log")
        ]


def test_check_shape_names_what_the_tool_would_not_bring_back(tmp_path):
    for i in range(9):
        (tmp_path / f"f{i}").write_text("x")
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    (tmp_path / "a" / "b" / "c" / "deep").write_text("x")
    (tmp_path / "odd name").write_text("x")
    problems = "\n".join(packing.check_shape(tmp_path))
    assert "11 files" in problems and "more than 2 folders down" in problems and "odd name" in problems


def test_unpack_refuses_a_member_outside_its_folder(tmp_path):
    archive = tmp_path / "call1.tar.gz"
    (tmp_path / "evil").write_text("x")
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(tmp_path / "evil", arcname="../evil")
    with pytest.raises(UsageError, match="unsafe member"):
        packing.unpack(archive, tmp_path / "into")


# ---------------------------------------------------------------------------------------------
# The deadline and the resume, with a stand-in for `python -m suite`

FAKE = textwrap.dedent(
    """\
    #!{python}
    # a stand-in for `python -m suite VERB ... --out W --run-id X`: records one "cell" per
    # invocation under W/X/raw, then works for $FAKE_SLEEP seconds (SIGINT: exit 130, as the suite)
    import os, sys, time
    args = sys.argv[3:]
    out, run_id = args[args.index("--out") + 1], args[args.index("--run-id") + 1]
    raw = os.path.join(out, run_id, "raw")
    os.makedirs(raw, exist_ok=True)
    with open(os.path.join(raw, "fake.csv"), "a") as fh:
        fh.write(" ".join(args[:1] + args[args.index("--device") + 2 : args.index("--out")]) + "\\n")
    print("fake step", args[0], run_id, flush=True)
    try:
        time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    except KeyboardInterrupt:
        print("suite: interrupted", flush=True)
        sys.exit(130)
    """
)


@pytest.fixture
def fake_python(tmp_path):
    path = tmp_path / "fake-python"
    path.write_text(FAKE.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _call(number=9):
    steps = (
        study.Step("run", "callx", "first", ("--models", "ResNet")),
        study.Step("run", "callx", "second", ("--models", "ViT")),
    )
    return study.Call(number, "a test call", steps)


def _planned(call):
    return [study.PlannedStep(s, (), 1.0) for s in call.steps]


def test_a_call_stops_at_its_deadline_packs_and_resumes_on_a_fresh_machine(
    tmp_path, fake_python, monkeypatch, capsys
):
    monkeypatch.setenv("FAKE_SLEEP", "30")
    monkeypatch.setattr(run_study, "STEP_OVERHEAD_S", 0.5)
    call = _call()
    work, out = tmp_path / "work", tmp_path / "out"
    report = run_study.run_call(call, "tiny", _planned(call), work, out, 2.0, python=fake_python, cwd=ROOT)
    assert [s.status for s in report.steps] == [run_study.STOPPED, run_study.NO_TIME]
    assert report.wall_s < 2.0 + run_study.STOP_GRACE_S and not report.complete()
    assert sorted(p.name for p in out.iterdir()) == ["call9.json", "call9.log", "call9.md", "call9.tar.gz"]
    assert packing.check_shape(out) == []
    text = capsys.readouterr().out
    assert "estimated" in text.splitlines()[-len(text.splitlines())] or "estimated" in text
    assert "NOT complete: run the same call again to resume" in text
    assert "suite: interrupted" in (out / "call9.log").read_text()
    # a fresh machine: no run folder, the tarball carried back
    carry = tmp_path / "carry"
    shutil.copytree(out, carry)
    fresh = tmp_path / "fresh"
    monkeypatch.setenv("FAKE_SLEEP", "0")
    report = run_study.run_call(
        call, "tiny", _planned(call), fresh, tmp_path / "out2", 0, carry, fake_python, ROOT
    )
    assert report.complete()
    lines = (fresh / "callx" / "raw" / "fake.csv").read_text().splitlines()
    assert lines == [
        "run --models ResNet",
        "run --models ResNet",
        "run --models ViT",
    ]  # restored + both steps
    assert (
        "resuming from" in (tmp_path / "out2" / "call9.log").read_text()
        and "restored callx" in (tmp_path / "out2" / "call9.log").read_text()
    )
    # a warm machine with the tarball carried all the same: its own folder wins
    run_study.run_call(call, "tiny", _planned(call), fresh, tmp_path / "out3", 0, carry, fake_python, ROOT)
    assert "still here, kept as they are: callx" in (tmp_path / "out3" / "call9.log").read_text()
    assert len((fresh / "callx" / "raw" / "fake.csv").read_text().splitlines()) == 5


def test_a_step_that_exits_2_stops_the_call(tmp_path, monkeypatch):
    bad = tmp_path / "bad-python"
    bad.write_text(
        f"#!{sys.executable}\nimport sys\nprint('suite run: error: --device: no GPU')\nsys.exit(2)\n"
    )
    bad.chmod(0o755)
    call = _call(8)
    report = run_study.run_call(
        call, "gpu", _planned(call), tmp_path / "w", tmp_path / "o", 0, python=str(bad), cwd=ROOT
    )
    assert [s.status for s in report.steps] == [run_study.FAILED, run_study.NOT_STARTED]
    assert "no GPU" in (tmp_path / "o" / "call8.log").read_text()


def test_calibration_reads_the_earlier_calls(tmp_path):
    (tmp_path / "call1.json").write_text(
        json.dumps(
            {
                "call": 1,
                "steps": [
                    {"status": "done", "wall_s": 50, "estimate_s": 100},
                    {"status": "not started", "wall_s": 0, "estimate_s": 99},
                ],
            }
        )
    )
    ratio, line = run_study.calibration([tmp_path / "call1.json"])
    assert ratio == 0.5 and "calls 1" in line
    assert run_study.calibration([]) is None


# ---------------------------------------------------------------------------------------------
# One real step, and finish


@pytest.mark.slow
@pytest.mark.skipif(
    os.environ.get("SUITE_GPU_STUDY_E2E") != "1",
    reason="SUITE_GPU_STUDY_E2E=1: two real runs of one cell (30 s to minutes: kept out of CI's budget; "
    "the whole tiny study is `python -m suite gpu-study call N --tiny`, docs/gpu-study.md)",
)
def test_one_real_step_through_the_suites_cli(tmp_path):
    """The step's command is the suite's own `run`, in a child: one shrunk eager cell, then the same
    call again records nothing new (the --run-id resume)."""
    step = study.Step(
        "run", "callr", "one eager cell", ("--models", "ResNet", "--batch-sizes", "1", "--modes", "eager")
    )
    call = study.Call(7, "one cell", (step,))
    matrix = load_matrix(DEFAULT_MATRIX)
    planned = [
        study.PlannedStep(step, tuple(expand(matrix, "gpu-study-tiny", "?", step.filters("tiny"))), 30.0)
    ]
    for attempt in (1, 2):
        report = run_study.run_call(call, "tiny", planned, tmp_path / "work", tmp_path / f"out{attempt}", 0)
        assert report.complete(), (tmp_path / f"out{attempt}" / "call7.log").read_text()
    rows = read_rows(next((tmp_path / "work" / "callr" / "raw").glob("*.csv"))).rows
    assert [(r["model"], r["mode"], r["status"]) for r in rows] == [("ResNet", "eager", "ok")]
    assert "1 already recorded" in (tmp_path / "out2" / "call7.log").read_text()
    with tarfile.open(tmp_path / "out2" / "call7.tar.gz") as tar:
        assert any(n.startswith("callr/raw/") and n.endswith(".csv") for n in tar.getnames())


def test_finish_writes_the_readme_from_the_files(tmp_path):
    pytest.importorskip("pandas")
    from suite.gpustudy.finish import finish

    work = tmp_path / "work"
    (work / "call1" / "raw").mkdir(parents=True)
    shutil.copy(SMOKE_CSV, work / "call1" / "raw" / "current__cpu.csv")
    xc = work / "call2-crosscheck-resnet"
    xc.mkdir()
    item = {
        "model": "ResNet",
        "batch_size": 1,
        "mode": "default",
        "timed": "default",
        "suite_ms": 2.0,
        "error": "",
    }
    item["vs_benchmark"] = {"ratio": 1.005, "low": 0.99, "high": 1.02}
    item["vs_events"] = {"ratio": 1.031, "low": 1.02, "high": 1.04}
    (xc / "crosscheck.json").write_text(json.dumps({"device": "cuda", "results": [item]}))
    fetched = tmp_path / "fetched"
    fetched.mkdir()
    packing.pack(work, ["call1"], fetched / "call1.tar.gz")
    packing.pack(work, ["call2-crosscheck-resnet"], fetched / "call2.tar.gz")
    summary = {
        "call": 1,
        "title": "t",
        "variant": "gpu",
        "budget_s": 480,
        "estimate_s": 100,
        "wall_s": 80,
        "steps": [
            {
                "what": "batch 1, default",
                "command": "python -m suite run ...",
                "cells": 12,
                "estimate_s": 100,
                "wall_s": 80,
                "status": "done",
            }
        ],
    }
    (fetched / "call1.json").write_text(json.dumps(summary))
    (fetched / "nvidia-smi.txt").write_text("Driver Version: 580\n")
    folder = finish([fetched], tmp_path / "results" / "x", DEFAULT_REFERENCE, DEFAULT_MATRIX, plots=False)
    readme = (folder / "README.md").read_text()
    rows = read_rows(SMOKE_CSV).rows
    vit = next(r for r in rows if r["model"] == "ViT" and r["mode"] == "default")
    assert f"{float(vit['speedup']):.2f} [" in readme  # ours, read from the CSV
    assert "1.031 (1.020-1.040)" in readme and "1 of 2 ratio(s) within ±2%" in readme
    assert "0.80 x the cost model's estimate" in readme
    assert (folder / "calls" / "nvidia-smi.txt").exists() and (folder / "tables" / "tables.md").exists()
    assert (folder / "call1" / "raw" / "current__cpu.csv").exists()
    for section in (
        "## The machine and its software",
        "## Repeatability",
        "## Wall time per cell",
        "## Health",
    ):
        assert section in readme
    with pytest.raises(UsageError, match="not empty"):
        finish([fetched], folder, DEFAULT_REFERENCE, DEFAULT_MATRIX, plots=False)


def test_dynamic_narrows_the_dynamic_batch_cells(matrix):
    """--dynamic (issue 30: the study's one dynamic-batch cell) narrows static/auto/marked."""
    parser = build_parser()
    base = [
        "plan",
        "--profile",
        "gpu-study",
        "--models",
        "ResNet",
        "--modes",
        "default",
        "--scenarios",
        "dynamic-batch",
    ]
    every = expand(matrix, "gpu-study", "?", filters_of(parser.parse_args(base)))
    assert [c.dynamic for c in every] == ["static", "auto", "marked"]
    (one,) = expand(matrix, "gpu-study", "?", filters_of(parser.parse_args([*base, "--dynamic", "auto"])))
    assert (one.dynamic, one.served) == ("auto", (1, 4, 16, 1))
    with pytest.raises(UsageError, match="--dynamic"):
        parser.parse_args([*base, "--dynamic", "sometimes"])


def test_a_step_started_with_sigint_ignored_still_stops_at_the_deadline(tmp_path, fake_python, monkeypatch):
    """A call launched in the background (`cmd &`, nohup) inherits SIGINT ignored; its step must not:
    the deadline's SIGINT stops it at once (not after the SIGKILL grace), and so does its parent's death."""
    import signal

    monkeypatch.setenv("FAKE_SLEEP", "30")
    monkeypatch.setattr(run_study, "STEP_OVERHEAD_S", 0.5)
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        call = _call(6)
        report = run_study.run_call(
            call, "tiny", _planned(call), tmp_path / "w", tmp_path / "o", 2.0, python=fake_python, cwd=ROOT
        )
    finally:
        signal.signal(signal.SIGINT, old)
    assert report.steps[0].status == run_study.STOPPED
    assert report.steps[0].wall_s < 2.0 + run_study.STOP_GRACE_S / 2
    assert "suite: interrupted" in (tmp_path / "o" / "call6.log").read_text()


def test_a_pack_while_a_step_runs_says_so(tmp_path, fake_python, monkeypatch):
    """What a call killed from outside leaves: a summary whose step in flight reads running, with
    the seconds it had run."""
    import io
    import threading
    import time

    monkeypatch.setenv("FAKE_SLEEP", "30")
    monkeypatch.setattr(run_study, "PACK_EVERY_S", 0.2)
    monkeypatch.setattr(run_study, "STEP_OVERHEAD_S", 0.5)
    call = _call(5)
    args = (call, "tiny", _planned(call), tmp_path / "w", tmp_path / "o", 4.0, None, fake_python, ROOT)
    worker = threading.Thread(target=run_study.run_call, args=args, kwargs={"echo": io.StringIO()})
    worker.start()
    seen = None
    for _ in range(40):  # the first pack comes PACK_EVERY_S after the step starts
        time.sleep(0.1)
        path = tmp_path / "o" / "call5.json"
        if path.exists():
            seen = json.loads(path.read_text())["steps"][0]
            if seen["status"] == run_study.RUNNING and seen["wall_s"] > 0:
                break
    worker.join()
    assert seen and seen["status"] == run_study.RUNNING and seen["wall_s"] > 0, seen
    assert json.loads((tmp_path / "o" / "call5.json").read_text())["steps"][0]["status"] == run_study.STOPPED


def test_no_two_steps_share_a_run_folder():
    """A later step's resume would move an earlier step's failed rows to superseded/ without running
    them again (it does not select them): seen in the tiny run, before each step had its own."""
    study._check_run_ids(study.CALLS)
    with pytest.raises(ValueError, match="share a run folder: callx"):
        study._check_run_ids([_call()])
