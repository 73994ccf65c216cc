"""A failed cell in one line: its status (oom or error) and its reason, root cause included."""

from __future__ import annotations

from suite.errors import first_line


def is_oom(exc: BaseException) -> bool:
    import torch

    oom_type = getattr(torch.cuda, "OutOfMemoryError", None)
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:  # dynamo wraps the real error
        seen.add(id(e))
        if isinstance(e, MemoryError) or (oom_type is not None and isinstance(e, oom_type)):
            return True
        text = str(e).lower()
        if "out of memory" in text or "cublas_status_alloc_failed" in text:
            return True
        e = e.__cause__ or e.__context__
    return False


def _first_line(exc: BaseException) -> str:
    first = first_line(str(exc))
    return f"{type(exc).__name__}: {first}" if first else type(exc).__name__


def describe_exception(exc: BaseException) -> str:
    """`Type: first line`, plus the root cause when the exception wraps one: dynamo raises
    bare wrappers (`InternalTorchDynamoError`, `BackendCompilerFailed`) whose cause is the
    only part that says what went wrong."""
    reason = _first_line(exc)
    root, seen = exc, {id(exc)}
    while root.__cause__ is not None and id(root.__cause__) not in seen:
        root = root.__cause__
        seen.add(id(root))
    if root is not exc:
        reason += f" (cause: {_first_line(root)})"
    return reason
