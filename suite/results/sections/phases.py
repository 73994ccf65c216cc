"""The compile phases section: where a cold start's compile seconds go, by torch's own accounting
(suite.measure.phases), and what dynamo built. Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Column, Section, counted, extra, extra_timed

# torch's phases of a first compiled call, in the order of the table and the stacked bars
STEPS: tuple[tuple[str, str], ...] = (
    ("dynamo", "Dynamo: tracing the bytecode into graphs, building guards (frame compile - backend call)"),
    ("pre_aot", "the backend before AOTAutograd: first-use imports, pre-grad passes, cache keys"),
    ("aot", "AOTAutograd (functionalization, joint graph, partitioning), without inductor's compile"),
    ("lowering", "inductor: graph passes and lowering to its IR (autotuning apart)"),
    ("codegen", "inductor: code generation (scheduler, kernel and wrapper source)"),
    ("kernels", "compiling the C++ or Triton kernels and loading the module"),
    ("autotune", "autotuning: compile-time template benchmarks + run-time Triton configs"),
    ("cudagraphs", "CUDA-graph recording within the first compiled call"),
)


def column_of(phase: str) -> str:
    """A phase's column (`phase_<phase>_s`)."""
    return f"phase_{phase}_s"


PHASE_COLUMNS: tuple[Column, ...] = tuple(
    extra_timed(column_of(phase), "s", what, positive=False) for phase, what in STEPS
)
OTHER = extra_timed(
    "phase_other_s",
    "s",
    "`compile_s` - the phases' sum: outside torch's accounting (may be < 0)",
    positive=False,
)
FIRST_RUN = extra_timed(
    "phase_first_run_s",
    "s",
    "the first compiled call - the phases - a steady compiled call: its first run's one-off work "
    "(kernels loaded onto the device, first-call set-up); `phase_other_s` = this + (a steady compiled "
    "call - an eager call)",
    positive=False,
)

SECTION = Section(
    name="phases",
    title="Compile phases",
    about="Compiled rows: where the cold compile's seconds go, by torch's own accounting, and what "
    "dynamo built ([phases-energy.md](phases-energy.md)); empty where a build does not give a "
    "figure, and `phase_note` says why.",
    columns=(
        *PHASE_COLUMNS,
        OTHER,
        counted("graphs", "graphs dynamo compiled in the first compiled call"),
        counted("guards", "guards of those graphs (torch's own count)"),
        Column(
            "recompile_reasons",
            contract=False,
            timing=True,
            doc="dynamo's guard failures after the first call",
        ),
        extra(
            "phase_note",
            "which phases a build does not time and why; a sum beyond the margin; the warm and "
            "mega-cache compiles' largest phases",
        ),
        FIRST_RUN,
    ),
)
