"""The local nightly index of the container path's end-to-end run (suite.sessions.nightly_mirror):
a release's wheels renamed as one night, resolved from it as tonight's nightly is from the real
index. Small wheel-shaped files stand in for the release's (the real ones: containers-e2e)."""

from __future__ import annotations

import base64
import hashlib
import zipfile
from pathlib import Path

import pytest
from support.nightly_index import make_wheel

from suite.sessions import nightly, nightly_mirror
from suite.spec import load_matrix

ROOT = Path(__file__).resolve().parents[2]


def release_wheels(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True)
    torch = folder / "torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    code = "__version__ = '2.14.1+cu130'\ncuda = '13.0'\ngit_version = '" + "5" * 40 + "'\n"
    meta = 'Name: torch\nVersion: 2.14.1\nRequires-Dist: triton~=3.8.0; platform_system == "Linux"\n'
    make_wheel(torch, "torch", "2.14.1", {"torch/version.py": code, "METADATA": meta})
    vision = folder / "torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl"
    code = "__version__ = '0.29.1+cu130'\n"
    make_wheel(
        vision,
        "torchvision",
        "0.29.1",
        {"torchvision/version.py": code, "METADATA": "Name: torchvision\nVersion: 0.29.1\n"},
    )
    return torch, vision


def test_a_renamed_wheel_is_the_night_in_every_place_pip_and_the_resolver_read(tmp_path: Path) -> None:
    torch, _ = release_wheels(tmp_path / "release")
    out = tmp_path / "files"
    out.mkdir()
    renamed = nightly_mirror.rename_wheel(
        torch, out, nightly_mirror.Renamed("torch", "2.14.1", "2.15.0.dev20261128+cu130")
    )
    assert renamed.name == "torch-2.15.0.dev20261128+cu130-cp311-cp311-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(renamed) as wheel:
        names = wheel.namelist()
        info = "torch-2.15.0.dev20261128+cu130.dist-info"
        assert not [n for n in names if n.startswith("torch-2.14.1")]
        assert "Version: 2.15.0.dev20261128+cu130\n" in wheel.read(f"{info}/METADATA").decode()
        assert "triton~=3.8.0" in wheel.read(f"{info}/METADATA").decode()  # its dependencies kept
        version = wheel.read("torch/version.py").decode()
        assert "__version__ = '2.15.0.dev20261128+cu130'" in version and "5" * 40 in version
        record = dict(line.split(",", 1) for line in wheel.read(f"{info}/RECORD").decode().splitlines())
        data = wheel.read("torch/version.py")
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert record["torch/version.py"] == f"sha256={digest},{len(data)}"
        assert record[f"{info}/RECORD"] == "," and set(record) == {n for n in names if not n.endswith("/")}


def test_a_mirror_made_once_is_resolved_as_tonights_nightly(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    matrix = load_matrix(ROOT / "matrix.yaml")
    release, following = nightly_mirror.stand_in_builds(list(matrix.builds.values()))
    assert (release.name, following.name) == ("release", "nightly-current")
    torch, vision = release_wheels(tmp_path / "release")
    by_url = {
        release.build_args["TORCH_WHEEL_URL"]: torch,
        release.build_args["TORCHVISION_WHEEL_URL"]: vision,
    }
    downloads: list[Path] = []
    monkeypatch.setattr(nightly_mirror, "fetch_checked", lambda url, sha, into: by_url[url])
    monkeypatch.setattr(
        nightly_mirror, "download_locked", lambda lock, into, python, ca: downloads.append(lock)
    )
    root = tmp_path / "mirror"
    date = nightly_mirror.make_mirror(root, release, following, ROOT, None)
    assert downloads == [ROOT / "containers/release/requirements.txt"]  # torch's dependencies beside it
    assert nightly_mirror.make_mirror(root, release, following, ROOT, None) == date and len(downloads) == 1
    with nightly_mirror.serve(root) as url:
        found = nightly.resolve(following, ROOT, environ={nightly.INDEX_ENV: url})
    assert found["date"] == date and found["torch"] == f"2.15.0.dev{date}+cu130"
    assert found["torchvision"] == f"0.30.0.dev{date}+cu130" and found["git_sha"] == "5" * 40
    assert (
        found["torch_sha256"]
        == hashlib.sha256(
            (root / "files" / found["torch_url"].rsplit("/", 1)[1].replace("%2B", "+")).read_bytes()
        ).hexdigest()
    )
