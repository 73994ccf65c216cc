"""What a verb needs that the host may lack: `env` needs torch (it describes the environment a
benchmark runs in), `merge` and `compare` need pandas and matplotlib (the host side). The
README's host has neither (nox and PyYAML only): there, such a verb says in one line what to
install or which Python to use (exit status 2), never a traceback.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Sequence

from suite.errors import UsageError

TORCH = ("torch",)
REPORT = ("pandas", "matplotlib", "pyarrow")
TORCH_HINT = (
    "run it with a build's Python (`.nox/build-current/bin/python -m suite env`, made by "
    "`nox -s bench-local`), or `pip install torch transformers` into this one"
)
MERGE_HINT = (
    "use `nox -s merge -- RUN_DIR` (it keeps a virtualenv with them in .nox/merge), "
    "or `pip install pandas matplotlib pyarrow` into this one"
)
COMPARE_HINT = (
    "use the Python of the merge's virtualenv (`.nox/merge/bin/python -m suite compare ...`, "
    "made by `nox -s merge`), or `pip install pandas matplotlib pyarrow` into this one"
)


@contextlib.contextmanager
def needs(verb: str, modules: Sequence[str], hint: str) -> Iterator[None]:
    """Turn the import error of one of `modules` (a top-level package the verb needs) into one
    line naming it, this Python and `hint`; any other missing module is a bug and stays one."""
    try:
        yield
    except ModuleNotFoundError as exc:
        top = (exc.name or "").split(".")[0]
        if top == "numpy" and "pandas" in modules:  # pandas brings numpy: a host without one lacks both
            top = "pandas"
        if top not in modules:
            raise
        named = f"{', '.join(modules[:-1])} and {modules[-1]}" if len(modules) > 1 else modules[0]
        raise UsageError(
            top, f"not installed in this Python ({sys.executable}); `suite {verb}` needs {named}: {hint}"
        ) from None
