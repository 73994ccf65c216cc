"""Test-only fault injection: `SUITE_FAULT=<kind>[:<model name>]` makes a worker fail on purpose
(an exception, an OOM, a hang, an abort, a segfault, a leak of secrets), so the tests can show
that every failure still ends in exactly one row. Does nothing when the variable is unset.
"""

from __future__ import annotations

import os
import signal
import time

FAULTS = ("raise", "oom", "hang", "abort", "segfault", "leak")


def inject_fault(model_name: str) -> None:
    """Fail on purpose, when the tests ask for it through SUITE_FAULT."""
    spec = os.environ.get("SUITE_FAULT", "")
    if not spec:
        return
    kind, _, target = spec.partition(":")
    if target and target.lower() != model_name.lower():
        return
    if kind == "raise":
        raise RuntimeError("injected fault: exception in forward")
    if kind == "oom":
        import torch

        error = getattr(torch.cuda, "OutOfMemoryError", RuntimeError)
        raise error("CUDA out of memory. Tried to allocate 20.00 GiB (injected fault)")
    if kind == "hang":
        while True:
            time.sleep(1)
    if kind == "abort":
        os.abort()
    if kind == "segfault":
        os.kill(os.getpid(), signal.SIGSEGV)
    if kind == "leak":  # a worker that spills secrets: print, raw fd 2, an exception message
        print(f"environment: {dict(os.environ)}", flush=True)
        os.write(2, f"HF_TOKEN on fd 2: {os.environ.get('HF_TOKEN', '')}\n".encode())
        raise RuntimeError(f"401 Unauthorized: token {os.environ.get('HF_TOKEN', '')} rejected")
