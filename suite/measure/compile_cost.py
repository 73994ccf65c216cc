"""What compiling costs, measured inside a worker: time to first result, which compile caches a
process hit, and the first compile of the warm and mega-cache processes.

For a compiled cell with the `compile_cost` setting the runner (suite.run.cell_path) starts
three processes, one after the other, each with the cell's own files:
- `measure`: the cell as always (cold caches: `compile_s`); it also saves torch.compiler's cache
  artifacts (the "mega-cache") to the file MEGACACHE_ENV names, where the build can;
- `warm`: pointed at the cache folders the first one left (inductor's FX graph cache,
  AOTAutograd's cache, the C++/triton kernels): `compile_warm_s`;
- `megacache`: fresh, empty cache folders, loads the saved artifacts first (what a user ships in
  an image or between CI runners): `compile_megacache_s` = the load + the compile.
The last two make only what their figure needs: the model, an eager warm-up call, one eager call
and the first compiled call (compile time = first compiled call - eager call, as `compile_s`).
Counters say which caches each process hit (`compile_note`), so a "warm" figure is known warm.
Standard library at import; torch inside the functions.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from suite.measure import cell as parts
from suite.measure import phases
from suite.measure.phases import Ledger
from suite.measure.timing import TimingLoop, synchronizer
from suite.spec.model import Cell

SPAWN_ENV = "SUITE_SPAWN_TIME"  # the runner's time.time() just before it started the worker
MEGACACHE_ENV = "SUITE_MEGACACHE"  # the file the measure process saves artifacts to, megacache loads
MEASURE, WARM, MEGACACHE = "measure", "warm", "megacache"
PHASES: tuple[str, ...] = (MEASURE, WARM, MEGACACHE)
COLUMN_OF_PHASE = {WARM: "compile_warm_s", MEGACACHE: "compile_megacache_s"}
LABEL_OF_PHASE = {MEASURE: "cold", WARM: "warm", MEGACACHE: "mega-cache"}  # how notes name them
_IMPORTED_AT = time.time()  # the start when no spawn time was handed down (a worker run by hand)

# (name in notes, dynamo counter group, counter prefix): the caches that make a compile warm
CACHES: tuple[tuple[str, str, str], ...] = (
    ("FX graph", "inductor", "fxgraph_cache"),
    ("AOTAutograd", "aot_autograd", "autograd_cache"),
)


def seconds_since_spawn() -> float:
    """Seconds since the runner started this process (interpreter start and imports included);
    since this module's import when no spawn time was handed down."""
    try:
        start = float(os.environ.get(SPAWN_ENV, ""))
    except ValueError:
        start = _IMPORTED_AT
    return max(0.0, time.time() - start)


class FirstCall:
    """Times the first call of a scenario's eager function, then gets out of the way: installed
    in place of `scenario.eager`, it puts the original back after that call, so the timed calls
    never go through it. `ms` is None until the first call."""

    def __init__(self, owner: Any, device: str) -> None:
        self.owner, self.fn, self.sync = owner, owner.eager, synchronizer(device)
        self.ms: float | None = None
        owner.eager = self

    def __call__(self) -> Any:
        if self.ms is not None:
            return self.fn()
        self.sync()
        start = time.perf_counter_ns()
        out = self.fn()
        self.sync()
        self.ms = (time.perf_counter_ns() - start) / 1e6
        self.owner.eager = self.fn
        return out


def first_results(ready_s: float, first_eager_ms: float | None, compile_s: float | None) -> dict[str, Any]:
    """`eager_first_result_s`: process start to model and batch ready, plus the first eager call;
    `first_result_s`: that plus the compile (a fresh process that compiles first pays the same
    start, the first call's one-time initialisation and the compile)."""
    if first_eager_ms is None:
        return {}
    eager = ready_s + first_eager_ms / 1000.0
    out: dict[str, Any] = {"eager_first_result_s": eager}
    if compile_s is not None:
        out["first_result_s"] = eager + compile_s
    return out


def cache_counts() -> dict[str, dict[str, int]]:
    """Hits, misses and bypasses of each compile cache in this process so far (dynamo's counters)."""
    from torch._dynamo.utils import counters

    return {
        name: {k: int(counters[group].get(f"{prefix}_{k}", 0)) for k in ("hit", "miss", "bypass")}
        for name, group, prefix in CACHES
    }


