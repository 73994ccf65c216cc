"""Measure one cell inside its own child process:
`python -m suite.measure.worker CELL RESULT DEVICE [PHASE]`, or several cells of one model and
build in turn: `python -m suite.measure.worker --cells CELLS RESULTS_DIR DEVICE`.

The runner starts one of these per cell with a timeout (the `serial` schedule), so memory figures
and compile caches belong to this cell alone, and a crash or hang costs only this cell. The
result (the row's fields by section, suite.results.layout.to_wire) is written atomically as JSON
to RESULT; anything the process prints goes to the cell's log file, not the terminal. Under the
`ahead` schedule (suite.run.schedule) one process measures a compiled cell and then eager cells of
its model, each in turn, waiting before each cell's timed calls until the runner lets it time
alone (suite.measure.gate), writing RESULTS_DIR/<i>.json as each ends: the runner watches them
appear, so a crash or hang costs the cell it hits and the rest run again elsewhere.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from suite.measure import allocator, aot, compile_cost, faults, lifeline
from suite.measure import training as train
from suite.measure.failures import describe_exception, is_oom
from suite.measure.scenarios import SCENARIOS, dynamic, measure
from suite.measure.scenarios import precision as reduced
from suite.measure.scenarios.dynamic import measure_sequence
from suite.results import one_line
from suite.results.layout import to_wire
from suite.spec.model import Cell
from suite.spec.vocab import DYNAMIC_BATCH


def run(cell: Cell, device: str, phase: str = compile_cost.MEASURE) -> dict[str, Any]:
    """Status + measurement for one cell; never raises for a failure inside the cell.

    `phase` (suite.measure.compile_cost): `measure` the cell, or be its `warm` or `megacache`
    process. A dynamic-batch cell's result holds its rows (one per batch size) under "rows"."""
    import torch

    # how the process runs: on every row, a failed one's too
    process = {"torch_threads": torch.get_num_threads(), "malloc": allocator.in_effect()}
    row: dict[str, Any] = dict(process)
    kind = SCENARIOS.get(cell.scenario)
    if kind is None and cell.scenario != DYNAMIC_BATCH:
        return {
            **row,
            "status": "skipped",
            "error": f"scenario {cell.scenario!r} is not supported by this suite version",
        }
    try:
        if cell.mode == aot.AOT_MODE:
            aot.check_supported()  # a torch without it: skipped before the model is built
        if phase == compile_cost.MEASURE:
            faults.inject_cell_fault(cell.label)  # test-only: one cell fails on purpose
        if cell.scenario == DYNAMIC_BATCH:
            row["rows"] = measure_sequence(cell, device)
        elif phase != compile_cost.MEASURE:
            row.update(compile_cost.first_compile(cell, device, kind, phase))
        else:
            row.update(measure(cell, device, kind))
            if cell.compile_cost:  # after the cell's own note (CUDA graphs skipped), if any
                notes = (
                    row.get("compile_note"),
                    compile_cost.after_measure(os.environ.get(compile_cost.MEGACACHE_ENV, "")),
                )
                row["compile_note"] = "; ".join(n for n in notes if n)
        row["status"], row["error"] = "ok", ""
    except (train.Unsupported, dynamic.Unsupported, reduced.Unsupported, aot.Unsupported) as exc:  # say why
        traceback.print_exc()
        return {**row, "status": "skipped", "error": one_line(str(exc))}
    except Exception as exc:  # the sweep goes on: record why, in one line
        traceback.print_exc()
        oom = is_oom(exc)
        reason = describe_exception(exc)
        row = {
            **process,
            "status": "oom" if oom else "error",
            "error": one_line(reason),
        }
    return row


def write_result(path: Path, row: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row, default=str))
    tmp.replace(path)


# a cell's result in a several-cell process, and the line its log gets when the cell starts
CELL_RESULT = "{index}.json"
CELL_MARK = "=== cell: {label} ({index}) ==="  # "cell: <label>", as a one-cell log begins


def run_cells(cells: list[Cell], results: Path, device: str) -> None:
    """Measure `cells` in turn in this one process, each on what dynamo would see in a fresh one
    (its caches reset, its counters cleared), its result written as soon as it ends. A cell's
    `eager_first_result_s` counts this process's own start-up (interpreter and imports, paid once
    here) as a fresh process would pay it, then the cell's own model and batch."""
    import gc

    import torch

    startup_s = compile_cost.seconds_since_spawn()
    for index, cell in enumerate(cells):
        print(CELL_MARK.format(index=index, label=cell.label), flush=True)
        import torch._dynamo  # torch 2.0 does not import it with torch
        from torch._dynamo.utils import counters

        torch._dynamo.reset()
        counters.clear()
        # as if this cell's process had started startup_s ago (suite.measure.compile_cost)
        os.environ[compile_cost.SPAWN_ENV] = repr(time.time() - startup_s)
        write_result(results / CELL_RESULT.format(index=index), to_wire(run(cell, device)))
        gc.collect()
        if device == "cuda" and torch.cuda.is_available():
            torch.cuda.empty_cache()


def main_cells(argv: list[str]) -> int:
    """`--cells CELLS_JSON RESULTS_DIR DEVICE`: CELLS_JSON a list of cells' JSON strings."""
    if len(argv) != 3:
        print("usage: python -m suite.measure.worker --cells CELLS_JSON RESULTS_DIR DEVICE", file=sys.stderr)
        return 2
    lifeline.die_with_parent()
    cells = [Cell.from_json(one) for one in json.loads(Path(argv[0]).read_text())]
    print(f"cells: {len(cells)} | build {cells[0].build} | device {argv[2]} | one timing process", flush=True)
    run_cells(cells, Path(argv[1]), argv[2])
    return 0


def child_cell(argv: list[str], fits: bool, usage: str) -> Cell | None:
    """A cell's child process starting (the worker, the cross-check's child): its arguments
    checked (else the usage line, and None), its life tied to its runner's (it may be killed
    mid-cell), its cell read from CELL_JSON (the first argument)."""
    if not fits:
        print(f"usage: {usage}", file=sys.stderr)
        return None
    lifeline.die_with_parent()
    return Cell.from_json(Path(argv[0]).read_text())


def main(argv: list[str]) -> int:
    if argv[:1] == ["--cells"]:
        return main_cells(argv[1:])
    fits = len(argv) in (3, 4) and (len(argv) == 3 or argv[3] in compile_cost.PHASES)
    usage = "python -m suite.measure.worker CELL_JSON RESULT_JSON DEVICE [PHASE: measure|warm|megacache]"
    cell = child_cell(argv, fits, usage)
    if cell is None:
        return 2
    device = argv[2]
    phase = argv[3] if len(argv) == 4 else compile_cost.MEASURE
    print(f"cell: {cell.label} | build {cell.build} | device {device} | {phase} process", flush=True)
    write_result(Path(argv[1]), to_wire(run(cell, device, phase)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
