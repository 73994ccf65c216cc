"""Inputs that would fail every cell the same way are refused before the first one: an
image that is missing or not an image (from --image, the matrix's defaults or a profile),
a URL where the cells run offline. One line naming the flag or the field, exit status 2,
and nothing recorded."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import call, stub_environment

from suite.run import launch, preflight

REPO = Path(__file__).resolve().parents[2]
TINY = REPO / "tests" / "data" / "tiny-matrix.yaml"
PHOTO = REPO / "suite" / "assets" / "chelsea-640x480.jpg"


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    truncated = tmp_path / "truncated.jpg"
    truncated.write_bytes(PHOTO.read_bytes()[:20_000])
    text = tmp_path / "notes.jpg"
    text.write_text("not a photograph\n")
    empty = tmp_path / "empty.png"
    empty.write_bytes(b"")
    folder = tmp_path / "folder.jpg"
    folder.mkdir()
    return {"truncated": truncated, "text": text, "empty": empty, "folder": folder}


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("truncated", "not an image pillow can read (image file is truncated"),
        ("text", "not an image pillow can read (cannot identify image file"),
        ("empty", "not an image pillow can read"),
        ("folder", "not a file"),
    ],
)
@pytest.mark.parametrize("verb", ["plan", "run"])
def test_an_image_flag_that_is_not_an_image(
    files: dict[str, Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    verb: str,
    name: str,
    message: str,
) -> None:
    started: list[object] = []
    monkeypatch.setattr(launch, "run_worker", lambda *a, **k: started.append(a))
    monkeypatch.setattr(preflight, "probe", lambda device, python=None: stub_environment())
    out = tmp_path / "out"
    args = ["--matrix", str(TINY), "--profile", "tiny", "--image", str(files[name])]
    code, err = call([verb, *args, *(["--out", str(out), "--run-id", "r"] if verb == "run" else [])])
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"suite {verb}: error: --image: {files[name]}: {message}"), line
    assert not started and not (out / "r").exists()


def test_a_url_where_the_cells_run_offline(tmp_path: Path) -> None:
    """Random weights never fetch anything: a URL alone would fail every cell."""
    code, err = call(
        ["plan", "--matrix", str(TINY), "--profile", "tiny", "--image", "https://example.invalid/c.jpg"]
    )
    assert code == 2
    assert err.strip() == (
        "suite plan: error: --image: https://example.invalid/c.jpg: cells built from configs "
        "(random weights) or run with HF_HUB_OFFLINE=1 feed a local image, and none is given (image.path)"
    )


@pytest.mark.parametrize(
    ("old", "new", "field"),
    [
        ("path: suite/assets/chelsea-640x480.jpg\n", "path: suite/assets/no-such.jpg\n",
         "defaults.image.path: suite/assets/no-such.jpg: no such file"),
        ("    settings: {weights: random,", "    settings: {image: {path: README.md}, weights: random,",
         "profiles.tiny.settings.image.path: README.md: not an image pillow can read"),
        ("defaults:\n  image:\n    path: suite/assets/chelsea-640x480.jpg\n", "",
         "defaults.image: cells built from configs (random weights)"),
    ],
)  # fmt: skip
def test_an_image_in_the_matrix(tmp_path: Path, old: str, new: str, field: str) -> None:
    text = TINY.read_text()
    assert old in text
    path = tmp_path / "matrix.yaml"
    path.write_text(text.replace(old, new))
    code, err = call(["plan", "--matrix", str(path), "--profile", "tiny"])
    assert code == 2, err
    (line,) = err.strip().splitlines()
    assert line.startswith(f"suite plan: error: {path}: {field}"), line


def test_the_shipped_photo_passes_from_any_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A relative path is found where the worker finds it: the working folder, else the repository."""
    monkeypatch.chdir(tmp_path)
    assert call(["plan", "--matrix", str(TINY), "--profile", "tiny"]) == (0, "")
    assert call(["plan", "--matrix", str(TINY), "--profile", "tiny", "--image", str(PHOTO)]) == (0, "")
