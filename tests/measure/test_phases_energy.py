"""Issue 29 without a GPU, a real compile or a RAPL counter: torch's compile-time accounting as
each build records it (planted), the phases split from it; the CUDA-graph figures from a planted
allocator snapshot; energy per image from a fake NVML and a fake powercap tree (figures exactly
as planted); what moved between builds, checked against the stable-vs table's own columns and
shown the same way by compare; the tables and the picture from hand-made rows."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import pytest
from support.rows import ROWS, cell, write_run
from support.rows import write_by_build as write_compare

from suite.cli import main
from suite.measure import counters, cudagraphs, energy, phases
from suite.measure.energy import Energy, nvml_counter, rapl_counter
from suite.measure.phases import Calls, Ledger, split
from suite.report.load import load
from suite.report.measurement import MORE_COLUMNS
from suite.report.moved import Side, SpeedupSplit
from suite.report.study import Study, build_kinds
from suite.report.tables.phases import cudagraph_tables, energy_tables, phase_tables
from suite.report.tables.stable_vs import stable_vs_others
from suite.results import COLUMNS, TABLE

ROOT = Path(__file__).resolve().parents[2]

# What torch 2.13 recorded for a tiny MLP's first compiled call on this CPU (tmp probe, seconds,
# rounded): the keys nest frame > backend > AOTAutograd > inductor > compile_to_module > codegen.
CURRENT = {
    "_compile.compile_inner": [30.2224],
    "bytecode_tracing": [0.7038],
    "OutputGraph.call_user_compiler": [29.3421],
    "create_aot_dispatcher_function": [28.2367],
    "compile_fx.<locals>.fw_compiler_base": [28.0497],
    "compile_fx_inner": [27.3534],
    "GraphLowering.run": [0.2180],
    "GraphLowering.compile_to_module": [26.4368],
    "GraphLowering.codegen": [6.4087],
    "Scheduler.__init__": [0.1273],
    "Scheduler.codegen": [6.2678],
    "compile_file": [5.1144, 0.4133, 14.4421],  # in threads: overlapping, not a phase
    "PyCodeCache.load_by_key_path": [20.0238],
    "build_guards": [0.0910],
}
# torch 2.0.1 (its @dynamo_timed decorator, keys by qualified name), the same MLP
STABLE = {
    "_compile": [30.4695],
    "OutputGraph.call_user_compiler": [29.7981],
    "create_aot_dispatcher_function": [22.1411],
    "compile_fx.<locals>.fw_compiler": [21.6942],
    "GraphLowering.run": [0.4011],
    "GraphLowering.compile_to_module": [21.2683],
    "Scheduler.__init__": [13.1271],
    "Scheduler.codegen": [0.0453],
    "WrapperCodeGen.generate": [0.0041],
}


def test_the_phases_add_up_to_torchs_frame_compile_on_both_builds() -> None:
    for recorded, frame in ((CURRENT, 30.2224), (STABLE, 30.4695)):
        got = split(recorded)
        assert got is not None
        assert math.isclose(sum(got.values()), frame, abs_tol=1e-9)
    current = split(CURRENT)
    assert current is not None
    assert current["dynamo"] == pytest.approx(30.2224 - 29.3421)
    assert current["pre_aot"] == pytest.approx(29.3421 - 28.2367)
    assert current["aot"] == pytest.approx(28.2367 - 28.0497)
    assert current["lowering"] == pytest.approx(28.0497 - 26.4368)
    assert current["codegen"] == pytest.approx(6.4087)  # GraphLowering.codegen, its parts not again
    assert current["kernels"] == pytest.approx(26.4368 - 6.4087)
    stable = split(STABLE)
    assert stable is not None
    assert stable["codegen"] == pytest.approx(13.1271 + 0.0453 + 0.0041)  # 2.0.1 times the parts only
    assert stable["aot"] == pytest.approx(22.1411 - 21.6942)


def test_a_lazy_backward_autotuning_and_recording_count_where_they_belong() -> None:
    recorded = {
        **CURRENT,
        "backward._backward_impl": [4.0],  # at the first backward, outside the frame compile
        "compile_fx.<locals>.bw_compiler": [3.5],
        "mm_template_autotuning": [0.2],  # inside lowering
        "CachingAutotuner.benchmark_all_configs": [0.7],  # the first run's, outside the frame
        "CUDAGraphNode.record": [0.3],
    }
    got = split(recorded)
    assert got is not None
    assert got["aot"] == pytest.approx(28.2367 + 4.0 - 28.0497 - 3.5)
    assert got["lowering"] == pytest.approx(28.0497 + 3.5 - 26.4368 - 0.2)
    assert got["autotune"] == pytest.approx(0.9) and got["cudagraphs"] == pytest.approx(0.3)
    assert sum(got.values()) == pytest.approx(30.2224 + 4.0 + 0.7 + 0.3)


def test_a_cache_hits_load_counts_with_the_kernels() -> None:
    """A hit in AOTAutograd's cache (the warm and mega-cache processes): no AOTAutograd, no inductor
    compile, the cached graph's load inside the backend call."""
    hit = {
        "_compile.compile_inner": [16.0],
        "OutputGraph.call_user_compiler": [14.0],
        "AOTAutogradCache.inductor_load": [12.5],
        "PyCodeCache.load_by_key_path": [12.0],  # inside the load: not counted again
    }
    assert split(hit) == {"dynamo": 2.0, "pre_aot": 1.5, "aot": 0.0, "lowering": 0.0, "codegen": 0.0,
                          "kernels": 12.5, "autotune": 0.0, "cudagraphs": 0.0}  # fmt: skip
    assert phases.summary(hit) == "kernels 12.5 s, dynamo 2.0 s, pre_aot 1.5 s"


