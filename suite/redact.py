"""Keep secrets out of everything the suite writes: CSVs, cell logs, terminal lines, and
the argument lists of docker commands; the one place that says what a secret is.

A secret is the value of an environment variable (or the name of a build argument) with a
secret name: one of its words (split at anything but a letter or a digit), in any case, is
or ends with TOKEN, KEY, SECRET, PASSWORD, PASSWD or CREDENTIAL, plural too. So HF_TOKEN,
HUGGING_FACE_HUB_TOKEN, gh_token, OPENAI_API_KEY, APIKEY, AWS_SECRET_ACCESS_KEY,
SSH_KEY_PATH, PGPASSWORD and GOOGLE_APPLICATION_CREDENTIALS are; KEYBOARD and
TOKENIZERS_PARALLELISM are not. Such values pass through to the workers (the hub needs
`HF_TOKEN`), so an error message, a traceback or a print can carry one; every string the
suite writes goes through `redact` first, which replaces each value with
`<redacted:NAME>`, and the container sessions refuse a docker command that holds one
(`suite.sessions.docker.leaked_secrets`). Values shorter than `MIN_LENGTH` are left alone by
both: replacing "1", "true" or "none" everywhere would corrupt numbers and command lines
(`--network none`), and no real token is that short.

A URL's credentials (`https://user:password@host/...`, or a token as the user name) are
secrets too, whatever variable they came from: `redact` replaces the part before the `@`
with `<redacted:url-credentials>`, and the container sessions refuse a docker command that
holds one (`has_url_credentials`).

Standard library only (imported inside the containers). The environment is read on each
call, so a variable set after import is still covered.
"""

from __future__ import annotations

import io
import os
import re
from collections.abc import Mapping
from typing import TextIO

SECRET_WORDS: tuple[str, ...] = ("TOKEN", "KEY", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL")
_SECRET_WORD = re.compile(f"(?:{'|'.join(SECRET_WORDS)})S?$")
_WORD_SPLIT = re.compile(r"[^A-Z0-9]+")
MIN_LENGTH = 8
URL_CREDENTIALS = "url-credentials"
# scheme://userinfo@ : the userinfo runs to the last "@" before the host's path, query or
# fragment (a password with a bare "@" in it is still taken whole).
_URL_USERINFO = re.compile(
    r"(?P<scheme>\b[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^\s/?#@]+(?:@[^\s/?#@]+)*)@"
)


def is_secret_name(name: str) -> bool:
    """Whether a variable (or build argument) of this name holds a secret (see above)."""
    return any(_SECRET_WORD.search(word) for word in _WORD_SPLIT.split(name.upper()))


def secrets_of(environ: Mapping[str, str] | None = None) -> list[tuple[str, str]]:
    """(value, name) of every secret in the environment, longest value first (so a
    value that contains another is replaced whole)."""
    env = os.environ if environ is None else environ
    found: dict[str, str] = {}
    for name, value in env.items():
        if is_secret_name(name) and len(value) >= MIN_LENGTH and value not in found:
            found[value] = name
    return sorted(found.items(), key=lambda item: -len(item[0]))


def marker(name: str) -> str:
    return f"<redacted:{name}>"


def has_url_credentials(text: str) -> bool:
    """Whether `text` holds a URL with credentials (user:password@ or token@)."""
    return _URL_USERINFO.search(text) is not None


def redact(text: str, environ: Mapping[str, str] | None = None) -> str:
    """`text` with every secret value replaced by a marker naming its variable, and every
    URL's credentials by `<redacted:url-credentials>`."""
    for value, name in secrets_of(environ):
        if value in text:
            text = text.replace(value, marker(name))
    return _URL_USERINFO.sub(lambda m: m.group("scheme") + marker(URL_CREDENTIALS) + "@", text)


def redact_bytes(data: bytes, environ: Mapping[str, str] | None = None) -> bytes:
    """`redact` for raw output (a worker's log), without decoding it."""
    for value, name in secrets_of(environ):
        raw = value.encode("utf-8", "surrogateescape")
        if raw in data:
            data = data.replace(raw, marker(name).encode())
    if b"://" in data and b"@" in data:
        text = data.decode("utf-8", "surrogateescape")
        data = redact(text, {}).encode("utf-8", "surrogateescape")
    return data


class RedactingStream(io.TextIOBase):
    """A text stream that redacts whole lines before passing them on.

    Output is held until a newline (or flush), so a secret split over several `write`
    calls (print writes its arguments one by one) is still seen whole.
    """

    def __init__(self, target: TextIO) -> None:
        super().__init__()
        self.target = target
        self._pending = ""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._pending += text
        if "\n" in self._pending:
            complete, _, self._pending = self._pending.rpartition("\n")
            self.target.write(redact(complete + "\n"))
        return len(text)

    def flush(self) -> None:
        if self._pending:
            self.target.write(redact(self._pending))
            self._pending = ""
        self.target.flush()

    def isatty(self) -> bool:
        return self.target.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self.target, "encoding", "utf-8")
