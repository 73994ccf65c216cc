#!/usr/bin/env bash
# Stand-ins for the builds' pinned base images (matrix.yaml's BASE_IMAGE), for a Docker engine
# that cannot pull from Docker Hub but reaches the Ubuntu and Debian package mirrors (a sandbox,
# an air-gapped mirror): each is a root filesystem made with debootstrap and loaded with `docker import`.
# containers/Dockerfile takes one through the BASE_IMAGE build argument (docs/containers.md,
# "Building where Docker Hub is out of reach"); everything on top comes from the same
# Dockerfile steps as with the pinned image.
#
#   containers/local-bases.sh [ubuntu|python|all]     (root; needs debootstrap, dpkg-deb, gpg)
#
#   local/ubuntu:22.04             Ubuntu 22.04 (jammy) minbase, main + universe, with
#                                  jammy-updates and jammy-security: stands in for
#                                  ubuntu:22.04 (builds stable, nightly; Python 3.10 comes
#                                  from system.sh's apt step, as with the real one)
#   local/python:3.11-bookworm     Debian 12 with python3 (3.11), its headers and venv, and
#                                  `python` on PATH: stands in for python:3.11-slim-bookworm
#                                  (builds nightly-current, release)
#
# Idempotent: an image already there is kept (remove it to remake it). The Ubuntu archive key
# is checked by fingerprint before debootstrap trusts it.
set -euo pipefail

UBUNTU_MIRROR=${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
UBUNTU_KEYRING_DEB=pool/main/u/ubuntu-keyring/ubuntu-keyring_2021.03.26_all.deb
# "Ubuntu Archive Automatic Signing Key (2018)": signs jammy's Release files.
UBUNTU_ARCHIVE_KEY=F6ECB3762474EDA9D21B7022871920D1991BC93C

die() { echo "local-bases.sh: $*" >&2; exit 2; }

[ "$(id -u)" = 0 ] || die "debootstrap needs root"
for tool in docker debootstrap dpkg-deb gpg curl; do
  command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install docker.io debootstrap gpg curl)"
done
docker info >/dev/null 2>&1 || die "the Docker engine does not answer (start dockerd first)"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

import_rootfs() {  # import_rootfs ROOT TAG: the root filesystem as an image, checked to start
  tar -C "$1" -c . | docker import --change 'CMD ["/bin/bash"]' - "$2" >/dev/null
  docker run --rm "$2" true
  echo "$2: $(docker image inspect --format '{{.Size}}' "$2" | awk '{printf "%.0f MB", $1/1e6}')"
}

make_ubuntu() {
  local tag=local/ubuntu:22.04
  if docker image inspect "$tag" >/dev/null 2>&1; then echo "$tag: there"; return; fi
  curl -fsS -o "$work/keyring.deb" "$UBUNTU_MIRROR/$UBUNTU_KEYRING_DEB"
  dpkg-deb -x "$work/keyring.deb" "$work/keyring"
  local keyring=$work/keyring/usr/share/keyrings/ubuntu-archive-keyring.gpg
  gpg --no-default-keyring --keyring "$keyring" --with-colons --fingerprint 2>/dev/null \
    | grep -q "^fpr:::::::::$UBUNTU_ARCHIVE_KEY:" \
    || die "$UBUNTU_KEYRING_DEB does not hold the Ubuntu archive key $UBUNTU_ARCHIVE_KEY"
  local root=$work/jammy
  debootstrap --variant=minbase --components=main,universe --keyring="$keyring" jammy "$root" "$UBUNTU_MIRROR" >/dev/null
  cat >"$root/etc/apt/sources.list" <<EOF
deb $UBUNTU_MIRROR jammy main universe
deb $UBUNTU_MIRROR jammy-updates main universe
deb $UBUNTU_MIRROR jammy-security main universe
EOF
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  import_rootfs "$root" "$tag"
}

make_python() {
  local tag=local/python:3.11-bookworm
  if docker image inspect "$tag" >/dev/null 2>&1; then echo "$tag: there"; return; fi
  local root=$work/bookworm
  debootstrap --variant=minbase --include=ca-certificates,python3,python3-dev,python3-venv \
    bookworm "$root" "$DEBIAN_MIRROR" >/dev/null
  ln -s /usr/bin/python3 "$root/usr/local/bin/python"
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/*
  import_rootfs "$root" "$tag"
}

case "${1:-all}" in
  ubuntu) make_ubuntu ;;
  python) make_python ;;
  all) make_ubuntu; make_python ;;
  *) die "usage: containers/local-bases.sh [ubuntu|python|all]" ;;
esac
