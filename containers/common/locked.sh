#!/bin/bash
# Everything else an image needs, hash-locked, wheels only (a Dockerfile's RUN):
#   locked.sh REQUIREMENTS_TXT
# then `pip check` proves the set consistent and verify_torch.py that the torch is the build's
# (TORCH_VERSION, CUDA_VERSION, PYTHON_VERSION from the build's arguments), that torchvision
# matches it and that timm builds the DETR family's backbone. With the BuildKit secret `pip_ca`
# mounted, pip trusts that CA bundle.
set -euo pipefail
if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi
pip install --no-cache-dir --no-deps --require-hashes --only-binary :all: -r "$1"
pip check
python /opt/suite/containers/verify_torch.py "${TORCH_VERSION}" "${CUDA_VERSION}" "${PYTHON_VERSION}"
