"""A torch nightly index on this machine's loopback, for the container path's end-to-end run
where the real one (download.pytorch.org/whl/nightly) is out of reach: the `release` build's own
torch and torchvision wheels (by URL + sha256, as matrix.yaml pins them) renamed as one night of
the nightly line (`<nightly-current's torch>.devYYYYMMDD+cu130`: version, dist-info, version.py
and RECORD rewritten, the code untouched), beside the release's hash-locked dependencies (what
a nightly's torch_deps.sh installs from the index), as PEP 503 pages served with HTTP range
requests, as download.pytorch.org serves them.

It exercises what tonight's nightly goes through (resolved on the index, installed by URL +
sha256, its dependencies from its index, its night in the manifest and the rows), never what
a real nightly measures: the code is the release's, and every row and report of such a run says
the night is a stand-in. The tests' fake index (tests/support/nightly_index.py) serves through
the same handler. Host side, standard library only.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import http.server
import re
import subprocess
import sys
import threading
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from suite.errors import UsageError
from suite.sessions.nightly import follows
from suite.spec.model import BuildSpec

FILES = "files"
# the platforms pip may take a wheel for (an image's Linux x86_64, glibc 2.28 or newer): every
# manylinux tag up to it, which pip does not expand by itself when --platform is given
PLATFORMS = (*(f"manylinux_2_{minor}_x86_64" for minor in range(28, 4, -1)), "manylinux2014_x86_64",
             "manylinux2010_x86_64", "manylinux1_x86_64", "linux_x86_64")  # fmt: skip
NIGHT_FILE = "night.txt"  # the mirror's night (YYYYMMDD): a mirror made once is reused as it is
# where the mirror is served: its wheels' URLs are build arguments, so the same port each time
# keeps the night's image tag and its cached layers from one run to the next
PORT = 8736
_NAME = re.compile(r"[-_.]+")


def project(wheel: str) -> str:
    """A wheel file's project, normalized as PEP 503 names its page."""
    return _NAME.sub("-", wheel.split("-", 1)[0]).lower()


@dataclass(frozen=True)
class Renamed:
    """One wheel of the release as a night's: its project, old and new version."""

    name: str  # torch, torchvision
    old: str  # the dist-info's version (2.14.1)
    new: str  # 2.15.0.dev20261128+cu130


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _rewritten(member: str, data: bytes, r: Renamed, old_info: str) -> bytes:
    """A member's content as the night's: its METADATA version, version.py's version string."""
    if member == f"{old_info}/METADATA":
        return re.sub(rb"(?m)^Version: .*$", f"Version: {r.new}".encode(), data, count=1)
    if member == f"{r.name}/version.py":
        return re.sub(rb"(?m)^__version__ = '[^']*'", f"__version__ = '{r.new}'".encode(), data, count=1)
    return data


def rename_wheel(source: Path, target_dir: Path, r: Renamed) -> Path:
    """The wheel `source` as version `r.new`: its dist-info folder renamed, METADATA's version
    and the package's version.py rewritten, RECORD recomputed for what changed. The file name
    follows (`<name>-<new>-<tags>.whl`)."""
    old_info, new_info = f"{r.name}-{r.old}.dist-info", f"{r.name}-{r.new}.dist-info"
    tags = source.name.split("-", 2)[2]
    target = target_dir / f"{r.name}-{r.new}-{tags}"
    scratch = target.with_name(f".{target.name}.tmp")
    records: list[str] = []
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(scratch, "w", zipfile.ZIP_DEFLATED) as new:
        for info in old.infolist():
            if info.filename == f"{old_info}/RECORD":
                continue
            data = _rewritten(info.filename, old.read(info), r, old_info)
            name = (
                new_info + info.filename[len(old_info) :]
                if info.filename.startswith(old_info)
                else info.filename
            )
            new.writestr(zipfile.ZipInfo(name, info.date_time), data, compress_type=info.compress_type)
            if not name.endswith("/"):
                records.append(_record_line(name, data))
        records.append(f"{new_info}/RECORD,,")
        new.writestr(f"{new_info}/RECORD", "\n".join(records) + "\n")
    scratch.replace(target)
    return target


def fetch_checked(url: str, sha256: str, into: Path) -> Path:
    """The file at `url` in `into` (downloaded once), checked against its sha256."""
    path = into / url.rsplit("/", 1)[1].replace("%2B", "+")
    if not path.is_file() or hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        into.mkdir(parents=True, exist_ok=True)
        with urllib.request.urlopen(url, timeout=600) as response, open(path, "wb") as fh:
            while chunk := response.read(1 << 20):
                fh.write(chunk)
    if hashlib.sha256(path.read_bytes()).hexdigest() != sha256:
        raise UsageError(url, f"its sha256 is not {sha256} (matrix.yaml's): not used")
    return path


