"""Typed reads of one YAML mapping, each naming the file and the field path in its error."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from suite.errors import UsageError


class Reader:
    """Typed access to one YAML mapping, with the file and field path in every error."""

    def __init__(self, file: str, path: str, data: object) -> None:
        self.file, self.path = file, path
        if not isinstance(data, Mapping):
            self.fail(f"must be a mapping, got {kind(data)}")
        self.data: Mapping[str, Any] = data
        self._seen: set[str] = set()

    def where(self, key: object = "") -> str:
        return f"{self.file}: {join(self.path, key) or '(document)'}"

    def fail(self, message: str, key: object = "") -> None:
        raise UsageError(self.where(key), message)

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = None) -> Any:
        self._seen.add(key)
        return self.data.get(key, default)

    def sub(self, key: object, required: bool = False) -> Reader:
        if required and key not in self.data:
            self.fail("is required", key)
        return Reader(self.file, join(self.path, key), self.raw(key, {}))

    def str(self, key: str, default: str | None = None, choices: Sequence[str] = ()) -> str:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if not isinstance(value, str) or not value.strip():
            self.fail(f"must be a non-empty string, got {kind(value)}", key)
        if choices and value not in choices:
            self.fail(f"{value!r} is not one of: {', '.join(choices)}", key)
        return value

    def int(
        self, key: str, default: int | None = None, minimum: int = 1, maximum: float | None = None
    ) -> int:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(f"must be an integer, got {kind(value)}", key)
        if value < minimum:
            self.fail(f"must be >= {minimum}, got {value}", key)
        if maximum is not None and value > maximum:
            self.fail(f"must be at most {number(maximum)}, got {number(value)}", key)
        return value

    def float(
        self, key: str, default: float | None = None, positive: bool = True, maximum: float | None = None
    ) -> float:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(f"must be a number, got {kind(value)}", key)
        if value != value or value in (float("inf"), float("-inf")):
            self.fail(f"must be a finite number, got {value}", key)
        if positive and value <= 0:
            self.fail(f"must be > 0, got {value}", key)
        if maximum is not None and value > maximum:
            self.fail(f"must be at most {number(maximum)}, got {number(value)}", key)
        return float(value)

    def bool(self, key: str, default: bool) -> bool:
        value = self.raw(key, default)
        if not isinstance(value, bool):
            self.fail(f"must be true or false, got {kind(value)}", key)
        return value

    def list(self, key: str, default: list[Any] | None = None) -> list[Any]:
        value = self.raw(key, default)
        if value is None:
            self.fail("is required", key)
        if not isinstance(value, list) or not value:
            self.fail(f"must be a non-empty list, got {kind(value)}", key)
        return value

    def mapping(self, key: str) -> dict[str, Any]:
        value = self.raw(key, {})
        if not isinstance(value, Mapping):
            self.fail(f"must be a mapping, got {kind(value)}", key)
        if any(not isinstance(k, str) for k in value):
            self.fail("keys must be strings", key)
        return dict(value)

    def names(self) -> list[str]:
        """The keys of a section of named entries (builds, models, profiles): non-empty strings."""
        for key in self.data:
            if not isinstance(key, str) or not key.strip():
                self.fail(f"a name must be a non-empty string, got {kind(key)}", key)
        return list(self.data)

    def done(self) -> None:
        """Unknown keys are errors: a typo must not silently fall back to a default."""
        unknown = [k for k in self.data if k not in self._seen]
        if unknown:
            self.fail(f"unknown key {unknown[0]!r}", unknown[0])


_PLAIN_KEY = re.compile(r"^[\w.+-]+(?:\[\d+\])?$")


def join(path: str, key: object) -> str:
    """`path.key`, the key quoted when it is not a plain name (a space, a newline, a
    number), so the field path stays on one line and says exactly which key."""
    if key in ("", None):
        return path
    text = key if isinstance(key, str) and _PLAIN_KEY.match(key) else repr(key)
    return f"{path}.{text}" if path else text


def kind(value: object) -> str:
    if value is None:
        return "nothing"
    if isinstance(value, bool):
        return f"boolean {value}"
    if isinstance(value, (int, float, str)):
        return f"{type(value).__name__} {value!r}"
    return type(value).__name__


def number(value: float) -> str:
    """A number for a message, short even when it is huge (10**40 -> 1e+40)."""
    if abs(value) < 1e6:
        return f"{value:g}" if isinstance(value, float) else str(value)
    try:
        return f"{value:g}"
    except OverflowError:  # an int beyond a float's range
        return f"about 1e+{len(str(abs(value))) - 1}"