def describe_caches(counts: dict[str, dict[str, int]]) -> str:
    """`FX graph 2/2 hit, AOTAutograd 2/2 hit` (+ `(1 miss)`, `(1 bypass)`), or why there is no
    such cache. The tables mark a warm figure whose note shows a miss or a bypass."""
    import torch
    import torch._inductor.config as inductor_config

    if not hasattr(inductor_config, "fx_graph_cache"):
        return f"kernels only (torch {torch.__version__} has no FX graph or AOTAutograd cache)"
    out: list[str] = []
    for name, _, _ in CACHES:
        c = counts.get(name, {})
        seen = c.get("hit", 0) + c.get("miss", 0) + c.get("bypass", 0)
        if not seen:
            out.append(f"{name} not used{_off_hint(name)}")
            continue
        extra = [f"{c[k]} {k}" for k in ("miss", "bypass") if c.get(k)]
        out.append(f"{name} {c.get('hit', 0)}/{seen} hit" + (f" ({', '.join(extra)})" if extra else ""))
    return ", ".join(out)


def _off_hint(name: str) -> str:
    """Where a cache is switched off by this build's configuration, say so and how to turn it on."""
    import torch._functorch.config as functorch_config
    import torch._inductor.config as inductor_config

    if name == "FX graph" and not getattr(inductor_config, "fx_graph_cache", True):
        return " (off: TORCHINDUCTOR_FX_GRAPH_CACHE=1)"
    if name == "AOTAutograd" and not getattr(functorch_config, "enable_autograd_cache", False):
        return " (off or absent: TORCHINDUCTOR_AUTOGRAD_CACHE=1)"
    return ""


def save_megacache(path: Path) -> str:
    """Save this process's cache artifacts to `path` where the build can; a note saying what happened."""
    import torch

    save = getattr(getattr(torch, "compiler", None), "save_cache_artifacts", None)
    if save is None:
        return f"mega-cache: torch {torch.__version__} has no torch.compiler.save_cache_artifacts"
    saved = save()
    if saved is None:
        return "mega-cache: torch saved no artifacts"
    data, info = saved
    path.write_bytes(data)
    count = sum(len(v) for v in getattr(info, "artifacts", {}).values())
    return f"mega-cache saved ({count} artifacts, {len(data) / 1024:.0f} KiB)"


def _load_megacache(path: Path) -> tuple[float, str]:
    """(seconds torch.compiler.load_cache_artifacts took, what it loaded)."""
    import torch

    data = path.read_bytes()
    start = time.perf_counter()
    info = torch.compiler.load_cache_artifacts(data)
    seconds = time.perf_counter() - start
    count = sum(len(v) for v in getattr(info, "artifacts", {}).values()) if info is not None else 0
    return seconds, f"loaded {count} artifacts ({len(data) / 1024:.0f} KiB) in {seconds:.2f} s"


def first_compile(cell: Cell, device: str, kind: Any, phase: str) -> dict[str, Any]:
    """The warm or mega-cache process: its compile seconds (first compiled call - an eager call,
    plus loading the artifacts for the mega-cache) and a note on the caches it hit."""
    load_s, loaded = 0.0, ""
    if phase == MEGACACHE:  # first thing, as a user's process would at start-up
        load_s, loaded = _load_megacache(Path(os.environ[MEGACACHE_ENV]))
    model, batch, _ = parts.prepare(cell, device)
    scenario = kind(cell, model, batch)
    loop = TimingLoop(synchronizer(device), 0)
    with scenario.grad_mode():
        scenario.warm_up_eager(loop)
        eager_ms, _ = loop.call(scenario.eager)
        compiled = scenario.compile()
        ledger = Ledger.start()  # where this compile went (suite.measure.phases), for the note
        first_ms = scenario.first_compiled_call(loop, compiled)
        ledger.first_call_done()
    seconds = load_s + max(0.0, first_ms - eager_ms) / 1000.0
    caches = describe_caches(cache_counts())
    note = f"{LABEL_OF_PHASE[phase]}: " + (f"{loaded}, {caches}" if loaded else caches)
    where = phases.summary(ledger.first)  # its largest phases, for the cell's phase_note
    where = f"{LABEL_OF_PHASE[phase]} compile, largest phases: {where}" if where else ""
    print(f"compile cost, {phase} process: {seconds:.3f} s ({note}; {where})", flush=True)
    return {COLUMN_OF_PHASE[phase]: seconds, "compile_note": note, "phase_note": where}


def after_measure(path: str) -> str:
    """The measure process's note once the cell is measured: which caches it hit (none, if cold),
    and the mega-cache saved to `path` (the runner's file; "" when not asked)."""
    notes = [f"cold: {describe_caches(cache_counts())}"]
    if path:
        try:
            notes.append(save_megacache(Path(path)))
        except Exception as exc:  # the cell is measured; only the mega-cache figure is lost
            notes.append(f"mega-cache: not saved ({type(exc).__name__}: {exc})")
    note = "; ".join(notes)
    print(f"compile cost, measure process: {note}", flush=True)
    return note
