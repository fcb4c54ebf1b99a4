#!/usr/bin/env bash
# Builds the e2e test binary (main_test.go: Kubernetes' [sig-scheduling] specs from the release pinned
# in go.mod) once, into a cache directory keyed by that version and by this module's files, separate
# from the control plane's. Prints the binary's path on its last line. Safe to run again: a complete
# cache is reused as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

k8s_version="$(awk '$1=="require" && $2=="k8s.io/kubernetes" {print $3; exit} $1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' go.mod)"
sum="$(cat go.mod go.sum main_test.go build.sh | sha256sum | cut -c1-12)"
cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
out="$cache_root/conformance/k8s-${k8s_version}_${sum}"
bin="$out/e2e-scheduling.test"

if [[ -x "$bin" ]]; then
  echo "conformance: e2e binary cached in $out" >&2
  echo "$bin"
  exit 0
fi

mkdir -p "$out.tmp"
pkg=k8s.io/component-base/version
major="${k8s_version#v}"; major="${major%%.*}"
minor="${k8s_version#v*.}"; minor="${minor%%.*}"
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
export CGO_ENABLED=0
start=$SECONDS
echo "conformance: building the e2e binary (k8s $k8s_version test/e2e/scheduling) into $out" >&2
echo "conformance: downloading the pinned modules..." >&2
go mod download
# a line every 30 s while the compiler works, so nobody wonders whether it hung
( while sleep 30; do echo "conformance:   ... e2e binary still building ($((SECONDS - start))s)" >&2; done ) &
ticker=$!
status=0
go test -c -ldflags "$ldflags" -o "$out.tmp/e2e-scheduling.test" . || status=$?
kill "$ticker" 2>/dev/null || true
wait "$ticker" 2>/dev/null || true
[[ $status == 0 ]] || { echo "conformance: building the e2e binary failed" >&2; exit "$status"; }
rm -rf "$out"
mv "$out.tmp" "$out"
echo "conformance: e2e binary built in $((SECONDS - start))s" >&2
echo "$bin"