def test_torch_2_0_1s_lazy_backward_is_its_bw_compiler() -> None:
    got = split({**STABLE, "compile_fx.<locals>.bw_compiler": [5.0]})  # at the first backward
    assert got is not None and sum(got.values()) == pytest.approx(30.4695 + 5.0)
    assert got["aot"] == pytest.approx(22.1411 - 21.6942) and got["lowering"] == pytest.approx(
        21.6942 + 5.0 - 21.2683
    )


def test_keys_that_do_not_nest_leave_the_phases_empty() -> None:
    assert split({**CURRENT, "create_aot_dispatcher_function": [29.9]}) is None  # AOT > backend call


@pytest.fixture
def accounting(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[float]]:
    """torch's dict of timed functions, planted; one earlier compile's entries already in it."""
    table: dict[str, list[float]] = {"_compile": [99.0], "OutputGraph.call_user_compiler": [98.0]}
    monkeypatch.setattr(phases, "_accounting", lambda: table)
    monkeypatch.setattr(phases, "_compile_records", lambda: [])
    monkeypatch.setattr(phases, "_version", lambda: "2.0.1")  # no torch import: seconds of CI
    monkeypatch.setattr(counters, "guard_failures", lambda: [])
    return table


def test_the_ledger_reads_only_what_the_first_call_recorded(accounting) -> None:
    ledger = Ledger.start()
    for key, values in STABLE.items():
        accounting.setdefault(key, []).extend(values)
    ledger.first_call_done()
    accounting.setdefault("CUDAGraphNode.record", []).extend([0.25, 0.5])  # in the warm-up
    ledger.warm_up_done()
    f = ledger.fields(30.6, "cpu", "default", graphs=1)
    assert f["phase_dynamo_s"] == round(30.4695 - 29.7981, 4)
    assert f["phase_kernels_s"] == round(21.2683 - 13.1271 - 0.0453 - 0.0041, 4)
    assert f["phase_cudagraphs_s"] is None and "cudagraphs: no CUDA graphs (on cpu)" in f["phase_note"]
    assert f["phase_other_s"] == round(30.6 - 30.4695, 4)
    assert f["graphs"] == 1 and f["guards"] is None and "keeps no guard count" in f["phase_note"]
    assert ledger.recordings() == (2, 0.75)
    beyond = ledger.fields(40.0, "cpu", "default")  # 9.5 s unaccounted: beyond 5% + 0.5 s
    assert "beyond the margin of 2.50 s" in beyond["phase_note"]
    assert beyond["phase_first_run_s"] is None  # no calls given: the remainder is not named


