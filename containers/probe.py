"""Run in a fresh container before any cell: can this image compile on this device?

    python /opt/suite/containers/probe.py cuda|cpu

Asking torch for the GPU is not enough: an image whose compiler toolchain is broken
(triton cannot find libcuda.so, no gcc, a cache it cannot write) sees the GPU and then
fails every compiled cell. This compiles one tiny function with the default inductor
backend (triton kernels on a GPU, C++ on a CPU), runs it and compares it with eager.
Exit 0 and one line of what ran; else exit 1 and one line that says what broke: torch's own
CUDA error where it has one (a driver too old for the wheel's CUDA says so, with the version
it found), and the GPU's compute capability against the wheel's kernels (a wheel without
sm_90 on an H100 fails every kernel with "no kernel image is available").
Standard library and torch only; the syntax runs on Python 3.10 and torch 2.0.1.
"""

from __future__ import annotations

import sys


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def cuda_error(torch: object) -> str:
    """torch's own reason for not seeing a GPU ("The NVIDIA driver on your system is too old
    (found version 11040)..."), or "" where it gives none."""
    try:
        torch.cuda.init()  # type: ignore[attr-defined]
    except Exception as exc:
        return _first_line(exc).split(": ", 1)[-1]
    return ""


def covers(arch_list: list[str], capability: tuple[int, int]) -> bool:
    """Whether a wheel built for `arch_list` (torch.cuda.get_arch_list(): sm_80, compute_90)
    runs on a GPU of `capability`: a kernel of the same major and a minor at most the GPU's,
    or PTX of a lower capability that the driver compiles for it."""
    major, minor = capability
    for arch in arch_list:
        kind, _, digits = arch.partition("_")
        if not digits[:-1].isdigit() or not digits[-1:].isdigit():
            continue
        built = (int(digits[:-1]), int(digits[-1]))
        if kind == "sm" and built[0] == major and built[1] <= minor:
            return True
        if kind == "compute" and built <= capability:
            return True
    return False


def probe(device: str) -> str:
    """One line of what ran; raises RuntimeError with one line of what broke."""
    import torch
    import torch._dynamo  # torch 2.0.1: not imported by `import torch`

    if device == "cuda" and not torch.cuda.is_available():
        why = cuda_error(torch) or "torch.cuda.is_available() is False"
        raise RuntimeError(f"torch {torch.__version__} (CUDA {torch.version.cuda}) sees no GPU: {why}")
    where = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"
    if device == "cuda":
        capability = torch.cuda.get_device_capability(0)
        arch_list = torch.cuda.get_arch_list()
        if arch_list and not covers(arch_list, capability):
            raise RuntimeError(
                f"torch {torch.__version__} has no kernels for {where} (compute capability "
                f"{capability[0]}.{capability[1]}; the wheel is built for {' '.join(arch_list)}): "
                "use a build whose wheel covers it (docs/containers.md, driver and GPU floors)"
            )

    def tiny(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) * 2.0 + x

    x = torch.arange(256, dtype=torch.float32, device=device) / 256
    try:
        got = torch.compile(tiny)(x)
    except Exception as exc:  # the compiler's own error, e.g. triton's "libcuda.so cannot found"
        hint = " (the wheel has no kernels for this GPU)" if "no kernel image" in str(exc) else ""
        raise RuntimeError(f"torch.compile failed on {where}: {_first_line(exc)}{hint}") from None
    if not torch.allclose(got, tiny(x), atol=1e-5):
        raise RuntimeError(f"torch.compile on {where} computed a wrong result")
    return f"torch {torch.__version__} compiled and ran a function on {where}"


def main(argv: list[str]) -> int:
    if len(argv) != 1 or argv[0] not in ("cuda", "cpu"):
        print("usage: probe.py cuda|cpu", file=sys.stderr)
        return 2
    try:
        print(f"probe: {probe(argv[0])}")
    except Exception as exc:
        message = str(exc) if isinstance(exc, RuntimeError) else _first_line(exc)
        print(f"probe: {message}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
