"""The GPU study: its plan and the first call's fit, the packing for the call's machine, the deadline
and the resume, one real step through the suite's CLI, `finish` over every attempt's files, and the
committed H200 results against their rows."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import shutil
import stat
import sys
import tarfile
import textwrap
from pathlib import Path

import pytest

from suite.cli import build_parser, main
from suite.cli.args import DEFAULT_MATRIX, DEFAULT_REFERENCE, filters_of
from suite.errors import UsageError
from suite.gpustudy import call as run_study
from suite.gpustudy import estimate, packing
from suite.gpustudy import plan as study
from suite.gpustudy import step as study_step
from suite.gpustudy.call import Where as W
from suite.results import read_rows
from suite.spec import expand, load_matrix
from suite.spec.cost import estimate_seconds, format_duration

ROOT = Path(__file__).resolve().parents[2]
SMOKE_CSV = ROOT / "results" / "2026-11-21-cpu-amd-epyc-smoke" / "raw" / "current__cpu.csv"


@pytest.fixture(scope="module")
def matrix():
    return load_matrix(DEFAULT_MATRIX)


def _planned(matrix, variant):
    return estimate.plan_call(matrix, study.call_of(1), variant, DEFAULT_REFERENCE)


@pytest.mark.parametrize("variant", study.VARIANTS)
def test_the_study_has_every_cell_once_the_headline_first(matrix, variant):
    planned = _planned(matrix, variant)
    assert [p.step for p in planned[: len(study.CHECKS)]] == list(study.CHECKS)
    # first of all, the accuracy rule on the six cells the old check failed on the H200, float32
    # then float16 (they come again, timed in full, in the study's steps: not counted below)
    first = planned[0]
    assert first.step.run_id == "accuracy"
    six = [("Conditional-DETR", 1, "default"), ("Conditional-DETR", 1, "reduce-overhead"),
           ("Conditional-DETR", 4, "reduce-overhead"), ("DETR", 1, "default"), ("Mask2former", 1, "default"),
           ("Resnet-101", 1, "default")]  # fmt: skip
    assert [(c.model.name, c.batch_size, c.mode, c.settings.dtype) for c in first.cells] == [
        *((*cell, "float32") for cell in six),
        *((*cell, "float16") for cell in six),
    ]
    # then the A/A pair of two builds side by side (docs/pairs.md)
    assert planned[1].step.verb == "pair" and len(planned[1].cells) == 2  # ResNet and ViT, default
    planned = planned[len(study.CHECKS) :]  # the checks first (they may measure the study's cells again)
    runs = [
        (c.model.name, c.batch_size, c.mode, c.scenario, c.dynamic)
        for p in planned
        if p.step.verb == "run"
        for c in p.cells
    ]
    assert len(runs) == len(set(runs)), "a cell measured twice in the merged runs would shadow the other"
    # the headline: the ResNet cross-check, then the reduce-overhead table at batch 1, model by model
    assert (planned[0].step.verb, [c.model.name for c in planned[0].cells]) == ("crosscheck", ["ResNet"])
    ro = [(c.model.name, c.batch_size, c.mode) for c in planned[1].cells]
    assert sorted(ro) == sorted(
        (m, 1, mode) for m in study.RO_MODELS for mode in ("eager", "default", "reduce-overhead")
    )
    models = matrix.hub_models  # the guide's 12: every one at batch 1, default and eager
    for m in models:
        for mode in ("default", "eager"):
            assert (m, 1, mode, "inference", "") in runs, (m, mode)
    for m in study.RO_MODELS:
        assert {(m, 4, "reduce-overhead", "inference", ""), (m, 4, "eager", "inference", "")} <= set(runs)
    for m in study.CLASSIFICATION:
        for bs in (4, 16):
            for mode in ("default", "eager"):
                assert runs.count((m, bs, mode, "inference", "")) == 1, (m, bs, mode)
    checks = [c.model.name for p in planned if p.step.verb == "crosscheck" for c in p.cells]
    assert checks == list(study.CROSSCHECK_MODELS)
    assert [p.step.times for p in planned if p.step.verb == "repeat"] == [3]
    assert sum("--compile-cost" in p.step.extra for p in planned) == 1
    assert ("ResNet", 1, "default", "dynamic-batch", "auto") in runs
    # the steps whose figures are not energy figures run without the energy window
    assert {p.step.run_id for p in planned if not p.step.energy} == {"compile-cost", "dynamic", "repeat"}


def test_each_steps_command_selects_what_its_estimate_counts(matrix):
    """The printed command, parsed by the suite's own parser, expands to the step's cells, and
    read back (Step.from_argv: what `plan --against` does with a call's report) is the step."""
    parser = build_parser()
    for variant in study.VARIANTS:
        for p in _planned(matrix, variant):
            argv = p.step.argv(variant, "/tmp/out")
            args = parser.parse_args(argv)
            assert args.device == study.DEVICE[variant] and args.run_id == p.step.run_id
            cells = expand(matrix, args.profile, "?", filters_of(args))
            assert cells == list(p.cells), p.step.what
            env = [f"{k}={v}" for k, v in p.step.env().items()]
            again = study.Step.from_argv([*env, "python", "-m", "suite", *argv], p.step.what)
            if variant == study.GPU:
                assert again == p.step
            if p.step.verb == "run":
                assert len(p.each) == len(cells) and p.seconds > study.STEP_OVERHEAD_S


def test_a_step_is_estimated_by_the_schedule_that_runs_it(matrix):
    """A run step's compiles overlap in waves (8 at once on 16 cores) and each process is timed
    alone: far less than its cells one after the other, more than its longest compile."""
    planner = estimate.Planner.of(study.GPU, DEFAULT_REFERENCE)
    assert planner.cores == estimate.STUDY_CORES == 16
    p = next(p for p in _planned(matrix, "gpu") if p.step.run_id == "bs1-others")
    serial = sum(estimate_seconds(c, "cuda", times=planner.times) for c in p.cells)
    assert p.seconds < serial / 2
    longest = max(estimate.compile_process_seconds(c, "cuda", planner.times) for c in p.cells)
    assert p.seconds > longest + study.STEP_OVERHEAD_S
    # the same step with the next wave compiling beside the timing: never longer
    overlapped = estimate.plan_step(
        matrix, dataclasses.replace(p.step, extra=("--overlap",)), study.GPU, planner
    )
    assert overlapped.seconds <= p.seconds


def test_the_plan_says_where_its_time_goes_and_the_parts_add_up(matrix, capsys):
    """The checks whole, the run steps' timed calls, compile waves, energy windows, exits and the
    rest, the cross-checks, the repetitions and each step's start-up: together the plan's total."""
    planner = estimate.Planner.of(study.GPU, DEFAULT_REFERENCE)
    planned = _planned(matrix, "gpu")
    parts = estimate.time_parts(planned, planner, checks=len(study.CHECKS))
    assert parts.total_s == pytest.approx(sum(p.seconds for p in planned))
    assert parts.checks_s == pytest.approx(sum(p.seconds for p in planned[: len(study.CHECKS)]))
    assert min(parts.timed_calls_s, parts.compile_waves_s, parts.energy_s, parts.exits_s, parts.rest_s) > 0
    assert parts.startups_s == study.STEP_OVERHEAD_S * len(study.STUDY_STEPS)
    # without the energy window, that part alone goes
    quiet = [
        estimate.plan_step(matrix, dataclasses.replace(p.step, energy=False), study.GPU, planner)
        for p in planned
    ]
    assert estimate.time_parts(quiet, planner, checks=len(study.CHECKS)).energy_s == 0
    assert main(["gpu-study", "plan"]) == 0
    assert parts.line() in capsys.readouterr().out


def test_the_first_call_fits_a_held_window(matrix, capsys):
    """The prepared first call: one `run` of at most 9 minutes, its steps' budget from the time
    it is given, the headline in it by the cost model, at most 6 files back."""
    from suite.gpustudy import cli as study_cli

    assert study_cli.FIRST_CALL_TIMEOUT_S <= study.CALL_LIMIT_S == 540
    deadline = float(study_cli.FIRST_CALL.split("--deadline-s ")[1].split()[0])
    assert deadline < study_cli.FIRST_CALL_TIMEOUT_S
    budget = estimate.budget_of(deadline)
    assert budget == deadline - study.RESERVE_S and study.RESERVE_S > study_step.STOP_GRACE_S
    first = estimate.cut_into_calls(_planned(matrix, "gpu"), budget)[0]
    assert first.seconds <= budget
    reached = [(p.step.run_id, len(cells)) for p, cells in first.steps]
    assert reached[0][0] == "accuracy" and reached[0][1] >= 6, "the six float32 cells, at least"
    written = [f for f in study.CALL_FILES] + [
        w for w in study_cli.FIRST_CALL.split() if w.startswith("$OUT/")
    ]
    assert len(written) <= study.MAX_FILES
    assert main(["gpu-study", "plan", "--deadline-s", str(deadline)]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.startswith("  call 1: "))
    assert line.startswith(f"  call 1: {format_duration(first.seconds)}: accuracy (")
    assert f"a command given {study_cli.FIRST_CALL_TIMEOUT_S} s" in out and "(5, at most 6)" in out
    assert "run(" not in out and "lent" not in out  # words of a window, not of one provider's tool


def test_later_calls_go_on_where_the_last_stopped(matrix):
    planned = _planned(matrix, "gpu")
    calls = estimate.cut_into_calls(planned, estimate.budget_of(study.CALL_LIMIT_S))
    cells = [c for call in calls for p, done in call.steps for c in done]
    assert cells == [c for p in planned for c in p.cells], "every cell once, in the study's order"
    assert all(call.seconds <= estimate.budget_of(study.CALL_LIMIT_S) for call in calls[:-1])
    assert estimate.cut_into_calls(planned, 0)[0].seconds == pytest.approx(sum(p.seconds for p in planned))


def test_the_gpu_estimate_takes_the_calls_seen_else_the_guides(matrix, tmp_path):
    """A call costs what an earlier GPU study measured for it (the committed results' rows), else
    at least the guide's eager time (Maskformer at 640 x 864: 76 ms a call, far above the cost
    model's own figure), else the formula's."""
    guide = estimate.guide_forward_ms(DEFAULT_REFERENCE)
    assert guide[("Maskformer", 1)] == pytest.approx(75.764)
    (cell,) = expand(
        matrix,
        "gpu-study",
        "?",
        study.Step(
            "run", "x", "", ("--models", "Maskformer", "--batch-sizes", "1", "--modes", "eager")
        ).filters("gpu"),
    )
    floor = estimate.CallTimes(floor=guide)
    assert estimate_seconds(cell, times=floor) - estimate_seconds(cell) > 100 * 0.07
    results = tmp_path / "results"
    (results / "a-study" / "calls").mkdir(parents=True)
    (results / "a-study" / "run" / "raw").mkdir(parents=True)
    row = {k: "" for k in read_rows(SMOKE_CSV).rows[0]}
    row.update(model="Maskformer", batch_size="1", dtype="float32", mode="default", status="ok")
    row.update(scenario="inference", median_ms="20.0", eager_median_ms="50.0")
    with open(results / "a-study" / "run" / "raw" / "b__cuda.csv", "w", newline="") as fh:
        import csv

        writer = csv.DictWriter(fh, fieldnames=list(row))
        writer.writeheader()
        writer.writerow(row)
    seen = estimate.seen_call_ms(results)
    assert seen == {
        ("Maskformer", 1, "float32", "default"): 20.0,
        ("Maskformer", 1, "float32", "eager"): 50.0,
    }
    times = estimate.CallTimes(seen, guide)
    assert times.call_s(cell, "eager", 0.006) == 0.05  # seen beats the guide's floor


def test_steps_are_checked():
    with pytest.raises(ValueError, match="rounds"):
        study.Step("crosscheck", "x", "", ())
    with pytest.raises(ValueError, match="times"):
        study.Step("run", "x", "", (), times=3)
    with pytest.raises(UsageError):
        study.call_of(0)


# ---------------------------------------------------------------------------------------------
# What comes back from the GPU machine


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


def _fake_planned(call):
    return [estimate.PlannedStep(s, (), 1.0) for s in call.steps]


def test_a_call_stops_at_its_deadline_packs_and_resumes_on_a_fresh_machine(
    tmp_path, fake_python, monkeypatch, capsys
):
    monkeypatch.setenv("FAKE_SLEEP", "30")
    monkeypatch.setattr(run_study, "STEP_OVERHEAD_S", 0.5)
    call = _call()
    work, out = tmp_path / "work", tmp_path / "out"
    report = run_study.run_call(
        call, "tiny", _fake_planned(call), W(work, out, python=fake_python, cwd=ROOT), 2.0
    )
    assert [s.status for s in report.steps] == [run_study.STOPPED, run_study.NO_TIME]
    assert report.wall_s < 2.0 + study_step.STOP_GRACE_S and not report.complete()
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
        call, "tiny", _fake_planned(call), W(fresh, tmp_path / "out2", carry, fake_python, ROOT), 0
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
    run_study.run_call(
        call, "tiny", _fake_planned(call), W(fresh, tmp_path / "out3", carry, fake_python, ROOT), 0
    )
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
        call, "gpu", _fake_planned(call), W(tmp_path / "w", tmp_path / "o", python=str(bad), cwd=ROOT), 0
    )
    assert [s.status for s in report.steps] == [run_study.FAILED, run_study.NOT_STARTED]
    assert "no GPU" in (tmp_path / "o" / "call8.log").read_text()