def test_the_phases_remainder_is_named_and_reconciles(accounting) -> None:
    """MobileNet on the H200: the phases summed 19.40 s of compile_s 21.07 s. Given the first
    call's, an eager call's and a steady compiled call's times, the rest is named: the first
    run's one-off work, and a compiled call's difference from eager's; they add up exactly."""
    ledger = Ledger.start()
    for key, values in STABLE.items():
        accounting.setdefault(key, []).extend(values)
    ledger.first_call_done()
    ledger.warm_up_done()
    calls = Calls(first_ms=40_100.0, eager_ms=100.0, compiled_ms=80.0)  # compile_s = 40.0 s
    f = ledger.fields(40.0, "cpu", "default", calls=calls)
    steady_s = (80.0 - 100.0) / 1000
    assert f["phase_first_run_s"] == round((40_100.0 - 80.0) / 1000 - 30.4695, 4)
    assert f["phase_other_s"] == pytest.approx(f["phase_first_run_s"] + steady_s, abs=1e-3)
    assert "the rest: 9.55 s the first run's one-off work beyond a steady compiled call" in f["phase_note"]
    assert "-20.0 ms a steady compiled call against an eager one" in f["phase_note"]


def test_a_build_without_accounting_says_so(accounting, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(phases, "_accounting", lambda: None)
    ledger = Ledger.start()
    ledger.first_call_done()
    f = ledger.fields(1.0, "cpu", "default")
    assert (
        all(f[c] is None for c in phases.PHASE_COLUMNS)
        and "keeps no compile-time accounting" in f["phase_note"]
    )


def test_cuda_graph_pools_and_their_absence(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cudagraphs, "_version", lambda: "2.0.1")
    snapshot = [
        {"total_size": 2 * 2**20, "segment_pool_id": (0, 0)},
        {"total_size": 3 * 2**20, "segment_pool_id": (0, 1)},  # a CUDA graph's private pool
        {"total_size": 5 * 2**20, "segment_pool_id": (1, 0)},
    ]
    assert cudagraphs.pool_mb(snapshot) == (8.0, "")
    mb, why = cudagraphs.pool_mb([{"total_size": 2**20, "segment_type": "large"}])  # torch 2.0.1's
    assert mb is None and "names no memory pool" in why
    ledger = Ledger(None)
    assert (
        cudagraphs.fields("cpu", "reduce-overhead", ledger, 1.0, 2.0)["cudagraph_note"]
        == "no CUDA graphs on cpu"
    )


def test_cuda_graph_figures_on_a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cudagraphs, "records_cudagraphs", lambda mode: mode == "reduce-overhead")
    monkeypatch.setattr(cudagraphs, "times_cudagraphs", lambda: True)
    monkeypatch.setattr(cudagraphs, "_version", lambda: "2.13.0")
    monkeypatch.setattr(cudagraphs, "cudagraph_skips", lambda: 0)
    ledger = Ledger({}, first={"CUDAGraphNode.record": [0.4]}, later={"CUDAGraphNode.record": [0.1]})
    snapshot = [{"total_size": 64 * 2**20, "segment_pool_id": (0, 3)}]
    f = cudagraphs.fields("cuda", "reduce-overhead", ledger, 100.0, 164.0, snapshot)
    assert (f["cudagraph_records"], f["cudagraph_record_s"]) == (2, 0.5)
    assert (f["cudagraph_pool_mb"], f["cudagraph_extra_mb"], f["cudagraph_note"]) == (64.0, 64.0, "")
    assert (
        cudagraphs.fields("cuda", "default", ledger, 1, 2)["cudagraph_note"]
        == "mode default records no CUDA graphs"
    )


