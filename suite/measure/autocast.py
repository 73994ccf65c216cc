"""Autocast cells (docs/precision.md): float32 weights and inputs, each forward under
`torch.autocast(device_type, dtype=...)`, eager or compiled, as a user serving a float32
checkpoint with mixed precision writes it. The weights are not cast: autocast casts the inputs
of the ops on its lower-precision list (matmuls, convolutions, linear layers) for that op and
keeps the rest (softmax, norms, reductions, ...) in float32.

Whether this torch can autocast to a dtype on a device is found by what it does, not by an API
(the APIs differ between the builds): torch 2.0 and 2.1 on a CPU warn ("CPU Autocast only
supports dtype of torch.bfloat16 currently") when `torch.autocast("cpu", dtype=torch.float16)`
is made, then raise on entering it ("Currently, AutocastCPU only support Bfloat16 as the
autocast_cpu_dtype", pytorch/pytorch#100565, #115991); a CUDA device without bfloat16 raises;
later torch autocasts a CPU to float16 too, and for a dtype it does not support warns and runs
float32. `unsupported` enters the context and asks for one small matmul: an exception, or a
result not in the dtype, is the answer, whatever the version. Runs inside the containers: torch
only, the same calls under torch 2.0.1 and current.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from suite.results import one_line


def device_type(device: str) -> str:
    """torch.autocast's device type of a device string ("cuda" for "cuda:0")."""
    return device.split(":", 1)[0]


def unsupported(device: str, dtype: str) -> str:
    """Why this torch cannot autocast to `dtype` on `device`, in one line; "" when it can (a
    matmul under the context comes back in `dtype`)."""
    import torch

    target, this = getattr(torch, dtype), f"torch {torch.__version__}"
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        try:
            with torch.autocast(device_type(device), dtype=target):
                x = torch.ones(2, 2, device=device)
                got = torch.mm(x, x).dtype
        except (RuntimeError, ValueError) as exc:  # torch 2.0's CPU float16; a GPU without bfloat16
            warned = "".join(f" (warned: {one_line(str(w.message), 160)})" for w in said[:1])
            return f"{this} cannot autocast to {dtype} on {device}: {one_line(str(exc), 160)}{warned}"
    if got == target:
        return ""
    why = "; ".join(one_line(str(w.message), 160) for w in said) or f"a matmul under it ran in {got}"
    return f"{this} does not autocast to {dtype} on {device} (it would run float32): {why}"


def under(fn: Callable[..., Any], device: str, dtype: str) -> Callable[..., Any]:
    """`fn` with each call made under torch.autocast(device, dtype): the context is entered per
    call, as a server wraps each request, so its cost (microseconds) is in the timed call."""
    import torch

    target, kind = getattr(torch, dtype), device_type(device)

    def autocast_call(*args: Any, **kwargs: Any) -> Any:
        with torch.autocast(kind, dtype=target):
            return fn(*args, **kwargs)

    return autocast_call
