"""One container per GPU: which GPUs a container session uses, the part of the selection each
gets, and the CPUs and memory of its NUMA node.

On a machine with several GPUs (nvidia-smi lists them; SUITE_GPUS=0,3 chooses), each GPU gets
its own container, `--gpus device=<i>`, running part k of g of the selection (`--shard k/g`,
or `i/n,k/g` inside a fan-out's shard i/n: the other machines' GPU counts do not matter),
pinned to the memory of the GPU's NUMA node as `nvidia-smi topo -m` reports it and to a share
of its CPUs of its own: the node's CPUs split, contiguous and disjoint, among every GPU the
table lists on that node (`--cpuset-cpus`, `--cpuset-mems`; none where it reports none), so no
container's compile competes with another GPU's timed calls, and runners pinned to one GPU each
(SUITE_GPU) on one host get the same disjoint shares. One GPU on its machine behaves as before:
one container, `--gpus all` (or the runner's SUITE_GPU), the session's own shard, no pinning.
A GPU in MIG mode or running other processes is refused (`refused`), unless allowed.

Host side, standard library only; nvidia-smi is read once, through suite.system.gpus.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from suite.errors import UsageError
from suite.spec.shard import Shard
from suite.system.cpus import cpu_list, cpu_text
from suite.system.gpus import GpuState, refusal

GPUS_ENV = "SUITE_GPUS"  # the GPUs this machine's sessions use: indices or UUIDs, comma-separated
GPU_ENV = "SUITE_GPU"  # a runner pinned to one GPU (one runner per GPU)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_CPUSET = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*")


@dataclass(frozen=True)
class Slot:
    """Where one container of a session runs: its GPU (None on the CPU), what `--gpus` gets
    ("": all, as a single-GPU machine always did), its part of the selection, its CPUs."""

    gpu: GpuState | None
    gpus_arg: str = ""  # device=<this> ("" -> --gpus all)
    shard: str = ""  # --shard for `suite run` ("" -> none)
    cpus: str = ""  # --cpuset-cpus
    mems: str = ""  # --cpuset-mems

    def __post_init__(self) -> None:
        for name, value in (("cpus", self.cpus), ("mems", self.mems)):
            if value and not _CPUSET.fullmatch(value):
                raise ValueError(f"{name}: {value!r} is not a CPU list like 0-55,112-167")
        if self.shard:
            Shard.parse(self.shard)

    @property
    def name(self) -> str:
        """What the session's lines about this container start with: `gpu3`; `cpu2` (the second
        of several CPU containers); `cpu`."""
        if self.gpu is not None and self.gpu.index:
            return f"gpu{self.gpu.index}"
        return f"cpu{self.shard.split(',')[-1].split('/')[0]}" if self.cpus and self.shard else "cpu"


def _wanted(environ: Mapping[str, str]) -> list[str]:
    many = environ.get(GPUS_ENV, "").strip()
    one = environ.get(GPU_ENV, "").strip()
    if many and one:
        raise UsageError(GPUS_ENV, f"set either {GPUS_ENV} (several GPUs) or {GPU_ENV} (one), not both")
    if "," in one:
        raise UsageError(GPU_ENV, f"{one!r}: one GPU, by index or UUID (nvidia-smi -L); several: {GPUS_ENV}")
    text = many or one
    ids = [t.strip() for t in text.split(",")] if text else []
    if any(not t for t in ids):
        raise UsageError(GPUS_ENV if many else GPU_ENV, f"{text!r}: a comma list of GPU indices or UUIDs")
    return ids


def choose(gpus: Sequence[GpuState], environ: Mapping[str, str]) -> list[GpuState]:
    """The GPUs the session uses: those SUITE_GPUS (or SUITE_GPU) names, else every GPU listed;
    all of one model (a study times one GPU type)."""
    ids = _wanted(environ)
    where = GPUS_ENV if environ.get(GPUS_ENV, "").strip() else GPU_ENV
    if not ids:
        chosen = list(gpus)
    else:
        chosen = []
        for wanted in ids:
            found = next((g for g in gpus if wanted in (g.index, g.uuid)), None)
            if found is None:
                listed = ", ".join(g.index for g in gpus) or "none"
                raise UsageError(where, f"{wanted!r}: no such GPU here (nvidia-smi lists {listed})")
            if found in chosen:
                raise UsageError(where, f"{wanted!r}: GPU {found.index} is named twice")
            chosen.append(found)
    models = sorted({g.name for g in chosen})
    if len(models) > 1:
        raise UsageError(
            where or GPUS_ENV,
            f"the GPUs are of {len(models)} models ({', '.join(models)}): a run times one model; "
            f"choose GPUs of one with {GPUS_ENV}",
        )
    return chosen


def numa_affinity(text: str) -> dict[str, tuple[str, str]]:
    """`nvidia-smi topo -m`'s table: GPU index -> (its CPUs, its NUMA node), "" where the
    table says N/A or has no such column."""
    lines = [_ANSI.sub("", ln) for ln in text.splitlines()]
    header = next((ln for ln in lines if "CPU Affinity" in ln), "")
    if not header:
        return {}
    columns = [c.strip() for c in header.split("\t")]
    found: dict[str, tuple[str, str]] = {}
    for line in lines:
        cells = [c.strip() for c in line.split("\t")]
        match = re.fullmatch(r"GPU(\d+)", cells[0]) if cells else None
        if match is None:
            continue

        def value(name: str, cells: list[str] = cells) -> str:
            at = columns.index(name) if name in columns else len(cells)
            text = cells[at] if at < len(cells) else ""
            return text if _CPUSET.fullmatch(text) else ""

        found[match[1]] = (value("CPU Affinity"), value("NUMA Affinity"))
    return found


def topology(smi: str | None = None) -> dict[str, tuple[str, str]]:
    """numa_affinity of this machine ({} where nvidia-smi cannot tell)."""
    exe = smi or shutil.which("nvidia-smi")
    if not exe:
        return {}
    try:
        proc = subprocess.run([exe, "topo", "-m"], capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return {}
    return numa_affinity(proc.stdout) if proc.returncode == 0 else {}


def cpu_shares(affinity: Mapping[str, tuple[str, str]]) -> dict[str, str]:
    """GPU index -> its own share of its NUMA node's CPUs: the node's CPUs split, in order and as
    evenly as they divide, among the GPUs the table lists with that CPU set (by index). Every
    GPU of the machine counts, chosen or not, so shares never overlap between sessions."""
    by_node: dict[str, list[str]] = {}
    for index, (cpus, _) in affinity.items():
        if cpus:
            by_node.setdefault(cpus, []).append(index)
    shares = {}
    for cpus, gpus in by_node.items():
        ordered = sorted(gpus, key=int)
        # each range split on its own (`0-55,112-167`: a core's hyperthread sibling is in the
        # second range), so a share holds whole cores with their siblings
        ranges = [cpu_list(part) for part in cpus.split(",")]
        for k, index in enumerate(ordered):
            share = [
                cpu
                for every in ranges
                for cpu in every[k * len(every) // len(ordered) : (k + 1) * len(every) // len(ordered)]
            ]
            shares[index] = cpu_text(share) if share else cpus  # more GPUs than CPUs: the node's
    return shares


def refused(
    gpus: Sequence[GpuState], apps: Mapping[str, Sequence[str]], allow_busy: bool, allow_mig: bool
) -> tuple[list[GpuState], list[str]]:
    """The GPUs a benchmark may time on, and one line for each it may not (machine.refusal)."""
    kept, said = [], []
    for gpu in gpus:
        why = refusal(gpu, apps, allow_busy, allow_mig)
        if why:
            said.append(why)
        else:
            kept.append(gpu)
    return kept, said


def slots(
    chosen: Sequence[GpuState],
    shard: str,
    environ: Mapping[str, str],
    affinity: Mapping[str, tuple[str, str]] | None = None,
) -> list[Slot]:
    """One slot per chosen GPU, each a part of `shard` (the session's own, or the whole
    selection), pinned to its NUMA node's memory and its own share of the node's CPUs where
    `affinity` says; one GPU: one slot, pinned only where the table lists several GPUs."""
    shares = cpu_shares(affinity or {})
    if len(chosen) <= 1:
        gpu = chosen[0] if chosen else None
        pinned = _wanted(environ)
        cpus = shares.get(gpu.index, "") if gpu is not None and len(affinity or {}) > 1 else ""
        mems = (affinity or {}).get(gpu.index, ("", ""))[1] if cpus and gpu is not None else ""
        return [Slot(gpu, gpus_arg=pinned[0] if pinned else "", shard=shard, cpus=cpus, mems=mems)]
    outer = Shard.parse(shard) if shard else None
    found = []
    for k, gpu in enumerate(chosen, 1):
        part = outer.of(k, len(chosen)) if outer else Shard(k, len(chosen))
        mems = (affinity or {}).get(gpu.index, ("", ""))[1]
        cpus = shares.get(gpu.index, "")
        found.append(Slot(gpu, gpus_arg=gpu.index, shard=part.label, cpus=cpus, mems=mems))
    return found


def cpu_slots(count: int, shard: str, cpus: Sequence[int]) -> list[Slot]:
    """`--device cpu --containers N`: N containers, each a part of `shard` pinned to its own
    share of `cpus` (contiguous, as even as they divide); one: a single container, unpinned."""
    if count < 1 or count > len(cpus):
        raise UsageError("--containers", f"{count}: from 1 to the {len(cpus)} CPU(s) this process may use")
    if count == 1:
        return [Slot(None, shard=shard)]
    outer = Shard.parse(shard) if shard else None
    ordered = sorted(cpus)
    found = []
    for k in range(count):
        share = ordered[k * len(ordered) // count : (k + 1) * len(ordered) // count]
        part = outer.of(k + 1, count) if outer else Shard(k + 1, count)
        found.append(Slot(None, shard=part.label, cpus=",".join(map(str, share))))
    return found
