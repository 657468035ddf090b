#!/usr/bin/env bash
# Set-up for `make image` and `make test-image`: a container engine that builds and runs OCI
# images, and debootstrap for the Debian base (deploy/image/debian-base.sh).
#
# Nothing is installed where an engine already works (a Docker daemon, podman, buildah) and
# debootstrap is there. Otherwise, as root on Debian, Debian's own podman, buildah and runc are
# installed with apt-get; anywhere else it says what is missing and leaves the machine alone
# (`make image` then fails with the reason, and the image test tier skips with it).
set -euo pipefail

engine_works() {
    { command -v docker >/dev/null && docker info >/dev/null 2>&1; } ||
        { command -v podman >/dev/null && podman info >/dev/null 2>&1; } ||
        { command -v buildah >/dev/null && buildah images >/dev/null 2>&1; }
}

missing=()
engine_works || missing+=(podman buildah runc uidmap)
command -v debootstrap >/dev/null || missing+=(debootstrap)
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install-engine: missing ${missing[*]}; install them (or start a Docker daemon) to build images" >&2
    exit 0
fi
echo "install-engine: apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq "${missing[@]}" >/dev/null
