"""Run at image build time: is the installed torch the build's? Also records what went in.

    python verify_torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION

Fails the build (exit 1, one line) when torch, its CUDA or Python differ from what
matrix.yaml declares (a nightly's git commit too, when TORCH_GIT_SHA pins it), e.g. a wheel
URL pointing at another build; when torchvision is not the one built for this torch (its
own `torch==` requirement, its CUDA, its compiled ops); or when timm cannot build the DETR
family's ResNet backbone (the hub checkpoints load it: `use_timm_backbone`). Writes
/opt/suite/build-info.json: torch version and git commit, CUDA, Python, torchvision, timm,
every package.

The checks themselves (`torchvision_problems`) take plain values, so the tests run them
without any torch installed.
"""

from __future__ import annotations

import json
import os
import platform
import sys
from collections.abc import Iterable
from importlib import metadata

BUILD_INFO = "/opt/suite/build-info.json"


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text.splitlines()[0]}" if text else type(exc).__name__


def cuda_text(value: object) -> str:
    """A CUDA version as torch writes it ("11.8"): torchvision's `version.cuda` is the number
    its compiled operators report (11080 for 11.8, 13000 for 13.0); "" for none."""
    if value in (None, "", -1):
        return ""
    if isinstance(value, int) or str(value).isdigit():
        number = int(value)  # type: ignore[arg-type]
        return f"{number // 1000}.{number % 1000 // 10}"
    return str(value)


def _local(version: str) -> str:
    """The local label of a version: "cu118" for 2.0.1+cu118, "" for none."""
    return version.split("+", 1)[1] if "+" in version else ""


def torchvision_problems(
    torch_version: str,
    torch_cuda: str,
    torchvision_version: str,
    torchvision_cuda: object,
    torchvision_requires: Iterable[str],
    has_ops: bool,
) -> list[str]:
    """Why this torchvision is not the one built for this torch (empty: it is).

    Its metadata names the torch it was built against (`torch==2.0.1`, or a nightly's exact
    dev version); its CUDA and local label (+cu118) must be torch's; its compiled operators
    (nms, roi_align, ...) must have loaded into this torch."""
    from packaging.requirements import Requirement
    from packaging.version import Version

    problems = []
    reqs = [Requirement(r) for r in torchvision_requires]
    applies = [r for r in reqs if r.marker is None or r.marker.evaluate({"extra": ""})]
    torch_reqs = [r for r in applies if r.name.lower() == "torch"]
    if not torch_reqs:
        problems.append(f"torchvision {torchvision_version} does not say which torch it was built for")
    for req in torch_reqs:
        if not req.specifier.contains(Version(torch_version), prereleases=True):
            problems.append(f"torchvision {torchvision_version} requires {req}, not torch {torch_version}")
    if cuda_text(torchvision_cuda) != cuda_text(torch_cuda):
        problems.append(
            f"torchvision {torchvision_version} is built for CUDA {cuda_text(torchvision_cuda) or 'none'}, "
            f"torch for CUDA {cuda_text(torch_cuda) or 'none'}"
        )
    if _local(torchvision_version) != _local(torch_version):
        problems.append(
            f"torchvision {torchvision_version} and torch {torch_version} come from different indexes"
        )
    if not has_ops:
        problems.append(
            f"torchvision {torchvision_version}: its compiled operators do not load into this torch"
        )
    return problems


def check_torchvision(torch_module: object) -> tuple[str, list[str]]:
    """(torchvision version, problems) for the installed torchvision."""
    try:
        import torchvision
    except Exception as exc:  # not installed, or built for another torch (undefined symbols)
        return "", [f"import torchvision failed: {_first_line(exc)}"]
    try:
        has_ops = torch_module.ops.torchvision.nms is not None  # type: ignore[attr-defined]
    except Exception:
        has_ops = False
    problems = torchvision_problems(
        torch_module.__version__,  # type: ignore[attr-defined]
        torch_module.version.cuda or "",  # type: ignore[attr-defined]
        torchvision.__version__,
        getattr(torchvision.version, "cuda", ""),
        metadata.requires("torchvision") or [],
        has_ops,
    )
    return torchvision.__version__, problems


def check_timm() -> tuple[str, list[str]]:
    """(timm version, problems): timm imports and builds DETR's backbone as transformers does
    (features only, four stages; random weights: nothing is downloaded)."""
    try:
        import timm

        timm.create_model("resnet50", pretrained=False, features_only=True, out_indices=(1, 2, 3, 4))
    except Exception as exc:
        return "", [f"timm cannot build the DETR backbone: {_first_line(exc)}"]
    return timm.__version__, []


def main(torch_version: str, cuda_version: str, python_version: str, out: str = BUILD_INFO) -> int:
    import torch

    info = {
        "torch_version": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", ""),
        "cuda_version": torch.version.cuda or "",
        "python_version": platform.python_version(),
    }
    problems = []
    base = info["torch_version"].split("+")[0]
    if not (base == torch_version or base.startswith(torch_version + ".dev")):
        problems.append(f"torch {info['torch_version']} is not the build's {torch_version}")
    pinned_git = os.environ.get("TORCH_GIT_SHA", "").strip()  # a nightly's commit (nightly_pin.py)
    if pinned_git and not info["torch_git"].startswith(pinned_git):
        problems.append(f"torch's git commit {info['torch_git'][:12]} is not the pinned {pinned_git[:12]}")
    if cuda_version and info["cuda_version"] != cuda_version:
        problems.append(f"torch is built for CUDA {info['cuda_version'] or 'none'}, not {cuda_version}")
    if not (info["python_version"] + ".").startswith(python_version + "."):
        problems.append(f"Python {info['python_version']} is not the build's {python_version}")
    info["torchvision_version"], more = check_torchvision(torch)
    problems += more
    info["timm_version"], more = check_timm()
    problems += more
    info["packages"] = sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions())
    if problems:
        print("verify_torch: " + "; ".join(problems), file=sys.stderr)
        return 1
    with open(out, "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    print(
        f"verify_torch: torch {info['torch_version']} ({info['torch_git'][:12]}), "
        f"CUDA {info['cuda_version']}, torchvision {info['torchvision_version']}, timm {info['timm_version']}"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: verify_torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
