#!/usr/bin/env bash
# Builds pyscheduler's image from the Dockerfile with buildah: no Docker daemon, no registry.
#
#   bash e2e/image/build.sh [TAG]        # default localhost/pyscheduler:dev
#
# needs buildah (and debootstrap for the base): `apt-get install buildah debootstrap podman runc`.
#
# The Dockerfile's base is python:3.11-slim from Docker Hub. Where no registry is reachable (this project's
# machines reach Debian's archive and PyPI only), the base is assembled here instead, once: a Debian
# bookworm root filesystem (debootstrap --variant=minbase with python3 and python3-venv: Python 3.11), a
# virtualenv at /opt/python first on the PATH (so `pip` and `python` are what the Dockerfile expects), pip
# told to trust the operating system's CA store, docs and locales dropped. PYSCHEDULER_IMAGE_BASE names
# another base image (e.g. docker.io/library/python:3.11-slim where Docker Hub is reachable).
#
# Images live in their own storage (vfs driver, no overlay mounts needed):
# ~/.cache/pyscheduler/image/{storage,run} (PYSCHEDULER_CACHE overrides the root). Use the same --root and
# --runroot with podman to run the image (tests/integration/test_image.py does). The last two lines printed
# are the image's tag and the build's seconds.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
tag="${1:-localhost/pyscheduler:dev}"
cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
storage=(--root "$cache_root/image/storage" --runroot "$cache_root/image/run" --storage-driver vfs)
base="${PYSCHEDULER_IMAGE_BASE:-localhost/pyscheduler-python:3.11-bookworm}"

for tool in buildah; do
  command -v "$tool" >/dev/null || { echo "image: $tool is not installed (apt-get install buildah debootstrap podman runc)" >&2; exit 3; }
done

if [[ -z "${PYSCHEDULER_IMAGE_BASE:-}" ]] && ! buildah "${storage[@]}" inspect --type image "$base" >/dev/null 2>&1; then
  command -v debootstrap >/dev/null || { echo "image: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 3; }
  t=$SECONDS
  rootfs="$(mktemp -d "${TMPDIR:-/tmp}/pyscheduler-base.XXXXXX")"
  trap 'rm -rf "$rootfs"' EXIT
  mirror="${PYSCHEDULER_DEBIAN_MIRROR:-http://deb.debian.org/debian}"
  echo "image: assembling the base $base from Debian bookworm ($mirror; a few minutes, once)..." >&2
  ( while sleep 30; do echo "image:   ... debootstrap still running ($((SECONDS - t))s)" >&2; done ) &
  ticker=$!
  status=0
  debootstrap --variant=minbase --include=python3,python3-venv,ca-certificates bookworm "$rootfs" "$mirror" \
    >"$rootfs.log" 2>&1 || status=$?
  kill "$ticker" 2>/dev/null || true
  wait "$ticker" 2>/dev/null || true
  [[ $status == 0 ]] || { tail -20 "$rootfs.log" >&2; echo "image: debootstrap failed" >&2; exit "$status"; }
  chroot "$rootfs" python3 -m venv /opt/python
  printf '[global]\n# the operating system trust store, not the copy of certifi pip ships\ncert = /etc/ssl/certs/ca-certificates.crt\n' \
    >"$rootfs/etc/pip.conf"
  rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
    "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/* "$rootfs"/usr/share/info/*
  ctr="$(buildah "${storage[@]}" from scratch)"
  buildah "${storage[@]}" copy "$ctr" "$rootfs" / >/dev/null
  buildah "${storage[@]}" config \
    --env PATH=/opt/python/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env LANG=C.UTF-8 --cmd python3 "$ctr"
  buildah "${storage[@]}" commit -q --rm "$ctr" "$base" >/dev/null
  rm -rf "$rootfs" "$rootfs.log"
  echo "image:   base in $((SECONDS - t))s" >&2
fi

# The build's RUN steps reach PyPI; where TLS is intercepted by a proxy whose CA only this machine's store
# holds, that store is lent to them (a bind mount: never part of the image).
ca=()
[[ -f /etc/ssl/certs/ca-certificates.crt ]] && ca=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro)
t=$SECONDS
echo "image: building $tag from $repo/Dockerfile on $base..." >&2
buildah "${storage[@]}" bud --isolation chroot --layers=false "${ca[@]}" \
  --build-arg "PYTHON_IMAGE=$base" -t "$tag" "$repo" >&2
seconds=$((SECONDS - t))
size="$(buildah "${storage[@]}" images --format '{{.Name}}:{{.Tag}} {{.Size}}' | awk -v t="$tag" '$1==t {print $2, $3}')"
echo "image: built $tag in ${seconds}s, $size" >&2
echo "$tag"
echo "$seconds"
