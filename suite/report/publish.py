"""Write the merged outputs of `python -m suite merge`: tables/ (Markdown + CSV, the index
page tables.md, and the run page index.html beside it: suite.report.pages) and plots/ (PNG)
under one folder.

Host side only. The merge owns those two folders: the Markdown, CSV and PNG files a previous
merge left there are removed first, so nothing stale is read as current.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from suite.errors import UsageError
from suite.report.export import write_dynamo_csvs, write_report_json
from suite.report.load import Loaded, load
from suite.report.pages.run_data import RunReport
from suite.report.pages.run_page import write_run_page
from suite.report.paths import shown
from suite.report.reference import Reference
from suite.report.samples import PARQUET, read_beside, recompute, report_line, write_parquet
from suite.report.study import Study, build_kinds
from suite.report.tables.aot import aot_tables
from suite.report.tables.cells import LEGEND, TRAIN, TRAIN_LEGEND
from suite.report.tables.compile_cost import compile_cost_tables
from suite.report.tables.compile_vs_eager import compile_groups, compile_vs_eager
from suite.report.tables.dynamic import dynamic_tables
from suite.report.tables.memory import peak_memory
from suite.report.tables.mixed_resolution import mixed_resolution_tables
from suite.report.tables.modes import compile_modes
from suite.report.tables.phases import cudagraph_tables, energy_tables, phase_tables
from suite.report.tables.precision import pipeline_tables, precision_tables
from suite.report.tables.serving import serving_tables
from suite.report.tables.stable_vs import stable_vs_others
from suite.report.tables.summary import summary_table
from suite.report.tables.table import Table, markdown_table, write_table

SECTIONS: tuple[tuple[str, str, str], ...] = (
    (
        "compile vs eager",
        "Compile vs eager",
        "No compiled inference cell in the inputs.",
    ),
    (
        "train compile vs eager",
        "Training step: compile vs eager",
        "No compiled training cell in the inputs (run with --scenarios train).",
    ),
    (
        "peak memory",
        "Peak memory per model and batch size (inference and training)",
        "No cell in the inputs.",
    ),
    (
        "stable vs nightly",
        "Stable vs nightly (and every other build against the stable one)",
        "Needs a stable build and another build with the same GPU, setup and compile mode.",
    ),
    (
        "compile modes",
        "Compile modes (default vs reduce-overhead, ...)",
        "Needs two or more compile modes of one build on one GPU.",
    ),
    (
        "compile cost",
        "What compiling costs (cold, warm and mega-cache compile, first result, break-even)",
        "No compiled cell in the inputs.",
    ),
    (
        "dynamic shapes",
        "Batch sizes that change (dynamic-batch: static, auto, marked)",
        "No dynamic-batch cell in the inputs (run with --scenarios dynamic-batch).",
    ),
    # compile phases, CUDA graphs, energy (docs/phases-energy.md)
    (
        "compile phases",
        "Where the compile goes (torch's own accounting, by phase)",
        "No compiled cell in the inputs.",
    ),
    (
        "cuda graphs",
        "What CUDA graphs cost (reduce-overhead, max-autotune)",
        "No cell of a mode that records CUDA graphs in the inputs.",
    ),
    ("energy", "Energy per image (eager and compiled)", "No compiled cell in the inputs."),
    # precision and the pipeline (docs/precision.md, docs/pipeline.md)
    (
        "precision",
        "What reduced precision and compiling change in the answer",
        "No precision cell in the inputs (run the precision profile).",
    ),
    (
        "pipeline",
        "What compiling saves per request (preprocess, forward, post-process)",
        "No compiled pipeline cell in the inputs (run the pipeline profile).",
    ),
    # serving, mixed resolution, AOTInductor (docs/serving.md)
    (
        "serving",
        "Images a second at a p99 latency target (serving: eager vs compile modes)",
        "No serving cell in the inputs (run the serving profile, or --scenarios serving).",
    ),
    (
        "aot-inductor",
        "Compiling ahead (AOTInductor) vs the JIT",
        "No aot-inductor cell in the inputs (run the aot-inductor profile).",
    ),
    (
        "mixed resolution",
        "Image sizes that change (mixed-resolution: static, auto, marked)",
        "No mixed-resolution cell in the inputs (run the mixed-resolution profile).",
    ),
)


@dataclass
class MergeResult:
    loaded: Loaded
    kinds_note: str
    tables: list[Table]
    index: Path
    plots: list[Path] = field(default_factory=list)
    page: Path | None = None  # the run page, index.html beside tables.md (docs/pages.md)
    samples_line: str = ""  # the rows' medians recomputed from the samples (suite.report.samples)
    samples: Path | None = None  # tables/samples.parquet, when any samples were found
    exports: list[Path] = field(default_factory=list)  # report.json and the dynamo CSVs (report.export)


def _clear(folder: Path, patterns: Sequence[str]) -> None:
    for pattern in patterns:
        for path in folder.glob(pattern):
            path.unlink()


def run_merge(
    inputs: Sequence[Path],
    out: Path,
    matrix: Path | None,
    matrix_explicit: bool,
    reference_dir: Path,
    plots: bool = True,
    strict: bool = False,
) -> MergeResult:
    """Load, build every table (and plot), write them and the index page. With `strict`, any
    row or file set aside is an error (exit 2) before anything is written."""
    loaded = load(inputs)
    if strict and loaded.skipped:
        more = f" (and {len(loaded.skipped) - 1} more)" if len(loaded.skipped) > 1 else ""
        raise UsageError("--strict", f"{loaded.skipped[0]}{more}")
    builds = list(dict.fromkeys(loaded.frame["build"]))
    kinds, kinds_note = build_kinds(builds, matrix, matrix_explicit)
    study = Study(loaded.frame, kinds)  # dynamic-batch rows too: their own table (tables.dynamic)
    reference = Reference.load(reference_dir)
    tables_dir, plots_dir = out / "tables", out / "plots"
    _clear(tables_dir, ("*.md", "*.csv"))
    _clear(plots_dir, ("*.png",))  # also with plots off: an old plot must not pass for a current one
    _clear(plots_dir / AMORTIZATION, ("*.png",))
    _clear(plots_dir / PHASES, ("*.png",))
    tables_dir.mkdir(parents=True, exist_ok=True)
    if plots:
        plots_dir.mkdir(parents=True, exist_ok=True)

    summary = summary_table(study)
    groups = compile_groups(study)
    vs_eager = [compile_vs_eager(study, g, reference) for g in groups]
    tables = [summary, *vs_eager, *peak_memory(study), *stable_vs_others(study), *compile_modes(study)]
    tables += [*compile_cost_tables(study), *dynamic_tables(study)]
    tables += [*phase_tables(study), *cudagraph_tables(study), *energy_tables(study)]
    tables += [*precision_tables(loaded.frame), *pipeline_tables(loaded.frame)]
    tables += [
        *serving_tables(loaded.frame),
        *mixed_resolution_tables(loaded.frame),
        *aot_tables(loaded.frame),
    ]
    for table in tables:
        write_table(table, tables_dir)
    # what other tools read: report.json, the dynamo scripts' CSVs (suite.report.export)
    exports = [write_report_json(loaded.frame, tables_dir, [shown(f) for f in loaded.files])]
    exports += write_dynamo_csvs(loaded.frame, tables_dir)

    plot_links: dict[str, list[Path]] = {}
    written: list[Path] = []
    if plots:
        from suite.report.amortization import amortization_plots
        from suite.report.plots import plot_group

        for group, table in zip(groups, vs_eager, strict=True):
            stem = table.name.removeprefix("compile-vs-eager__")
            stem = stem.replace("train-compile-vs-eager__", "train__", 1)
            plot_links[table.name] = plot_group(study, group, reference, plots_dir, stem)
            written += plot_links[table.name]
        (plots_dir / AMORTIZATION).mkdir(exist_ok=True)
        for cost_table, paths in amortization_plots(study, plots_dir / AMORTIZATION).items():
            plot_links.setdefault(cost_table, []).extend(paths)
            written += paths
        from suite.report.phases_plot import phase_plots

        (plots_dir / PHASES).mkdir(exist_ok=True)
        for phase_table, paths in phase_plots(study, tables, plots_dir / PHASES).items():
            plot_links.setdefault(phase_table, []).extend(paths)
            written += paths

    calls = read_beside(loaded.files)
    (tables_dir / PARQUET).unlink(missing_ok=True)  # an old run's calls must not pass for these
    parquet = write_parquet(calls, tables_dir / PARQUET) if not calls.empty else None
    samples_line = report_line(recompute(calls, loaded.frame))
    index = tables_dir / "tables.md"
    index.write_text(render_index(loaded, study, kinds_note, tables, plot_links, reference), encoding="utf-8")
    page = write_run_page(RunReport(loaded, study, kinds_note, tables, reference, plot_links), tables_dir)
    return MergeResult(
        loaded=loaded,
        kinds_note=kinds_note,
        tables=tables,
        index=index,
        plots=written,
        page=page,
        samples_line=samples_line,
        samples=parquet,
        exports=exports,
    )


AMORTIZATION = "amortization"  # plots/amortization/: the compile-cost tables' plots
PHASES = "phases"  # plots/phases/: the compile-phases tables' stacked bars


def _in_plots(path: Path) -> str:
    """A plot's path under plots/ (the amortization and phases plots have their own folders)."""
    return f"{path.parent.name}/{path.name}" if path.parent.name in (AMORTIZATION, PHASES) else path.name


