"""Test-only fault injection: `SUITE_FAULT=<kind>[:<model name>]` makes a worker fail on purpose
(an exception, an OOM, a hang, an abort, a segfault, a leak of secrets), so the tests can show
that every failure still ends in exactly one row (several, comma-separated: `raise:A,hang:B`,
one run fails each model its own way); `SUITE_FAULT=slow:<factor>[:<model name>]`
makes every compiled call take `factor` times as long, so the regression gate can be shown to
catch a real slow-down; `SUITE_FAULT=lowp[:<model name>]` plants a precision bug (a layer's
output forced to two mantissa bits) in a `precision` cell's model, so the tests can show that
the parity rule catches it; `SUITE_FAULT=miscompile[:<model name>]` plants a miscompile: inductor's
testing-only ReLU bug (its generated C++ and Triton code computes relu(x) as x + 1), so the
tests can show that the accuracy rule fails the compiled rows whose graphs hold a ReLU, and only
those. `SUITE_FAULT_CELL=<kind>:<cell label>` (raise, hang, abort, segfault)
fails one cell only (`TinyViT bs=2 eager inference`), so the tests can show that a cell crashing
a process shared with other cells costs that cell alone. Does nothing when the variables are unset.
"""

from __future__ import annotations

import atexit
import os
import signal
import time
from collections.abc import Callable
from typing import Any

SLOW_MEASURED = "planted slow-down measured:"  # the log line a slowed worker ends with
FAULTS = ("raise", "oom", "hang", "abort", "segfault", "leak", "slow", "lowp", "miscompile")


def _fault(model_name: str) -> tuple[str, str]:
    """(kind, argument) of the first fault of SUITE_FAULT (comma-separated: one run can fail
    several models, each its own way) that applies to this model, else ("", "")."""
    for spec in os.environ.get("SUITE_FAULT", "").split(","):
        kind, _, rest = spec.strip().partition(":")
        arg = ""
        if kind == "slow":  # slow:<factor>[:<model>]
            arg, _, rest = rest.partition(":")
        if kind and (not rest or rest.lower() == model_name.lower()):
            return kind, arg
    return "", ""


def inject_fault(model_name: str) -> None:
    """Fail on purpose, when the tests ask for it through SUITE_FAULT."""
    kind, _ = _fault(model_name)
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
    if kind == "miscompile":
        plant_miscompile()
    if kind == "leak":  # a worker that spills secrets: print, raw fd 2, an exception message
        print(f"environment: {dict(os.environ)}", flush=True)
        os.write(2, f"HF_TOKEN on fd 2: {os.environ.get('HF_TOKEN', '')}\n".encode())
        raise RuntimeError(f"401 Unauthorized: token {os.environ.get('HF_TOKEN', '')} rejected")


def plant_miscompile() -> None:
    """Inductor's testing-only ReLU bug, for every compile from now on in this process: relu(x)
    becomes x + 1 in the C++ (CPU) and Triton (GPU) code inductor generates; eager is untouched.
    Where a torch's vectorised C++ relu ignores the switch (torch 2.0's), its C++ kernels are
    made scalar, so that they carry it."""
    import inspect

    from torch._inductor import config

    planted = False
    for section in (config.cpp, config.triton):
        if hasattr(section, "inject_relu_bug_TESTING_ONLY"):
            section.inject_relu_bug_TESTING_ONLY = "accuracy"
            planted = True
    if not planted:
        raise RuntimeError(
            "SUITE_FAULT=miscompile: this torch's inductor has no inject_relu_bug_TESTING_ONLY"
        )
    from torch._inductor.codegen import cpp

    vectorised = getattr(cpp, "CppVecOverrides", None)
    try:
        carries = vectorised is None or "inject_relu_bug" in inspect.getsource(vectorised.relu)
    except (OSError, TypeError, AttributeError):  # no source to read: make it scalar to be sure
        carries = False
    if not carries:
        config.cpp.simdlen = 1  # no vector ISA of one bit: scalar C++ kernels
    print("injected fault: inductor's testing-only relu bug (relu(x) = x + 1 in compiled code)", flush=True)


def slowed(fn: Callable[[], Any], model_name: str, sync: Callable[[], None]) -> Callable[[], Any]:
    """`fn`, or, under SUITE_FAULT=slow:<factor>, `fn` followed by a busy wait that makes each
    call last `factor` times its own (synchronized) duration: a slow-down of known size for the
    regression gate's detection test. A busy wait, not a sleep: sleeping overshoots sub-ms waits."""
    kind, arg = _fault(model_name)
    if kind != "slow":
        return fn
    try:
        factor = float(arg)
    except ValueError:
        raise ValueError(f"SUITE_FAULT=slow:{arg}: the factor must be a number, e.g. slow:1.2") from None
    if not factor >= 1.0:
        raise ValueError(f"SUITE_FAULT=slow:{arg}: the factor must be >= 1")

    took = {"calls": 0, "own": 0.0, "slowed": 0.0}

    def slow() -> Any:
        start = time.perf_counter()
        out = fn()
        sync()
        own = time.perf_counter() - start
        until = start + own * factor
        while time.perf_counter() < until:
            pass
        took["calls"] += 1
        took["own"] += own
        took["slowed"] += time.perf_counter() - start
        return out

    def measured() -> None:  # the size as planted, apart from any figure of the suite
        if took["calls"] and took["own"] > 0:
            print(
                f"{SLOW_MEASURED} {took['slowed'] / took['own']:.4f}x over {took['calls']} calls", flush=True
            )

    atexit.register(measured)
    return slow


def lower_precision(model: Any, model_name: str) -> bool:
    """Under SUITE_FAULT=lowp: the output of the model's first Linear or Conv2d layer rounded to
    two mantissa bits (a layer run in a precision far below the cell's), from then on; whether
    it was planted. A forward hook, so eager and compiled calls both carry it."""
    if _fault(model_name)[0] != "lowp":
        return False
    import torch

    layer = next(m for m in model.modules() if isinstance(m, (torch.nn.Linear, torch.nn.Conv2d)))

    def rounded(_module: Any, _inputs: Any, out: Any) -> Any:
        mantissa, exponent = torch.frexp(out)
        return torch.ldexp(torch.round(mantissa * 4) / 4, exponent.to(out.dtype))

    layer.register_forward_hook(rounded)
    return True


def inject_cell_fault(label: str) -> None:
    """Fail on purpose in the one cell SUITE_FAULT_CELL names (`<kind>:<cell label>`)."""
    kind, _, target = os.environ.get("SUITE_FAULT_CELL", "").partition(":")
    if not kind or target != label:
        return
    if kind not in ("raise", "hang", "abort", "segfault"):
        raise ValueError(f"SUITE_FAULT_CELL={kind}:...: the kind must be raise, hang, abort or segfault")
    if kind == "raise":
        raise RuntimeError(f"injected fault: exception in {label}")
    if kind == "hang":
        while True:
            time.sleep(1)
    if kind == "abort":
        os.abort()
    os.kill(os.getpid(), signal.SIGSEGV)
