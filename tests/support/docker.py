"""A fake `docker` (and nvidia-smi) on PATH that records its arguments, and the helpers that
run the real nox sessions against it (tests/sessions/test_images.py, test_sessions_containers.py,
test_needs.py); noxfile.py loaded as a module. No Docker, no GPU and no network are needed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import ModuleType, SimpleNamespace

from suite.sessions import docker as containers

ROOT = Path(__file__).resolve().parents[2]
# Planted secrets: their values must never reach a docker argument list or our output.
PLANTED = {
    "HF_TOKEN": "hf_PLANTEDtokenVALUE0123456789abcdef",
    "HUGGING_FACE_HUB_TOKEN": "hf_PLANTEDlegacyTOKEN0123456789",
    "GH_TOKEN": "ghp_PLANTEDgithubTOKEN0123456789",
    "MY_SERVICE_KEY": "PLANTED-service-key-0123456789",
    "AWS_SECRET": "PLANTED/aws/secret/0123456789",
}

FAKE_DOCKER = r'''#!{python}
"""A stand-in docker: records its argv as one JSON line, answers like the real one."""
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_DOCKER_LOG"], "a") as fh:
    fh.write(json.dumps(args) + "\n")
images_file = os.environ["FAKE_DOCKER_IMAGES"]
images = set(open(images_file).read().split()) if os.path.exists(images_file) else set()
if args[:1] == ["version"]:
    if os.environ.get("FAKE_DOCKER_ENGINE") == "down":
        print("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. "
              "Is the docker daemon running?", file=sys.stderr)
        sys.exit(1)
    print(os.environ.get("FAKE_DOCKER_CLIENT", "28.2.2") if "Client" in args[-1] else "28.2.2")
elif args[:2] == ["buildx", "version"]:
    if os.environ.get("FAKE_DOCKER_BUILDX") == "none":
        print("docker: unknown command: docker buildx", file=sys.stderr)
        sys.exit(1)
    print("github.com/docker/buildx v0.29.1")
elif args[:1] == ["info"]:
    print(os.environ.get("FAKE_DOCKER_RUNTIMES", '{{"nvidia":{{}},"runc":{{}}}}'))
elif args[:2] == ["image", "inspect"]:
    if args[-1] not in images:
        sys.exit(1)
    import hashlib
    print("sha256:" + hashlib.sha256(args[-1].encode()).hexdigest())
elif args[:2] == ["container", "ls"]:
    print(os.environ.get("FAKE_DOCKER_CONTAINERS", ""))
elif args[:1] == ["pull"]:
    print('Error response from daemon: Get "https://registry-1.docker.io/v2/": no such host',
          file=sys.stderr)
    sys.exit(1)
elif args[:1] == ["build"]:
    with open(os.environ["FAKE_DOCKER_LOG"] + ".buildkit", "a") as fh:
        fh.write(os.environ.get("DOCKER_BUILDKIT", "(unset)") + "\n")
    tag = args[args.index("--tag") + 1]
    with open(images_file, "a") as fh:
        fh.write(tag + "\n")
elif args[:1] == ["run"]:
    probe = args[-2].endswith("/probe.py")
    mode = os.environ.get("FAKE_DOCKER_GPU", "ok")
    for i, a in enumerate(args[:-1]):  # what a read-only token mount hands the container
        if a == "--mount" and "target=/run/secrets/hf_token" in args[i + 1]:
            source = args[i + 1].split("source=", 1)[1].split(",", 1)[0]
            st = os.stat(source)
            with open(os.environ["FAKE_DOCKER_LOG"] + ".token", "a") as fh:
                fh.write(json.dumps([open(source).read(), oct(st.st_mode & 0o777)]) + "\n")
    failing = os.environ.get("FAKE_DOCKER_FAIL_GPU", "")
    if not probe and failing and f"device={{failing}}" in args:
        print("Killed", file=sys.stderr)
        sys.exit(137)
    if mode == "no-driver":
        print('docker: Error response from daemon: could not select device driver "" with '
              "capabilities: [[gpu]].", file=sys.stderr)
        sys.exit(125)
    if mode == "no-gpu" and probe:
        print("probe: torch 2.0.1+cu118 sees no GPU (torch.cuda.is_available() is False)", file=sys.stderr)
        sys.exit(1)
    if probe:
        print(f"probe: torch 2.0.1+cu118 compiled and ran a function on {{args[-1]}}")
    elif os.environ.get("FAKE_DOCKER_PAIR") and "--pair" in args:  # a paired runner: its side, faked
        import subprocess
        env = dict(os.environ, PYTHONPATH=os.environ["FAKE_DOCKER_PYTHONPATH"])
        sys.exit(subprocess.run([sys.executable, "-m", "support.fake_container", *args], env=env).returncode)
else:
    print("fake docker: unexpected " + " ".join(args), file=sys.stderr)
    sys.exit(99)
'''
FAKE_SMI = r'''#!{python}
"""A stand-in nvidia-smi: FAKE_SMI_GPUS GPUs (default 1) of FAKE_SMI_NAME on a driver
FAKE_SMI_DRIVER with compute capability FAKE_SMI_CAP, half of them on each of two NUMA nodes,
those FAKE_SMI_MIG lists in MIG mode and those FAKE_SMI_BUSY lists running another process;
records its argv as one JSON line in FAKE_DOCKER_LOG.smi."""
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_DOCKER_LOG"] + ".smi", "a") as fh:
    fh.write(json.dumps(args) + "\n")
count = int(os.environ.get("FAKE_SMI_GPUS", "1"))
name = os.environ.get("FAKE_SMI_NAME", "NVIDIA A100-SXM4-40GB")
driver = os.environ.get("FAKE_SMI_DRIVER", "550.54.15")
cap = os.environ.get("FAKE_SMI_CAP", "8.0")
uuid = "GPU-0000000{{}}-0000-0000-0000-000000000000"
mig = os.environ.get("FAKE_SMI_MIG", "").split(",")  # GPU indices in MIG mode
busy = os.environ.get("FAKE_SMI_BUSY", "").split(",")  # GPU indices another process uses
if args == ["-L"]:
    for i in range(count):
        print(f"GPU {{i}}: {{name}} (UUID: {{uuid.format(i)}})")
elif args[:1] and args[0].startswith("--query-gpu="):
    fields = args[0].split("=", 1)[1].split(",")
    if "compute_cap" in fields and os.environ.get("FAKE_SMI_OLD"):
        print('Field "compute_cap" is not a valid field to query.', file=sys.stderr)
        sys.exit(2)
    for i in range(count):
        values = {{"index": str(i), "uuid": uuid.format(i), "name": name, "driver_version": driver,
                  "compute_cap": cap, "persistence_mode": "Enabled", "power.limit": "400.00",
                  "ecc.mode.current": "Enabled",
                  "mig.mode.current": "Enabled" if str(i) in mig else "[N/A]",
                  "clocks.applications.graphics": "1410", "pci.bus_id": f"00000000:{{i:02X}}:00.0"}}
        print(", ".join(values[f] for f in fields))
elif args[:1] and args[0].startswith("--query-compute-apps="):
    for i in range(count):
        if str(i) in busy:
            print(f"{{uuid.format(i)}}, {{4242 + i}}, python3")
elif args == ["topo", "-m"]:
    half = max(count // 2, 1)
    print("\t" + "\x1b[4m" + "\t".join(f"GPU{{i}}" for i in range(count))
          + "\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\x1b[0m")
    for i in range(count):
        links = "\t".join("X" if j == i else "NV12" for j in range(count))
        node = 0 if i < half else 1
        cpus = "0-55,112-167" if node == 0 else "56-111,168-223"
        if os.environ.get("FAKE_SMI_TOPO") == "none":
            cpus, node = "N/A", "N/A"
        print(f"GPU{{i}}\t{{links}}\t{{cpus}}\t{{node}}\t\tN/A")
    print("\nLegend:\n\n  X    = Self")
else:
    print("fake nvidia-smi: unexpected " + " ".join(args), file=sys.stderr)
    sys.exit(99)
'''


def make_fake(tmp_path: Path) -> SimpleNamespace:
    """A PATH with the fake docker and nvidia-smi, a results folder and an HF cache."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text(FAKE_DOCKER.format(python=sys.executable))
    (bin_dir / "nvidia-smi").write_text(FAKE_SMI.format(python=sys.executable))
    for exe in bin_dir.iterdir():
        exe.chmod(0o755)
    git = shutil.which("git")  # the images' provenance label names the checkout's commit
    if git:
        (bin_dir / "git").symlink_to(git)
    machine = ("RUNNER_NAME", "SUITE_GPU", "SUITE_GPUS", "GITHUB_SERVER_URL", "GITHUB_REPOSITORY", "PIP_CERT")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("FAKE_DOCKER", "FAKE_SMI", "NOX", "SUITE_GPU_")) and k not in machine
    }
    env.update(PLANTED)
    env.update(
        PIP_CONFIG_FILE=os.devnull,  # no CA bundle from this machine's pip (a test sets PIP_CERT)
        # only the fakes (and this venv): a real docker or nvidia-smi elsewhere must not answer
        PATH=os.pathsep.join([str(bin_dir), str(Path(sys.executable).parent)]),
        HF_HOME=str(tmp_path / "hf"),
        FAKE_DOCKER_LOG=str(tmp_path / "docker.log"),
        FAKE_DOCKER_IMAGES=str(tmp_path / "images.txt"),
    )
    return SimpleNamespace(tmp=tmp_path, bin=bin_dir, env=env, out=tmp_path / "results")