def render_index(
    loaded: Loaded,
    study: Study,
    kinds_note: str,
    tables: Sequence[Table],
    plot_links: dict[str, list[Path]],
    reference: Reference,
) -> str:
    """The whole study on one page: inputs, builds, summary, then every table with its plots."""
    lines = ["# torch.compile benchmark: merged results", "", "## Inputs", ""]
    lines += [f"- {shown(f)}" for f in loaded.files]
    lines += ["", *(f"- {line}" for line in loaded.report())]
    lines += ["", "## Builds", "", f"({kinds_note})", ""]
    lines += ["| build | kind | torch |", "|---|---|---|"]
    lines += [f"| {b} | {study.kind(b)} | {', '.join(study.torch.get(b, [])) or '—'} |" for b in study.builds]
    guide = (
        f"{len(reference.figures)} figures of the guide from results/reference/"
        if reference.figures
        else "no reference figures found: no guide comparison"
    )
    lines += ["", "## How to read", "", LEGEND, ""]
    if any(setup.scenario == TRAIN for setup in study.setups):
        lines += [TRAIN_LEGEND, ""]
    lines += [f"Guide comparison: {guide}.", ""]
    summary = next(t for t in tables if t.section == "summary")
    lines += [f"## {summary.title}", "", summary.subtitle, "", *markdown_table(summary), ""]
    lines += [f"- {n}" for n in summary.notes]
    for section, heading, empty in SECTIONS:
        lines += ["", f"## {heading}", ""]
        members = [t for t in tables if t.section == section]
        if not members:
            lines.append(empty)
        for table in members:
            lines += [table.markdown(heading="###", legend=False).rstrip(), ""]
            lines.append(f"Files: [{table.name}.md]({table.name}.md) · [{table.name}.csv]({table.name}.csv)")
            links = plot_links.get(table.name, [])
            if links:
                lines[-1] += " · plots: " + " · ".join(
                    f"[{p.stem.rsplit('__', 1)[-1]}](../plots/{_in_plots(p)})" for p in links
                )
            lines.append("")
    return "\n".join(lines).rstrip() + "\n"
