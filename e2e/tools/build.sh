#!/usr/bin/env bash
# Builds one of the Go CLIs our packaging tests run, pinned in e2e/tools/<tool>/go.mod:
#
#   bash e2e/tools/build.sh helm    # the chart tests (helm lint, helm template)
#   bash e2e/tools/build.sh krew    # the kubectl plugin's krew manifest test (krew install --manifest)
#
# once, into a cache directory keyed by that tool's pin and go.sum
# (~/.cache/pyscheduler/tools/<tool>-<version>_<sum>/<tool>; PYSCHEDULER_CACHE overrides the root). Prints
# the binary's path on its last line. Separate from e2e/controlplane/build.sh on purpose: changing one never
# rebuilds the other.
set -euo pipefail
tool="${1:?usage: build.sh helm|krew}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
case "$tool" in
  helm) module=helm.sh/helm/v3; pkg=helm.sh/helm/v3/cmd/helm ;;
  krew) module=sigs.k8s.io/krew; pkg=sigs.k8s.io/krew/cmd/krew ;;
  *) echo "build.sh: unknown tool $tool (have: helm, krew)" >&2; exit 2 ;;
esac
cd "$here/$tool"

version="$(awk -v m="$module" '$1==m && $2 ~ /^v/ {print $2; exit}' go.mod)"
sum="$(cat go.mod go.sum ../build.sh | sha256sum | cut -c1-12)"
cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
out="$cache_root/tools/${tool}-${version}_${sum}"
if [[ -x "$out/$tool" ]]; then
  echo "$tool: cached in $out" >&2
  echo "$out/$tool"
  exit 0
fi

ldflags="-s -w"
if [[ $tool == helm ]]; then
  # As helm's Makefile does: its version, and the default Kubernetes version of `helm template` and
  # `helm lint` (client-go's minor).
  cg="$(awk '$1=="k8s.io/client-go" && $2 ~ /^v/ {print $2; exit}' go.mod)"
  cg_minor="${cg#v*.}"; cg_minor="${cg_minor%%.*}"
  ldflags+=" -X helm.sh/helm/v3/internal/version.version=$version"
  for p in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
    ldflags+=" -X $p.k8sVersionMajor=1 -X $p.k8sVersionMinor=$cg_minor"
  done
else
  ldflags+=" -X sigs.k8s.io/krew/internal/version.gitTag=$version"
fi

mkdir -p "$out.tmp"
export CGO_ENABLED=0
t=$SECONDS
echo "$tool: building $version into $out (a cold build takes a few minutes)..." >&2
( while sleep 30; do echo "$tool:   ... still building ($((SECONDS - t))s)" >&2; done ) &
ticker=$!
status=0
go build -ldflags "$ldflags" -o "$out.tmp/$tool" "$pkg" || status=$?
kill "$ticker" 2>/dev/null || true
wait "$ticker" 2>/dev/null || true
[[ $status == 0 ]] || { echo "$tool: build failed" >&2; exit "$status"; }
rm -rf "$out"
mv "$out.tmp" "$out"
echo "$tool: built in $((SECONDS - t))s" >&2
echo "$out/$tool"