def nox(fake: SimpleNamespace, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run a real nox session of this repository with the fake tools on PATH."""
    cmd = [sys.executable, "-m", "nox", "-f", str(ROOT / "noxfile.py"), *args]
    return subprocess.run(
        cmd, env={**fake.env, **env}, capture_output=True, text=True, timeout=300, check=False
    )


def calls(fake: SimpleNamespace) -> list[list[str]]:
    log = Path(fake.env["FAKE_DOCKER_LOG"])
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def runs(fake: SimpleNamespace, what: str = "run") -> list[list[str]]:
    """The `docker run` calls that run the suite's `run` (or `probe`: containers/probe.py)."""
    if what == "probe":
        return [c for c in calls(fake) if c[0] == "run" and c[-2] == containers.PROBE_IN_CONTAINER]
    return [c for c in calls(fake) if c[0] == "run" and "suite" in c and what in c[c.index("suite") :]]


def expected_user() -> str:
    return "1000:1000" if os.getuid() == 0 else f"{os.getuid()}:{os.getgid()}"


def assert_no_secrets(*texts: str) -> None:
    for name, value in PLANTED.items():
        for text in texts:
            assert value not in text, f"the value of {name} leaked"


def one_error_line(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr + proc.stdout
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1, proc.stderr
    return errors[0]


def load_noxfile() -> ModuleType:
    """noxfile.py as a module (its sessions, without running nox)."""
    if "suite_noxfile" in sys.modules:  # once: nox warns when a session is registered twice
        return sys.modules["suite_noxfile"]
    spec = importlib.util.spec_from_file_location("suite_noxfile", ROOT / "noxfile.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["suite_noxfile"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
