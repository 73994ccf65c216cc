"""Provenance: which torch, CUDA, GPU, driver, Python and image produced a row.

`python -m suite env` prints it; the runner collects it once per run in a child
process (so the parent never imports torch) and stamps it on every row. Only the
named fields below are read: no environment variable is ever copied wholesale, so
tokens and keys cannot leak through here.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from suite import __version__
from suite.measure import machine
from suite.results import slug
from suite.results.sections import provenance

# The CSV's columns an Environment fills: the row's device and GPU name (its key), then the
# provenance section's software and wheels (its machine state's columns come after)
PROVENANCE_COLUMNS: tuple[str, ...] = ("device", "gpu_name", *provenance.ENVIRONMENT)


@dataclass(frozen=True)
class Environment:
    device: str  # "cpu" or a slug of the GPU name ("nvidia-h100-80gb-hbm3")
    device_type: str  # "cpu" | "cuda"
    gpu_name: str  # GPU name, or the CPU model on a CPU run
    gpu_count: int
    torch_version: str
    torch_git: str
    cuda_version: str
    cudnn_version: str
    triton_version: str
    transformers_version: str
    python_version: str
    driver_version: str
    image: str
    suite_version: str
    cpu_name: str
    cpu_count: int
    torch_cuda_build: str = ""  # the CUDA the torch wheel was built for, used or not
    # which wheels ran: the nightly's date (the image's, else torch's own version), the torch
    # wheel by URL and sha256 as the image installed it (empty outside one), torchvision's version
    nightly_date: str = ""
    torch_wheel_url: str = ""
    torch_wheel_sha256: str = ""
    torchvision_version: str = ""
    # the machine's state (suite.measure.machine.columns): the GPU's UUID, persistence mode,
    # power limit, ECC, MIG, clocks, the image's ID; empty where no source gave them
    machine: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.machine:  # an environment recorded before these columns (or left empty)
            object.__setattr__(self, "machine", {})
        elif not isinstance(self.machine, dict) or not all(isinstance(v, str) for v in self.machine.values()):
            raise ValueError(f"machine: {self.machine!r} is not a mapping of column to text")

    def columns(self) -> dict[str, object]:
        """The CSV provenance columns."""
        return {**{k: getattr(self, k) for k in PROVENANCE_COLUMNS}, **self.machine}


# (vendor, family, model) -> server codename, for a CPU whose name the hypervisor masks
# ("Intel(R) Xeon(R) Processor"); Intel's family 6 model 85 depends on the stepping (below)
CODENAMES: dict[tuple[str, int, int], str] = {
    ("GenuineIntel", 6, 63): "Haswell",
    ("GenuineIntel", 6, 79): "Broadwell",
    ("GenuineIntel", 6, 85): "Skylake-SP",
    ("GenuineIntel", 6, 106): "Ice Lake-SP",
    ("GenuineIntel", 6, 108): "Ice Lake-D",
    ("GenuineIntel", 6, 143): "Sapphire Rapids",
    ("GenuineIntel", 6, 207): "Emerald Rapids",
    ("GenuineIntel", 6, 173): "Granite Rapids",
    ("GenuineIntel", 6, 175): "Sierra Forest",
    ("AuthenticAMD", 23, 1): "Naples (Zen)",
    ("AuthenticAMD", 23, 49): "Rome (Zen 2)",
    ("AuthenticAMD", 25, 1): "Milan (Zen 3)",
    ("AuthenticAMD", 25, 17): "Genoa (Zen 4)",
    ("AuthenticAMD", 25, 160): "Bergamo (Zen 4c)",
    ("AuthenticAMD", 26, 2): "Turin (Zen 5)",
    ("AuthenticAMD", 26, 17): "Turin Dense (Zen 5c)",
}
GENERIC = ("QEMU Virtual CPU", "Common KVM processor", "Virtual CPU")


def cpu_name(cpuinfo: str | None = None, plain: bool = False) -> str:
    """The host CPU's model name from /proc/cpuinfo (`cpuinfo`: its text, for a test). Where the
    hypervisor masks it (no model number: "Intel(R) Xeon(R) Processor", "AMD EPYC Processor",
    QEMU's and KVM's generic names), the name is followed by what the CPU says of itself: family,
    model and stepping, the codename they make, and its widest vector instructions. `plain`: the
    name alone (a CPU row's `gpu_name`, part of a cell's key across runs: it stays as it was)."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo") as fh:
                cpuinfo = fh.read(1 << 16)
        except OSError:
            cpuinfo = ""
    first: dict[str, str] = {}
    for line in cpuinfo.splitlines():
        if not line.strip():
            if first:
                break  # the first processor's block is enough
            continue
        key, _, value = line.partition(":")
        first.setdefault(key.strip(), value.strip())
    name = first.get("model name", "")
    if not name:
        return platform.processor() or platform.machine()
    if plain or not masked(name):
        return name
    return f"{name} [{_identity(first)}]"