def test_cuda_graph_memory_is_measured_the_way_the_pools_hold_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first H200 run: allocated peaks 42 MB lower in the compiled warm-up while the pools
    held 142 MB. The reserved peaks count the pools' segments: the extra is the pool's size."""
    import torch

    from suite.measure.memory import PeakMemory

    allocated, reserved = iter([300.0, 258.0]), iter([400.0, 542.0])
    monkeypatch.setattr(torch.cuda, "synchronize", lambda: None)
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: next(allocated) * 2**20)
    monkeypatch.setattr(torch.cuda, "max_memory_reserved", lambda: next(reserved) * 2**20)
    with PeakMemory("cuda") as eager:
        pass
    with PeakMemory("cuda") as compiled:
        pass
    assert compiled.peak_mb - eager.peak_mb == -42.0  # what the allocated peaks said
    monkeypatch.setattr(cudagraphs, "records_cudagraphs", lambda mode: True)
    monkeypatch.setattr(cudagraphs, "times_cudagraphs", lambda: False)
    monkeypatch.setattr(cudagraphs, "cudagraph_skips", lambda: 0)
    pool = [{"total_size": 142 * 2**20, "segment_pool_id": (1, 0)}]
    ledger = Ledger({}, first={}, later={})
    f = cudagraphs.fields("cuda", "reduce-overhead", ledger, eager.reserved_mb, compiled.reserved_mb, pool)
    assert (f["cudagraph_pool_mb"], f["cudagraph_extra_mb"]) == (142.0, 142.0)
    assert "reserved memory grew" not in f["cudagraph_note"]
    f = cudagraphs.fields("cuda", "reduce-overhead", ledger, 400.0, 450.0, pool)
    assert "reserved memory grew 50 MB beyond eager's while the pools hold 142 MB" in f["cudagraph_note"]
    assert PeakMemory("cpu").reserved_mb is None


# ---------------------------------------------------------------------------------------
# energy


class FakeNvml:
    """NVML's energy calls; the counter (mJ) is advanced by the planted functions."""

    def __init__(self, supported: bool = True) -> None:
        self.mj, self.supported, self.shut = 1_000_000, supported, False

    def nvmlDeviceGetHandleByIndex(self, index: int) -> str:
        return "gpu0"

    def nvmlDeviceGetTotalEnergyConsumption(self, handle: str) -> int:
        if not self.supported:
            raise RuntimeError("NVMLError_NotSupported")
        return self.mj

    def nvmlShutdown(self) -> None:
        self.shut = True


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def planted(fake: FakeNvml, clock: Clock, mj_per_call: int, s_per_call: float):
    def fn() -> None:
        fake.mj += mj_per_call
        clock.t += s_per_call

    return fn


def test_nvml_energy_per_image_exactly_as_planted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(energy.health, "_handle", lambda nvml: "gpu0")
    fake, clock = FakeNvml(), Clock()

    def idle(seconds: float) -> None:  # 60 W for the idle second
        fake.mj += int(60_000 * seconds)
        clock.t += seconds

    opener = lambda device: nvml_counter(lambda: fake)  # noqa: E731
    with Energy("cuda", 4, lambda: None, opener=opener, clock=clock, sleep=idle) as e:
        # eager: 250 mJ and 0.25 s a call; compiled: 100 mJ and 0.1 s a call
        e.blocks([("eager", planted(fake, clock, 250, 0.25)), ("compiled", planted(fake, clock, 100, 0.1))])
    f = e.fields()
    assert fake.shut and f["energy_source"] == "nvml" and f["idle_power_w"] == 60.0
    assert f["eager_j_per_image"] == pytest.approx(0.25 / 4)  # 4 images a call
    assert f["compiled_j_per_image"] == pytest.approx(0.1 / 4)
    assert f["energy_ratio"] == pytest.approx(0.4)
    assert e.tally["eager"].images == 2 * 4 * 4  # 2 rounds of blocks of 1 s: 4 calls of 0.25 s
    assert (
        f["energy_note"]
        == "NVML total-energy counter: the whole GPU; idle power after the model was loaded (warm)"
    )


def test_the_idle_power_is_taken_before_any_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """The H200's idle read 121 W when taken after the model was loaded, 80 W before the run: a
    cell opens its counter and reads the idle before the model is built, with no synchronize (it
    would make a CUDA context); entering the block later does not measure it again."""
    monkeypatch.setattr(energy.health, "_handle", lambda nvml: "gpu0")
    fake, clock, syncs = FakeNvml(), Clock(), []

    def idle(seconds: float) -> None:  # 80 W before any work
        fake.mj += int(80_000 * seconds)
        clock.t += seconds

    opener = lambda device: nvml_counter(lambda: fake)  # noqa: E731
    e = Energy("cuda", 1, lambda: syncs.append(1), opener=opener, clock=clock, sleep=idle)
    assert e.start(before_work=True) is e and syncs == []
    fake.mj += 121_000 * 5  # the model loads, the GPU warms up
    with e:
        e.blocks([("eager", planted(fake, clock, 100, 0.5))])
    f = e.fields()
    assert f["idle_power_w"] == 80.0 and f["energy_note"].endswith("; idle power before any work")


def test_a_counter_that_fails_midway_loses_the_energy_figures_not_the_cell(monkeypatch) -> None:
    monkeypatch.setattr(energy.health, "_handle", lambda nvml: "gpu0")
    fake, clock = FakeNvml(), Clock()
    opener = lambda device: nvml_counter(lambda: fake)  # noqa: E731
    with Energy("cuda", 1, lambda: None, opener=opener, clock=clock, sleep=lambda s: None) as e:
        fake.supported = False  # the driver stops answering
        e.blocks([("eager", planted(fake, clock, 1, 0.5))])
    f = e.fields()
    assert f["eager_j_per_image"] is None and "energy blocks stopped (RuntimeError" in f["energy_note"]


