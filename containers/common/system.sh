#!/bin/bash
# The system layer every image shares (the Dockerfile's first RUN):
#   system.sh PYTHON_VERSION
# compilers, the build's Python with its headers, a virtualenv of it at /opt/venv, libcuda where
# triton finds it, and the non-root user. It depends only on the base image and the build's
# Python, the same every night, so a new wheel URL, nightly date or tag never re-runs it.
set -euo pipefail
python=python$1

# gcc/g++, libc headers: inductor (C++ kernels) and triton (its CUDA launcher stubs) compile C
# at run time; an image without a compiler breaks torch.compile. Versions are not pinned
# (hadolint's DL3008): the distributions drop superseded versions from their mirrors with every
# update, so exact pins would make the image unbuildable within weeks; the base image's digest
# fixes the release.
packages=(ca-certificates g++ gcc libc6-dev libgomp1)
# The Python: the base's own where it has it with its headers and venv (python:3.11-slim,
# containers/local-bases.sh's Debian), else the distribution's (Ubuntu 22.04's python3.10).
has_python='import ensurepip, os, sys, sysconfig
sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
if "$python" -c "$has_python" 2>/dev/null; then
    echo "system.sh: $python from the base image ($(command -v "$python"))"
else
    echo "system.sh: $python from the distribution's packages"
    packages+=("$python" "$python-dev" "$python-venv")
fi

apt-get update
DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "${packages[@]}"
rm -rf /var/lib/apt/lists/*

"$python" -m venv /opt/venv

# triton links its CUDA launcher with -lcuda and looks for libcuda through `ldconfig -p` (triton
# 2.1) or TRITON_LIBCUDA_PATH (newer): the NVIDIA Container Toolkit mounts the driver's
# libcuda.so.1 (in /usr/lib/x86_64-linux-gnu) and refreshes the loader cache at start, but not
# always the unversioned name. /opt/libcuda holds that name (dangling until run time), on the
# linker's path (the Dockerfile's LIBRARY_PATH), in the loader's configuration and in
# TRITON_LIBCUDA_PATH, so the toolkit's ldconfig lists it. Its loader file sorts last (zz-):
# ldconfig scans the directories in that order, and the toolkit makes libcuda.so.1 in
# /usr/lib/x86_64-linux-gnu while it scans, so the link here resolves only when scanned after
# that directory (NVIDIA/nvidia-container-toolkit#944).
mkdir -p /opt/libcuda
ln -s /usr/lib/x86_64-linux-gnu/libcuda.so.1 /opt/libcuda/libcuda.so
echo /opt/libcuda > /etc/ld.so.conf.d/zz-suite-libcuda.conf
ldconfig

# A non-root user; any uid may run the image (nox runs it as the invoking user, so the results
# stay theirs): HOME and the mount points are writable by all (sticky).
useradd --create-home --uid 1000 --user-group --shell /bin/bash bench
mkdir -p /hf-cache /results
chmod 1777 /hf-cache /results /home/bench
