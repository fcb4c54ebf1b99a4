#!/usr/bin/env bash
# Builds the control-plane binaries our tests run (kube-apiserver, kube-scheduler,
# kube-controller-manager, kubectl, kwok, etcd) from the modules pinned in go.mod,
# once, into a cache directory keyed by the pinned versions and go.sum. Prints the
# directory holding the binaries on its last line. Safe to run again: a complete
# cache is reused as it is.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"

k8s_version="$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' go.mod)"
kwok_version="$(awk '$1=="sigs.k8s.io/kwok" && $2 ~ /^v/ {print $2; exit}' go.mod)"
etcd_version="$(awk '$1=="go.etcd.io/etcd/server/v3" && $2 ~ /^v/ {print $2; exit}' go.mod)"
sum="$(cat go.mod go.sum cmd/etcd/main.go build.sh | sha256sum | cut -c1-12)"
cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
out="$cache_root/controlplane/k8s-${k8s_version}_kwok-${kwok_version}_etcd-${etcd_version}_${sum}"
bins=(kube-apiserver kube-scheduler kube-controller-manager kubectl kwok etcd)

complete=1
for b in "${bins[@]}"; do [[ -x "$out/$b" ]] || complete=0; done
if [[ $complete == 1 ]]; then
  echo "control plane: cached in $out" >&2
  echo "$out"
  exit 0
fi

mkdir -p "$out.tmp"
major="${k8s_version#v}"; major="${major%%.*}"
minor="${k8s_version#v*.}"; minor="${minor%%.*}"
pkg=k8s.io/component-base/version
ldflags="-s -w -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
export CGO_ENABLED=0
start=$SECONDS
echo "control plane: building k8s $k8s_version, kwok $kwok_version, etcd $etcd_version into $out (a cold build takes a while)" >&2
t=$SECONDS
echo "control plane: downloading the pinned modules..." >&2
go mod download
echo "control plane:   modules in $((SECONDS - t))s" >&2
# One binary at a time, each timed, so a cold build shows where it is (the first compiles the shared
# Kubernetes packages into Go's build cache; the later ones reuse them, so the total is about the same).
pkgs=(
  k8s.io/kubernetes/cmd/kube-apiserver
  k8s.io/kubernetes/cmd/kube-scheduler
  k8s.io/kubernetes/cmd/kube-controller-manager
  k8s.io/kubernetes/cmd/kubectl
  sigs.k8s.io/kwok/cmd/kwok
  ./cmd/etcd
)
for i in "${!pkgs[@]}"; do
  pkg=${pkgs[$i]}
  t=$SECONDS
  echo "control plane: [$((i + 1))/${#pkgs[@]}] building ${pkg##*/}..." >&2
  # a line every 30 s while the compiler works, so nobody wonders whether it hung
  ( while sleep 30; do echo "control plane:   ... ${pkg##*/} still building ($((SECONDS - t))s)" >&2; done ) &
  ticker=$!
  status=0
  go build -ldflags "$ldflags" -o "$out.tmp/" "$pkg" || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  [[ $status == 0 ]] || { echo "control plane: building $pkg failed" >&2; exit "$status"; }
  echo "control plane:   ${pkg##*/} in $((SECONDS - t))s" >&2
done
rm -rf "$out"
mv "$out.tmp" "$out"
echo "control plane: built in $((SECONDS - start))s" >&2
echo "$out"
