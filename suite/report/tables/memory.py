"""Peak memory per model and batch size: what a user sizing a batch needs, inference and
training side by side, one column per scenario and mode.
"""

from __future__ import annotations

from dataclasses import dataclass

from suite.report.study import CellKey, Gpu, Setup, Study
from suite.report.tables.cells import NOT_MEASURED, TRAIN, Mb
from suite.report.tables.table import Column, Table, gpu_stem
from suite.results import slug
from suite.spec.vocab import MODES

MEMORY_NOTE = (
    "Peak memory in MB (2^20 bytes) over the warm-up calls. CUDA: torch.cuda.max_memory_allocated, "
    "tensors only (weights, activations, and for training steps the gradients and AdamW's two state "
    "tensors per parameter; CUDA-graph pools under reduce-overhead). CPU: the worker process's peak "
    "resident set, which also holds the Python, torch and compiler runtime (a few hundred MB), so "
    "compare CPU figures with each other only. params (M): parameters in millions, as built."
)


@dataclass(frozen=True)
class MemoryGroup:
    """Rows that share a GPU, build, dtype, weights and variant; scenarios and modes are columns."""

    gpu: Gpu
    build: str
    dtype: str
    weights: str
    variant: str
    malloc: str = ""  # the workers' allocator (docs/trust.md): named in the setup line

    @property
    def label(self) -> str:
        parts = [self.dtype, f"{self.weights} weights"]
        if self.variant:
            parts.append(f"{self.variant} models" if self.variant == "smoke" else self.variant)
        if self.malloc:
            parts.append(f"malloc {self.malloc}")
        return ", ".join(parts)


def _memory_group(gpu: Gpu, build: str, setup: Setup) -> MemoryGroup:
    return MemoryGroup(gpu, build, setup.dtype, setup.weights, setup.variant, setup.malloc)


def peak_memory(study: Study) -> list[Table]:
    """`Task/Model | Batch Size | params (M) | inference <mode> (MB) ... | train <mode> (MB) ...`
    per GPU, build, dtype, weights and variant."""
    groups = list(dict.fromkeys(_memory_group(k.gpu, k.build, k.setup) for k in study.cells))
    groups.sort(key=lambda g: (study.gpus.index(g.gpu), study.builds.index(g.build)))
    return [
        _memory_table(study, g, several=len(groups) > len({(x.gpu, x.build) for x in groups})) for g in groups
    ]


def _memory_table(study: Study, g: MemoryGroup, several: bool) -> Table:
    keys = [k for k in study.cells if _memory_group(k.gpu, k.build, k.setup) == g]
    setups = list(dict.fromkeys(k.setup for k in keys))
    setups.sort(key=lambda x: (x.scenario == TRAIN, study.setups.index(x)))  # inference first
    modes = sorted(
        study.modes, key=lambda m: (MODES.index(m) if m in MODES else len(MODES), study.modes.index(m))
    )
    columns_of = [(x, m) for x in setups for m in modes if any(k.setup == x and k.mode == m for k in keys)]
    columns = [
        Column("Task/Model", "Task/Model", "text"),
        Column("Batch Size", "Batch Size", "text"),
        Column("params (M)", "params (M)", "text"),
        *(Column(f"{x.scenario} {m} (MB)", f"{x.scenario} {m} peak MB", "mb") for x, m in columns_of),
    ]
    parts = ["peak-memory", gpu_stem(g.gpu), g.build] + ([g.label] if several else [])
    table = Table(
        name="__".join(slug(str(p)) for p in parts),
        section="peak memory",
        title=f"Peak memory · {g.gpu.label} · {study.torch_label(g.build)}",
        subtitle=f"Build kind: {study.kind(g.build)}. Setup: {g.label}.",
        columns=columns,
        notes=[MEMORY_NOTE],
    )
    for task, model in study.models:
        for bs in study.batch_sizes:
            cells = [study.get(CellKey(g.build, g.gpu, x, task, model, bs, m)) for x, m in columns_of]
            if all(c is None for c in cells):
                continue
            params = next((c.params_m for c in cells if c is not None and c.params_m is not None), None)
            shown = "" if params is None else f"{params:.2f}"
            context = {
                "task": task,
                "model": model,
                "GPU": g.gpu.name,
                "device": g.gpu.device,
                "batch size": bs,
                "build": g.build,
                "params (M)": "" if params is None else round(params, 4),
                "dtype": g.dtype,
                "weights": g.weights,
                "variant": g.variant,
                "malloc": g.malloc,
            }
            table.add(
                context, [study.model_label(task, model), str(bs), shown or NOT_MEASURED, *map(Mb, cells)]
            )
    return table
