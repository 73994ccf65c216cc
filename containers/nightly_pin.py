"""Which torch nightly the `nightly-current` build installs: is its pinned date still on the
nightly index, which is the newest there, and move the pin.

    nightly_pin.py check  --index URL --torch 2.15.0 --vision 0.30.0 --date 20260926 [--python 3.11]
    nightly_pin.py newest --index URL --torch 2.15.0 --vision 0.30.0 [--python 3.11]
    nightly_pin.py bump   [--matrix matrix.yaml] [--build nightly-current] [--date D] [--if-gone]
                          [--git-sha]
    nightly_pin.py verify [--matrix matrix.yaml] [--build nightly-current]
    nightly_pin.py git-sha DATE

The nightly index keeps about 60 days of wheels, so a date pinned in matrix.yaml falls off
it within weeks. `check` runs first in the image build (containers/nightly-current/
Dockerfile) and fails it in one line that names the fix, before pip's long resolution
error. `newest` prints the newest date for which both torch and its torchvision have a
CPython Linux x86_64 wheel (a torchvision nightly requires its own day's torch exactly).
`bump` rewrites TORCH_NIGHTLY_DATE of one build in matrix.yaml (to --date, else the newest;
with --if-gone only when the pinned date has left the index) and prints the date in force;
with --git-sha it also writes TORCH_GIT_SHA, the pytorch/pytorch commit that nightly was built
from (`git-sha`: the `nightly` branch records each night as "YYYY-MM-DD nightly release (<sha>)",
read through the GitHub API, with GH_TOKEN if set), which the image build then checks.
`verify` is the nightly workflow's check before any benchmark job: exit 0 and the pinned date
while it is on the index; exit 1 with the newest date on stdout and one line on stderr once it
has left (the workflow stops there, or opens a pull request that commits the newest date: a
run never installs a nightly other than the pinned one). Exit 0 ok, 1 the date is gone or
nothing usable is on the index, 2 bad arguments or an unreadable index (one line each).

Standard library only (bump reads matrix.yaml with PyYAML): it runs in the image before
anything is installed, and honours SSL_CERT_FILE for a TLS-inspecting proxy's CA.
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import sys
import urllib.request
from pathlib import Path

DAYS_KEPT = "about 60 days"
WHEEL = re.compile(
    r"(?P<name>torch|torchvision)-(?P<line>\d+\.\d+\.\d+)\.dev(?P<date>\d{8})(?:%2B|\+)[A-Za-z0-9.]+"
    r"-cp(?P<py>\d+)-cp\d+t?-(?:manylinux[A-Za-z0-9_]*_x86_64|linux_x86_64)\.whl"
)


class PinError(Exception):
    """One line for the user; `code` is the exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


def nightly_dates(page: str, name: str, line: str, python: str) -> set[str]:
    """The dates of `name` `line`.devDATE wheels for CPython `python` on Linux x86_64 that
    a PEP 503 index page lists."""
    py = python.replace(".", "")
    found = set()
    for match in WHEEL.finditer(html.unescape(page)):
        if match["name"] == name and match["line"] == line and match["py"] == py:
            found.add(match["date"])
    return found


