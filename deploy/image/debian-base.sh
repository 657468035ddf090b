#!/usr/bin/env bash
# Builds a stand-in for `python:3.11-slim` from a Debian mirror, for builds that cannot reach
# Docker Hub (air-gapped and regulated networks, CI here): Debian bookworm's own Python 3.11 on a
# minimal bookworm, tagged docker.io/library/python:3.11-slim in the local store of the container
# engine, so that the Dockerfile `bentoml containerize` generates (`FROM python:3.11-slim`) uses it
# without contacting any registry.
#
#   deploy/image/debian-base.sh [podman|buildah|docker]      (root: debootstrap needs it)
#
# DEBIAN_MIRROR  the mirror to bootstrap from (default: on a Debian host, the first of its apt
#                sources that serves bookworm; else deb.debian.org)
# BASE_TAG       the tag to give the result (default docker.io/library/python:3.11-slim: it stands in
#                for Docker Hub's in this engine's store, for every build on this machine, until removed)
#
# The image it makes keeps the host's extra CA certificates and the variables naming the bundle:
# so do the images built from it. That is the point behind an intercepting proxy (the service's
# own HTTPS calls, to a shared cache say, go through it too), and a reason to build production
# images from your own mirror's base rather than a developer machine's.
#
# The host's extra CA certificates (the ones update-ca-certificates adds from
# /usr/local/share/ca-certificates: a TLS-intercepting proxy's, an internal registry's) are
# trusted inside, and SSL_CERT_FILE, PIP_CERT and REQUESTS_CA_BUNDLE name the system bundle, so
# pip and uv reach the package index through such a proxy. Bookworm's Python refuses
# `pip install` outside a virtualenv (PEP 668); the image is a build base like python:3.11-slim,
# where that is the point, so the marker is removed.
set -euo pipefail

engine=${1:-podman}
tag=${BASE_TAG:-docker.io/library/python:3.11-slim}
suite=bookworm

host_mirror() {
    # On a Debian host, the archive its apt uses (deb822 `URIs:` or one-line `deb URL suite ...`)
    # that carries Debian's own Release for bookworm; elsewhere nothing (Ubuntu's is no Debian).
    grep -qs '^ID=debian$' /etc/os-release || return 0
    local uri
    for uri in $(cat /etc/apt/sources.list.d/debian.sources /etc/apt/sources.list.d/*.sources \
            /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null \
            | awk '$1 == "URIs:" || $1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) print $i }' \
            | grep -v security || true); do
        if curl -fsS -m 10 -o /dev/null "${uri%/}/dists/$suite/Release" 2>/dev/null; then
            echo "$uri"
            return 0
        fi
    done
}
mirror=${DEBIAN_MIRROR:-$(host_mirror)}
mirror=${mirror:-http://deb.debian.org/debian}

for tool in debootstrap curl "$engine"; do
    command -v "$tool" >/dev/null || { echo "debian-base: $tool not found (apt-get install debootstrap $engine)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "debian-base: debootstrap needs root" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/rootfs

echo "debian-base: debootstrap $suite from $mirror" >&2
debootstrap --variant=minbase --include=python3,python3-pip,python3-venv,ca-certificates \
    "$suite" "$root" "$mirror" >"$work/debootstrap.log" 2>&1 \
    || { tail -n 30 "$work/debootstrap.log" >&2; exit 1; }

# The host's extra CA certificates, trusted the Debian way.
if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$root/usr/local/share/ca-certificates/"
fi
chroot "$root" update-ca-certificates >/dev/null

rm -f "$root"/usr/lib/python3*/EXTERNALLY-MANAGED
ln -sf /usr/bin/python3 "$root/usr/local/bin/python"
# What python:3.11-slim leaves out too: package lists, downloaded packages, docs, logs.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/apt/archives/*.deb \
    "$root"/usr/share/doc/* "$root"/usr/share/man/* "$root"/var/log/* "$root"/tmp/*

tar -C "$root" --numeric-owner -cf "$work/rootfs.tar" .
bundle=/etc/ssl/certs/ca-certificates.crt
changes=(
    --change "ENV PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin"
    --change "ENV LANG=C.UTF-8"
    --change "ENV SSL_CERT_FILE=$bundle"
    --change "ENV PIP_CERT=$bundle"
    --change "ENV REQUESTS_CA_BUNDLE=$bundle"
    --change 'CMD ["python3"]'
)
case "$engine" in
    podman|docker) "$engine" import "${changes[@]}" "$work/rootfs.tar" "$tag" >/dev/null ;;
    buildah)
        container=$(buildah from scratch)
        buildah add "$container" "$work/rootfs.tar" / >/dev/null
        buildah config --env PATH=/usr/local/bin:/usr/local/sbin:/usr/sbin:/usr/bin:/sbin:/bin \
            --env LANG=C.UTF-8 --env SSL_CERT_FILE=$bundle --env PIP_CERT=$bundle \
            --env REQUESTS_CA_BUNDLE=$bundle --cmd python3 "$container"
        buildah commit --quiet --rm "$container" "$tag" >/dev/null
        ;;
    *) echo "debian-base: unknown engine $engine" >&2; exit 2 ;;
esac
echo "$tag"
