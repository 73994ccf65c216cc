"""The one exception type for bad input: the CLI turns it into one line and exit status 2."""

from __future__ import annotations


class UsageError(Exception):
    """Bad input from the user (file, field or flag). The message names where, in one line."""

    exit_code = 2

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        super().__init__(f"{where}: {message}" if where else message)
