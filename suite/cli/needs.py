"""What a verb needs that the host may lack: `env` needs torch (it describes the environment a
benchmark runs in), `merge` and `compare` need pandas and matplotlib (the host side). The
README's host has neither (nox and PyYAML only): there, such a verb says in one line what to
install or which Python to use (exit status 2), never a traceback.
"""

from __future__ import annotations

import contextlib
import re
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
    "or `pip install -e '.[host]'` (pandas, matplotlib, pyarrow) into this one"
)
COMPARE_HINT = (
    "use the Python of the merge's virtualenv (`.nox/merge/bin/python -m suite compare ...`, "
    "made by `nox -s merge`), or `pip install -e '.[host]'` (pandas, matplotlib, pyarrow) into this one"
)


def missing(exc: ImportError, modules: Sequence[str]) -> str | None:
    """Which of `modules` an import error is about, or None. A missing module names itself
    (`exc.name`); a package that finds an optional one absent raises a bare ImportError whose
    message names it (pandas without pyarrow: "Unable to find a usable engine; tried using:
    'pyarrow', ..."), so the message is searched for the modules too."""
    top = (exc.name or "").split(".")[0]
    if top == "numpy" and "pandas" in modules:  # pandas brings numpy: a host without one lacks both
        return "pandas"
    if top in modules:
        return top
    if top:
        return None  # another module: a bug, not a missing package of this verb
    said = str(exc)
    return next((m for m in modules if re.search(rf"\b{re.escape(m)}\b", said)), None)


@contextlib.contextmanager
def needs(verb: str, modules: Sequence[str], hint: str) -> Iterator[None]:
    """Turn the import error of one of `modules` (a top-level package the verb needs) into one
    line naming it, this Python and `hint`; any other missing module is a bug and stays one.
    ImportError too, not only ModuleNotFoundError: a package can refuse to work without an
    optional one (pandas' Parquet without pyarrow), and that must read the same."""
    try:
        yield
    except ImportError as exc:
        top = missing(exc, modules)
        if top is None:
            raise
        named = f"{', '.join(modules[:-1])} and {modules[-1]}" if len(modules) > 1 else modules[0]
        raise UsageError(
            top, f"not installed in this Python ({sys.executable}); `suite {verb}` needs {named}: {hint}"
        ) from None
