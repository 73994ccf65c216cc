"""`python -m suite crosscheck`: the suite's timing loop against timers that share none of its
code, in alternating rounds in one child process per cell (suite.run.crosscheck), and each
ratio with its spread against the target (±3% on a CPU, ±2% on CUDA).

Many short rounds: each round's suite half is one block of the loop (BLOCK_CALLS calls per
function) unless `--iterations` says more, not the profile's iterations. A ratio is only as good
as the two halves of one round seeing the same machine, and a VM's speed moves within seconds
(docs/trust.md). How many rounds follows the model's speed: they go on until they have taken
`--budget-s` seconds a timed function (at least MIN_ROUNDS, at most `--rounds`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from suite.cli.args import request_of
from suite.errors import UsageError
from suite.redact import redact
from suite.run import crosscheck, preflight, runner
from suite.run.launch import RunPaths
from suite.spec.warmup import BLOCK_CALLS

MAX_CELLS = 12


def cmd_crosscheck(args: Any) -> int:
    """Cross-check the selected cells; the report goes to stdout and <out>/<run-id>/crosscheck.md."""
    if args.iterations is None:  # a round is one block of the suite's loop unless told
        args.iterations = BLOCK_CALLS
    request = request_of(args)
    prepared = preflight.prepare(request, min_free_mb=None)
    environment, profile, build, cells = (
        prepared.environment,
        prepared.profile,
        prepared.build,
        prepared.cells,
    )
    if any(c.scenario != "inference" for c in cells):
        raise UsageError("--scenarios", "the cross-check times forward passes: inference cells only")
    if len(cells) > MAX_CELLS:
        raise UsageError("--models", f"{len(cells)} cells selected; a cross-check takes at most {MAX_CELLS}")
    run_id = request.run_id or "crosscheck-" + runner.new_run_id()
    paths = RunPaths.make(request.out, run_id, build, environment.device)
    before = os.getloadavg()[0]
    budget = crosscheck.Budget(args.rounds, args.budget_s)
    results = crosscheck.run(cells, environment.device_type, paths, budget)
    load = (before, os.getloadavg()[0])
    title = (
        f"Cross-check on {environment.gpu_name}, torch {environment.torch_version}, profile {profile}, "
        f"{cells[0].settings.iterations} iterations per round, rounds for {budget.text()}"
    )
    text = "\n".join(crosscheck.render(results, environment.device_type, title, load))
    print(text)
    folder = Path(request.out) / run_id
    (folder / "crosscheck.md").write_text(redact(text) + "\n", encoding="utf-8")
    figures: dict[str, Any] = {"device": environment.device_type, "load": load}
    figures["results"] = crosscheck.as_json(results)
    (folder / "crosscheck.json").write_text(json.dumps(figures, indent=1) + "\n", encoding="utf-8")
    print(f"written to {folder / 'crosscheck.md'} and crosscheck.json", file=sys.stderr)
    return 0
