"""The parent side never imports torch, and nothing but `suite.report` imports pandas or
matplotlib: what `plan` and the runner's modules load, checked in a fresh interpreter (the
import-linter contracts in `nox -s lint` check the import statements; this checks what a real
`plan` loads at run time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

PROGRAM = """
import contextlib, io, json, pkgutil, importlib, sys
import suite.run, suite.spec
for pkg in (suite.run, suite.spec):
    for info in pkgutil.iter_modules(pkg.__path__, pkg.__name__ + "."):
        importlib.import_module(info.name)
for name in ("plan", "call", "packing", "cli"):  # the GPU study's side on the GPU machine
    importlib.import_module("suite.gpustudy." + name)
from suite.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    code = main(["plan", "--profile", "smoke", "--device", "cpu"])
    code = code or main(["gpu-study", "plan"])
heavy = ("torch", "transformers", "pandas", "matplotlib")
print(json.dumps({"code": code, "loaded": [m for m in heavy if m in sys.modules]}))
"""


def test_plan_and_the_parent_side_load_no_torch_and_no_pandas() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-c", PROGRAM], capture_output=True, text=True, env=env, cwd=REPO, check=False
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result == {"code": 0, "loaded": []}
