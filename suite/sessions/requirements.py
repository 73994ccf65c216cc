"""`nox -s lock`: the images' hash-locked requirements (containers/<build>/requirements.txt),
written by pip-compile on each build's own Python and pruned of torch (containers/locks.py),
or with `--check` verified against the real wheels (network: PyPI).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from suite.errors import UsageError
from suite.sessions.posargs import take
from suite.sessions.runner import Runner, load, pick_builds
from suite.sessions.venv import find_python, lock_file

# pip-compile for the lock files; its version is part of how a lock was made.
PIP_TOOLS = "pip-tools==7.6.2"


def lock(runner: Runner, posargs: Sequence[str], root: Path) -> None:
    """`nox -s lock -- [BUILD ...] [--check]`: every build with a lock (or a requirements.in)
    unless builds are named."""
    args = list(posargs)
    check = take(args, switches=["--check"])["--check"]
    matrix = load(root)
    names = args or [
        n
        for n, b in matrix.builds.items()
        if lock_file(b, root) or (b.container and (root / b.container / "requirements.in").is_file())
    ]
    for spec in pick_builds(matrix, ",".join(names), []):
        if not spec.container:
            raise UsageError(f"{matrix.path}: builds.{spec.name}", "no container folder, so no lock file")
        tools = root / ".nox" / f"lock-py{spec.python}"
        python = tools / "bin" / "python"
        if not python.exists():
            interpreter = find_python(spec.python)
            if interpreter is None:
                raise UsageError(
                    f"{matrix.path}: builds.{spec.name}.python", f"no Python {spec.python} found"
                )
            runner.run(interpreter, "-m", "venv", str(tools))
            runner.run(str(python), "-m", "pip", "install", "--quiet", PIP_TOOLS, "packaging")
        folder = root / spec.container
        locks_script = str(root / "containers" / "locks.py")
        if check:
            runner.run(str(python), locks_script, "verify", str(folder), spec.python)
            continue
        # pip-compile writes the paths it is given into the lock (`# via -r ...`): relative to
        # the repository root (nox's working directory), so a lock reads the same from any clone.
        rel = Path(os.path.relpath(folder, root))
        env = {
            "CUSTOM_COMPILE_COMMAND": f"nox -s lock -- {spec.name}",
            "PIP_FIND_LINKS": "",
            "PIP_CONFIG_FILE": os.devnull,
        }
        runner.run(
            str(tools / "bin" / "pip-compile"),
            "--quiet",
            "--generate-hashes",
            "--allow-unsafe",
            "--strip-extras",
            "--no-emit-index-url",
            "--no-emit-find-links",
            "--upgrade",
            "--output-file",
            str(rel / "requirements.txt"),
            str(rel / "requirements.in"),
            env=env,
        )
        runner.run(str(python), locks_script, "prune", str(folder / "requirements.txt"))
