#!/usr/bin/env bash
# Builds the helm CLI pinned in this directory's go.mod, once, into a cache directory keyed by that pin
# and go.sum (~/.cache/pyscheduler/helm/<version>_<sum>/helm; PYSCHEDULER_CACHE overrides the root).
# Prints the path of the binary on its last line. Separate from e2e/controlplane/build.sh on purpose:
# changing one never rebuilds the other.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

version="$(awk '$1=="helm.sh/helm/v3" && $2 ~ /^v/ {print $2; exit}' go.mod)"
sum="$(cat go.mod go.sum build.sh | sha256sum | cut -c1-12)"
cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
out="$cache_root/helm/helm-${version}_${sum}"
if [[ -x "$out/helm" ]]; then
  echo "helm: cached in $out" >&2
  echo "$out/helm"
  exit 0
fi
mkdir -p "$out.tmp"
export CGO_ENABLED=0
t=$SECONDS
echo "helm: building $version into $out (a cold build takes a few minutes)..." >&2
( while sleep 30; do echo "helm:   ... still building ($((SECONDS - t))s)" >&2; done ) &
ticker=$!
status=0
# As helm's Makefile does: the default Kubernetes version (`helm template`, `helm lint`) is client-go's.
cg="$(awk '$1=="k8s.io/client-go" && $2 ~ /^v/ {print $2; exit}' go.mod)"
cg_minor="${cg#v*.}"; cg_minor="${cg_minor%%.*}"
ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
  ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$cg_minor"
done
go build -ldflags "$ldflags" -o "$out.tmp/helm" helm.sh/helm/v3/cmd/helm || status=$?
kill "$ticker" 2>/dev/null || true
wait "$ticker" 2>/dev/null || true
[[ $status == 0 ]] || { echo "helm: build failed" >&2; exit "$status"; }
rm -rf "$out"
mv "$out.tmp" "$out"
echo "helm: built in $((SECONDS - t))s" >&2
echo "$out/helm"
