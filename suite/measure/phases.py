"""Where a cold start's seconds go: torch's own compile-time accounting, read around the first
compiled call, split into phases that add up to what it recorded.

torch keeps, per timed function, a list of the seconds each call took, in a module dict of
torch._dynamo.utils: `compilation_metrics` in torch 2.0.1 (filled by its `@dynamo_timed`
decorator, keyed by the function's qualified name), `compilation_time_metrics` in current
releases (the `dynamo_timed` context manager, keyed by a name given there). A `Ledger` notes
how many entries each list had before the first compiled call and reads the new ones after it
(and after the compiled warm-up, where CUDA graphs are recorded). The timed functions nest
(dynamo's frame compile holds the backend call, which holds AOTAutograd, which holds inductor's
compile of each graph, which holds code generation and the module's load), so each phase is a
difference of nested totals and the phases add up exactly to the outermost ones:

  dynamo      = frame compile - backend call         (tracing the bytecode, guards)
  pre_aot     = backend call - AOTAutograd - a cache hit's load  (inductor's entry: first-use
                                                      imports, pre-grad passes, cache lookups)
  aot         = AOTAutograd (+ a lazy backward's) - inductor's compile of each graph
  lowering    = inductor's compile - compile_to_module - compile-time autotuning
  codegen     = inductor's code generation (scheduler, kernels' and wrapper's source)
  kernels     = compile_to_module - codegen          (compiling the C++ or Triton kernels,
                + a cached graph's load                 loading the module; on a hit in
                                                      AOTAutograd's cache, loading the graph)
  autotune    = compile-time (template benchmarks) + run-time (Triton configs) autotuning
  cudagraphs  = CUDA-graph recording within the first call

`other` = compile_s - their sum: what the first compiled call spent outside torch's accounting
(its first run beyond an eager call's time, untimed glue). The margin it is held to is
MARGIN_FRACTION of compile_s + MARGIN_S (docs/phases-energy.md, measured on both builds). Given
the first compiled call's, an eager call's and a steady compiled call's milliseconds (`Calls`),
the remainder is named: `phase_first_run_s` = the first call less the phases less a steady
compiled call, the first run's one-off work (its kernels loaded onto the device, first-call
set-up, a CUDA-graph tree's warm-up run), and other = phase_first_run_s + (a steady compiled call -
an eager call): the row reconciles exactly, and the note says which part is which.
What a build does not time is left empty, and `phase_note` says why. Standard library at
import; torch inside the functions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from suite.results.sections import phases as section

# The phases, in the order of the table and the stacked bars: (name, column, what it is), as
# the phases section defines them (suite.results.sections.phases)
PHASES: tuple[tuple[str, str, str], ...] = tuple(
    (name, section.column_of(name), what) for name, what in section.STEPS
)
PHASE_COLUMNS: tuple[str, ...] = tuple(column for _, column, _ in PHASES)
OTHER = section.OTHER.name
# every column this module fills: the section's, less the remainder named (FIRST_RUN)
FIRST_RUN = section.FIRST_RUN.name
COLUMNS: tuple[str, ...] = tuple(n for n in section.SECTION.names if n != FIRST_RUN)
# |other| within this share of compile_s plus this many seconds: measured on this project's CPU
# with both builds (docs/phases-energy.md); a row beyond it is reported, not hidden.
MARGIN_FRACTION = 0.05
MARGIN_S = 0.5
NESTING_SLACK_S = 0.005  # a derived phase below -this: the keys did not nest as assumed


def margin_s(compile_s: float) -> float:
    """How far the phases' sum may be from compile_s (the stated margin)."""
    return MARGIN_FRACTION * compile_s + MARGIN_S


# Each role: the keys that may hold it, across builds. `first`: the first key present is the
# role's (later ones nest inside it, or are an older build's name for it); else all are summed.
@dataclass(frozen=True)
class Role:
    keys: tuple[str, ...]
    first: bool = True
    suffixes: tuple[str, ...] = ()  # keys ending so are summed in too (names made per template)

    def seconds(self, new: Mapping[str, Sequence[float]]) -> float:
        total = 0.0
        for key in self.keys:
            if key in new:
                total += sum(new[key])
                if self.first:
                    break
        for key, values in new.items():
            if self.suffixes and key.endswith(self.suffixes):
                total += sum(values)
        return total

    def present(self, new: Mapping[str, Sequence[float]]) -> bool:
        return any(k in new for k in self.keys) or any(
            self.suffixes and k.endswith(self.suffixes) for k in new
        )


