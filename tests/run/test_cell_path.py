"""What compiling costs, without a model: the settings and their validation, the dynamic-batch
cells and their rows, the break-even rule, the cost model, and the runner's extra processes
and rows (the workers replaced by fakes that record what they were asked)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml
from support import stub_environment
from support.matrices import COMPILE_COST as BASE

from suite.cli import main
from suite.errors import UsageError
from suite.measure import compile_cost as child
from suite.results import key_of, read_rows
from suite.run import cell_path, launch, runner
from suite.run.launch import ROWS, RunPaths
from suite.spec import Cell, Filters, expand, load_matrix
from suite.spec.cost import CPU_RATES, Rates, estimate_seconds, format_duration
from suite.spec.shard import assign
from suite.stats import breakeven_calls

REPO = Path(__file__).resolve().parents[2]


def matrix(tmp_path: Path, edit=lambda d: None) -> Path:
    data = json.loads(json.dumps(BASE))
    edit(data)
    path = tmp_path / "matrix.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def cells(
    tmp_path: Path, scenarios: tuple[str, ...] = ("inference", "dynamic-batch"), **filters: Any
) -> list[Cell]:
    return expand(load_matrix(matrix(tmp_path)), "p", "any", Filters(scenarios=scenarios, **filters))


# --- break-even -------------------------------------------------------------------------------


def test_breakeven_is_compile_seconds_over_seconds_saved_per_call() -> None:
    assert breakeven_calls(30.0, 12.0, 2.0) == pytest.approx(3000.0)  # 30 s / 10 ms
    assert breakeven_calls(0.0, 12.0, 2.0) == 0.0  # a free compile pays at once
    assert breakeven_calls(30.0, 2.0, 2.0) is None  # not faster: never pays off
    assert breakeven_calls(30.0, 2.0, 3.0) is None
    assert breakeven_calls(None, 12.0, 2.0) is None and breakeven_calls(30.0, None, 2.0) is None


def test_first_results_add_the_compile_to_the_first_eager_result() -> None:
    assert child.first_results(4.0, 500.0, 30.0) == {"eager_first_result_s": 4.5, "first_result_s": 34.5}
    assert child.first_results(4.0, 500.0, None) == {"eager_first_result_s": 4.5}
    assert child.first_results(4.0, None, 30.0) == {}


def test_first_call_times_one_call_then_hands_the_function_back() -> None:
    calls: list[int] = []

    class Owner:
        def eager(self) -> int:
            calls.append(1)
            return len(calls)

    owner = Owner()
    original = owner.eager
    timer = child.FirstCall(owner, "cpu")
    assert owner.eager is timer and timer.ms is None
    assert owner.eager() == 1 and timer.ms is not None and timer.ms >= 0
    assert owner.eager == original  # the timed calls never go through the timer
    first = timer.ms
    assert timer() == 2 and timer.ms == first  # a warm-up loop holding the timer: only the 1st is timed


def test_spawn_time_comes_from_the_runner(monkeypatch: pytest.MonkeyPatch) -> None:
    now = child._IMPORTED_AT + 3.0
    monkeypatch.setattr(child.time, "time", lambda: now)
    monkeypatch.setenv(child.SPAWN_ENV, repr(now - 12.5))
    assert child.seconds_since_spawn() == pytest.approx(12.5)
    monkeypatch.setenv(child.SPAWN_ENV, "garbage")  # a worker run by hand: since its import
    assert child.seconds_since_spawn() == pytest.approx(3.0)


# --- settings, cells, validation ---------------------------------------------------------------


def test_dynamic_batch_cells_one_per_compiled_mode_and_setting(tmp_path: Path) -> None:
    got = cells(tmp_path)
    inference = [c for c in got if c.scenario == "inference"]
    dynamic = [c for c in got if c.scenario == "dynamic-batch"]
    assert [(c.mode, c.compile_cost) for c in inference] == [("eager", False), ("default", True)]
    assert [(c.mode, c.dynamic) for c in dynamic] == [("default", d) for d in ("static", "auto", "marked")]
    for c in dynamic:  # the setting's sizes, not the selection's; eager has no compile: no cell
        assert c.batch_sizes == (1, 4, 16) and c.batch_size == 1 and c.served == (1, 4, 16, 1)
        assert not c.compile_cost
        assert [k["batch_size"] for k in c.row_keys("cpu")] == [1, 4, 16]
        assert {k["dynamic"] for k in c.row_keys("cpu")} == {c.dynamic}
        assert Cell.from_json(c.to_json()) == c
    assert len({key_of(k) for c in got for k in c.row_keys("cpu")}) == 2 + 9, "every row its own key"
    assert [k["dynamic"] for k in inference[0].row_keys("cpu")] == [""]


def test_batch_size_filter_narrows_the_sequence_and_needs_two(tmp_path: Path) -> None:
    (static, *_) = [c for c in cells(tmp_path, batch_sizes=(1, 16)) if c.dynamic]
    assert static.served == (1, 16, 1)
    with pytest.raises(UsageError, match="two or more batch sizes") as info:
        cells(tmp_path, batch_sizes=(4,))
    assert info.value.where == "--batch-sizes"


def test_a_selection_with_one_batch_size_and_no_setting_is_refused(tmp_path: Path) -> None:
    path = matrix(tmp_path, lambda d: d["profiles"]["p"]["settings"].pop("dynamic_batch_sizes"))
    with pytest.raises(UsageError, match=r"profiles\.p.*two or more batch sizes"):
        expand(load_matrix(path), "p", "any", Filters(scenarios=("dynamic-batch",)))
    # without the scenario the profile is fine
    assert len(expand(load_matrix(path), "p", "any")) == 2


@pytest.mark.parametrize(
    ("edit", "field", "message"),
    [
        (lambda s: s.update(compile_cost="yes"), "profiles.p.settings.compile_cost", "true or false"),
        (
            lambda s: s.update(dynamic_batch_sizes=[4, 4]),
            "profiles.p.settings.dynamic_batch_sizes",
            "two or more",
        ),
        (lambda s: s.update(dynamic_batch_sizes=[1, 0]), "profiles.p.settings.dynamic_batch_sizes", ">= 1"),
        (lambda s: s.update(dynamic_batch_sizes="1,4"), "profiles.p.settings.dynamic_batch_sizes", "list"),
        (lambda s: s.update(compile_cache="run"), "profiles.p.settings.compile_cost", "compile_cache: cold"),
    ],
)
def test_bad_settings_are_named(tmp_path: Path, edit, field: str, message: str) -> None:
    path = matrix(tmp_path, lambda d: edit(d["profiles"]["p"]["settings"]))
    with pytest.raises(UsageError) as info:
        load_matrix(path)
    assert str(info.value).startswith(f"{path}: {field}") and message in str(info.value), str(info.value)


def test_compile_cache_flag_sets_the_cache_and_is_checked_against_compile_cost(
    tmp_path: Path, capsys
) -> None:
    from suite.cli import build_parser
    from suite.cli.args import filters_of

    def overrides(*flags: str) -> dict:
        return dict(filters_of(build_parser().parse_args(["run", *flags])).overrides)

    assert overrides("--no-compile-cost", "--compile-cache", "run") == {
        "compile_cost": False,
        "compile_cache": "run",
    }
    assert "compile_cache" not in overrides()
    # the profile measures compile cost (cold caches): a shared cache alone is refused in one line
    assert main(["plan", "--matrix", str(matrix(tmp_path)), "--profile", "p", "--compile-cache", "run"]) == 2
    assert "compile_cache: cold" in capsys.readouterr().err


def test_the_flag_turns_compile_cost_on_with_cold_caches_or_off(tmp_path: Path, capsys) -> None:
    path = matrix(
        tmp_path, lambda d: d["profiles"]["p"]["settings"].update(compile_cost=False, compile_cache="run")
    )
    assert main(["plan", "--matrix", str(path), "--profile", "p"]) == 0
    assert "compile cost" not in capsys.readouterr().out
    assert main(["plan", "--matrix", str(path), "--profile", "p", "--compile-cost"]) == 0
    assert "inference + compile cost" in capsys.readouterr().out
    assert main(["plan", "--matrix", str(matrix(tmp_path)), "--profile", "p", "--no-compile-cost"]) == 0
    assert "compile cost" not in capsys.readouterr().out
    assert (
        main(["plan", "--matrix", str(matrix(tmp_path)), "--profile", "p", "--scenarios", "dynamic-batch"])
        == 0
    )
    out = capsys.readouterr().out
    assert "1>4>16>1" in out and "dynamic-batch (marked)" in out


def test_repository_profiles(tmp_path: Path) -> None:
    m = load_matrix(REPO / "matrix.yaml")
    smoke = expand(m, "smoke", "x", Filters(scenarios=("inference", "dynamic-batch")))
    compiled = [c for c in smoke if c.scenario == "inference" and c.mode != "eager"]
    # the smoke profile is bench-local's first run on a CPU: no compile-cost processes, but cold
    # caches, so that `--compile-cost` can add them
    assert compiled and all(not c.compile_cost and c.settings.compile_cache == "cold" for c in compiled)
    assert {c.served for c in smoke if c.dynamic} == {(1, 4, 16, 1)}
    # (the four compiled models' default + ResNet's reduce-overhead) x settings; smoke-compiled all 12
    assert len([c for c in smoke if c.dynamic]) == (4 + 1) * 3
    every = expand(m, "smoke-compiled", "x", Filters(scenarios=("inference", "dynamic-batch")))
    assert len([c for c in every if c.dynamic]) == (12 + 1) * 3
    cost = expand(m, "compile-cost", "x")
    assert {c.dynamic for c in cost if c.dynamic} == {"static", "auto", "marked"}
    assert all(c.compile_cost for c in cost if c.scenario == "inference" and c.mode != "eager")
    assert not any(c.compile_cost for c in expand(m, "full", "x")), "steady-state profiles stay lean"


# --- cost model and shards ----------------------------------------------------------------------


def test_plan_estimates_with_the_rates_of_the_device_it_plans_for(capsys: pytest.CaptureFixture[str]) -> None:
    """A CPU has no energy window and a shorter start-up than the GPU machine, its own measured
    compile for each shrunk model (which the GPU's rates leave to their formula), and far longer
    forwards; the shards do not move."""
    m = load_matrix(REPO / "matrix.yaml")
    smoke = expand(m, "smoke-compiled", "x")
    eager = next(c for c in smoke if c.mode == "eager")
    assert estimate_seconds(eager, "cpu") < estimate_seconds(eager, "cuda") / 2
    vit, mask2former = (
        next(c for c in smoke if c.mode == "default" and c.model.name == n) for n in ("ViT", "Mask2former")
    )
    assert estimate_seconds(mask2former, "cpu") > 3 * estimate_seconds(vit, "cpu")  # 96 s against 16 s here
    assert estimate_seconds(mask2former, "cuda") == estimate_seconds(vit, "cuda")  # both the formula's
    full = next(c for c in expand(m, "full", "x") if c.mode == "eager" and c.batch_size == 16)
    timed = estimate_seconds(full, "cpu") - CPU_RATES.startup_s
    assert timed > estimate_seconds(full, "cuda")  # 300 full-size forwards at 16 images on 2 cores
    for device, word in (("cpu", "CPU"), ("cuda", "GPU")):
        assert main(["plan", "--profile", "smoke-compiled", "--models", "ViT", "--device", device]) == 0
        total = format_duration(sum(estimate_seconds(c, device) for c in smoke if c.model.name == "ViT"))
        assert f"estimated total {total} on a {word} " in capsys.readouterr().out
    with pytest.raises(ValueError, match="every rate must be positive"):
        Rates(startup_s=0.0, compile_base_s=1.0, forward_s_per_m_params_image=1.0)


def test_the_cost_model_counts_the_extra_processes_and_the_compiles(tmp_path: Path) -> None:
    got = cells(tmp_path)
    default = next(c for c in got if c.scenario == "inference" and c.mode == "default")
    plain = replace(default, settings=replace(default.settings, compile_cost=False))
    eager = next(c for c in got if c.mode == "eager")
    # two more processes, each at least a start-up: more than two eager cells' worth of start-up
    assert estimate_seconds(default) - estimate_seconds(plain) > 2 * (estimate_seconds(eager) - 1)
    static, auto, marked = (c for c in got if c.dynamic)
    assert estimate_seconds(static) > estimate_seconds(auto) == estimate_seconds(marked)
    longer = replace(static, batch_sizes=(1, 4, 16, 32))
    assert estimate_seconds(longer) > estimate_seconds(static)


def test_shards_tell_the_dynamic_settings_apart(tmp_path: Path) -> None:
    got = cells(tmp_path)
    for n in (1, 2, 3, 5):
        shards = assign(got, n)
        assert sorted(i for s in shards for i in s) == list(range(len(got)))
        assert assign(list(reversed(got)), n) == [sorted(len(got) - 1 - i for i in s) for s in shards]


# --- the runner's processes and rows ---------------------------------------------------------


class FakeWorkers:
    """launch.run_worker replaced: records each call; `measure` saves a mega-cache file."""

    def __init__(self, save_megacache: bool = True, warm_status: str = "ok", cold_status: str = "ok") -> None:
        self.calls: list[dict[str, Any]] = []
        self.save, self.warm_status, self.cold_status = save_megacache, warm_status, cold_status

    def __call__(self, job: launch.WorkerJob) -> launch.WorkerResult:
        phase, extra_env = job.phase, job.extra_env
        call = {"phase": phase, "cache": job.cache, "log": job.log_path, "env": dict(extra_env)}
        self.calls.append({**call, "sweep": job.sweep_env})
        if phase == "measure":
            if self.save and extra_env:
                Path(extra_env[child.MEGACACHE_ENV]).write_bytes(b"artifacts")
            fields = {"status": self.cold_status, "error": "" if self.cold_status == "ok" else "boom"}
            fields.update(
                compile_s=30.0, eager_median_ms=12.0, median_ms=2.0, compile_note="cold: FX graph 0/1 hit"
            )
            return launch.WorkerResult([fields], 10.0, "logs/x.log")
        if phase == "warm":
            ok = self.warm_status == "ok"
            fields = {"status": self.warm_status, "error": "" if ok else "killed"}
            return launch.WorkerResult(
                [{**fields, "compile_warm_s": 5.0, "compile_note": "warm: FX graph 1/1 hit"}],
                3.0,
                "logs/x.log",
            )
        return launch.WorkerResult(
            [{"status": "ok", "error": "", "compile_megacache_s": 8.0, "compile_note": "mega-cache: loaded"}],
            4.0,
            "",
        )


def paths(tmp_path: Path) -> RunPaths:
    return RunPaths.make(tmp_path, "r", "any", "cpu")


def test_a_compiled_cell_gets_a_warm_process_on_its_caches_and_a_mega_cache_one_on_fresh_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeWorkers()
    monkeypatch.setattr(launch, "run_worker", fake)
    cell = next(c for c in cells(tmp_path) if c.compile_cost)
    pair = {"SUITE_PAIR": "/run/.pair.sock"}  # a pair's runner: every process of the cell finds it
    result = cell_path.run_cell(launch.WorkerJob(cell, "cpu", paths(tmp_path), 0, sweep_env=pair))
    fields, wall, log = result.fields, result.wall_s, result.log_file
    measure, warm, mega = fake.calls
    assert [c["phase"] for c in fake.calls] == ["measure", "warm", "megacache"]
    assert measure["sweep"] == warm["sweep"] == mega["sweep"] == pair
    assert warm["cache"] == measure["cache"] != mega["cache"]  # warm: the first's caches; mega: fresh
    assert mega["env"][child.MEGACACHE_ENV] == measure["env"][child.MEGACACHE_ENV]
    assert warm["log"] == mega["log"] == paths(tmp_path).run_dir / "logs/x.log"  # one log per cell
    assert (fields["compile_warm_s"], fields["compile_megacache_s"]) == (5.0, 8.0)
    assert fields["breakeven_calls_warm"] == pytest.approx(breakeven_calls(5.0, 12.0, 2.0))
    assert fields["compile_note"] == "cold: FX graph 0/1 hit; warm: FX graph 1/1 hit; mega-cache: loaded"
    assert wall == 17.0 and log == "logs/x.log"  # the device time of all three
    assert not any(paths(tmp_path).scratch.glob("*compile-cost*")), "caches removed"


def test_no_mega_cache_process_where_the_build_saved_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = FakeWorkers(save_megacache=False, warm_status="timeout")
    monkeypatch.setattr(launch, "run_worker", fake)
    cell = next(c for c in cells(tmp_path) if c.compile_cost)
    fields = cell_path.run_cell(launch.WorkerJob(cell, "cpu", paths(tmp_path), 0)).fields
    assert [c["phase"] for c in fake.calls] == ["measure", "warm"]
    assert "compile_warm_s" not in fields and "compile_megacache_s" not in fields
    assert fields["breakeven_calls_warm"] is None
    assert "warm: no figure, its process ended timeout: killed" in fields["compile_note"]


def test_a_failed_cell_gets_no_extra_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake = FakeWorkers(cold_status="error")
    monkeypatch.setattr(launch, "run_worker", fake)
    cell = next(c for c in cells(tmp_path) if c.compile_cost)
    fields = cell_path.run_cell(launch.WorkerJob(cell, "cpu", paths(tmp_path), 0)).fields
    assert [c["phase"] for c in fake.calls] == ["measure"] and fields["status"] == "error"
    eager = next(c for c in cells(tmp_path) if c.mode == "eager")
    cell_path.run_cell(launch.WorkerJob(eager, "cpu", paths(tmp_path), 1))
    assert fake.calls[-1]["cache"] is None, "a cell without compile cost: the usual worker"


def test_every_expected_row_gets_a_status(tmp_path: Path) -> None:
    static = next(c for c in cells(tmp_path) if c.dynamic == "static")
    rows = [
        {"batch_size": 4, "status": "ok", "error": "", "median_ms": 1.0},
        {"batch_size": 1, "status": "oom", "error": "x"},
    ]
    got = launch.rows_of(static, {"status": "ok", "error": "", "torch_threads": 2, ROWS: rows})
    assert [(r["batch_size"], r["status"]) for r in got] == [(1, "oom"), (4, "ok"), (16, "error")]
    assert "no row for batch size 16" in got[2]["error"] and all(r["torch_threads"] == 2 for r in got)
    failed = launch.rows_of(static, {"status": "timeout", "error": "no result after 600 s"})
    assert [(r["status"], r["error"]) for r in failed] == [("timeout", "no result after 600 s")] * 3
    one = next(c for c in cells(tmp_path) if not c.dynamic)
    assert launch.rows_of(one, {"status": "ok", "error": ""}) == [{"status": "ok", "error": ""}]


def test_a_garbled_row_of_a_several_row_result_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "result.json"
    path.write_text(json.dumps({"status": "ok", "error": "", ROWS: [{"batch_size": 1, "status": "fine"}]}))
    assert launch.result_fields(path)[ROWS][0]["status"] == "error"
    path.write_text(json.dumps({"status": "ok", "error": "", ROWS: "oops"}))
    assert launch.result_fields(path)["status"] == "error"


def test_the_runner_writes_a_row_per_batch_size_and_a_resume_only_the_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    static = next(c for c in cells(tmp_path) if c.dynamic == "static")
    outcome = {1: "ok", 4: "error", 16: "ok"}

    def fake(job: launch.WorkerJob) -> launch.WorkerResult:
        rows = [{"batch_size": b, "status": s, "error": "" if s == "ok" else "x", "median_ms": 1.0,
                 "mean_ms": 1.0} for b, s in outcome.items()]  # fmt: skip
        fields = {"status": "ok", "error": "", ROWS: rows}
        return launch.WorkerResult(launch.rows_of(job.cell, fields), 1.0, "logs/x.log")

    monkeypatch.setattr(launch, "run_worker", fake)
    env = stub_environment()
    report = runner.run_cells(runner.Sweep([static], env, tmp_path, "r"))
    first = read_rows(report.csv).rows
    assert [(r["batch_size"], r["dynamic"], r["status"]) for r in first] == [
        ("1", "static", "ok"), ("4", "static", "error"), ("16", "static", "ok")
    ]  # fmt: skip
    assert report.statuses == {"ok": 2, "error": 1}
    outcome[4] = "ok"
    report = runner.run_cells(
        runner.Sweep([static], env, tmp_path, "r")
    )  # resume: the failed row's cell again
    again = read_rows(report.csv).rows
    assert sorted((r["batch_size"], r["status"]) for r in again) == [("1", "ok"), ("16", "ok"), ("4", "ok")]
    assert report.statuses == {"ok": 1}, "the rows kept are not written twice"
    report = runner.run_cells(runner.Sweep([static], env, tmp_path, "r"))
    assert report.resumed == 1 and report.ran == 0
