"""One container per GPU on fake fleets: the container sessions against a fake `docker` and `nvidia-smi`
(tests/support/docker.py) listing 1 to 8 GPUs on two NUMA nodes, with old drivers and new GPUs.

The sessions run in this process (suite.sessions.containers.bench_containers with the noxfile's
`suite mark`), so each case costs a fraction of a second: the exact `docker run` lines (one
container per GPU, `--gpus device=i`, the NUMA node's CPUs), the shards partitioning the cells
exactly, the preflight's rows and reasons (a driver too old for a build's CUDA, for triton's
ptxas, a cu130 build on a 550 driver, PyPI's torch on an H100), a container that dies.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from types import SimpleNamespace
from typing import NoReturn

import pytest
from support.docker import ROOT, calls, load_noxfile, make_fake, runs

from suite.errors import UsageError
from suite.measure import machine
from suite.results import read_rows
from suite.sessions import containers, docker, fleet, floors, pergpu
from suite.sessions.runner import Runner
from suite.spec import Filters, expand, load_matrix
from suite.spec.shard import Shard, select
from suite.system import cpus, gpus

MATRIX = load_matrix(ROOT / "matrix.yaml")
SMOKE = ["--profile", "smoke", "--models", "ViT,ResNet", "--no-merge"]


class Failed(Exception):
    pass


def _error(message: str) -> NoReturn:
    raise Failed(message)


@pytest.fixture
def fleet_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    fake = make_fake(tmp_path)
    for key in [k for k in os.environ if k.startswith(("FAKE_", "SUITE_GPU"))]:
        monkeypatch.delenv(key)
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    fake.lines = []
    fake.monkeypatch = monkeypatch  # session()'s variables are undone after the test
    fake.runner = Runner(run=lambda *a, **k: None, log=fake.lines.append, error=_error)
    return fake


def session(fake: SimpleNamespace, *args: str, prefix: str = "nightly", **env: str) -> containers.Bench:
    for key, value in env.items():
        fake.monkeypatch.setenv(key, value)
    noxfile = load_noxfile()
    return containers.bench_containers(
        fake.runner, ["--out", str(fake.out), *args], ROOT, prefix, lambda *a: None, verb=noxfile.suite_verb
    )


def flag(run: list[str], name: str) -> str | None:
    return run[run.index(name) + 1] if name in run else None


def rows(fake: SimpleNamespace, run_id: str) -> list[dict[str, str]]:
    return [r for p in sorted((fake.out / run_id / "raw").glob("*.csv")) for r in read_rows(p).rows]


def smoke_cells(build: str, models: str = "ViT,ResNet") -> list:
    return expand(MATRIX, "smoke", build, Filters(models=tuple(models.split(","))))


def smi_calls(fake: SimpleNamespace) -> list[list[str]]:
    log = Path(fake.env["FAKE_DOCKER_LOG"] + ".smi")
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


# --- one container per GPU ------------------------------------------------------------------


def test_eight_gpus_on_two_numa_nodes_get_a_container_each_pinned_and_sharded(fleet_env) -> None:
    done = session(fleet_env, "--run-id", "f8", *SMOKE, prefix="stable", FAKE_SMI_GPUS="8")
    assert done.failed == [] and done.skipped == []
    suite_runs = runs(fleet_env)
    assert [flag(r, "--build") for r in suite_runs] == ["stable"] * 8
    for build in ("stable",):
        mine = [r for r in suite_runs if flag(r, "--build") == build]
        assert sorted(flag(r, "--gpus") for r in mine) == [f"device={i}" for i in range(8)]
        for run in mine:
            gpu = int(flag(run, "--gpus").split("=")[1])
            node = 0 if gpu < 4 else 1
            # its node's 112 CPUs split among the node's 4 GPUs: 28 each, none shared
            first = (gpu % 4) * 14 + (0 if node == 0 else 56)  # cores with their hyperthreads
            assert flag(run, "--cpuset-cpus") == f"{first}-{first + 13},{first + 112}-{first + 125}"
            assert "TORCHINDUCTOR_COMPILE_THREADS=28" in run
            assert flag(run, "--cpuset-mems") == str(node)
            assert flag(run, "--shard") == f"{gpu + 1}/8"
            assert flag(run, "--name") == f"suite-f8-{build}-shard-{gpu + 1}-of-8"
            state = json.loads(next(a for a in run if a.startswith("SUITE_GPU_STATE=")).split("=", 1)[1])
            assert state["index"] == str(gpu) and state["uuid"].startswith("GPU-0000000")
        # the parts partition the selection: every cell exactly once
        cells = smoke_cells(build)
        parts = [select(cells, Shard.parse(flag(r, "--shard"))) for r in mine]
        keys = [(c.model.name, c.batch_size, c.mode) for part in parts for c in part]
        assert sorted(keys) == sorted((c.model.name, c.batch_size, c.mode) for c in cells)
        assert len(set(keys)) == len(keys)
    # nvidia-smi read once for the GPUs, once for the topology (and -L for the GPU check)
    queries = [c for c in smi_calls(fleet_env) if c[0].startswith("--query-gpu=")]
    assert len(queries) == 1 and smi_calls(fleet_env).count(["topo", "-m"]) == 1
    assert any("8 GPUs (NVIDIA A100-SXM4-40GB): one container each" in line for line in fleet_env.lines)


def test_a_busy_gpu_and_a_mig_gpu_are_refused_and_the_others_get_disjoint_cpus(fleet_env) -> None:
    """8 GPUs on two NUMA nodes, GPU 2 running another process and GPU 6 in MIG mode: those two
    are refused with their reasons, the six others each run a container on CPUs of their own."""
    session(fleet_env, "--run-id", "bm", *SMOKE, prefix="stable", FAKE_SMI_GPUS="8", FAKE_SMI_BUSY="2",
            FAKE_SMI_MIG="6")  # fmt: skip
    mine = runs(fleet_env)
    assert sorted(flag(r, "--gpus") for r in mine) == [f"device={i}" for i in (0, 1, 3, 4, 5, 7)]
    sets = [set(cpus.cpu_list(flag(r, "--cpuset-cpus"))) for r in mine]
    assert all(len(s) == 28 for s in sets) and len(set().union(*sets)) == 28 * 6  # pairwise disjoint
    refused = [line for line in fleet_env.lines if line.startswith("refused: ")]
    assert refused == [
        "refused: GPU 2 (GPU-00000002-0000-0000-0000-000000000000) runs other processes (4244 python3); "
        "pass --allow-busy-gpu to time it anyway",
        "refused: GPU 6 (GPU-00000006-0000-0000-0000-000000000000) is in MIG mode: a slice, not the whole "
        "GPU; pass --allow-mig to time it anyway",
    ]
    Path(fleet_env.env["FAKE_DOCKER_LOG"]).unlink()
    session(fleet_env, "--run-id", "bm2", *SMOKE, "--allow-busy-gpu", "--allow-mig", prefix="stable")
    assert len(runs(fleet_env)) == 8 and not any("--allow-mig" in r for r in runs(fleet_env))


def test_a_lone_busy_gpu_is_one_line_before_docker(fleet_env) -> None:
    with pytest.raises(UsageError, match=r"^GPU: GPU 0 \(GPU-0+-0000-0000-0000-000000000000\) runs other"):
        session(fleet_env, "--run-id", "b1", *SMOKE, prefix="stable", FAKE_SMI_BUSY="0")
    assert runs(fleet_env) == []


def test_suite_run_refuses_a_busy_or_mig_gpu_unless_allowed(monkeypatch: pytest.MonkeyPatch) -> None:
    """`suite run --device cuda` outside a container (bench-local on a GPU): the same rule, in
    its preflight; inside a container (SUITE_GPU_STATE handed over) the host has checked."""
    from support import stub_environment

    from suite.run import preflight

    env = stub_environment(device="nvidia-h100", device_type="cuda", gpu_count=1)
    gpu = gpus.GpuState("0", "GPU-x", "NVIDIA H100", mig="Enabled")
    monkeypatch.delenv("SUITE_GPU_STATE", raising=False)
    monkeypatch.setattr(machine, "for_this_process", lambda *a, **k: gpu)
    monkeypatch.setattr(gpus, "compute_apps", lambda *a, **k: {"GPU-x": ["77 python"]})
    with pytest.raises(UsageError, match=r"^--device: GPU 0 \(GPU-x\) is in MIG mode"):
        preflight.check_gpu(env, allow_busy=False, allow_mig=False)
    with pytest.raises(UsageError, match=r"runs other processes \(77 python\); pass --allow-busy-gpu"):
        preflight.check_gpu(env, allow_busy=False, allow_mig=True)
    preflight.check_gpu(env, allow_busy=True, allow_mig=True)
    monkeypatch.setenv("SUITE_GPU_STATE", gpu.to_json())
    preflight.check_gpu(env, allow_busy=False, allow_mig=False)


def test_cpu_shares_split_each_node_among_its_gpus() -> None:
    affinity = {"0": ("0-3,8-11", "0"), "1": ("0-3,8-11", "0"), "2": ("4-7", "1"), "3": ("", "")}
    assert fleet.cpu_shares(affinity) == {"0": "0-1,8-9", "1": "2-3,10-11", "2": "4-7"}
    assert cpus.cpu_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8" and cpus.cpu_list("0-2,5") == [0, 1, 2, 5]
    assert docker.compile_threads("0-2,5,7-8") == 6


def test_a_workflow_shard_is_split_again_over_the_gpus(fleet_env) -> None:
    session(
        fleet_env, "--run-id", "f2", "--shard", "2/3", *SMOKE, prefix="stable", FAKE_SMI_GPUS="2",
        FAKE_SMI_TOPO="none",
    )  # fmt: skip
    mine = sorted(runs(fleet_env), key=lambda r: flag(r, "--shard"))
    assert [flag(r, "--shard") for r in mine] == ["2/3,1/2", "2/3,2/2"]
    assert all("--cpuset-cpus" not in r and "--cpuset-mems" not in r for r in mine)  # topo: N/A
    assert flag(mine[0], "--name") == "suite-f2-stable-shard-2-of-3-1-of-2"
    outer = select(smoke_cells("stable"), Shard.parse("2/3"))
    parts = [select(smoke_cells("stable"), Shard.parse(flag(r, "--shard"))) for r in mine]
    assert sorted(id(c) for c in outer) != []  # the outer shard has cells
    got = sorted((c.model.name, c.batch_size, c.mode) for part in parts for c in part)
    assert got == sorted((c.model.name, c.batch_size, c.mode) for c in outer)


def test_suite_gpus_chooses_and_one_gpu_behaves_as_before(fleet_env) -> None:
    session(fleet_env, "--run-id", "g2", *SMOKE, prefix="stable", FAKE_SMI_GPUS="8", SUITE_GPUS="0,5")
    mine = sorted(runs(fleet_env), key=lambda r: flag(r, "--gpus"))
    assert [(flag(r, "--gpus"), flag(r, "--cpuset-mems"), flag(r, "--shard")) for r in mine] == [
        ("device=0", "0", "1/2"),
        ("device=5", "1", "2/2"),
    ]
    fleet_env.monkeypatch.delenv("SUITE_GPUS")
    Path(fleet_env.env["FAKE_DOCKER_LOG"]).unlink()
    session(fleet_env, "--run-id", "g1", *SMOKE, prefix="stable", FAKE_SMI_GPUS="1")
    (one,) = runs(fleet_env)
    assert flag(one, "--gpus") == "all" and "--shard" not in one and "--cpuset-cpus" not in one


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SUITE_GPUS": "0,9"}, "SUITE_GPUS: '9': no such GPU here (nvidia-smi lists 0, 1, 2, 3)"),
        ({"SUITE_GPUS": "1,1"}, "SUITE_GPUS: '1': GPU 1 is named twice"),
        ({"SUITE_GPUS": "0", "SUITE_GPU": "1"}, "set either SUITE_GPUS (several GPUs) or SUITE_GPU"),
    ],
)
def test_a_bad_gpu_choice_is_one_line_before_docker(fleet_env, env: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message.replace("(", r"\(").replace(")", r"\)")):
        session(fleet_env, "--run-id", "bad", *SMOKE, FAKE_SMI_GPUS="4", **env)
    assert calls(fleet_env) == []


def test_gpus_of_two_models_are_refused() -> None:
    a100 = gpus.GpuState("0", "GPU-a", "NVIDIA A100")
    t4 = gpus.GpuState("1", "GPU-b", "Tesla T4")
    with pytest.raises(UsageError, match="the GPUs are of 2 models"):
        fleet.choose([a100, t4], {})
    assert fleet.choose([a100, t4], {"SUITE_GPUS": "GPU-b"}) == [t4]


def test_a_failed_container_costs_its_own_cells_only(fleet_env) -> None:
    done = session(
        fleet_env, "--run-id", "oom", *SMOKE, prefix="stable", FAKE_SMI_GPUS="3", FAKE_DOCKER_FAIL_GPU="1"
    )
    assert len(runs(fleet_env)) == 3  # every container ran, the failed one included
    assert done.failed == [
        "stable: the container on gpu1 exited with status 137 (killed: out of memory, or stopped)"
    ]
    got = rows(fleet_env, "oom")  # the fake containers write no rows: these are the failed one's
    assert {r["shard"] for r in got} == {"2/3"} and {r["status"] for r in got} == {"error"}
    assert len(got) == len(select(smoke_cells("stable"), Shard(2, 3)))
    row = got[0]
    assert row["error"].startswith("the container on gpu1 exited with status 137")
    assert row["gpu_uuid"] == "GPU-00000001-0000-0000-0000-000000000000" and row["image"].startswith(
        "torch-compile-suite:"
    )
    assert row["image_id"].startswith("sha256:") and row["torch_version"] == ""  # never guessed


def test_cpu_containers_split_the_cpus() -> None:
    two = fleet.cpu_slots(2, "", [0, 1, 2, 3])
    assert [(s.cpus, s.shard, s.name) for s in two] == [("0,1", "1/2", "cpu1"), ("2,3", "2/2", "cpu2")]
    assert fleet.cpu_slots(1, "1/2", [0, 1]) == [fleet.Slot(None, shard="1/2")]
    with pytest.raises(UsageError, match="--containers: 3: from 1 to the 2 CPU"):
        fleet.cpu_slots(3, "", [0, 1])


# --- preflight: the builds' needs against the driver and the GPU ----------------------------


def test_an_11x_driver_runs_the_eager_cells_and_skips_the_compiled_ones(fleet_env) -> None:
    done = session(fleet_env, "--run-id", "d470", *SMOKE, prefix="stable", FAKE_SMI_DRIVER="470.57.02")
    assert done.skipped == [] and done.failed == []
    for run in runs(fleet_env):
        assert flag(run, "--modes") == "eager"  # the compiled cells never start
    got = rows(fleet_env, "d470")
    compiled = [c for c in smoke_cells("stable") if c.mode != "eager"]
    assert len([r for r in got if r["build"] == "stable"]) == len(compiled)
    assert {r["status"] for r in got} == {"skipped"} and {r["mode"] for r in got} == {
        "default",
        "reduce-overhead",
    }
    reason = next(r["error"] for r in got if r["build"] == "stable")
    assert "need an NVIDIA driver >= 525.60.13" in reason and "CUDA 12.0 ptxas" in reason
    assert "driver 470.57.02, compute capability 8.0" in reason and "pytorch/pytorch#119054" in reason
    assert got[0]["driver_version"] == "470.57.02" and got[0]["gpu_compute_capability"] == "8.0"


def test_a_cu130_build_on_a_550_driver_is_not_built_and_the_others_go_on(fleet_env) -> None:
    # the guide's pair and tonight's nightly (with the release it is compared with) at once
    done = session(fleet_env, "--run-id", "d550", *SMOKE, "--build", "nightly,nightly-current")
    builds = [c for c in calls(fleet_env) if c[0] == "build"]
    assert [flag(c, "--build-arg") for c in builds] == ["BUILD_NAME=stable", "BUILD_NAME=nightly"]
    # a pair's two containers start together, in either order
    assert sorted(flag(r, "--build") for r in runs(fleet_env)) == ["nightly", "stable"]
    release, line = done.skipped  # nothing resolved or built for the CUDA 13.0 builds
    assert release.startswith("release: build release (torch 2.14.1, CUDA 13.0) needs an NVIDIA")
    assert line.startswith("nightly-current: build nightly-current (torch 2.15.0, CUDA 13.0) needs an NVIDIA")
    assert "driver >= 580" in line and "driver 550.54.15, compute capability 8.0" in line
    got = rows(fleet_env, "d550")
    assert {(r["build"], r["status"]) for r in got} == {
        ("nightly-current", "skipped"),
        ("release", "skipped"),
    }
    assert len(got) == len(smoke_cells("nightly-current")) + len(smoke_cells("release"))
    assert got[0]["image"] == "" and got[0]["gpu_name"] == "NVIDIA A100-SXM4-40GB"


def test_pypi_torch_on_an_h100_is_refused_with_the_reason(fleet_env) -> None:
    h100 = {"FAKE_SMI_NAME": "NVIDIA H100 80GB HBM3", "FAKE_SMI_CAP": "9.0"}
    with pytest.raises(
        docker.DockerProblem, match=r"--torch-from-pypi: PyPI's torch 2\.0\.1 is a CUDA 11\.7"
    ):
        session(fleet_env, "--run-id", "pypi", *SMOKE, "--torch-from-pypi", prefix="stable", **h100)
    assert not [c for c in calls(fleet_env) if c[0] in ("build", "run")]
    got = rows(fleet_env, "pypi")  # the rows say so, though nothing could run
    assert {r["status"] for r in got} == {"skipped"} and len(got) == len(smoke_cells("stable"))
    assert "compute capability 9.0" in got[0]["error"] and got[0]["device"] == "nvidia-h100-80gb-hbm3"
    # bench-nightly's guide pair: the stable build is refused, the nightly one (PyPI's cu121 2.1.0) runs
    done = session(fleet_env, "--run-id", "pypi2", *SMOKE, "--build", "nightly", "--torch-from-pypi", **h100)
    assert [flag(r, "--build") for r in runs(fleet_env)] == ["nightly"] and len(done.skipped) == 1


def test_a_driver_too_old_for_every_build_is_one_line_with_rows(fleet_env) -> None:
    with pytest.raises(docker.DockerProblem, match=r"needs an NVIDIA driver >= 450\.80\.02 .*driver 418\.87"):
        session(fleet_env, "--run-id", "d418", *SMOKE, "--build", "nightly", FAKE_SMI_DRIVER="418.87.01")
    assert {r["build"] for r in rows(fleet_env, "d418")} == {"stable", "nightly"}


def test_a_failed_probe_skips_its_build_with_torchs_own_reason(fleet_env) -> None:
    with pytest.raises(docker.DockerProblem, match="sees no GPU"):
        session(fleet_env, "--run-id", "p1", *SMOKE, FAKE_DOCKER_GPU="no-gpu", prefix="stable")
    got = rows(fleet_env, "p1")
    assert {r["status"] for r in got} == {"skipped"} and "probe: torch 2.0.1+cu118 sees no GPU" in got[0][
        "error"
    ]


def test_an_old_driver_without_compute_cap_leaves_the_capability_empty(fleet_env) -> None:
    session(fleet_env, "--run-id", "old", *SMOKE, prefix="stable", FAKE_SMI_OLD="1")
    (run,) = runs(fleet_env)
    state = json.loads(next(a for a in run if a.startswith("SUITE_GPU_STATE=")).split("=", 1)[1])
    assert state["capability"] == "" and state["driver"] == "550.54.15" and state["mig"] == ""


@pytest.mark.parametrize(
    ("build", "driver", "capability", "runs_"),
    [
        ("stable", "535.104.05", "9.0", "all"),
        ("stable", "470.57.02", "8.6", "eager"),
        ("stable", "450.80.02", "7.0", "eager"),
        ("stable", "450.66", "8.0", "none"),
        ("stable", "535.104.05", "10.0", "none"),  # no sm_100 kernels in a cu118 wheel
        ("nightly", "525.60.13", "8.9", "all"),
        ("nightly-current", "575.57.08", "9.0", "none"),
        ("nightly-current", "580.65.06", "7.0", "none"),  # CUDA 13 targets 7.5+
        ("nightly-current", "580.65.06", "12.0", "all"),  # Blackwell: sm_120 in today's CUDA 13.0 wheels
        ("nightly-current", "580.65.06", "10.0", "all"),  # B200: sm_100
        ("release", "580.65.06", "8.0", "all"),  # A100
        ("release", "580.65.06", "9.0", "all"),  # H100
        ("release", "580.65.06", "10.0", "all"),
        ("release", "580.65.06", "12.0", "all"),
        ("release", "580.65.06", "7.0", "none"),  # V100: CUDA 13 dropped Volta
        ("release", "570.86.10", "12.0", "none"),  # a CUDA 12.8 driver: too old for CUDA 13.0
        ("current", "550.54.15", "9.0", "all"),  # no CUDA: the probe decides
    ],
)
def test_the_floors_table(build: str, driver: str, capability: str, runs_: str) -> None:
    gpu = gpus.GpuState("0", "GPU-x", "GPU", driver, capability)
    verdict = floors.check(MATRIX.builds[build], gpu)
    assert verdict.runs == runs_, verdict.reason
    if runs_ != "all":
        assert driver in verdict.reason and capability in verdict.reason


def test_probe_reports_torchs_own_error_and_the_kernels_it_lacks() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("probe", ROOT / "containers" / "probe.py")
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    too_old = "The NVIDIA driver on your system is too old (found version 11040)."
    fake_torch = SimpleNamespace(
        cuda=SimpleNamespace(init=lambda: (_ for _ in ()).throw(RuntimeError(too_old)))
    )
    assert probe.cuda_error(fake_torch) == too_old
    pypi = ["sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"]
    assert probe.covers(pypi, (8, 9)) and not probe.covers(pypi, (9, 0))
    assert probe.covers(["sm_75", "compute_90"], (10, 0)) and not probe.covers(["sm_90"], (10, 0))


# --- the machine's state ----------------------------------------------------------------------


def test_nvidia_smi_state_is_parsed_and_missing_values_stay_empty() -> None:
    text = (
        "3, GPU-abc, NVIDIA H100 80GB HBM3, 550.54.15, 9.0, Enabled, 700.00, Enabled, [N/A], 1980, 0:1B:0\n"
    )
    (gpu,) = gpus.parse(text)
    assert (gpu.index, gpu.capability, gpu.power_limit_w, gpu.mig, gpu.app_clock_mhz) == (
        "3",
        "9.0",
        "700.00",
        "",
        "1980",
    )
    cols = machine.columns(gpu, {"SUITE_GPU_CLOCKS_LOCKED": "1410,1410", "SUITE_IMAGE_ID": "sha256:1"})
    assert cols["gpu_clocks_locked"] == "1410,1410" and cols["image_id"] == "sha256:1"
    assert machine.columns(gpu, {"SUITE_GPU_CLOCKS_LOCKED": "no"})["gpu_clocks_locked"] == "no"
    assert machine.columns(gpu, {"SUITE_GPU_CLOCKS_LOCKED": "garbage"})["gpu_clocks_locked"] == ""
    assert machine.columns(None, {"SUITE_GPU_CLOCKS_LOCKED": "no"})["gpu_clocks_locked"] == ""  # CPU row
    assert gpus.GpuState.from_json(gpu.to_json()) == gpu
    assert gpus.GpuState.from_json('{"nonsense": 1}') is None
    handed = machine.for_this_process({"SUITE_GPU_STATE": gpu.to_json()})
    assert handed == gpu


def test_numa_affinity_reads_topo_m_with_its_escapes() -> None:
    text = (
        "\t\x1b[4mGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m\n"
        "GPU0\t X \tNV18\tPXB\t0-55,112-167\t0\t\tN/A\n"
        "GPU1\tNV18\t X \tSYS\tN/A\tN/A\t\tN/A\n"
        "NIC0\tPXB\tSYS\t X \t\t\t\n\nLegend:\n"
    )
    assert fleet.numa_affinity(text) == {"0": ("0-55,112-167", "0"), "1": ("", "")}
    assert fleet.numa_affinity("garbage") == {}


def test_mark_args_carry_the_slot() -> None:
    slot = fleet.Slot(gpus.GpuState("2", "GPU-2", "A100"), gpus_arg="2", shard="1/3,3/4")
    mark = pergpu.Mark("error", "died", slot, only="eager", image_tag="t", image_id="sha256:9")
    args = pergpu.mark_args(MATRIX.builds["stable"], "r", "/out", "cuda", ["--shard", "1/3", "--x"], mark)
    assert flag(args, "--shard") == "1/3,3/4" and args.count("--shard") == 1
    assert flag(args, "--only") == "eager" and flag(args, "--image-id") == "sha256:9"
    assert json.loads(flag(args, "--gpu-state"))["uuid"] == "GPU-2"


def test_a_shard_of_a_shard() -> None:
    from suite.results import raw_csv_name

    shard = Shard.parse("2/3,1/4")
    assert (shard.index, shard.count, shard.within) == (1, 4, Shard(2, 3)) and shard.label == "2/3,1/4"
    assert raw_csv_name("stable", "cpu", shard.label) == "stable__cpu__shard-2-of-3-1-of-4.csv"
    for bad, why in [
        ("1/2,1/2,1/2", "at most 2 levels"),
        ("2/3,5/4", "between 1 and 4"),
        ("2/3,", "is not i/n"),
    ]:
        with pytest.raises(UsageError, match=why):
            Shard.parse(bad)
