#!/usr/bin/env bash
# Set-up for `make image` and `make test-image`: a container engine that builds and runs OCI
# images, and, unless BASE is `registry`, debootstrap for the Debian base (deploy/image/debian-base.sh).
#
#   deploy/image/install-engine.sh [auto|registry|debian]        (the BASE the build will use)
#
# Nothing is installed where an engine already works (a Docker daemon, podman, buildah) and
# debootstrap is there or not needed. Otherwise, as root on Debian, Debian's own podman, buildah,
# runc and debootstrap are installed with apt-get; anywhere else, or if apt-get fails, it says what
# is missing and leaves the machine alone: `make image` then fails with the reason, and the image
# test tier skips with it. It never fails the build itself.
set -uo pipefail
base=${1:-auto}

engine_works() {
    { command -v docker >/dev/null && docker version --format '{{.Server.Version}}' >/dev/null 2>&1; } ||
        { command -v podman >/dev/null && podman info >/dev/null 2>&1; } ||
        { command -v buildah >/dev/null && buildah images >/dev/null 2>&1; }
}

missing=()
engine_works || missing+=(podman buildah runc uidmap)
if [ "$base" != registry ]; then
    command -v debootstrap >/dev/null || missing+=(debootstrap debian-archive-keyring)
    command -v curl >/dev/null || missing+=(curl)
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
    echo "install-engine: missing ${missing[*]}; install them (or start a Docker daemon) to build images" >&2
    exit 0
fi
echo "install-engine: apt-get install ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
if ! { apt-get update -qq >/dev/null && apt-get install -y -qq "${missing[@]}" >/dev/null; }; then
    echo "install-engine: apt-get install ${missing[*]} failed; install them by hand" >&2
fi
exit 0
