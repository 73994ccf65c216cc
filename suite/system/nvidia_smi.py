"""Whether this machine shows an NVIDIA GPU, asked of `nvidia-smi` (no torch): the check that
`suite plan --device cuda` warns with and the container sessions (suite.sessions.docker) stop on."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence

from suite.errors import first_line

NO_OUTPUT = "(no output)"


def run_quietly(cmd: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    """Run a short command, its output captured; one that cannot start or hangs is status 127."""
    try:
        return subprocess.run(list(cmd), capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(cmd), 127, "", str(exc))


def no_nvidia_gpu() -> str | None:
    """Why this machine shows no NVIDIA GPU (`nvidia-smi -L`), or None when it shows one."""
    smi = shutil.which("nvidia-smi")
    gpus = run_quietly([smi, "-L"]) if smi else None
    if gpus is None or gpus.returncode != 0 or "GPU" not in gpus.stdout:
        return "nvidia-smi not found" if gpus is None else first_line(gpus.stderr or gpus.stdout, NO_OUTPUT)
    return None