def masked(name: str) -> bool:
    """Whether a model name hides the model: no token with a digit, or a generic virtual CPU."""
    return any(g in name for g in GENERIC) or not any(ch.isdigit() for ch in name)


def _identity(info: dict[str, str]) -> str:
    vendor = info.get("vendor_id", "")
    try:
        family, model = int(info.get("cpu family", "")), int(info.get("model", ""))
    except ValueError:
        return "family and model not reported"
    stepping = info.get("stepping", "")
    codename = CODENAMES.get((vendor, family, model), "codename unknown")
    if (vendor, family, model) == ("GenuineIntel", 6, 85) and stepping.isdigit():
        step = int(stepping)
        codename = "Cooper Lake" if step >= 10 else "Cascade Lake" if step >= 5 else "Skylake-SP"
    flags = set(info.get("flags", "").split())
    isa = [
        word
        for word, flag in (("AMX", "amx_tile"), ("AVX-512", "avx512f"), ("AVX2", "avx2"))
        if flag in flags
    ][:2]
    isa += [word for word, flag in (("bf16", "avx512_bf16"), ("fp16", "avx512_fp16")) if flag in flags]
    where = f"family {family} model {model}" + (f" stepping {stepping}" if stepping else "")
    return f"{where}: {codename}" + (f"; {', '.join(isa)}" if isa else "")