def fetch(url: str, timeout: float = 60, headers: dict[str, str] | None = None) -> str:
    try:
        request = urllib.request.Request(url, headers=headers or {})
        with urllib.request.urlopen(request, timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace")
    except (OSError, ValueError) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise PinError(f"cannot read the nightly index {url}: {reason}", code=2) from None


def usable_dates(index: str, torch: str, vision: str, python: str) -> tuple[set[str], set[str]]:
    """(dates with a torch wheel, dates with both torch and torchvision wheels)."""
    base = index.rstrip("/")
    torch_dates = nightly_dates(fetch(f"{base}/torch/"), "torch", torch, python)
    vision_dates = nightly_dates(fetch(f"{base}/torchvision/"), "torchvision", vision, python)
    return torch_dates, torch_dates & vision_dates


def newest(index: str, torch: str, vision: str, python: str) -> str:
    torch_dates, both = usable_dates(index, torch, vision, python)
    if not both:
        what = f"torchvision {vision}.dev for those dates" if torch_dates else f"torch {torch}.dev wheel"
        raise PinError(
            f"{index}: no {what} for Python {python} on Linux x86_64; the nightly line has "
            f"probably moved on: set builds.nightly-current.torch and TORCHVISION_VERSION in matrix.yaml"
        )
    return max(both)


def check(index: str, torch: str, vision: str, date: str, python: str) -> str:
    """The pinned date, if torch and torchvision of that date are both on the index."""
    if not re.fullmatch(r"\d{8}", date):
        raise PinError(f"TORCH_NIGHTLY_DATE {date!r} is not a date like 20260926", code=2)
    _, both = usable_dates(index, torch, vision, python)
    if date in both:
        return date
    latest = newest(index, torch, vision, python)
    raise PinError(
        f"torch {torch}.dev{date} (with torchvision {vision}.dev{date}) is no longer on {index}, "
        f"which keeps {DAYS_KEPT}; the newest there is {latest}: set TORCH_NIGHTLY_DATE: "
        f'"{latest}" in matrix.yaml (builds.nightly-current.build_args), or run '
        f"`python containers/nightly_pin.py bump`"
    )


NIGHTLY_BRANCH = "https://api.github.com/repos/pytorch/pytorch/commits?sha=nightly&per_page=100"
_RELEASE = re.compile(r"^(\d{4}-\d\d-\d\d) nightly release \(([0-9a-f]{40})\)")


def git_sha(date: str, page: str | None = None) -> str:
    """The pytorch/pytorch commit the nightly of `date` (YYYYMMDD) was built from, as the
    `nightly` branch records it."""
    if page is None:
        token = os.environ.get("GH_TOKEN") or os.environ.get("GITHUB_TOKEN") or ""
        headers = {"Accept": "application/vnd.github+json"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        page = fetch(NIGHTLY_BRANCH, headers=headers)
    try:
        commits = json.loads(page)
    except json.JSONDecodeError:
        raise PinError("the GitHub API's answer on pytorch's nightly branch is not JSON", code=2) from None
    day = f"{date[:4]}-{date[4:6]}-{date[6:]}"
    for commit in commits if isinstance(commits, list) else []:
        match = _RELEASE.match(str((commit.get("commit") or {}).get("message", "")))
        if match and match[1] == day:
            return match[2]
    raise PinError(f"pytorch/pytorch's nightly branch has no release of {day} among its last 100 commits")


def set_date(text: str, build: str, date: str, sha: str = "") -> str:
    """matrix.yaml's text with TORCH_NIGHTLY_DATE of `build` set to `date`, and TORCH_GIT_SHA
    to `sha` when given (added after the date if missing); comments kept."""
    block = re.search(rf"(?m)^  {re.escape(build)}:\n(?:(?:    .*|\s*)\n)*", text)
    if block is None:
        raise PinError(f"matrix.yaml: builds.{build}: not found", code=2)
    body, count = re.subn(
        r'(?m)^(\s+TORCH_NIGHTLY_DATE:\s*)"?\d*"?', rf'\g<1>"{date}"', block.group(0), count=1
    )
    if count != 1:
        raise PinError(f"matrix.yaml: builds.{build}.build_args: no TORCH_NIGHTLY_DATE", code=2)
    if sha:
        body, count = re.subn(r'(?m)^(\s+TORCH_GIT_SHA:\s*)"?[0-9a-f]*"?', rf'\g<1>"{sha}"', body, count=1)
        if count == 0:
            line = rf'\g<1>\g<2>\n\g<1>TORCH_GIT_SHA: "{sha}"'
            body = re.sub(r"(?m)^(\s+)(TORCH_NIGHTLY_DATE:.*)$", line, body, count=1)
    return text[: block.start()] + body + text[block.end() :]


def verify(matrix: Path, build: str) -> str:
    """The pinned date while it is on the index; else PinError(code 1) naming the newest date."""
    torch, vision, pinned, index, python = pin_of(matrix, build)
    try:
        return check(index, torch, vision, pinned, python)
    except PinError as exc:
        if exc.code != 1:
            raise
        exc.newest = newest(index, torch, vision, python)  # type: ignore[attr-defined]
        raise


def pin_of(matrix: Path, build: str) -> tuple[str, str, str, str, str]:
    """(torch line, torchvision line, pinned date, index, Python) of the build in matrix.yaml."""
    import yaml

    try:
        spec = yaml.safe_load(matrix.read_text(encoding="utf-8"))["builds"][build]
        args = spec["build_args"]
        torch, vision, pinned = spec["torch"], args["TORCHVISION_VERSION"], args["TORCH_NIGHTLY_DATE"]
        index, python = spec["index_url"], spec["python"]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise PinError(f"{matrix}: builds.{build}: cannot read its nightly pin ({exc})", code=2) from None
    return str(torch), str(vision), str(pinned), str(index), str(python)


def bump(matrix: Path, build: str, date: str | None, if_gone: bool, with_sha: bool = False) -> str:
    torch, vision, pinned, index, python = pin_of(matrix, build)
    if date is None and if_gone:
        try:
            return check(index, torch, vision, pinned, python)
        except PinError as exc:
            if exc.code != 1:
                raise
    target = date or newest(index, torch, vision, python)
    sha = git_sha(target) if with_sha else ""
    matrix.write_text(set_date(matrix.read_text(encoding="utf-8"), build, target, sha), encoding="utf-8")
    return target


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nightly_pin.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("check", "newest"):
        cmd = sub.add_parser(name)
        cmd.add_argument("--index", required=True)
        cmd.add_argument("--torch", required=True)
        cmd.add_argument("--vision", required=True)
        cmd.add_argument("--python", default="3.11")
        if name == "check":
            cmd.add_argument("--date", required=True)
    cmd = sub.add_parser("bump")
    cmd.add_argument("--matrix", type=Path, default=Path("matrix.yaml"))
    cmd.add_argument("--build", default="nightly-current")
    cmd.add_argument("--date")
    cmd.add_argument("--if-gone", action="store_true")
    cmd.add_argument("--git-sha", action="store_true", help="also write TORCH_GIT_SHA (GitHub API)")
    cmd = sub.add_parser("verify")
    cmd.add_argument("--matrix", type=Path, default=Path("matrix.yaml"))
    cmd.add_argument("--build", default="nightly-current")
    cmd = sub.add_parser("git-sha")
    cmd.add_argument("date")
    args = parser.parse_args(argv)
    try:
        if args.command == "check":
            date = check(args.index, args.torch, args.vision, args.date, args.python)
            pair = f"torch {args.torch}.dev{date} and torchvision {args.vision}.dev{date}"
            print(f"nightly_pin: {pair} are on the index")
        elif args.command == "newest":
            print(newest(args.index, args.torch, args.vision, args.python))
        elif args.command == "verify":
            print(verify(args.matrix, args.build))
        elif args.command == "git-sha":
            print(git_sha(args.date))
        else:
            print(bump(args.matrix, args.build, args.date, args.if_gone, args.git_sha))
    except PinError as exc:
        if getattr(exc, "newest", ""):
            print(exc.newest)  # type: ignore[attr-defined]
        print(f"nightly_pin: {exc}", file=sys.stderr)
        return exc.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
