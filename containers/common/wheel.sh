#!/bin/bash
# torch, or the torchvision built for it, by exact wheel (a Dockerfile's RUN; the build's
# arguments are in its environment):
#   wheel.sh torch         TORCH_WHEEL_URL + TORCH_WHEEL_SHA256, or TORCH_REQUIREMENT
#   wheel.sh torchvision   TORCHVISION_WHEEL_URL + TORCHVISION_WHEEL_SHA256, or TORCHVISION_REQUIREMENT
# The wheel from its CUDA index is checked against its sha256 and installed without its
# dependencies (the hash-locked requirements bring them). A requirement instead (what
# --torch-from-pypi substitutes, docs/containers.md) comes from pip's index: torch with its own
# dependencies (PyPI's builds pull their nvidia-* libraries), torchvision without. With the
# BuildKit secret `pip_ca` mounted, pip trusts that CA bundle; a secret never lands in a layer.
set -euo pipefail
if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi
name=$1
case "$name" in
    torch)
        requirement=${TORCH_REQUIREMENT:-} url=${TORCH_WHEEL_URL:-} sha=${TORCH_WHEEL_SHA256:-}
        deps=()
        ;;
    torchvision)
        requirement=${TORCHVISION_REQUIREMENT:-} url=${TORCHVISION_WHEEL_URL:-} sha=${TORCHVISION_WHEEL_SHA256:-}
        deps=(--no-deps)
        ;;
    *)
        echo "usage: wheel.sh torch|torchvision" >&2
        exit 2
        ;;
esac
if [ -n "$requirement" ]; then
    echo "$requirement" > "/tmp/$name.txt"
    pip install --no-cache-dir "${deps[@]}" -r "/tmp/$name.txt"
elif [ -z "$url" ] || [ -z "$sha" ]; then
    upper=${name^^}
    echo "build arguments ${upper}_WHEEL_URL and ${upper}_WHEEL_SHA256 are required: build with 'nox -s build' (matrix.yaml builds.${BUILD_NAME:-?}.build_args)" >&2
    exit 1
else
    echo "$name @ $url --hash=sha256:$sha" > "/tmp/$name.txt"
    pip install --no-cache-dir --no-deps --require-hashes -r "/tmp/$name.txt"
fi
rm "/tmp/$name.txt"
