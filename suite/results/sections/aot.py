"""The AOTInductor section: the `aot-inductor` mode's export, package and load (suite.measure.aot).
Standard library only."""

from __future__ import annotations

from suite.results.sections.base import Section, counted, extra_timed

SECTION = Section(
    name="aot",
    title="AOTInductor",
    about="`aot-inductor` rows ([aot-inductor.md](aot-inductor.md#columns)).",
    columns=(
        extra_timed("aot_export_s", "s", "`torch.export` of the model at the cell's inputs"),
        extra_timed(
            "aot_compile_s",
            "s",
            "`aoti_compile_and_package`: the package built (kernels, wrapper, C++ compile and link)",
        ),
        extra_timed("aot_load_s", "s", "`aoti_load_package` in the timing process"),
        extra_timed("aot_package_mb", "MB", "the package's size on disk"),
        counted("aot_packages", "packages built in the cell (one per input shape)"),
    ),
)