FRAME = Role(("_compile.compile_inner", "_compile.<locals>.compile_inner", "_compile"))
# a backward compiled lazily, at the first backward: outside the frame compile (torch 2.0.1,
# whose frame compile is `_compile`, always compiles it so and times only its inductor part)
BACKWARD = Role(("backward._backward_impl",))
STABLE_FRAME = "_compile"
BACKEND = Role(("OutputGraph.call_user_compiler",))
AOT = Role(("create_aot_dispatcher_function",))
# a hit in AOTAutograd's cache: no AOTAutograd, no inductor compile, the cached graph loaded (on a
# CPU that loads or compiles its C++ kernels): inside the backend call, counted with the kernels
CACHE_LOAD = Role(("AOTAutogradCache.inductor_load",))
INDUCTOR_FW = Role(("compile_fx.<locals>.fw_compiler_base", "compile_fx.<locals>.fw_compiler"))
INDUCTOR_BW = Role(("compile_fx.<locals>.bw_compiler",))
TO_MODULE = Role(("GraphLowering.compile_to_module",))
CODEGEN = Role(("GraphLowering.codegen",))
CODEGEN_PARTS = Role(("Scheduler.__init__", "Scheduler.codegen", "WrapperCodeGen.generate"), first=False)
AUTOTUNE_COMPILE = Role((), first=False, suffixes=("_template_autotuning", "_template_precompiling"))
AUTOTUNE_RUNTIME_ONE = Role(
    ("CachingAutotuner.autotune_to_one_config", "CachingAutotuner.benchmark_all_configs")
)
AUTOTUNE_RUNTIME_MORE = Role(
    ("CachingAutotuner.coordinate_descent_tuning", "CachingAutotuner.combo_sequential_autotune"), first=False
)
CUDAGRAPHS = Role(("CUDAGraphNode.record", "cudagraphify.get_container"), first=False)
CUDAGRAPH_RECORD = "CUDAGraphNode.record"  # one entry per graph recorded
# torch.compile's modes that record CUDA graphs (on a CUDA device), as torch 2.0.1's
# apply_mode and current releases' list_mode_options say; the host side's tables go by it
CUDAGRAPH_MODES: tuple[str, ...] = ("reduce-overhead", "max-autotune")


def _accounting() -> dict[str, list[float]] | None:
    """torch's dict of timed functions -> seconds per call (None where the build has none)."""
    from torch._dynamo import utils

    for name in ("compilation_time_metrics", "compilation_metrics"):
        table = getattr(utils, name, None)
        if isinstance(table, dict):
            return table
    return None


def _compile_records() -> list[Any]:
    """torch's per-compile records (CompilationMetrics: guard count, recompile reason), where kept."""
    from torch._dynamo import utils

    get = getattr(utils, "get_compilation_metrics", None)
    return list(get()) if callable(get) else []


def split(new: Mapping[str, Sequence[float]]) -> dict[str, float] | None:
    """The phases' seconds from the entries torch recorded during one first call; None when the
    totals did not nest as the phases assume (a phase would be negative)."""
    frame, backward = FRAME.seconds(new), BACKWARD.seconds(new)
    stable = STABLE_FRAME in new and not any(k in new for k in FRAME.keys if k != STABLE_FRAME)
    if stable:  # torch 2.0.1: its lazy backward's bw_compiler, at the first backward
        backward = INDUCTOR_BW.seconds(new)
    backend, aot = BACKEND.seconds(new), AOT.seconds(new)
    inductor = INDUCTOR_FW.seconds(new) + INDUCTOR_BW.seconds(new)
    to_module, cache_load = TO_MODULE.seconds(new), CACHE_LOAD.seconds(new)
    codegen = CODEGEN.seconds(new) if CODEGEN.present(new) else CODEGEN_PARTS.seconds(new)
    tune_compile = AUTOTUNE_COMPILE.seconds(new)
    tune_run = AUTOTUNE_RUNTIME_ONE.seconds(new) + AUTOTUNE_RUNTIME_MORE.seconds(new)
    out = {
        "dynamo": frame - backend,
        "pre_aot": backend - aot - cache_load,
        "aot": aot + backward - inductor,
        "lowering": inductor - to_module - tune_compile,
        "codegen": codegen,
        "kernels": to_module - codegen + cache_load,
        "autotune": tune_compile + tune_run,
        "cudagraphs": CUDAGRAPHS.seconds(new),
    }
    if any(v < -NESTING_SLACK_S for v in out.values()):
        return None
    return {k: max(0.0, v) for k, v in out.items()}