def matmul_fields() -> dict[str, object]:
    """What float32 matmuls run as in this process (the row's worker): TF32 on tensor cores for
    matmuls and for cuDNN convolutions, and torch's float32 matmul precision (`highest`: no
    TF32). torch 2.9+ deprecates the TF32 flags for `fp32_precision` (it may warn on reading
    them): read quietly; a torch without one leaves its column empty."""
    import warnings

    import torch

    out: dict[str, object] = dict.fromkeys(provenance.FLOAT32_NAMES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            out["tf32_matmul"] = "true" if torch.backends.cuda.matmul.allow_tf32 else "false"
            out["tf32_cudnn"] = "true" if torch.backends.cudnn.allow_tf32 else "false"
        except Exception:
            pass
        getter = getattr(torch, "get_float32_matmul_precision", None)
        if getter is not None:
            out["matmul_precision"] = str(getter())
    return out


def driver_version() -> str:
    """NVIDIA driver version, from the kernel module or nvidia-smi; empty without one."""
    try:
        with open("/proc/driver/nvidia/version") as fh:
            for token in fh.readline().split():
                if token[:1].isdigit() and "." in token:
                    return token
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi:
        try:
            out = (
                subprocess.run(
                    [smi, "--query-gpu=driver_version", "--format=csv,noheader"],
                    capture_output=True,
                    text=True,
                    timeout=20,
                    check=False,
                )
                .stdout.strip()
                .splitlines()
            )
            return out[0].strip() if out else ""
        except (OSError, subprocess.SubprocessError):
            return ""
    return ""


def _version(module: str) -> str:
    try:
        from importlib.metadata import version

        return version(module)
    except Exception:
        return ""


# Set by the images (containers/Dockerfile) from the build arguments of what they installed.
NIGHTLY_DATE_ENV = "SUITE_NIGHTLY_DATE"
WHEEL_URL_ENV = "SUITE_TORCH_WHEEL_URL"
WHEEL_SHA_ENV = "SUITE_TORCH_WHEEL_SHA256"
_DEV_DATE = re.compile(r"\.dev(\d{8})")


def nightly_date(torch_version: str, environ: Mapping[str, str]) -> str:
    """The nightly's date: the image's (the night resolved for the run), else the one in torch's
    own version (2.16.0.dev20261126+cu130); empty for a release."""
    given = environ.get(NIGHTLY_DATE_ENV, "").strip()
    if re.fullmatch(r"\d{8}", given):
        return given
    match = _DEV_DATE.search(torch_version)
    return match.group(1) if match else ""


def image_label() -> str:
    """The container image that ran (set by the Dockerfile / docker run), else 'host'."""
    return os.environ.get("SUITE_IMAGE", "") or "host"


def collect(device: str = "auto") -> Environment:
    """Probe the running Python. `device` is auto|cpu|cuda; auto picks CUDA when present."""
    import torch

    cuda_ok = torch.cuda.is_available()
    if device == "cuda" and not cuda_ok:
        raise RuntimeError(
            "cuda was asked for, but torch sees no CUDA GPU "
            f"(torch {torch.__version__}, built for CUDA {torch.version.cuda}); "
            "run where one is, or use --device cpu"
        )
    use_cuda = device == "cuda" or (device == "auto" and cuda_ok)
    cpu = cpu_name()
    if use_cuda:
        gpu = torch.cuda.get_device_name(0)
        count = torch.cuda.device_count()
    else:
        gpu, count = cpu_name(plain=True), 0
    # CUDA and cuDNN that ran: none on a CPU run (the wheel's CUDA is `torch_cuda_build`), so
    # no reader takes a CPU row for a CUDA one
    cudnn = torch.backends.cudnn.version() if use_cuda and torch.backends.cudnn.is_available() else None
    return Environment(
        device=slug(gpu) if use_cuda else "cpu",
        device_type="cuda" if use_cuda else "cpu",
        gpu_name=gpu,
        gpu_count=count,
        torch_version=torch.__version__,
        torch_git=getattr(torch.version, "git_version", "") or "",
        cuda_version=(torch.version.cuda or "") if use_cuda else "",
        cudnn_version=str(cudnn or ""),
        triton_version=_version("triton") or _version("pytorch-triton"),
        transformers_version=_version("transformers"),
        python_version=platform.python_version(),
        driver_version=driver_version() if use_cuda else "",
        image=image_label(),
        suite_version=__version__,
        cpu_name=cpu,
        cpu_count=os.cpu_count() or 0,
        torch_cuda_build=torch.version.cuda or "",
        nightly_date=nightly_date(torch.__version__, os.environ),
        torch_wheel_url=os.environ.get(WHEEL_URL_ENV, "").strip(),
        torch_wheel_sha256=os.environ.get(WHEEL_SHA_ENV, "").strip(),
        torchvision_version=_version("torchvision"),
        machine=machine.columns(
            machine.for_this_process(torch_uuid=_device_uuid(torch)) if use_cuda else None, os.environ
        ),
    )


def _device_uuid(torch: object) -> str:
    """The UUID of the GPU torch uses (torch 2.1+), to find it among nvidia-smi's; else ""."""
    try:
        return str(getattr(torch.cuda.get_device_properties(0), "uuid", "") or "")  # type: ignore[attr-defined]
    except Exception:
        return ""


def to_json(env: Environment) -> str:
    return json.dumps(asdict(env))


def from_json(text: str) -> Environment:
    return Environment(**json.loads(text))


def render(env: Environment) -> str:
    width = max(len(k) for k in asdict(env))
    lines = [f"{k.ljust(width)}  {v}" for k, v in asdict(env).items()]
    lines.append(f"{'executable'.ljust(width)}  {sys.executable}")
    return "\n".join(lines)
