"""Which torch nightly a nightly build installs: resolve tonight's (or a given date's) wheels
on the nightly index, with their sha256 and the commit they were built from.

    nightly_pin.py resolve --build NAME [--index URL] [--date newest|YYYYMMDD] [--matrix matrix.yaml]
    nightly_pin.py check  --index URL --torch 2.15.0 --vision 0.30.0 --date 20260926 [--python 3.11]
    nightly_pin.py newest --index URL --torch 2.15.0 --vision 0.30.0 [--python 3.11]
    nightly_pin.py bump   [--matrix matrix.yaml] [--build nightly-current] [--date D]
    nightly_pin.py git-sha DATE

`resolve` is what a run asks once, before any image is built: it prints one JSON object
(date, torch, torch_url, torch_sha256, torchvision, torchvision_url, torchvision_sha256,
git_sha, triton, index, python, build). The night is the newest date whose torch and
torchvision wheels (CPython of the build's Python, Linux x86_64) are both on the index (a
torchvision nightly requires its own day's torch exactly); the torch line is whatever the
index holds that night (the newest line when two are there), never matrix.yaml's `torch`.
An explicit --date must be on the index, else one line names the newest one and exit 1.
The sha256 is the index's `#sha256=` fragment, else the wheel is downloaded and hashed.
git_sha and triton are read from the torch wheel itself (torch/version.py's git_version,
the pytorch-triton/triton requirement of its METADATA), through HTTP range requests for
those two members only; empty when that cannot be done (never guessed): the rows then
carry the installed torch's own git_version. The index is --index, else the variable
SUITE_NIGHTLY_INDEX, else the build's index_url in matrix.yaml.

`check` and `newest` answer for one torch line (`check` fails in one line once a date has
left the index, which keeps about 60 days); `bump` writes a date into matrix.yaml
(TORCH_NIGHTLY_DATE of one build: a pin, for a reproduction); `git-sha` reads the commit of
a date from pytorch's `nightly` branch through the GitHub API. Exit 0 ok, 1 the date is
gone or nothing usable is on the index, 2 bad arguments or an unreadable index (one line).

Standard library only (reading matrix.yaml takes PyYAML, which the host sessions have):
it runs before anything is installed, and honours SSL_CERT_FILE for a TLS-inspecting proxy.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import os
import re
import struct
import sys
import tempfile
import urllib.parse
import urllib.request
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path

DAYS_KEPT = "about 60 days"
INDEX_ENV = "SUITE_NIGHTLY_INDEX"
WHEEL = re.compile(
    r"(?P<name>torch|torchvision)-(?P<line>\d+\.\d+\.\d+)\.dev(?P<date>\d{8})(?P<local>(?:%2B|\+)[A-Za-z0-9.]+)?"
    r"-cp(?P<py>\d+)-cp\d+-(?:manylinux[A-Za-z0-9_.]*_x86_64|linux_x86_64)\.whl"
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


# --- resolve: tonight's wheels, by URL and sha256 ----------------------------------------

ANCHOR = re.compile(r"<a\s[^>]*?href\s*=\s*[\"']([^\"']+)[\"']", re.IGNORECASE)
GIT_VERSION = re.compile(r"""^git_version\s*(?::\s*str\s*)?=\s*['"]([0-9a-f]{7,40})['"]""", re.MULTILINE)
TRITON_REQUIRES = re.compile(
    r"^Requires-Dist:\s*(pytorch-triton|triton)\s*\(?\s*(==|~=|>=)\s*([^\s;,)]+)", re.MULTILINE
)
TAIL = 65536  # bytes read from a wheel's end to find its zip directory


@dataclass(frozen=True)
class Link:
    """One nightly wheel an index page lists."""

    name: str  # torch | torchvision
    version: str  # 2.16.0.dev20261126+cu130
    line: str  # 2.16.0
    date: str  # 20261126
    url: str  # absolute, without its fragment
    sha256: str  # the index's #sha256= fragment, or ""


