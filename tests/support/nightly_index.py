"""A torch nightly index on 127.0.0.1 for the tests: PEP 503 pages over small, real wheel
files (zips holding the members nightly_pin.py reads: torch/version.py and METADATA), served
with HTTP range requests as download.pytorch.org serves them (or without, to check that
nothing is guessed then)."""

from __future__ import annotations

import hashlib
import zipfile
from dataclasses import dataclass
from pathlib import Path

from suite.sessions.nightly_mirror import NoRangeHandler, RangeHandler, serve


@dataclass(frozen=True)
class Night:
    """One night on the index: torch `line`.devDATE, and its torchvision unless `vision` is ""."""

    date: str
    line: str = "2.16.0"
    vision: str = "0.31.0"
    git: str = ""  # torch/version.py's git_version ("": a 40-hex digest of the date)
    triton: str = "3.6.0+git1234abcd"
    fragment: bool = True  # the page gives #sha256= (False: the resolver must download and hash)
    local: str = "cu130"

    def git_sha(self) -> str:
        return self.git or hashlib.sha1(f"{self.line}-{self.date}".encode()).hexdigest()


def wheel_name(name: str, version: str, python: str = "311") -> str:
    return f"{name}-{version}-cp{python}-cp{python}-manylinux_2_28_x86_64.whl"


def make_wheel(path: Path, name: str, version: str, files: dict[str, str]) -> str:
    """A wheel-shaped zip with its METADATA and `files`; its sha256."""
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as wheel:
        for member, text in files.items():
            wheel.writestr(member, text)
        wheel.writestr(f"{name}-{version}.dist-info/METADATA", files.get("METADATA", f"Name: {name}\n"))
        # bulk, so that the directory is not all of the file
        wheel.writestr(f"{name}/lib/blob.bin", bytes(range(256)) * 64)
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_index(root: Path, nights: list[Night], python: str = "311") -> dict[str, str]:
    """torch/ and torchvision/ pages with the nights' wheels in root/files; {file name: sha256}."""
    files = root / "files"
    files.mkdir(parents=True, exist_ok=True)
    hashes: dict[str, str] = {}
    pages: dict[str, list[str]] = {"torch": [], "torchvision": []}
    for n in nights:
        version = f"{n.line}.dev{n.date}+{n.local}"
        meta = f"Name: torch\nVersion: {version}\n"
        meta += f'Requires-Dist: pytorch-triton=={n.triton}; platform_system == "Linux"\n'
        code = f"__version__ = '{version}'\ngit_version = '{n.git_sha()}'\n"
        members = {"torch/version.py": code, "METADATA": meta}
        wanted = [("torch", version, members)]
        if n.vision:
            vversion = f"{n.vision}.dev{n.date}+{n.local}"
            vcode = {"torchvision/version.py": f"__version__ = '{vversion}'\n"}
            wanted.append(("torchvision", vversion, vcode))
        for name, ver, content in wanted:
            file = wheel_name(name, ver, python)
            hashes[file] = make_wheel(files / file, name, ver, content)
            href = f"../files/{file.replace('+', '%2B')}"
            href += f"#sha256={hashes[file]}" if n.fragment else ""
            pages[name].append(f'<a href="{href}">{file}</a><br/>')
    for name, anchors in pages.items():
        (root / name).mkdir(exist_ok=True)
        body = "\n".join(anchors)
        (root / name / "index.html").write_text(f"<!DOCTYPE html><html><body>\n{body}\n</body></html>\n")
    return hashes


# The index is served as the container path's own local nightly index is: HTTP range requests
# as download.pytorch.org answers them (or none, to check that nothing is guessed then).
__all__ = ["NoRangeHandler", "RangeHandler", "serve"]
