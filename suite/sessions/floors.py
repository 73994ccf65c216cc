"""What each build needs from the host's driver and GPU, checked before any image is built.

A build's torch wheel carries its CUDA runtime and kernels for a list of GPU architectures;
its triton compiles the compiled cells' kernels with a ptxas of its own. So a build runs on
a host when (1) the driver runs the wheel's CUDA (CUDA's minor-version compatibility: the
oldest driver of that CUDA major), (2) for compiled cells, the driver also loads what that
ptxas produces, and (3) the wheel has kernels for the GPU's compute capability. The figures
and where they come from are in `WHEELS` and docs/containers.md ("Driver and GPU floors").

Host side, standard library only (nox imports it); the facts come from
suite.system.gpus' one nvidia-smi query.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from suite.spec.model import BuildSpec
from suite.system.gpus import GpuState

DOCS = "docs/containers.md#driver-and-gpu-floors"

# The oldest Linux driver that runs a CUDA major's runtime (NVIDIA, CUDA Toolkit Release Notes,
# Table 2 "CUDA Toolkit and Minimum Required Driver Version for CUDA Minor Version
# Compatibility"): 11.x 450.80.02, 12.x 525.60.13, 13.x 580.
MINOR_COMPAT_DRIVER = {"11": "450.80.02", "12": "525.60.13", "13": "580"}
# The driver each toolkit release shipped with (the same notes, Table 3), for the messages.
TOOLKIT_DRIVER = {
    "11.7": "515.43.04",
    "11.8": "520.61.05",
    "12.1": "530.30.02",
    "13.0": "580.65.06",
}
# The CUDA build of PyPI's torch, where `--torch-from-pypi` installs it instead of the wheel by
# URL (2.0.1: measured here, torch.version.cuda of PyPI's wheel; 2.1.0: PyPI's default CUDA).
PYPI_CUDA = {"2.0.1": "11.7", "2.1.0": "12.1"}


@dataclass(frozen=True)
class Wheel:
    """One torch wheel's needs."""

    torch: str  # the version line ("2.0.1", "2.15.0" for a nightly of that line)
    cuda: str  # the CUDA runtime it carries
    ptxas: str = ""  # CUDA release of the ptxas triton compiles with, when it is not the wheel's own
    ptxas_source: str = ""
    archs: tuple[str, ...] = ()  # sm_XY it has kernels for (no PTX); empty: not known before it is built
    archs_source: str = ""
    min_capability: str = ""  # the oldest GPU its CUDA can target at all

    def __post_init__(self) -> None:
        for arch in self.archs:
            if not re.fullmatch(r"sm_\d\d+", arch):
                raise ValueError(f"{arch!r} is not an architecture like sm_90")
        if not re.fullmatch(r"\d+\.\d+", self.cuda):
            raise ValueError(f"{self.cuda!r} is not a CUDA version like 11.8")

    @property
    def driver(self) -> str:
        return MINOR_COMPAT_DRIVER[self.cuda.split(".")[0]]

    @property
    def compiled_driver(self) -> str:
        """The driver compiled cells need: the one of triton's ptxas's CUDA, else the wheel's."""
        return MINOR_COMPAT_DRIVER[(self.ptxas or self.cuda).split(".")[0]]


