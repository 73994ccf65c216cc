"""Measure one cell inside its own child process:
`python -m suite.measure.worker CELL RESULT DEVICE`.

The runner starts one of these per cell with a timeout, so memory figures and compile
caches belong to this cell alone, and a crash or hang costs only this cell. The result
(measurement columns + status) is written atomically as JSON to RESULT; anything the
process prints goes to the cell's log file, not the terminal.
"""

from __future__ import annotations

import json
import sys
import traceback
from pathlib import Path
from typing import Any

from suite.measure import lifeline
from suite.measure import training as train
from suite.measure.failures import describe_exception, is_oom
from suite.measure.scenarios import SCENARIOS, measure
from suite.results import one_line
from suite.spec.model import Cell


def run(cell: Cell, device: str) -> dict[str, Any]:
    """Status + measurement for one cell; never raises for a failure inside the cell."""
    import torch

    row: dict[str, Any] = {"torch_threads": torch.get_num_threads()}
    kind = SCENARIOS.get(cell.scenario)
    if kind is None:
        return {
            **row,
            "status": "skipped",
            "error": f"scenario {cell.scenario!r} is not supported by this suite version",
        }
    try:
        row.update(measure(cell, device, kind))
        row["status"], row["error"] = "ok", ""
    except train.Unsupported as exc:  # no such measurement for this model: say why
        traceback.print_exc()
        return {**row, "status": "skipped", "error": one_line(str(exc))}
    except Exception as exc:  # the sweep goes on: record why, in one line
        traceback.print_exc()
        oom = is_oom(exc)
        reason = describe_exception(exc)
        row = {
            "torch_threads": row["torch_threads"],
            "status": "oom" if oom else "error",
            "error": one_line(reason),
        }
    return row


def write_result(path: Path, row: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(row, default=str))
    tmp.replace(path)


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print("usage: python -m suite.measure.worker CELL_JSON RESULT_JSON DEVICE", file=sys.stderr)
        return 2
    lifeline.die_with_parent()  # never outlive the runner (it may be killed mid-cell)
    cell = Cell.from_json(Path(argv[0]).read_text())
    device = argv[2]
    print(f"cell: {cell.label} | build {cell.build} | device {device}", flush=True)
    write_result(Path(argv[1]), run(cell, device))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
