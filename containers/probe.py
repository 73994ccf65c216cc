"""Run in a fresh container before any cell: can this image compile on this device?

    python /opt/suite/containers/probe.py cuda|cpu

Asking torch for the GPU is not enough: an image whose compiler toolchain is broken
(triton cannot find libcuda.so, no gcc, a cache it cannot write) sees the GPU and then
fails every compiled cell. This compiles one tiny function with the default inductor
backend (triton kernels on a GPU, C++ on a CPU), runs it and compares it with eager.
Exit 0 and one line of what ran; else exit 1 and one line that says what broke.
Standard library and torch only; the syntax runs on Python 3.10 and torch 2.0.1.
"""

from __future__ import annotations

import sys


def _first_line(exc: BaseException) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return f"{type(exc).__name__}: {lines[0]}" if lines else type(exc).__name__


def probe(device: str) -> str:
    """One line of what ran; raises RuntimeError with one line of what broke."""
    import torch
    import torch._dynamo  # torch 2.0.1: not imported by `import torch`

    if device == "cuda" and not torch.cuda.is_available():
        raise RuntimeError(f"torch {torch.__version__} sees no GPU (torch.cuda.is_available() is False)")
    where = torch.cuda.get_device_name(0) if device == "cuda" else "cpu"

    def tiny(x: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) * 2.0 + x

    x = torch.arange(256, dtype=torch.float32, device=device) / 256
    try:
        got = torch.compile(tiny)(x)
    except Exception as exc:  # the compiler's own error, e.g. triton's "libcuda.so cannot found"
        raise RuntimeError(f"torch.compile failed on {where}: {_first_line(exc)}") from None
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