CU118_ARCHS = ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
# The CUDA lines of today's wheels (torch >= 2.12): Ampere, Hopper and Blackwell (sm_100 data
# centre, sm_120 workstation/consumer) each have kernels; CUDA 13 dropped Volta.
CUDA_LINE_ARCHS = {
    "12.8": ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
    "12.9": ("sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
    "13.0": ("sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"),
}
CUDA_LINE_SOURCE = (
    "pytorch/pytorch .ci/manywheel/build_cuda.sh (TORCH_CUDA_ARCH_LIST per CUDA line), as "
    "pyg-team/pyg-lib's build matrix mirrors it for torch 2.12 and 2.13"
)
CUDA_LINE_SINCE = (2, 12)
BUILDER = "pytorch/builder manywheel/build_cuda.sh (TORCH_CUDA_ARCH_LIST of the 2.0/2.1 wheels)"
ISSUE_119054 = "pytorch/pytorch#119054"
# The builds of matrix.yaml, and what --torch-from-pypi installs for them.
_TABLE = (
    # torch 2.0.1 with triton 2.0.0, whose bundled ptxas is CUDA 12.0 (ptxas --version in its wheel)
    Wheel("2.0.1", "11.8", "12.0", f"triton 2.0.0's bundled ptxas; {ISSUE_119054}", CU118_ARCHS, BUILDER),
    Wheel(
        "2.0.1",
        "11.7",
        "12.0",
        f"triton 2.0.0's bundled ptxas; {ISSUE_119054}",
        ("sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"),
        "torch._C._cuda_getArchFlags() of PyPI's torch 2.0.1, and " + BUILDER,
    ),
    # torch 2.1.0 with triton 2.1.0, whose bundled ptxas is CUDA 12.1 (pytorch/pytorch#106144)
    Wheel("2.1.0", "11.8", "12.1", f"triton 2.1.0's bundled ptxas; {ISSUE_119054}", CU118_ARCHS, BUILDER),
    Wheel("2.1.0", "12.1"),
    # torch >= 2.3 bundles a ptxas of its own CUDA (pytorch/pytorch#119750); CUDA 13 targets
    # Turing (7.5) and newer only. The release build (PyPI's 2.14.1 is a CUDA 13.0 build); a
    # nightly's line is whatever the index holds that night: `wheel_of` gives it its CUDA
    # line's kernels.
    Wheel(
        "2.14.1", "13.0", archs=CUDA_LINE_ARCHS["13.0"], archs_source=CUDA_LINE_SOURCE, min_capability="7.5"
    ),
)
# (torch line, CUDA) -> its needs
WHEELS: dict[tuple[str, str], Wheel] = {(w.torch, w.cuda): w for w in _TABLE}


def wheel_of(build: BuildSpec, torch_from_pypi: bool = False) -> Wheel | None:
    """The wheel the build's image installs (PyPI's with --torch-from-pypi). A build the table
    does not list gets the floors of its CUDA major (and, before torch 2.3, which bundles a
    ptxas of its own CUDA, triton's CUDA 12 ptxas); None without a CUDA version (then only
    the probe, in the built image, checks)."""
    cuda = PYPI_CUDA.get(build.torch, "") if torch_from_pypi else build.cuda
    known = WHEELS.get((build.torch, cuda))
    if known is not None or not re.fullmatch(r"\d+\.\d+", cuda or ""):
        return known
    major = cuda.split(".")[0]
    if major not in MINOR_COMPAT_DRIVER:
        return None
    old_triton = version_tuple(build.torch)[:2] < (2, 3) and major == "11"
    today = version_tuple(build.torch)[:2] >= CUDA_LINE_SINCE and cuda in CUDA_LINE_ARCHS
    return Wheel(
        build.torch,
        cuda,
        ptxas="12.0" if old_triton else "",
        ptxas_source=f"triton's bundled ptxas before torch 2.3; {ISSUE_119054}" if old_triton else "",
        archs=CUDA_LINE_ARCHS[cuda] if today else (),
        archs_source=CUDA_LINE_SOURCE if today else "",
        min_capability="7.5" if major == "13" else "",
    )


def version_tuple(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def _covers(archs: Sequence[str], capability: str) -> bool:
    """A kernel of the GPU's major with a minor at most its own (sm_80 runs on 8.6)."""
    major, _, minor = capability.partition(".")
    for arch in archs:
        digits = arch.removeprefix("sm_")
        if digits[:-1] == major and int(digits[-1]) <= int(minor or 0):
            return True
    return False


@dataclass(frozen=True)
class Verdict:
    """Whether a build runs on a GPU: all its cells, the eager ones only, or none; and why."""

    runs: str  # "all" | "eager" | "none"
    reason: str = ""

    def __post_init__(self) -> None:
        if self.runs not in ("all", "eager", "none"):
            raise ValueError(f"runs: {self.runs!r}")
        if self.runs != "all" and not self.reason:
            raise ValueError("a build that cannot run all its cells needs a reason")


def check(build: BuildSpec, gpu: GpuState, torch_from_pypi: bool = False) -> Verdict:
    """The build's needs against one GPU (its driver and compute capability)."""
    wheel = wheel_of(build, torch_from_pypi)
    where = f"GPU {gpu.index} ({gpu.name}, driver {gpu.driver or 'unknown'}, compute capability " + (
        f"{gpu.capability or 'unknown'})"
    )
    what = f"build {build.name} (torch {build.torch}, CUDA {wheel.cuda if wheel else build.cuda})"
    if torch_from_pypi and gpu.capability.startswith("9.") and build.torch in PYPI_CUDA:
        cuda = PYPI_CUDA[build.torch]
        if wheel is None or (wheel.archs and not _covers(wheel.archs, gpu.capability)):
            return Verdict(
                "none",
                f"--torch-from-pypi: PyPI's torch {build.torch} is a CUDA {cuda} build without sm_90 "
                f"kernels, and {where} needs them: drop --torch-from-pypi (the image's cu118 wheel has them)",
            )
    if wheel is None:
        return Verdict("all")
    driver = version_tuple(gpu.driver)
    if driver and driver < version_tuple(wheel.driver):
        return Verdict(
            "none",
            f"{what} needs an NVIDIA driver >= {wheel.driver} (CUDA {wheel.cuda}; its own toolkit "
            f"driver is {TOOLKIT_DRIVER.get(wheel.cuda, '?')}); {where}: update the driver ({DOCS})",
        )
    if gpu.capability:
        if wheel.min_capability and version_tuple(gpu.capability) < version_tuple(wheel.min_capability):
            return Verdict(
                "none",
                f"{what}: CUDA {wheel.cuda} targets compute capability {wheel.min_capability} and newer; "
                f"{where}: run this build on a newer GPU ({DOCS})",
            )
        if wheel.archs and not _covers(wheel.archs, gpu.capability):
            return Verdict(
                "none",
                f"{what} has kernels for {' '.join(wheel.archs)}, none for {where}: use a build whose "
                f"wheel covers it ({DOCS})",
            )
    if driver and driver < version_tuple(wheel.compiled_driver):
        return Verdict(
            "eager",
            f"compiled cells of {what} need an NVIDIA driver >= {wheel.compiled_driver}: triton compiles "
            f"with a CUDA {wheel.ptxas} ptxas ({wheel.ptxas_source}); {where}: update the driver to a "
            f"CUDA 12 one ({DOCS})",
        )
    return Verdict("all")
