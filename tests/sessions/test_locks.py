"""The hash-locked requirement files of the containers (offline; `nox -s lock -- --check`
downloads the locked wheels and checks their hashes and dependencies against PyPI)."""

from __future__ import annotations

import importlib.util
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest

from suite.spec import load_matrix

ROOT = Path(__file__).resolve().parents[2]
BUILDS = [b for b in load_matrix(ROOT / "matrix.yaml").builds.values() if b.container]


def _locks() -> ModuleType:
    spec = importlib.util.spec_from_file_location("locks", ROOT / "containers" / "locks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["locks"] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


locks = _locks()
H1, H2 = "a" * 64, "b" * 64


@pytest.mark.parametrize("build", BUILDS, ids=lambda b: b.name)
def test_every_pin_is_exact_and_hashed(build) -> None:
    path = ROOT / build.container / "requirements.txt"
    lock = locks.parse(path)
    assert locks.check(lock) == []
    assert len(lock.pins) >= 10
    assert all(len(p.hashes) >= 1 for p in lock.pins)
    assert not {"torch", "torchvision"} & lock.names()  # from the build's own wheels / index
    inputs = {v for p in lock.pins for v in p.via if v.startswith("-r")}
    assert inputs == {f"-r {build.container}/requirements.in"}  # relative: the same from any clone
    assert any(f"nox -s lock -- {build.name}" in line for line in lock.header)  # how to regenerate
    assert f"with Python {build.python}" in "\n".join(lock.header)


def test_the_locks_pin_what_the_builds_promise() -> None:
    pins = {}
    for b in BUILDS:
        lock = locks.parse(ROOT / b.container / "requirements.txt")
        pins[b.name] = {p.name.lower(): p.version for p in lock.pins}
    assert pins["stable"]["transformers"] == pins["nightly"]["transformers"] == "4.31.0"
    assert pins["stable"]["triton"] == "2.0.0" and pins["nightly"]["triton"] == "2.1.0"
    for name in ("stable", "nightly"):
        assert int(pins[name]["numpy"].split(".")[0]) < 2  # torch 2.0/2.1: the NumPy 1.x ABI
        assert {"scipy", "pillow", "pyyaml", "requests", "sympy", "networkx", "jinja2", "filelock"} <= set(
            pins[name]
        )
    current = load_matrix(ROOT / "matrix.yaml").builds["current"]
    assert f"transformers=={pins['nightly-current']['transformers']}" in current.pins
    assert "scipy" in pins["nightly-current"]
    # timm, for the DETR family's timm backbones, with what it requires besides torch and
    # torchvision (timm's METADATA: torch, torchvision, pyyaml, huggingface_hub, safetensors)
    assert pins["stable"]["timm"] == pins["nightly"]["timm"] == "0.9.16"  # torch 2.0/2.1 era
    major, minor, patch = map(int, pins["nightly-current"]["timm"].split("."))
    assert (major, minor, patch) >= (1, 0, 23)  # transformers 5.23's floor
    for name in pins:
        assert {"pyyaml", "huggingface-hub", "safetensors"} <= set(pins[name]), name


def test_check_finds_unpinned_unhashed_and_torch(tmp_path: Path) -> None:
    path = tmp_path / "requirements.txt"
    path.write_text(
        f"good==1.0 \\\n    --hash=sha256:{H1}\n    # via -r requirements.in\n"
        "nohash==2.0\n"
        f"torch==2.0.1 \\\n    --hash=sha256:{H2}\n"
        f"torchvision==0.15.2 \\\n    --hash=sha256:{H2}\n"
        "loose>=1\n"
        "short==1 \\\n    --hash=sha256:abc\n"
    )
    problems = locks.check(locks.parse(path))
    assert any("nohash: no --hash" in p for p in problems)
    assert any("torch: comes from the build's wheel" in p for p in problems)
    assert any("torchvision: comes from the build's wheel" in p for p in problems)
    assert any("not a pinned, hashed requirement: loose>=1" in p for p in problems)
    assert any("'abc' is not a sha256" in p for p in problems)
    assert not any(p.startswith(f"{path}:1:") for p in problems)


def test_prune_drops_torch_and_what_only_torch_needed() -> None:
    text = (
        "# header\n"
        f"nvidia-lib==1 \\\n    --hash=sha256:{H1}\n    # via torch\n"
        f"pillow==10 \\\n    --hash=sha256:{H1}\n    # via\n    #   -r requirements.in\n    #   torchvision\n"
        f"sympy==1.14 \\\n    --hash=sha256:{H1}\n    # via\n    #   -r requirements.in\n    #   torch\n"
        f"timm==0.9.16 \\\n    --hash=sha256:{H1}\n    # via -r requirements.in\n"
        f"torch==2.0.1 \\\n    --hash=sha256:{H2}\n    # via\n    #   timm\n    #   torchvision\n"
        f"torchvision==0.15.2 \\\n    --hash=sha256:{H2}\n    # via\n    #   -r in.txt\n    #   timm\n"
        f"triton==2.0.0 \\\n    --hash=sha256:{H2}\n    # via\n    #   -r requirements.in\n    #   torch\n"
        f"wheel==0.4 \\\n    --hash=sha256:{H2}\n    # via nvidia-lib\n"
        f"zipp==3.0 \\\n    --hash=sha256:{H2}\n    # via -r requirements.in\n"
        "\n# The following packages are considered to be unsafe in a requirements file:\n"
        f"setuptools==80 \\\n    --hash=sha256:{H2}\n    # via torch\n"
    )
    out, removed = locks.prune(text)
    assert sorted(removed) == ["nvidia-lib", "setuptools", "torch", "torchvision", "wheel"]
    assert "unsafe" not in out  # the heading of nothing went too
    kept = locks.parse_text(out, Path("x"))
    assert [p.name for p in kept.pins] == ["pillow", "sympy", "timm", "triton", "zipp"]
    assert kept.pins[0].via == ["-r requirements.in"]  # torchvision is gone from the annotations
    assert kept.pins[1].via == ["-r requirements.in"]  # torch too
    assert out.startswith("# header\n")


def _wheel(folder: Path, name: str, requires: list[str]) -> Path:
    path = folder / f"{name}-1.0-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as zf:
        meta = "Metadata-Version: 2.1\nName: " + name + "\nVersion: 1.0\n"
        meta += "".join(f"Requires-Dist: {r}\n" for r in requires)
        zf.writestr(f"{name}-1.0.dist-info/METADATA", meta)
    return path


def test_closure_finds_missing_and_mismatched_dependencies(tmp_path: Path) -> None:
    lock = locks.parse_text(
        f"a==1.0 \\\n    --hash=sha256:{H1}\nb==2.0 \\\n    --hash=sha256:{H1}\n", Path("lock.txt")
    )
    wheels = [
        _wheel(tmp_path, "a", ["b>=1", "torch", 'c; python_version < "3.9"', 'd; extra == "x"']),
        _wheel(tmp_path, "b", ["e", "a<1"]),
    ]
    problems = locks.closure_problems(lock, wheels, "3.10", allowed=["torch"])
    assert problems == [
        "b-1.0-py3-none-any.whl needs e, which the lock does not pin",
        "b-1.0-py3-none-any.whl needs a<1, but the lock pins a==1.0",
    ]
