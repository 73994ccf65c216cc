"""What a page ships besides its data: plotly.js, vendored, and our own script and style.

plotly.js is the official `plotly.js-basic-dist-min` bundle from the npm registry (scatter, bar
and pie traces: all the pages draw; 1.2 MB against the full bundle's 4.8 MB, which the `plotly`
Python package ships). It is kept in the repository, pinned by version and checksum, so that
neither `merge` nor CI needs npm or another package; `check_vendored` verifies its bytes.
To move it: `npm pack plotly.js-basic-dist-min@<version>`, copy `plotly-basic.min.js` here under
its versioned name, and update the version and checksums below (docs/pages.md).
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENDOR = HERE / "vendor"
STATIC = HERE / "static"
PLOTLY_VERSION = "4.1.1"
PLOTLY_PACKAGE = "plotly.js-basic-dist-min"
PLOTLY_FILE = f"plotly-basic-{PLOTLY_VERSION}.min.js"  # the name beside each page, versioned
PLOTLY_SHA256 = "99784e3abfb07b142a15e521a439e6d9addceadb3f79553fd24c72774f0649ba"
# npm's `dist.integrity` of that package version (what `npm pack` checks the tarball against)
PLOTLY_NPM_INTEGRITY = (
    "sha512-1oNF8PeQx2hv/y7tqEVWKD3JGwn/MGEMQ8mL9HUwsaqG9FGy/OU5FHUHvzqbqxN4mnwZGI9abTiE775C4kkjMQ=="
)


def check_vendored() -> Path:
    """The vendored bundle's path, after checking its bytes are the ones recorded here."""
    path = VENDOR / PLOTLY_FILE
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != PLOTLY_SHA256:
        raise RuntimeError(f"{path}: sha256 {digest} is not the recorded {PLOTLY_SHA256}")
    return path


def ship_plotly(folder: Path) -> Path:
    """Copy the bundle beside a page (once: a file already there with the right size is kept)."""
    source = VENDOR / PLOTLY_FILE
    target = folder / PLOTLY_FILE
    for old in folder.glob("plotly-basic-*.min.js"):  # another version's, left by an older merge
        if old.name != PLOTLY_FILE:
            old.unlink()
    if not (target.is_file() and target.stat().st_size == source.stat().st_size):
        shutil.copyfile(source, target)
    return target


def static_text(name: str) -> str:
    """One of our own page files (static/*.js, *.css), inlined into the page."""
    return (STATIC / name).read_text(encoding="utf-8")