def test_a_gpu_without_the_counter_and_the_off_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(energy.health, "_handle", lambda nvml: "gpu0")
    counter, why = nvml_counter(lambda: FakeNvml(supported=False))
    assert counter is None and "no total-energy counter" in why and "Volta" in why
    assert nvml_counter(lambda: None) == (None, "no NVML (package nvidia-ml-py or the NVIDIA driver missing)")
    monkeypatch.setenv("SUITE_ENERGY", "off")
    with Energy("cuda", 1, lambda: None, opener=lambda d: pytest.fail("opened")) as e:
        e.blocks([("eager", lambda: None)])
    assert e.fields() == {**dict.fromkeys(energy.COLUMNS), "energy_note": "off (SUITE_ENERGY=off)"}


def zone(root: Path, name: str, label: str, uj: int, max_uj: int = 10**9) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "name").write_text(label + "\n")
    (folder / "energy_uj").write_text(f"{uj}\n")
    (folder / "max_energy_range_uj").write_text(f"{max_uj}\n")
    return folder


def test_rapl_energy_exactly_as_planted_across_a_wrap(tmp_path: Path) -> None:
    root = tmp_path / "powercap"
    p0 = zone(root, "intel-rapl:0", "package-0", 999_000_000)  # 1 J before it wraps
    p1 = zone(root, "intel-rapl:1", "package-1", 5_000_000)
    zone(root, "intel-rapl:0:0", "core", 7)  # a sub-zone: inside package-0 already
    zone(root, "intel-rapl:2", "psys", 11)  # the platform: not a package
    clock = Clock()

    def add(joules0: float, joules1: float, seconds: float):
        def fn(*_: object) -> None:
            for path, j in ((p0, joules0), (p1, joules1)):
                now = int((path / "energy_uj").read_text()) + int(j * 1e6)
                (path / "energy_uj").write_text(str(now % 10**9))
            clock.t += seconds

        return fn

    opener = lambda device: rapl_counter(root)  # noqa: E731
    with Energy("cpu", 2, lambda: None, opener=opener, clock=clock, sleep=add(10, 5, 1.0)) as e:
        e.blocks([("eager", add(3, 1, 0.5)), ("compiled", add(1, 1, 0.5))])
    f = e.fields()
    assert f["energy_source"] == "rapl (package-0, package-1)" and f["idle_power_w"] == 15.0
    assert f["eager_j_per_image"] == pytest.approx(4 / 2) and f["compiled_j_per_image"] == pytest.approx(
        2 / 2
    )
    assert f["energy_ratio"] == pytest.approx(0.5)
    assert "every process on them" in f["energy_note"]


