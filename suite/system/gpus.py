"""The GPU's state as `nvidia-smi --query-gpu` reports it (UUID, driver, compute capability,
persistence mode, power limit, ECC, MIG, application clocks), which processes run on it, whether
a benchmark may time on it, and the environment that hands the host's reading to a container.

One query reads every GPU (the host's sessions do it once and hand each container its GPU's
state as JSON in SUITE_GPU_STATE; a run outside a container queries for itself: the child's
side, suite.measure.machine). A field nvidia-smi cannot give ("[N/A]", "[Not Supported]", a
driver too old to know the field) is empty, never guessed. Standard library only: the host's
sessions, the run side and the containers read it alike.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields

# nvidia-smi's field names, in the order of GpuState's fields (`nvidia-smi --help-query-gpu`).
QUERY_FIELDS = (
    "index",
    "uuid",
    "name",
    "driver_version",
    "compute_cap",
    "persistence_mode",
    "power.limit",
    "ecc.mode.current",
    "mig.mode.current",
    "clocks.applications.graphics",
    "pci.bus_id",
)
# Drivers before R510 do not know this field: the query is repeated without it.
OPTIONAL_FIELDS = ("compute_cap",)
MISSING = ("[n/a]", "n/a", "[not supported]", "not supported", "[unknown error]", "unknown error", "")
STATE_ENV = "SUITE_GPU_STATE"  # the host's reading of the container's GPU (JSON)
CLOCKS_ENV = "SUITE_GPU_CLOCKS_LOCKED"  # "MIN,MAX" MHz as locked before the run, or "no"
IMAGE_ID_ENV = "SUITE_IMAGE_ID"  # the image's ID as Docker reports it (sha256:...)
SMI_TIMEOUT_S = 30


@dataclass(frozen=True)
class GpuState:
    """One GPU as nvidia-smi lists it; every field is text, empty where it gave none."""

    index: str = ""
    uuid: str = ""
    name: str = ""
    driver: str = ""
    capability: str = ""  # "9.0"
    persistence: str = ""  # Enabled | Disabled
    power_limit_w: str = ""
    ecc: str = ""  # Enabled | Disabled
    mig: str = ""  # Enabled | Disabled
    app_clock_mhz: str = ""  # application clock of the graphics domain
    bus_id: str = ""

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @staticmethod
    def from_json(text: str) -> GpuState | None:
        """The state the host handed over, or None if it is not a JSON object of these fields."""
        try:
            value = json.loads(text)
        except (json.JSONDecodeError, TypeError):
            return None
        names = {f.name for f in fields(GpuState)}
        if not isinstance(value, dict) or not set(value) <= names:
            return None
        return GpuState(**{k: str(v) for k, v in value.items()})


def clean(value: str) -> str:
    """nvidia-smi's words for "no value" become empty."""
    value = value.strip()
    return "" if value.lower() in MISSING else value


def parse(text: str, names: Sequence[str] = QUERY_FIELDS) -> list[GpuState]:
    """`--format=csv,noheader,nounits` lines, one per GPU, of the fields `names`."""
    attrs = [f.name for f in fields(GpuState)]
    by_field = dict(zip(QUERY_FIELDS, attrs, strict=True))
    gpus = []
    for line in text.splitlines():
        if not line.strip():
            continue
        values = [clean(v) for v in line.split(",")]
        if len(values) != len(names):
            continue  # not a line of this query (a warning nvidia-smi printed)
        gpus.append(GpuState(**{by_field[n]: v for n, v in zip(names, values, strict=True)}))
    return gpus


def query(smi: str | None = None, timeout: float = SMI_TIMEOUT_S) -> tuple[list[GpuState], str]:
    """Every GPU's state, and why there is none ("" when nvidia-smi answered)."""
    exe = smi or shutil.which("nvidia-smi")
    if not exe:
        return [], "nvidia-smi not found"
    names: Sequence[str] = QUERY_FIELDS
    for _ in range(2):
        cmd = [exe, f"--query-gpu={','.join(names)}", "--format=csv,noheader,nounits"]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
        except (OSError, subprocess.SubprocessError) as exc:
            return [], f"nvidia-smi: {exc}"
        said = (proc.stdout + proc.stderr).strip()
        if proc.returncode == 0:
            return parse(proc.stdout, names), ""
        if "not a valid field" in said and names == QUERY_FIELDS:
            names = tuple(n for n in QUERY_FIELDS if n not in OPTIONAL_FIELDS)
            continue
        first = next((ln.strip() for ln in said.splitlines() if ln.strip()), "(no output)")
        return [], f"nvidia-smi: {first}"
    return [], "nvidia-smi: no answer"


APPS_FIELDS = ("gpu_uuid", "pid", "process_name")


def compute_apps(smi: str | None = None, timeout: float = SMI_TIMEOUT_S) -> dict[str, list[str]]:
    """The processes each GPU runs now (`--query-compute-apps`): GPU UUID -> "pid name" lines;
    {} where nvidia-smi cannot tell (then no GPU is called busy)."""
    exe = smi or shutil.which("nvidia-smi")
    if not exe:
        return {}
    cmd = [exe, f"--query-compute-apps={','.join(APPS_FIELDS)}", "--format=csv,noheader,nounits"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    found: dict[str, list[str]] = {}
    for line in proc.stdout.splitlines() if proc.returncode == 0 else []:
        values = [clean(v) for v in line.split(",")]
        if len(values) == len(APPS_FIELDS) and values[0]:
            found.setdefault(values[0], []).append(f"{values[1]} {values[2]}".strip())
    return found


def refusal(gpu: GpuState, apps: Mapping[str, Sequence[str]], allow_busy: bool, allow_mig: bool) -> str:
    """Why a benchmark must not time on this GPU ("" when it may): another process on it (its
    timings would share the SMs and memory bandwidth), or MIG mode (a slice, not the GPU the
    row names), each unless allowed."""
    name = f"GPU {gpu.index} ({gpu.uuid})"
    if gpu.mig.lower() == "enabled" and not allow_mig:
        return f"{name} is in MIG mode: a slice, not the whole GPU; pass --allow-mig to time it anyway"
    busy = list(apps.get(gpu.uuid, ()))
    if busy and not allow_busy:
        shown = "; ".join(busy[:3]) + (f"; {len(busy) - 3} more" if len(busy) > 3 else "")
        return f"{name} runs other processes ({shown}); pass --allow-busy-gpu to time it anyway"
    return ""


def clocks_locked(environ: Mapping[str, str]) -> str:
    """What the run's clock-lock step said: "MIN,MAX" (MHz) when it locked them, "no" when it
    did not (not asked, or it failed), empty when nothing said either."""
    value = environ.get(CLOCKS_ENV, "").strip()
    return value if value == "no" or all(p.strip().isdigit() for p in value.split(",")) else ""