def torch_version() -> str:
    """torch's version, for the notes (imported only when a note needs it)."""
    import torch

    return str(torch.__version__)


def records_cudagraphs(mode: str) -> bool:
    """Does torch.compile's `mode` record CUDA graphs (on a CUDA device)?"""
    import torch._inductor

    options = getattr(torch._inductor, "list_mode_options", None)
    if callable(options):
        try:
            return bool(options(None if mode == "default" else mode).get("triton.cudagraphs"))
        except Exception:  # an unknown mode: torch.compile itself refuses it
            return False
    return mode in CUDAGRAPH_MODES  # torch 2.0.1's apply_mode


def _autotunes(mode: str) -> bool:
    if "max-autotune" not in mode:  # torch's modes that autotune all say so (no import needed)
        return False
    import torch._inductor

    options = getattr(torch._inductor, "list_mode_options", None)
    if callable(options):
        try:
            return bool(options(None if mode == "default" else mode).get("max_autotune"))
        except Exception:
            return False
    return mode == "max-autotune"


def times_in_source(module: str, key: str) -> bool:
    """Does this build's `module` time `key` (its source names the timer)? Read once per cell."""
    import importlib
    from pathlib import Path

    try:
        path = importlib.import_module(module).__file__
        return bool(path) and key in Path(path).read_text(encoding="utf-8", errors="replace")
    except Exception:
        return False


def times_cudagraphs() -> bool:
    """Does this build time its CUDA-graph recordings? CUDA-graph trees do (`CUDAGraphNode.record`);
    torch 2.0.1 has none, and its cudagraphify records untimed, as current releases' do with
    triton.cudagraph_trees off."""
    import torch._inductor.config as config

    trees = bool(getattr(getattr(config, "triton", None), "cudagraph_trees", False))
    return trees and times_in_source("torch._inductor.cudagraph_trees", CUDAGRAPH_RECORD)


def gaps(device: str, mode: str) -> tuple[dict[str, str], list[str]]:
    """(phase -> why this build and device leave it empty, caveats on the phases shown)."""
    empty: dict[str, str] = {}
    caveats: list[str] = []
    version = torch_version()
    if device != "cuda" or not records_cudagraphs(mode):
        why = f"on {device}" if device != "cuda" else f"mode {mode} records none"
        empty["cudagraphs"] = f"no CUDA graphs ({why})"
    elif not times_cudagraphs():
        empty["cudagraphs"] = (
            f"torch {version} does not time its CUDA-graph recording (it runs in the first call: in other)"
        )
    if _autotunes(mode) and not times_in_source("torch._inductor.select_algorithm", "_template_autotuning"):
        caveats.append(f"autotune: torch {version} does not time compile-time autotuning (it is in lowering)")
    return empty, caveats


def _lengths() -> dict[str, int] | None:
    table = _accounting()
    return None if table is None else {k: len(v) for k, v in table.items() if isinstance(v, list)}


def _since(lengths: Mapping[str, int]) -> dict[str, list[float]]:
    """The entries torch recorded since `lengths` were taken, by key."""
    out = {}
    for key, values in (_accounting() or {}).items():
        try:
            start = lengths.get(key, 0)
            start = 0 if start > len(values) else start  # torch._dynamo.reset() cleared the list
            if len(values) > start:
                out[key] = [float(v) for v in values[start:]]
        except (TypeError, ValueError):  # not a list of seconds: not one of the timers read here
            continue
    return out


