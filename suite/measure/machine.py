"""The child's side of the machine's state (suite.system.gpus): the GPU this process uses, and
what a row says about the machine beside its timings (UUID, compute capability, persistence
mode, power limit, ECC, MIG, application clocks, whether the clocks were locked, the image's ID).
Standard library only: it runs in the containers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from suite.system.gpus import IMAGE_ID_ENV, STATE_ENV, GpuState, clocks_locked, query


def columns(state: GpuState | None, environ: Mapping[str, str]) -> dict[str, str]:
    """The row's machine-state columns (suite.results.columns' machine-state block)."""
    s = state or GpuState()
    return {
        "gpu_uuid": s.uuid,
        "gpu_compute_capability": s.capability,
        "gpu_persistence_mode": s.persistence,
        "gpu_power_limit_w": s.power_limit_w,
        "gpu_ecc_mode": s.ecc,
        "gpu_mig_mode": s.mig,
        "gpu_app_clock_mhz": s.app_clock_mhz,
        "gpu_clocks_locked": clocks_locked(environ) if state is not None else "",
        "image_id": environ.get(IMAGE_ID_ENV, "").strip(),
    }


def for_this_process(environ: Mapping[str, str] | None = None, torch_uuid: str = "") -> GpuState | None:
    """The state of the GPU this process uses: the host's reading when it handed one over,
    else nvidia-smi's line for it (the only GPU listed, the one CUDA_VISIBLE_DEVICES names,
    or the one whose UUID torch reports); None where it cannot tell which."""
    env = os.environ if environ is None else environ
    handed = GpuState.from_json(env.get(STATE_ENV, ""))
    if handed is not None:
        return handed
    gpus, _ = query()
    if len(gpus) == 1:
        return gpus[0]
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    wanted = visible[0] if visible else ""
    if torch_uuid:
        wanted = torch_uuid if torch_uuid.startswith(("GPU-", "MIG-")) else f"GPU-{torch_uuid}"
    if not wanted:
        return None
    return next((g for g in gpus if wanted in (g.index, g.uuid)), None)