def test_no_rapl_says_why(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    counter, why = rapl_counter(tmp_path / "absent")
    assert (
        counter is None
        and why
        == f"no RAPL: {tmp_path / 'absent'} does not exist (the kernel exposes no powercap zones here)"
    )
    root = tmp_path / "powercap"
    zone(root, "intel-rapl:0", "package-0", 1)

    def denied(path: Path) -> int:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(energy, "_read_int", denied)
    counter, why = rapl_counter(root)
    assert counter is None and "not readable by this user" in why
    zone(tmp_path / "psys-only", "intel-rapl:0", "psys", 1)
    assert "no package zone" in rapl_counter(tmp_path / "psys-only")[1]


# ---------------------------------------------------------------------------------------
# what moved


def test_the_split_multiplies_to_the_change() -> None:
    s = SpeedupSplit.of(Side(10, 9.9, 10.1), Side(5, 4.9, 5.1), Side(8, 7.9, 8.1), Side(5, 4.9, 5.1))
    assert s is not None
    assert (
        s.change.value == pytest.approx((8 / 5) / (10 / 5)) == pytest.approx(s.eager.value * s.compiled.value)
    )
    assert s.moved() == "eager faster"  # speed-up 2.0x -> 1.6x: eager went from 10 to 8 ms
    assert s.text().endswith(": eager faster") and s.text().startswith("0.80x = eager 0.80x [0.78, 0.82]")


def test_the_stable_vs_split_matches_the_tables_own_columns(tmp_path: Path) -> None:
    kinds, _ = build_kinds(["stable", "nightly"], ROOT / "matrix.yaml", explicit=True)
    (table,) = stable_vs_others(Study(load([write_run(tmp_path / "run", ROWS)]).frame, kinds))
    frame = table.frame()
    checked = 0
    for r in frame.to_dict("records"):
        if not isinstance(r["eager side"], float):
            continue
        eager = r["nightly without torch.compile"] / r["stable without torch.compile"]
        compiled = r["stable with torch.compile"] / r["nightly with torch.compile"]
        assert r["eager side"] == pytest.approx(eager, abs=1e-4)
        assert r["compiled side"] == pytest.approx(compiled, abs=1e-4)
        assert r["speed-up nightly / stable"] == pytest.approx(eager * compiled, abs=1e-4)
        assert r["speed-up nightly / stable"] == pytest.approx(
            r["nightly speed-up"] / r["stable speed-up"], abs=1e-4
        )
        checked += 1
    assert checked == 2


def test_compare_reports_the_split_the_same_way(tmp_path: Path) -> None:
    def compiled_cell(build: str, eager_ms: float, ms: float) -> dict:
        paired = {"eager_median_ms": eager_ms, "eager_ci95_low_ms": eager_ms - 0.1}
        paired |= {"eager_ci95_high_ms": eager_ms + 0.1, "speedup": eager_ms / ms}
        paired |= {"speedup_ci95_low": eager_ms / ms - 0.05, "speedup_ci95_high": eager_ms / ms + 0.05}
        return cell("ViT", ms, ms - 0.1, ms + 0.1, build=build, **paired)

    base = write_compare(tmp_path / "base", [compiled_cell("stable", 10.0, 5.0)])
    new = write_compare(tmp_path / "new", [compiled_cell("nightly", 8.0, 5.0)])
    report = tmp_path / "report.md"
    main(["compare", str(base), str(new), "-o", str(report)])
    split_ = SpeedupSplit.of(
        Side(10.0, 9.9, 10.1), Side(5.0, 4.9, 5.1), Side(8.0, 7.9, 8.1), Side(5.0, 4.9, 5.1)
    )
    assert split_ is not None and split_.moved() == "eager faster"
    assert split_.text().split(" = ")[1] in report.read_text()


# ---------------------------------------------------------------------------------------
# the CSV, the tables, the picture


def test_the_columns_are_one_block_after_the_others_and_old_files_still_load() -> None:
    start = COLUMNS.index(MORE_COLUMNS[0])  # one block (others' blocks may follow it)
    assert [c.name for c in TABLE[start : start + len(MORE_COLUMNS)]] == list(MORE_COLUMNS)
    assert start > COLUMNS.index("log_file")
    old = load([ROOT / "results" / "2026-11-21-cpu-amd-epyc-smoke"])
    m = Study(old.frame, {}).cells
    assert all(v in (None, "") for one in m.values() for v in one.more.values())


def phase_row(build: str, mode: str, bs: int = 1, **more: object) -> dict:
    figures = dict(zip(phases.PHASE_COLUMNS, (1.0, 0.5, 0.25, 2.0, 3.0, 4.0, 0.0), strict=False))
    return {
        **ROWS[1],
        "build": build,
        "mode": mode,
        "batch_size": bs,
        "compile_s": 11.0,
        **figures,
        "phase_other_s": 0.25,
        "graphs": 1,
        "guards": 120,
        "phase_note": "cudagraphs: no CUDA graphs (on cpu)",
        "cudagraph_note": "no CUDA graphs on cpu",
        "energy_note": "no RAPL: /sys/class/powercap does not exist",
        **more,
    }


WARM_NOTE = "cudagraphs: no CUDA graphs (on cpu); warm compile, largest phases: dynamo 7.3 s, kernels 3.7 s"
NVML_FIGURES = {
    "energy_source": "nvml",
    "idle_power_w": 55.0,
    "eager_j_per_image": 0.02,
    "compiled_j_per_image": 0.015,
    "energy_ratio": 0.75,
    "energy_note": "NVML total-energy counter: the whole GPU",
}


def test_phase_cuda_graph_and_energy_tables_from_rows(tmp_path: Path) -> None:
    rows = [
        phase_row("stable", "default"),
        phase_row("stable", "reduce-overhead", phase_other_s=-3.0, phase_note=WARM_NOTE),  # beyond 1.05 s
        phase_row("stable", "default", bs=4, **NVML_FIGURES),
    ]
    study = Study(load([write_run(tmp_path / "run", rows)]).frame, {"stable": "stable"})
    (default, reduce) = phase_tables(study)
    assert default.markdown_rows()[0][2:] == [
        "11.00",
        "1.00",
        "0.50",
        "0.25",
        "2.00",
        "3.00",
        "4.00",
        "0.00",
        "—",
        "0.25",
        "1",
        "120",
        "—",
    ]
    assert reduce.markdown_rows()[0][11] == "-3.00!" and any(
        "beyond the stated margin" in n for n in reduce.notes
    )
    assert "cudagraphs: no CUDA graphs (on cpu)." in default.notes
    assert reduce.notes[-2:] == [
        "cudagraphs: no CUDA graphs (on cpu).",
        "Image Classification/ViT bs 1: warm compile, largest phases: dynamo 7.3 s, kernels 3.7 s.",
    ]
    (graphs,) = cudagraph_tables(study)  # reduce-overhead only
    assert graphs.markdown_rows()[0][2:] == ["—"] * 4 and "Empty: no CUDA graphs on cpu." in graphs.notes
    energy_default = energy_tables(study)[0]
    assert energy_default.markdown_rows()[1][2:] == ["55.0", "20.00", "15.00", "0.750"]
    assert "Counter: nvml." in energy_default.notes
    assert energy_default.markdown_rows()[0][2:6] == ["—"] * 4
    assert "no RAPL: /sys/class/powercap does not exist." in energy_default.notes
    from suite.report.phases_plot import phase_plots

    (tmp_path / "plots").mkdir()
    plots = phase_plots(study, [default], tmp_path / "plots")  # one picture: CI's seconds
    assert [p.name for paths in plots.values() for p in paths] == [
        "nvidia-a100-sxm4-80gb__stable__default__compile-phases.png"
    ]
    assert all(p.stat().st_size > 10_000 for paths in plots.values() for p in paths)


def test_guard_counts_come_from_torchs_records(accounting, monkeypatch: pytest.MonkeyPatch) -> None:
    records: list[object] = [SimpleNamespace(guard_count=5)]
    monkeypatch.setattr(phases, "_compile_records", lambda: list(records))
    ledger = Ledger.start()
    records += [SimpleNamespace(guard_count=870), SimpleNamespace(guard_count=12)]
    records += [SimpleNamespace(guard_count=None, is_forward=False)]  # a lazy backward's record
    accounting.update({k: list(v) for k, v in CURRENT.items()})
    ledger.first_call_done()
    assert ledger.guards == 882


def test_a_process_measures_each_eager_function_and_the_idle_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """In a shared process (`ahead`), an eager cell after its compiled sibling runs no blocks: its
    eager figure is that row's; the idle is read by the process's first cell only; another
    owner (batch size) is measured again, and a compiled function always."""
    monkeypatch.setattr(energy.health, "_handle", lambda nvml: "gpu0")
    fake, clock = FakeNvml(), Clock()

    def idle(seconds: float) -> None:
        fake.mj += int(80_000 * seconds)
        clock.t += seconds

    opener = lambda device: nvml_counter(lambda: fake)  # noqa: E731
    monkeypatch.setattr(energy, "PROCESS", energy.Process())  # a fresh process

    def cell(owner: tuple, functions: list[str], who: str) -> dict:
        e = Energy("cuda", 1, lambda: None, opener=opener, clock=clock, sleep=idle, owner=owner)
        with e.start(before_work=True):
            e.blocks([(label, planted(fake, clock, 100, 0.5)) for label in functions], who=who)
        return e.fields()

    first = cell(("ResNet", 1), ["eager", "compiled"], "ResNet bs=1 default inference")
    assert first["idle_power_w"] == 80.0 and first["eager_j_per_image"] == pytest.approx(0.1)
    after = cell(("ResNet", 1), ["eager"], "ResNet bs=1 eager inference")
    assert after["eager_j_per_image"] is None and after["idle_power_w"] is None
    assert "eager: measured in this process's ResNet bs=1 default inference row" in after["energy_note"]
    assert "idle power read by this process's first cell only" in after["energy_note"]
    other = cell(("ResNet", 4), ["eager", "compiled"], "ResNet bs=4 default inference")
    assert other["eager_j_per_image"] == pytest.approx(0.1) and other["compiled_j_per_image"] is not None