@dataclass
class Ledger:
    """torch's accounting read around a cell's first compiled call and its compiled warm-up.

    `Ledger.start()` before the first compiled call; `first_call_done()` after it;
    `warm_up_done()` after the compiled warm-up (CUDA graphs are recorded in the calls after
    the first); `fields(compile_s, ...)` when the row is made (the guard failures since the
    first call are its recompile reasons)."""

    before: dict[str, int] | None
    records_before: set[int] = field(default_factory=set)
    after_first: dict[str, int] = field(default_factory=dict)
    failures_before: int = 0
    first: dict[str, list[float]] = field(default_factory=dict)
    later: dict[str, list[float]] = field(default_factory=dict)
    guards: int | None = None

    @staticmethod
    def start() -> Ledger:
        return Ledger(_lengths(), {id(r) for r in _compile_records()})

    def first_call_done(self) -> None:
        from suite.measure.counters import guard_failures

        if self.before is not None:
            self.first = _since(self.before)
            self.after_first = _lengths() or {}
        self.failures_before = len(guard_failures())
        new = [r for r in _compile_records() if id(r) not in self.records_before]
        # a frame's record has its guard count; a lazy backward's record (train) has none
        counts = [c for r in new if isinstance(c := getattr(r, "guard_count", None), int)]
        self.guards = sum(counts) if counts else None

    def warm_up_done(self) -> None:
        """The entries recorded after the first call (CUDA-graph recordings, run-time autotuning)."""
        if self.before is not None:
            self.later = _since(self.after_first)

    def recordings(self) -> tuple[int, float]:
        """(CUDA graphs recorded, seconds recording) in the first call and the warm-up."""
        both = (self.first, self.later)
        return sum(len(d.get(CUDAGRAPH_RECORD, [])) for d in both), sum(CUDAGRAPHS.seconds(d) for d in both)

    def recompile_reasons(self) -> str:
        """dynamo's guard failures since the first call (why it compiled again), one line."""
        from suite.measure.counters import guard_failures

        return "; ".join(dict.fromkeys(guard_failures()[self.failures_before :]))

    def fields(
        self,
        compile_s: float | None,
        device: str,
        mode: str,
        graphs: int | None = None,
        calls: Calls | None = None,
    ) -> dict[str, Any]:
        """The phase columns, `phase_other_s`, `graphs`, `guards`, `recompile_reasons` and
        `phase_note` (what is empty and why, a sum beyond the margin); with `calls`, the
        remainder named (`phase_first_run_s`)."""
        out: dict[str, Any] = dict.fromkeys((*COLUMNS, FIRST_RUN))
        out.update(graphs=graphs, guards=self.guards, recompile_reasons=self.recompile_reasons())
        notes: list[str] = []
        if self.before is None:
            out["phase_note"] = f"torch {torch_version()} keeps no compile-time accounting"
            return out
        phases = split(self.first) if FRAME.present(self.first) else None
        if not FRAME.present(self.first):
            notes.append("nothing compiled in the first compiled call (torch recorded no frame compile)")
        elif phases is None:
            notes.append("torch's timed functions did not nest as the phases assume: phases left empty")
        else:
            missing, caveats = gaps(device, mode)
            for name, column, _ in PHASES:
                out[column] = None if name in missing else round(phases[name], 4)
            notes += [f"{name}: {why}" for name, why in missing.items()] + caveats
            if compile_s is not None:
                total = sum(v for k, v in phases.items() if k not in missing)
                out[OTHER] = round(compile_s - total, 4)
                named = calls.remainder(total) if calls is not None else None
                out[FIRST_RUN] = None if named is None else round(named[0], 4)
                if abs(compile_s - total) > margin_s(compile_s):
                    notes.append(
                        f"the phases add up to {total:.2f} s of compile_s {compile_s:.2f} s, "
                        f"beyond the margin of {margin_s(compile_s):.2f} s"
                        + ("" if named is None else f" ({Calls.words(*named)})")
                    )
        if self.guards is None and FRAME.present(self.first):
            notes.append(f"guards: torch {torch_version()} keeps no guard count")
        out["phase_note"] = "; ".join(notes)
        return out


@dataclass(frozen=True)
class Calls:
    """The milliseconds that name the remainder: the first compiled call (the one that compiles),
    the eager call compile_s subtracts, and a steady compiled call (the row's median)."""

    first_ms: float
    eager_ms: float
    compiled_ms: float

    def remainder(self, phases_s: float) -> tuple[float, float]:
        """(the first run's one-off seconds, a steady compiled call's - an eager call's): the
        two parts of compile_s - phases_s."""
        first_run = (self.first_ms - self.compiled_ms) / 1000.0 - phases_s
        return first_run, (self.compiled_ms - self.eager_ms) / 1000.0

    @staticmethod
    def words(first_run_s: float, steady_s: float) -> str:
        return (
            f"the rest: {first_run_s:.2f} s the first run's one-off work beyond a steady compiled call "
            f"(kernels loaded onto the device, first-call set-up), {steady_s * 1000:+.1f} ms a steady "
            "compiled call against an eager one"
        )


def summary(new: Mapping[str, Sequence[float]], most: int = 3) -> str:
    """`kernels 12.5 s, dynamo 2.0 s, pre_aot 1.5 s`: a compile's largest phases, in one phrase
    short enough for `compile_note` (the notes of the warm and mega-cache processes); "" where
    torch recorded no frame compile."""
    phases = split(new) if FRAME.present(new) else None
    if phases is None:
        return ""
    largest = sorted(((s, n) for n, s in phases.items() if s > 0), reverse=True)[:most]
    return ", ".join(f"{name} {seconds:.1f} s" for seconds, name in largest)
