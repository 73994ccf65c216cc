#!/bin/bash
# A nightly's own dependencies (a Dockerfile's RUN, after wheel.sh has installed torch and
# torchvision by URL + sha256 without them):
#   torch_deps.sh
# pytorch-triton and the CUDA libraries of a nightly change from night to night and come from
# its index (TORCH_INDEX_URL), unhashed: pip resolves what the installed torch and torchvision
# require and installs only what is missing. Its wheel cache is a BuildKit cache mount
# (/root/.cache/pip, never in a layer), so a library that did not change since the last night
# is not downloaded again. Then `pip check` and verify_torch.py (check.sh).
set -euo pipefail
if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi
unset PIP_NO_CACHE_DIR  # the image's default; this step keeps its downloads in the cache mount
version() { python -c "from importlib.metadata import version; print(version('$1'))"; }
pip install --cache-dir /root/.cache/pip --index-url "${TORCH_INDEX_URL}" \
    "torch==$(version torch)" "torchvision==$(version torchvision)"