def test_calibration_compares_like_with_like_and_a_finished_step_is_not_started(tmp_path, matrix):
    """A step's rows are compared cell by cell with the schedule's estimate of the same part (a
    serial row with its whole process), the earlier calls' finished steps with their estimates,
    and the steps left are scaled by the steps' ratio."""
    planned = _planned(matrix, "tiny")
    planner = estimate.Planner.of(study.TINY, DEFAULT_REFERENCE)
    others = next(p for p in planned if p.step.run_id == "bs1-others")
    assert not run_study.finished(tmp_path, others)
    assert run_study.calibration(tmp_path, planned, planner) is None
    (tmp_path / "bs1-others" / "raw").mkdir(parents=True)
    shutil.copy(SMOKE_CSV, tmp_path / "bs1-others" / "raw" / "current__cpu.csv")
    assert run_study.finished(tmp_path, others)  # its 16 cells at batch 1 have their rows
    assert not run_study.finished(tmp_path, next(p for p in planned if p.step.run_id == "ro-bs1"))
    ratio, lines = run_study.calibration(tmp_path, planned, planner)
    rows = [
        r for r in read_rows(SMOKE_CSV).rows if r["model"] in study.OTHERS and r["mode"] != "reduce-overhead"
    ]
    assert len(rows) == 16 and {r.get("schedule", "") for r in rows} <= {"", "serial"}  # measured whole
    wall = sum(float(r["wall_s"]) for r in rows)
    estimated = sum(estimate_seconds(c, "cpu") for c in others.cells)
    assert ratio == pytest.approx(wall / estimated)
    assert lines == [f"cells measured whole: 16 took {wall / estimated:.2f} x their estimates "
                     f"({format_duration(wall)} for {format_duration(estimated)})"]  # fmt: skip
    # an earlier call's report: its finished step's wall against the step's estimate
    report = {
        "call": 1,
        "started_at": "2026-11-28T16:52:27+00:00",
        "steps": [{"what": "w", "command": _command(others, tmp_path), "status": "done", "wall_s": 40.0}],
    }
    (tmp_path / "call1.json").write_text(json.dumps(report))
    ratio, lines = run_study.calibration(tmp_path, planned, planner)
    assert ratio == pytest.approx(40.0 / others.seconds) and lines[0].startswith(
        "steps (each its wall): 1 took"
    )


