"""Measure one cell inside its own child process:
`python -m suite.measure.worker CELL RESULT DEVICE`.

The runner starts one of these per cell with a timeout, so memory figures and compile
caches belong to this cell alone, and a crash or hang costs only this cell. The result
(measurement columns + status) is written atomically as JSON to RESULT; anything the
process prints goes to the cell's log file, not the terminal.
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from pathlib import Path
from typing import Any

from suite.measure import allocator, aot, compile_cost, lifeline
from suite.measure import training as train
from suite.measure.failures import describe_exception, is_oom
from suite.measure.scenarios import SCENARIOS, dynamic, measure
from suite.measure.scenarios import precision as reduced
from suite.measure.scenarios.dynamic import measure_sequence
from suite.results import one_line
from suite.spec.model import DYNAMIC_BATCH, Cell


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


def main(argv: list[str]) -> int:
    if len(argv) not in (3, 4) or (len(argv) == 4 and argv[3] not in compile_cost.PHASES):
        print(
            "usage: python -m suite.measure.worker CELL_JSON RESULT_JSON DEVICE [measure|warm|megacache]",
            file=sys.stderr,
        )
        return 2
    lifeline.die_with_parent()  # never outlive the runner (it may be killed mid-cell)
    cell = Cell.from_json(Path(argv[0]).read_text())
    device = argv[2]
    phase = argv[3] if len(argv) == 4 else compile_cost.MEASURE
    print(f"cell: {cell.label} | build {cell.build} | device {device} | {phase} process", flush=True)
    write_result(Path(argv[1]), run(cell, device, phase))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
