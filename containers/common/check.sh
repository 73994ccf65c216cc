#!/bin/bash
# The image's checks once everything is in (a Dockerfile's RUN): `pip check` proves the set
# consistent and verify_torch.py that the torch is the build's (TORCH_VERSION, CUDA_VERSION,
# PYTHON_VERSION from the build's arguments), that torchvision matches it and that timm builds
# the DETR family's backbone.
set -euo pipefail
pip check
python /opt/suite/containers/verify_torch.py "${TORCH_VERSION}" "${CUDA_VERSION}" "${PYTHON_VERSION}"