def download_locked(lock: Path, into: Path, python: str, ca: Path | None) -> None:
    """Every wheel of a hash-locked requirements file into `into` (pip, hashes checked), for
    `python` on Linux x86_64, whatever this machine's pip configuration adds (constraints)."""
    cmd = [sys.executable, "-m", "pip", "download", "--isolated", "--no-deps", "--require-hashes",
           "--only-binary=:all:", "--python-version", python, "--implementation", "cp",
           "--dest", str(into), "-r", str(lock)]  # fmt: skip
    for platform in PLATFORMS:
        cmd += ["--platform", platform]
    if ca is not None:
        cmd += ["--cert", str(ca)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = (proc.stderr + proc.stdout).splitlines()
        said = next(
            (ln for ln in reversed(lines) if ln.startswith("ERROR:")), lines[-1] if lines else "(no output)"
        )
        raise UsageError(str(lock), f"its wheels could not be downloaded for the local nightly index: {said}")


def write_pages(root: Path) -> None:
    """A PEP 503 page per project of root/files, each wheel with its sha256."""
    by_project: dict[str, list[Path]] = {}
    for wheel in sorted((root / FILES).glob("*.whl")):
        by_project.setdefault(project(wheel.name), []).append(wheel)
    for name, wheels in by_project.items():
        anchors = []
        for wheel in wheels:
            digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
            anchors.append(
                f'<a href="../{FILES}/{wheel.name.replace("+", "%2B")}#sha256={digest}">{wheel.name}</a><br/>'
            )
        (root / name).mkdir(exist_ok=True)
        body = "\n".join(anchors)
        (root / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{body}\n</body></html>\n")


def make_mirror(root: Path, release: BuildSpec, nightly: BuildSpec, repo: Path, ca: Path | None) -> str:
    """The index at `root` (made once; kept): the release's wheels as one night of `nightly`'s
    line, and the release's locked dependencies. Its night (YYYYMMDD)."""
    night_file = root / NIGHT_FILE
    if night_file.is_file():
        return night_file.read_text().strip()
    args = release.build_args
    if not all(k in args for k in ("TORCH_WHEEL_URL", "TORCH_WHEEL_SHA256", "TORCHVISION_WHEEL_URL")):
        raise UsageError(
            f"builds.{release.name}.build_args", "no torch and torchvision wheels by URL to rename"
        )
    files = root / FILES
    files.mkdir(parents=True, exist_ok=True)
    date = datetime.now(timezone.utc).strftime("%Y%m%d")
    local = "cu" + nightly.cuda.replace(".", "") if nightly.cuda else "cpu"
    download_locked(repo / f"{release.container}/requirements.txt", files, release.python, ca)
    wheels = root / "release"
    for name, key in (("torch", "TORCH"), ("torchvision", "TORCHVISION")):
        source = fetch_checked(args[f"{key}_WHEEL_URL"], args[f"{key}_WHEEL_SHA256"], wheels)
        old = source.name.split("-")[1]
        line = nightly.torch if name == "torch" else _next_minor(old)
        rename_wheel(source, files, Renamed(name, old, f"{line}.dev{date}+{local}"))
    write_pages(root)
    night_file.write_text(date + "\n")
    return date


def _next_minor(version: str) -> str:
    """The nightly line after a release (torchvision 0.29.1 -> 0.30.0)."""
    major, minor = version.split(".")[:2]
    return f"{major}.{int(minor) + 1}.0"


class RangeHandler(http.server.SimpleHTTPRequestHandler):
    """Serves files, and `Range: bytes=a-b` / `bytes=-n` as 206 partial content."""

    ranges = True

    def log_message(self, format: str, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        spec = self.headers.get("Range", "")
        match = re.fullmatch(r"bytes=(\d*)-(\d*)", spec)
        path = Path(self.translate_path(self.path))
        if not (self.ranges and match and path.is_file()):
            super().do_GET()
            return
        size = path.stat().st_size
        start, end = match.groups()
        if start:
            first, last = int(start), min(int(end) if end else size - 1, size - 1)
        else:
            first, last = max(size - int(end), 0), size - 1
        with open(path, "rb") as fh:
            fh.seek(first)
            part = fh.read(last + 1 - first)
        self.send_response(206)
        self.send_header("Content-Range", f"bytes {first}-{last}/{size}")
        self.send_header("Content-Length", str(len(part)))
        self.end_headers()
        self.wfile.write(part)


class NoRangeHandler(RangeHandler):
    ranges = False


@contextmanager
def serve(root: Path, ranges: bool = True, host: str = "127.0.0.1", port: int = 0) -> Iterator[str]:
    """The folder as http://HOST:PORT (its index URL), for the block's duration; `port` 0: any
    free one, else that one when it is free (else any)."""
    handler = functools.partial(RangeHandler if ranges else NoRangeHandler, directory=str(root))
    try:
        server = http.server.ThreadingHTTPServer((host, port), handler)
    except OSError:
        server = http.server.ThreadingHTTPServer((host, 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{host}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def stand_in_builds(matrix_builds: Sequence[BuildSpec]) -> tuple[BuildSpec, BuildSpec]:
    """The release whose wheels stand in, and the nightly build they stand in for."""
    release = next((b for b in matrix_builds if b.kind == "release" and b.container), None)
    nightly = next((b for b in matrix_builds if follows(b)), None)
    if release is None or nightly is None:
        raise UsageError(
            "matrix.yaml: builds", "no release with a container, or no nightly that follows a date"
        )
    return release, nightly
