"""The one exception type for bad input: the CLI turns it into one line and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (file, field or flag). The message names where, in one line."""

    exit_code = 2

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)


def first_line(text: str, default: str = "") -> str:
    """The first non-blank line of `text`, stripped (an error message's headline)."""
    return next((line.strip() for line in text.splitlines() if line.strip()), default)


def last_line(text: str, default: str = "") -> str:
    """The last non-blank line of `text`, stripped (where a child process said why it stopped)."""
    return next((line.strip() for line in reversed(text.splitlines()) if line.strip()), default)
