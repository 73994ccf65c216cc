"""Run at image build time: is the installed torch the build's? Also records what went in.

    python verify_torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION

Fails the build (exit 1, one line) when torch, its CUDA or Python differ from what
matrix.yaml declares, e.g. a wheel URL pointing at another build. Writes
/opt/suite/build-info.json: torch version and git commit, CUDA, Python, every package.
"""

from __future__ import annotations

import json
import platform
import sys
from importlib import metadata


def main(torch_version: str, cuda_version: str, python_version: str) -> int:
    import torch

    info = {
        "torch_version": torch.__version__,
        "torch_git": getattr(torch.version, "git_version", ""),
        "cuda_version": torch.version.cuda or "",
        "python_version": platform.python_version(),
        "packages": sorted(f"{d.metadata['Name']}=={d.version}" for d in metadata.distributions()),
    }
    problems = []
    base = info["torch_version"].split("+")[0]
    if not (base == torch_version or base.startswith(torch_version + ".dev")):
        problems.append(f"torch {info['torch_version']} is not the build's {torch_version}")
    if cuda_version and info["cuda_version"] != cuda_version:
        problems.append(f"torch is built for CUDA {info['cuda_version'] or 'none'}, not {cuda_version}")
    if not (info["python_version"] + ".").startswith(python_version + "."):
        problems.append(f"Python {info['python_version']} is not the build's {python_version}")
    if problems:
        print("verify_torch: " + "; ".join(problems), file=sys.stderr)
        return 1
    with open("/opt/suite/build-info.json", "w", encoding="utf-8") as fh:
        json.dump(info, fh, indent=1)
    print(
        f"verify_torch: torch {info['torch_version']} ({info['torch_git'][:12]}), CUDA {info['cuda_version']}"
    )
    return 0


if __name__ == "__main__":
    if len(sys.argv) != 4:
        print("usage: verify_torch.py TORCH_VERSION CUDA_VERSION PYTHON_VERSION", file=sys.stderr)
        sys.exit(2)
    sys.exit(main(*sys.argv[1:]))
