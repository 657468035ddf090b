#!/usr/bin/env bash
# Puts the Prometheus Operator's API validators (the npm package @kubernetes-models/prometheus-operator,
# MIT, pinned with its dependencies' integrity hashes in prometheus-operator-models/package-lock.json)
# under build/tools and prints that directory. Cached and idempotent. Used by tests/deploy to check
# the PrometheusRule and ServiceMonitor in deploy/monitoring/operator: their kinds are CRDs, which
# kubernetes-validate's Kubernetes schemas do not hold. Needs Node.js and npm (the npm registry).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source_dir="$root/deploy/tools/prometheus-operator-models"
version=$(sed -n 's/.*"@kubernetes-models\/prometheus-operator": "\([^"]*\)".*/\1/p' "$source_dir/package.json")
dest="$root/build/tools/prometheus-operator-models-$version"
marker="$dest/node_modules/@kubernetes-models/prometheus-operator/package.json"

if [[ -f "$marker" ]] && cmp -s "$source_dir/package-lock.json" "$dest/package-lock.json"; then
  echo "$dest"
  exit 0
fi
command -v npm >/dev/null || { echo "install-operator-models: npm not found (Debian: apt-get install npm)" >&2; exit 1; }

mkdir -p "$root/build/tools"
staging=$(mktemp -d "$root/build/tools/.prometheus-operator-models.XXXXXX")
trap 'rm -rf "$staging"' EXIT
cp "$source_dir/package.json" "$source_dir/package-lock.json" "$staging/"
# `npm ci`: exactly the lock file, integrity checked, nothing saved back.
(cd "$staging" && npm ci --no-audit --no-fund --silent >&2) ||
  { echo "install-operator-models: npm ci failed" >&2; exit 1; }
rm -rf "$dest"
mv -T "$staging" "$dest"
trap - EXIT
echo "$dest"
