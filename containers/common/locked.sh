#!/bin/bash
# Everything else an image needs, hash-locked, wheels only (a Dockerfile's RUN):
#   locked.sh REQUIREMENTS_TXT [--install-only]
# then (unless --install-only, for an image that installs torch after this layer) check.sh:
# `pip check` and verify_torch.py. With the BuildKit secret `pip_ca` mounted, pip trusts that
# CA bundle.
set -euo pipefail
if [ -s /run/secrets/pip_ca ]; then export PIP_CERT=/run/secrets/pip_ca; fi
pip install --no-cache-dir --no-deps --require-hashes --only-binary :all: -r "$1"
if [ "${2:-}" != "--install-only" ]; then
    /opt/suite/containers/common/check.sh
fi