def _command(p, work):
    from suite.gpustudy.callreport import command_line

    return command_line(p.step.argv("tiny", work), p.step.env())


def test_plan_against_the_calls_of_a_finished_study(capsys):
    """`plan --against`: each step that ran to its end against this commit's estimate of it, and
    each cell against its own, from the calls' files as they came back (the committed H200
    study's)."""
    calls = ROOT / "results" / "2026-11-28-h200-torch2.11" / "calls"
    if not calls.is_dir():
        pytest.skip("the second H200 study is not committed in this checkout")
    assert main(["gpu-study", "plan", "--against", str(calls)]) == 0
    out = capsys.readouterr().out
    steps = re.findall(r"^\| call \d: (\S+) \| (\S+) \| (\S+) \| ([\d.]+) \| (yes|NO) \|$", out, re.M)
    assert [s[0] for s in steps] == ["crosscheck-resnet", "ro-bs1", "bs1-default", "ro-bs4", "crosscheck-vit"]
    assert all(abs(float(s[3]) - 1) <= 0.25 for s in steps), out
    # the rows before compile_ahead_s: each cell's compile phase from its progress line in the log
    assert re.search(r"^compile phases \(a process before its gate\): 20 took", out, re.M), out
    assert re.search(r"^timing phases \(a cell after its gate\): 20 took", out, re.M), out


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
    call again records nothing new (the step is passed over: its cell has its row)."""
    step = study.Step(
        "run", "callr", "one eager cell", ("--models", "ResNet", "--batch-sizes", "1", "--modes", "eager")
    )
    call = study.Call(7, "one cell", (step,))
    matrix = load_matrix(DEFAULT_MATRIX)
    planned = [
        estimate.PlannedStep(step, tuple(expand(matrix, "gpu-study-tiny", "?", step.filters("tiny"))), 30.0)
    ]
    for attempt in (1, 2):
        report = run_study.run_call(
            call, "tiny", planned, W(tmp_path / "work", tmp_path / f"out{attempt}"), 0
        )
        assert report.complete(), (tmp_path / f"out{attempt}" / "call7.log").read_text()
    rows = read_rows(next((tmp_path / "work" / "callr" / "raw").glob("*.csv"))).rows
    assert [(r["model"], r["mode"], r["status"]) for r in rows] == [("ResNet", "eager", "ok")]
    # the second call passes the step over without starting it: its one cell has its row
    assert "already done (every cell has its row in callr)" in (tmp_path / "out2" / "call7.log").read_text()
    with tarfile.open(tmp_path / "out2" / "call7.tar.gz") as tar:
        assert any(n.startswith("callr/raw/") and n.endswith(".csv") for n in tar.getnames())


def _summary(call, started, budget, steps=("run",)):
    return {
        "call": call,
        "title": "t",
        "variant": "gpu",
        "budget_s": budget,
        "estimate_s": 100,
        "wall_s": 80,
        "started_at": started,
        "steps": [
            {
                "what": f"step {verb}",
                "command": f"python -m suite {verb} --out /machine/ckout/.gpu-study/work --run-id call{call}",
                "cells": 12,
                "estimate_s": 100,
                "wall_s": 80,
                "status": "stopped at the deadline",
            }
            for verb in steps
        ],
    }


def _attempts(tmp_path):
    """What four attempts brought back: call 2 first (a cross-check), call 1 (rows, a lost cell),
    call 1 again without its tarball (its log only), call 1 again on a fresh machine (one row)."""
    work, fetched = tmp_path / "work", tmp_path / "fetched"
    (work / "call1" / "raw").mkdir(parents=True)
    shutil.copy(SMOKE_CSV, work / "call1" / "raw" / "current__cpu.csv")
    (work / "call1" / "logs" / "b").mkdir(parents=True)
    (work / "call1" / "logs" / "b" / "099-lost.log").write_text(
        "cell: Segformer bs=4 default inference | build b\n"
        "/opt/py/lib/python3.12/site-packages/torch/x.py: warn\n"
    )
    xc = work / "call2-crosscheck-resnet"
    xc.mkdir()
    item = {"model": "ResNet", "batch_size": 1, "mode": "default", "timed": "default", "suite_ms": 2.0}
    item |= {"error": "", "suite_rounds_ms": [2.0, 2.5, 2.1], "benchmark_ms": 1.99, "events_ms": 1.94}
    item["vs_benchmark"] = {"ratio": 1.005, "low": 0.99, "high": 1.02}
    item["vs_events"] = {"ratio": 1.031, "low": 1.02, "high": 1.04}
    (xc / "crosscheck.json").write_text(json.dumps({"device": "cuda", "results": [item]}))
    folders = [fetched / name for name in ("c2", "c1", "c1-again", "c1-fresh")]
    for folder in folders:
        folder.mkdir(parents=True)
    packing.pack(work, ["call2-crosscheck-resnet"], folders[0] / "call2.tar.gz")
    (folders[0] / "call2.json").write_text(json.dumps(_summary(2, "2026-01-01T00:00:00+00:00", 300)))
    packing.pack(work, ["call1"], folders[1] / "call1.tar.gz")
    (folders[1] / "call1.json").write_text(json.dumps(_summary(1, "2026-01-01T00:05:00+00:00", 480)))
    (folders[1] / "nvidia-smi.txt").write_text("Driver Version: 580\n")
    (folders[2] / "call1.json").write_text(json.dumps(_summary(1, "2026-01-01T00:10:00+00:00", 200)))
    (folders[2] / "call1.log").write_text(
        "[ 1/12] ViT bs=1 default inference: ok (median 5.00 ms, speed-up x1.10) in 40.0 s | elapsed 0:01\n"
    )
    rows = read_rows(SMOKE_CSV)
    fresh = work / "fresh" / "call1" / "raw"
    fresh.mkdir(parents=True)
    lines = SMOKE_CSV.read_text().splitlines()
    (fresh / "current__cpu.csv").write_text("\n".join(lines[:2]) + "\n")
    packing.pack(work / "fresh", ["call1"], folders[3] / "call1.tar.gz")
    (folders[3] / "call1.json").write_text(json.dumps(_summary(1, "2026-01-01T00:15:00+00:00", 115)))
    return fetched, rows.rows


def test_finish_takes_every_attempt_in_the_order_run(tmp_path):
    pytest.importorskip("pandas")
    from suite.gpustudy.finish import FinishArgs, finish

    fetched, rows = _attempts(tmp_path)
    analysis = tmp_path / "analysis.md"
    analysis.write_text("Written by hand.\n")
    args = FinishArgs(
        (fetched,), tmp_path / "results" / "x", DEFAULT_REFERENCE, DEFAULT_MATRIX, False, analysis
    )
    folder = finish(args)
    readme = (folder / "README.md").read_text()
    assert sorted(p.name for p in (folder / "calls").iterdir()) == [
        "1-call2",
        "2-call1",
        "3-call1",
        "4-call1",
    ]
    assert (folder / "call1").is_dir() and (folder / "call1-run2").is_dir()  # a fresh machine's again
    assert len(read_rows(next((folder / "call1-run2" / "raw").glob("*.csv"))).rows) == 1
    # the commands as run, in that order, with their budget and no path of the machine
    order = [readme.index(f"--budget-s {b:g}") for b in (300, 480, 200, 115)]
    assert order == sorted(order) and "--out WORK" in readme
    for path in folder.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json", ".log", ".txt", ".csv", ".html"):
            text = path.read_text(errors="replace")
            assert "/machine/" not in text and "/opt/" not in text and f"{folder}/" not in text, path
    assert "Segformer bs=4 default inference: begun, no row" in readme  # lost in flight
    assert "3-call1: ViT bs=1 default inference: ok (median 5.00 ms, speed-up x1.10)" in readme
    assert readme.count("**Calibration**") == 1 and "Written by hand." in readme
    vit = next(r for r in rows if r["model"] == "ViT" and r["mode"] == "default")
    assert f"{float(vit['speedup']):.2f} [" in readme  # ours, read from the CSV
    assert "2.00-2.50 (25.0%)" in readme  # the cross-check's rounds, kept
    assert "1.031 (1.020-1.040)" in readme and "1 of 2 ratio(s) within ±2%" in readme
    assert (folder / "calls" / "2-call1" / "nvidia-smi.txt").exists()
    with pytest.raises(UsageError, match="not empty"):
        finish(args)


def test_finish_without_pyarrow_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys):
    import importlib

    fetched, _ = _attempts(tmp_path)
    real = importlib.import_module

    def without_pyarrow(name, *a, **k):
        if name == "pyarrow":
            raise ImportError("pandas says: pyarrow is broken")  # not a ModuleNotFoundError
        return real(name, *a, **k)

    monkeypatch.setattr(importlib, "import_module", without_pyarrow)
    out = tmp_path / "results" / "x"
    assert main(["gpu-study", "finish", str(fetched), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pyarrow" in err and "nothing was written" in err
    assert not out.exists() and not (tmp_path / "results").exists()


def test_a_finish_that_fails_leaves_nothing_behind(tmp_path, monkeypatch):
    pytest.importorskip("pandas")
    from suite.gpustudy import finish as fin

    fetched, _ = _attempts(tmp_path)

    def broken(*a, **k):
        raise UsageError("x", "broken merge")

    monkeypatch.setattr("suite.report.publish.run_merge", broken)
    out = tmp_path / "results" / "x"
    args = fin.FinishArgs((fetched,), out, DEFAULT_REFERENCE, DEFAULT_MATRIX, False)
    with pytest.raises(UsageError, match="broken merge"):
        fin.finish(args)
    assert not out.exists()


def test_dynamic_narrows_the_dynamic_batch_cells(matrix):
    """--dynamic (the study's one dynamic-batch cell) narrows static/auto/marked."""
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
        where = W(tmp_path / "w", tmp_path / "o", python=fake_python, cwd=ROOT)
        report = run_study.run_call(call, "tiny", _fake_planned(call), where, 2.0)
    finally:
        signal.signal(signal.SIGINT, old)
    assert report.steps[0].status == run_study.STOPPED
    assert report.steps[0].wall_s < 2.0 + study_step.STOP_GRACE_S / 2
    assert "suite: interrupted" in (tmp_path / "o" / "call6.log").read_text()


def test_a_pack_while_a_step_runs_says_so(tmp_path, fake_python, monkeypatch):
    """What a call killed from outside leaves: a summary whose step in flight reads running, with
    the seconds it had run."""
    import io
    import threading
    import time

    monkeypatch.setenv("FAKE_SLEEP", "30")
    monkeypatch.setattr(study_step, "PACK_EVERY_S", 0.2)
    monkeypatch.setattr(run_study, "STEP_OVERHEAD_S", 0.5)
    call = _call(5)
    where = W(tmp_path / "w", tmp_path / "o", None, fake_python, ROOT, io.StringIO())
    worker = threading.Thread(target=run_study.run_call, args=(call, "tiny", _fake_planned(call), where, 4.0))
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
    study._check_run_ids(study.STUDY)
    with pytest.raises(ValueError, match="share a run folder: callx"):
        study._check_run_ids(_call().steps)


# ---------------------------------------------------------------------------------------------
# The committed H200 results: the README's figures recomputed from the committed rows

H200 = ROOT / "results" / "2026-11-26-h200-torch2.11"


def test_the_h200_readme_is_what_its_rows_say():
    from suite.gpustudy import figures, readme
    from suite.report.reference import Reference

    text = (H200 / "README.md").read_text()
    runs = readme.run_folders(H200)
    rows = readme.folder_rows(runs)
    every = [r for rs in rows.values() for r in rs]
    assert len(every) == 9 and {r["gpu_name"] for r in every} == {"NVIDIA H200"}
    for line in [
        *figures.speedups(every, Reference.load(DEFAULT_REFERENCE)),
        *figures.crosscheck(runs),
        *readme.lost_cells(runs, rows),
    ]:
        assert line in text, line
    # the calibration: each step and cell against this commit's cost model, like with like
    reports = [summary for _, summary, _ in readme.attempts(H200)]
    logs = readme.call_logs(H200)
    lines = figures.calibration(rows, load_matrix(DEFAULT_MATRIX), DEFAULT_REFERENCE, reports, logs)
    assert "cells measured whole: 9 took" in "\n".join(lines)
    for line in lines:
        assert line in text, line
    # the headline figures, read off the rows
    resnet = next(r for r in every if r["model"] == "ResNet" and r["mode"] == "reduce-overhead")
    assert f"{float(resnet['speedup']):.2f}" == "5.24" and "| 5.24 [" in text
    # the project README's excerpt quotes these rows
    excerpt = (ROOT / "README.md").read_text().split("from the first H200 run")[1].split("\n\n")[0]
    default = next(r for r in every if r["model"] == "ResNet" and r["mode"] == "default")
    for figure in (
        f"{float(default['eager_median_ms']):.2f} ms eager",
        f"{float(default['median_ms']):.2f} ms compiled ({float(default['speedup']):.2f}x",
        # the reduce-overhead speed-up beside its own cell's eager median, not the default cell's
        f"{float(resnet['eager_median_ms']):.2f} ms eager, {float(resnet['median_ms']):.2f} ms under "
        f"reduce-overhead ({float(resnet['speedup']):.2f}x",
    ):
        assert figure in " ".join(excerpt.split()), figure


H200_SECOND = ROOT / "results" / "2026-11-28-h200-torch2.11"


def test_the_second_h200_readme_is_what_its_rows_say():
    """The second study's README: its calibration (each step within ±20% of its estimate), and
    the first study's cells beside it, recomputed from the committed rows."""
    from suite.gpustudy import figures, readme

    text = (H200_SECOND / "README.md").read_text()
    rows = readme.folder_rows(readme.run_folders(H200_SECOND))
    every = [r for rs in rows.values() for r in rs]
    assert len(every) == 20 and {r["gpu_name"] for r in every} == {"NVIDIA H200"}
    reports = [summary for _, summary, _ in readme.attempts(H200_SECOND)]
    logs = readme.call_logs(H200_SECOND)
    lines = figures.calibration(rows, load_matrix(DEFAULT_MATRIX), DEFAULT_REFERENCE, reports, logs)
    assert "5 of 5 within ±20%" in "\n".join(lines) and "compile phases" in "\n".join(lines)
    for line in lines:
        assert line in text, line
    theirs = [r for rs in readme.folder_rows(readme.run_folders(H200)).values() for r in rs]
    for line in figures.beside(every, theirs):
        assert line in text, line
    assert "| MobileNet bs=1 reduce-overhead | 10.17 → 4.83 (moved) |" in text


@pytest.mark.parametrize("folder", [H200, H200_SECOND])
def test_the_h200_analysis_cites_only_figures_of_its_page(folder):
    text = (folder / "README.md").read_text()
    start = text.index("### Where and why they differ")
    end = text.index("## Cross-check")
    analysis, rest = text[start:end], text[:start] + text[end:]
    cited = re.findall(r"\d+\.\d+", analysis)
    assert len(cited) > 20
    missing = [n for n in cited if n not in rest and n not in ("2.0.1", "2.1.0", "2.11")]
    assert not missing, f"figures the tables do not hold: {missing}"
    assert (folder / "ANALYSIS.md").read_text().strip() in text


def test_the_h200_folder_names_no_path_of_a_machine():
    for path in H200.rglob("*"):
        if path.is_file() and path.suffix in (".md", ".json", ".log", ".txt", ".csv", ".html", ".jsonl"):
            found = re.findall(
                r"(?<![\w.])/(?:work|opt|root|home|tmp|usr)/\S*", path.read_text(errors="replace")
            )
            assert not found, (path, found[:3])
    assert not [p for p in H200.rglob("*") if "nvidia-h200-nvidia-h200" in p.name]


def test_a_later_call_on_a_warm_machine_takes_the_next_number(tmp_path):
    from suite.gpustudy.cli import DEFAULT_WORK, next_number

    assert next_number(tmp_path) == 1
    (tmp_path / "call1.json").write_text("{}")
    (tmp_path / "call2.json").write_text("{}")
    (tmp_path / "call2.attempt.json").write_text("{}")  # a restored attempt's summary: not a call here
    assert next_number(tmp_path) == 3
    assert not DEFAULT_WORK.is_relative_to(ROOT), "the run folders outlive the checkout sent again"


def test_the_cross_check_section_takes_every_pair_a_report_lists(tmp_path):
    """A report that lists its pairs (latency against latency, throughput against throughput) is
    judged on all of them; an earlier one on its two latency pairs."""
    from suite.gpustudy import figures

    def ratio(value):
        return {"ratio": value, "low": value - 0.01, "high": value + 0.01}

    item = {"model": "ResNet", "batch_size": 1, "mode": "default", "timed": "eager", "suite_ms": 4.4}
    item |= {"suite_rounds_ms": [4.4, 4.5], "vs_benchmark": ratio(1.05), "vs_events": ratio(1.09)}
    listed = dict(
        item,
        ratios=[
            {"figure": f, "against": a, **ratio(v)}
            for f, a, v in (
                ("latency", "events", 1.01),
                ("latency", "benchmark", 1.05),
                ("throughput", "events", 0.99),
                ("throughput", "benchmark", 1.005),
            )
        ],
    )
    for name, entry in (("old", item), ("new", listed)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "crosscheck.json").write_text(json.dumps({"device": "cuda", "results": [entry]}))
    old = "\n".join(figures.crosscheck({"old": tmp_path / "old"}))
    assert "0 of 2 ratio(s) within ±2%" in old and "benchmark 1.050 (1.040-1.060)" in old
    new = "\n".join(figures.crosscheck({"new": tmp_path / "new"}))
    assert "3 of 4 ratio(s) within ±2%" in new and "throughput: benchmark 1.005 (0.995-1.015)" in new


def test_the_speed_ups_set_throughput_beside_the_guide_where_the_rows_have_it():
    from suite.gpustudy import figures
    from suite.report.reference import Reference

    rows = [r for r in read_rows(SMOKE_CSV).rows if r["model"] == "ResNet" and r["mode"] == "default"]
    reference = Reference.load(DEFAULT_REFERENCE)
    latency_only = "\n".join(figures.speedups(rows, reference))
    assert "speed-up by throughput" not in latency_only and "| ours / guide |" in latency_only
    both = [dict(r, throughput_speedup="1.975", throughput_speedup_ci95_low="1.9") for r in rows]
    text = "\n".join(figures.speedups(both, reference))
    guide = next(
        f
        for f in reference.figures
        if (f.gpu, f.model, f.batch_size, f.mode, f.erratum) == ("A100", "ResNet", 1, "default", "")
    )
    assert "| ours / guide (throughput) |" in text and "1.98 [1.90, —]" in text
    assert f"| {1.975 / guide.speedup:.2f} |" in text
