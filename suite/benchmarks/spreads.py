"""What random weights answer: every output's spread, for each model of a profile, as the cells
build them (suite.measure.random_init's calibration included), against the accuracy rule's
floor (docs/accuracy.md). Eager only, on the CPU, batch 1: no compile, no timing (the figures
do not depend on the machine's load); deterministic (seeded).

    python -m suite.benchmarks.spreads --profile smoke        # the twelve, shrunk: seconds
    python -m suite.benchmarks.spreads --profile full --models MobileNet,DETR   # full size: minutes

One line per output tensor: its shape, its spread (the standard deviation of its float64
values), float32 eager's RMSE from float64, and the spread over the rule's floor (10 x the
tolerance); then the rule's verdict on eager against itself: `pass`, or `degenerate`.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from suite.errors import UsageError
from suite.spec.model import Cell

REPO = Path(__file__).resolve().parents[2]


def _judged_against_itself(cell: Cell) -> tuple[Any, Any]:
    """(the rule's verdict, the pass's outputs) of the cell's eager model judged as its own
    compiled function: what the rule makes of the outputs themselves."""
    from suite.measure import accuracy_pass
    from suite.measure import cell as parts

    model, batch, _ = parts.prepare(cell, "cpu")

    def eager() -> Any:
        return model(**batch)

    return accuracy_pass.verdict(cell, model, batch, (eager, eager))


def spreads(profile: str, models: Sequence[str] | None, matrix: Path) -> list[str]:
    """The lines the module docstring describes, model by model."""
    from suite.measure.accuracy_rule import Rule, spread
    from suite.spec import Filters, expand, load_matrix

    filters = Filters(models=tuple(models) if models else None, overrides={"weights": "random"})
    cells: dict[str, Cell] = {}
    for cell in expand(load_matrix(matrix), profile, "any", filters):
        if cell.scenario == "inference":
            cells.setdefault(cell.model.name, cell)
    lines = [
        "| model | output | shape | spread | RMSE fp32 vs fp64 | spread / floor |",
        "|---|---|---|---|---|---|",
    ]
    verdicts = []
    for name, cell in cells.items():
        verdict, ran = _judged_against_itself(cell)
        floor = Rule(cell.settings.tolerance).floor
        exact = ran.outputs.fp64 or ran.outputs.eager
        for i, (ref, out) in enumerate(zip(exact, ran.outputs.eager, strict=True)):
            rmse = float((ref.double() - out.double()).pow(2).mean().sqrt())
            flat = spread(ref)
            lines.append(
                f"| {name} | {i + 1} | {list(ref.shape)} | {flat:.3g} | {rmse:.3g} | {flat / floor:.3g} |"
            )
        verdicts.append(f"{name}: {verdict.status} ({ran.reference})")
    return [*lines, "", *verdicts]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m suite.benchmarks.spreads", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--profile", default="smoke", help="a profile of the matrix (default: smoke)")
    parser.add_argument("--models", default="", help="comma-separated models (default: the profile's)")
    parser.add_argument("--matrix", type=Path, default=REPO / "matrix.yaml")
    args = parser.parse_args(argv)
    try:
        lines = spreads(args.profile, [m for m in args.models.split(",") if m], args.matrix)
    except UsageError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
