"""The compile section: what compiling cost the row (the cold compile, dynamo's breaks and
recompiles) and, with the `compile_cost` setting and in `dynamic-batch` rows, the warm and
mega-cache compiles, the time to a first result and the break-even (suite.measure.compile_cost).
Standard library only."""

from __future__ import annotations

from suite.results.sections.base import INT, Column, Section, extra, extra_timed, timed

SECTION = Section(
    name="compile",
    title="What compiling costs",
    about="Compiled rows: the cold compile and what dynamo did. The rest with the `compile_cost` "
    "setting, and in `dynamic-batch` rows ([compile-cost.md](compile-cost.md) says how each is "
    "measured). Compile seconds and break-even calls may be 0 (nothing compiled: a warm cache that "
    "serves all, a batch size a symbolic graph already covers), never negative.",
    columns=(
        timed(
            "compile_s",
            unit="s",
            positive=False,
            doc="cold compile: the first compiled call minus an eager call, fresh inductor/triton caches",
        ),
        Column("graph_breaks", INT, timing=True, doc="dynamo's graph breaks"),
        Column("recompiles", INT, timing=True, doc="recompiles while timed"),
        extra_timed(
            "compile_warm_s",
            "s",
            "the same in a second fresh process that finds the caches the first left (FX graph, "
            "AOTAutograd, kernels)",
            positive=False,
        ),
        extra_timed(
            "compile_megacache_s",
            "s",
            "a third process, fresh cache folders, that first loads the artifacts the first saved with "
            "`torch.compiler.save_cache_artifacts` (what you ship in an image or between CI runners): "
            "load + compile",
            positive=False,
        ),
        extra_timed(
            "first_result_s",
            "s",
            "process start to the first compiled output: `eager_first_result_s` + `compile_s`",
        ),
        extra_timed(
            "eager_first_result_s",
            "s",
            "from the runner's clock as it starts the worker (interpreter, imports, model build, "
            "input) to the first eager output",
        ),
        extra_timed(
            "breakeven_calls",
            "calls",
            "calls after which compiling has paid for itself: `compile_s` / (eager - compiled median "
            "per call, paired); empty when compiling is not faster",
            positive=False,
        ),
        extra_timed(
            "breakeven_calls_warm", "calls", "as `breakeven_calls`, from `compile_warm_s`", positive=False
        ),
        extra(
            "compile_note",
            "which caches each process hit (so a warm figure is known warm), why a compile-cost figure "
            "is empty, what dynamo recompiled and why, what torch did with the batch dimension",
        ),
        extra_timed(
            "warm_compile_s",
            "s",
            "with several processes: the median compile of the 2nd..kth processes, on the first's "
            "caches (never in `compile_s`; [intervals.md](intervals.md))",
        ),
    ),
)