def version_key(text: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", text))


def links(index: str, name: str, python: str) -> list[Link]:
    """The `name` nightly wheels for CPython `python` on Linux x86_64 of a PEP 503 index."""
    page_url = f"{index.rstrip('/')}/{name}/"
    py = python.replace(".", "")
    found = []
    for href in ANCHOR.findall(fetch(page_url)):
        url, _, fragment = urllib.parse.urljoin(page_url, html.unescape(href)).partition("#")
        match = WHEEL.fullmatch(url.rsplit("/", 1)[-1])
        if match is None or match["name"] != name or match["py"] != py:
            continue
        local = urllib.parse.unquote(match["local"] or "")
        digest = fragment[len("sha256=") :] if fragment.startswith("sha256=") else ""
        version = f"{match['line']}.dev{match['date']}{local}"
        found.append(Link(name, version, match["line"], match["date"], url, digest.lower()))
    return found


def pick(candidates: list[Link], date: str) -> Link | None:
    """The wheel of `date` of the newest line (a manylinux tag over a plain linux one)."""
    of_date = [c for c in candidates if c.date == date]
    return max(of_date, key=lambda c: (version_key(c.line), "manylinux" in c.url, c.url), default=None)


def night(index: str, python: str, date: str = "newest") -> tuple[Link, Link]:
    """(torch, torchvision) of the newest complete night, or of `date` (PinError if gone)."""
    torch, vision = links(index, "torch", python), links(index, "torchvision", python)
    complete = sorted({t.date for t in torch} & {v.date for v in vision})
    where = f"{index} (Python {python}, Linux x86_64)"
    if not complete:
        what = "torchvision nightly of any torch nightly's date" if torch else "torch nightly wheel"
        raise PinError(f"no {what} on {where}")
    if date in ("", "newest"):
        date = complete[-1]
    elif not re.fullmatch(r"\d{8}", date):
        raise PinError(f"--date {date!r} is not `newest` or a date like 20261126", code=2)
    elif date not in complete:
        half = "has torch but no torchvision" if any(t.date == date for t in torch) else "is no longer"
        raise PinError(
            f"the nightly of {date} {half} on {where}, which keeps {DAYS_KEPT}; the newest complete "
            f"night there is {complete[-1]}: pin that date, or drop the date to follow the newest"
        )
    found_torch, found_vision = pick(torch, date), pick(vision, date)
    assert found_torch is not None and found_vision is not None
    return found_torch, found_vision


def sha256_of(link: Link, keep: Path | None = None) -> str:
    """The index's hash, else the wheel downloaded (to `keep` when given) and hashed."""
    if link.sha256:
        return link.sha256
    digest = hashlib.sha256()
    try:
        with urllib.request.urlopen(link.url, timeout=600) as resp, open(keep or os.devnull, "wb") as out:
            for block in iter(lambda: resp.read(1 << 20), b""):
                digest.update(block)
                out.write(block)
    except OSError as exc:
        raise PinError(
            f"cannot download {link.url} to hash it: {getattr(exc, 'reason', exc)}", code=2
        ) from None
    return digest.hexdigest()


def _range(url: str, start: int | None, end: int | None) -> bytes | None:
    """Bytes start..end of url (start None: the last `end` bytes); None unless the server
    answers with just that part (206): a wheel is never downloaded whole for this."""
    spec = f"bytes=-{end}" if start is None else f"bytes={start}-{end}"
    try:
        request = urllib.request.Request(url, headers={"Range": spec})
        with urllib.request.urlopen(request, timeout=60) as resp:
            return resp.read() if resp.status == 206 else None
    except (OSError, ValueError):
        return None


def _directory(url: str) -> dict[str, tuple[int, int, int, int]] | None:
    """A remote zip's members: name -> (method, compressed size, name+extra guess, offset)."""
    tail = _range(url, None, TAIL)
    at = tail.rfind(b"PK\x05\x06") if tail else -1
    if tail is None or at < 0:
        return None
    size, offset = struct.unpack("<II", tail[at + 12 : at + 20])
    loc = tail.rfind(b"PK\x06\x07", 0, at)
    if loc >= 0:  # zip64: the directory's place is in the zip64 end record
        (end64,) = struct.unpack("<Q", tail[loc + 8 : loc + 16])
        record = _range(url, end64, end64 + 55)
        if record is None or not record.startswith(b"PK\x06\x06"):
            return None
        size, offset = struct.unpack("<QQ", record[40:56])
    data = _range(url, offset, offset + size - 1)
    if data is None:
        return None
    members, pos = {}, 0
    while data[pos : pos + 4] == b"PK\x01\x02":
        (method,) = struct.unpack("<H", data[pos + 10 : pos + 12])
        csize, _, nlen, elen, clen = struct.unpack("<IIHHH", data[pos + 20 : pos + 34])
        (local,) = struct.unpack("<I", data[pos + 42 : pos + 46])
        name = data[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        members[name] = (method, csize, nlen + elen, local)
        pos += 46 + nlen + elen + clen
    return members


def _member(url: str, members: dict[str, tuple[int, int, int, int]], name: str) -> str:
    method, csize, guess, local = members[name]
    blob = _range(url, local, local + 30 + guess + 1024 + csize)
    if blob is None or not blob.startswith(b"PK\x03\x04"):
        return ""
    nlen, elen = struct.unpack("<HH", blob[26:30])
    raw = blob[30 + nlen + elen : 30 + nlen + elen + csize]
    try:
        data = zlib.decompress(raw, -15) if method == 8 else raw
    except zlib.error:
        return ""
    return data.decode("utf-8", "replace")


def wheel_facts(url: str, local_file: Path | None = None) -> dict[str, str]:
    """git_sha (torch/version.py) and triton (METADATA's requirement) of a torch wheel: from
    the downloaded file, else through range requests; empty where neither can read them."""
    texts: dict[str, str] = {}
    if local_file is not None:
        with zipfile.ZipFile(local_file) as wheel:
            for name in wheel.namelist():
                if name == "torch/version.py" or name.endswith(".dist-info/METADATA"):
                    texts[name] = wheel.read(name).decode("utf-8", "replace")
    else:
        members = _directory(url) or {}
        for name in members:
            if name == "torch/version.py" or (name.endswith(".dist-info/METADATA") and name.count("/") == 1):
                texts[name] = _member(url, members, name)
    version = texts.get("torch/version.py", "")
    meta = next((t for n, t in texts.items() if n.endswith("METADATA")), "")
    git = GIT_VERSION.search(version)
    triton = TRITON_REQUIRES.search(meta)
    return {"git_sha": git[1] if git else "", "triton": "".join(triton.groups()) if triton else ""}


def index_of(build: str, matrix: Path, given: str | None) -> tuple[str, str]:
    """(index URL, Python) of a build: --index, else SUITE_NIGHTLY_INDEX, else matrix.yaml."""
    try:
        import yaml

        spec = yaml.safe_load(matrix.read_text(encoding="utf-8"))["builds"][build]
        index, python = spec.get("index_url", ""), str(spec["python"])
    except ImportError:
        raise PinError("reading matrix.yaml needs PyYAML (pip install pyyaml)", code=2) from None
    except (OSError, yaml.YAMLError, KeyError, TypeError, AttributeError) as exc:
        raise PinError(f"{matrix}: builds.{build}: cannot read it ({exc})", code=2) from None
    index = given or os.environ.get(INDEX_ENV, "") or index
    if not index:
        raise PinError(f"{matrix}: builds.{build}.index_url: none, and no --index or {INDEX_ENV}", code=2)
    return index, python


def resolve(index: str, python: str, date: str = "newest", build: str = "") -> dict[str, str]:
    """What a nightly build installs tonight (or on `date`): resolve's JSON object."""
    torch, vision = night(index, python, date)
    with tempfile.TemporaryDirectory(prefix="nightly-pin-") as tmp:
        kept = None if torch.sha256 else Path(tmp) / "torch.whl"
        torch_sha = sha256_of(torch, kept)
        facts = wheel_facts(torch.url, kept)
    return {
        "build": build,
        "index": index,
        "python": python,
        "date": torch.date,
        "torch": torch.version,
        "torch_url": torch.url,
        "torch_sha256": torch_sha,
        "torchvision": vision.version,
        "torchvision_url": vision.url,
        "torchvision_sha256": sha256_of(vision),
        "git_sha": facts["git_sha"],
        "triton": facts["triton"],
    }


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
        r'(?m)^(\s+TORCH_NIGHTLY_DATE:\s*)"?[A-Za-z0-9]*"?', rf'\g<1>"{date}"', block.group(0), count=1
    )
    if count != 1:
        raise PinError(f"matrix.yaml: builds.{build}.build_args: no TORCH_NIGHTLY_DATE", code=2)
    if sha:
        body, count = re.subn(r'(?m)^(\s+TORCH_GIT_SHA:\s*)"?[0-9a-f]*"?', rf'\g<1>"{sha}"', body, count=1)
        if count == 0:
            line = rf'\g<1>\g<2>\n\g<1>TORCH_GIT_SHA: "{sha}"'
            body = re.sub(r"(?m)^(\s+)(TORCH_NIGHTLY_DATE:.*)$", line, body, count=1)
    return text[: block.start()] + body + text[block.end() :]


def bump(matrix: Path, build: str, date: str | None, with_sha: bool = False) -> str:
    """Pin `build` in matrix.yaml to `date` (else the newest complete night), once resolve has
    found it on the index; with `with_sha`, also TORCH_GIT_SHA (the wheel's own, else the
    GitHub API's record of that night)."""
    index, python = index_of(build, matrix, None)
    found = resolve(index, python, date or "newest", build)
    sha = (found["git_sha"] or git_sha(found["date"])) if with_sha else ""
    matrix.write_text(
        set_date(matrix.read_text(encoding="utf-8"), build, found["date"], sha), encoding="utf-8"
    )
    return found["date"]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="nightly_pin.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("resolve", help="tonight's (or --date's) wheels of a build, as one JSON object")
    cmd.add_argument("--build", required=True)
    cmd.add_argument("--index", help=f"the nightly index (default: ${INDEX_ENV}, else matrix.yaml's)")
    cmd.add_argument("--date", default="newest", help="newest (default) or YYYYMMDD")
    cmd.add_argument("--matrix", type=Path, default=Path("matrix.yaml"))
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
    cmd.add_argument("--git-sha", action="store_true", help="also write TORCH_GIT_SHA")
    cmd = sub.add_parser("git-sha")
    cmd.add_argument("date")
    args = parser.parse_args(argv)
    try:
        if args.command == "resolve":
            index, python = index_of(args.build, args.matrix, args.index)
            print(json.dumps(resolve(index, python, args.date, args.build), sort_keys=True))
        elif args.command == "check":
            date = check(args.index, args.torch, args.vision, args.date, args.python)
            pair = f"torch {args.torch}.dev{date} and torchvision {args.vision}.dev{date}"
            print(f"nightly_pin: {pair} are on the index")
        elif args.command == "newest":
            print(newest(args.index, args.torch, args.vision, args.python))
        elif args.command == "git-sha":
            print(git_sha(args.date))
        else:
            print(bump(args.matrix, args.build, args.date, args.git_sha))
    except PinError as exc:
        print(f"nightly_pin: {exc}", file=sys.stderr)
        return exc.code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
