#!/usr/bin/env bash
# `make e2e-kind`: the end-to-end suite against pyscheduler deployed in a kind cluster.
#
#   1. checks the prerequisites (a Docker engine that answers, kind, kubectl, .venv) and exits 2 at once,
#      saying what is missing, if any is not there;
#   2. creates the kind cluster $KIND_CLUSTER_NAME (default pyscheduler-e2e; e2e/kind-config.yaml: 1 control
#      plane + 3 workers) or reuses it if it exists, and labels one worker scheduler.pyscheduler.io/filter=gpu;
#   3. builds the image ($IMAGE, default pyscheduler:dev) from the Dockerfile and loads it into the nodes;
#   4. applies manifests/ (kubectl apply -k), waits for the Deployment and for a leader;
#   5. runs `.venv/bin/pytest -q e2e --kind` with PYSCHEDULER_E2E_KUBECONFIG (and KUBECONFIG) set to the
#      cluster's kubeconfig;
#   6. deletes the cluster on exit, whatever happened, unless KEEP_CLUSTER=1.
#
# Environment: KIND_CLUSTER_NAME, KIND_NODE_IMAGE (kindest/node:<version>), IMAGE, KEEP_CLUSTER=1,
# KUBECTL (a kubectl to use), PYTEST_ARGS (extra pytest arguments), DOCKER_INFO_TIMEOUT (seconds, default 20).
# Exit codes: 2 prerequisites missing; otherwise the status of the first failing step, or pytest's.
set -euo pipefail

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"

cluster="${KIND_CLUSTER_NAME:-pyscheduler-e2e}"
image="${IMAGE:-pyscheduler:dev}"
keep="${KEEP_CLUSTER:-0}"
info_timeout="${DOCKER_INFO_TIMEOUT:-20}"

say() { printf 'e2e-kind: %s\n' "$*" >&2; }

# ------------------------------------------------------------------------------------------ prerequisites
problems=()
if ! command -v timeout >/dev/null 2>&1; then
  problems+=("'timeout' (GNU coreutils) is not installed")
fi
if ! command -v docker >/dev/null 2>&1; then
  problems+=("the docker CLI is not installed (kind runs its nodes as Docker containers)")
elif command -v timeout >/dev/null 2>&1; then
  docker_err="$(timeout --kill-after=5 "$info_timeout" docker info 2>&1 >/dev/null)" && rc=0 || rc=$?
  if [[ $rc != 0 ]]; then
    if [[ $rc == 124 || $rc == 137 ]]; then
      problems+=("'docker info' did not answer within ${info_timeout}s: is the Docker engine running?")
    else
      problems+=("'docker info' failed: no Docker engine reachable (${docker_err%%$'\n'*})")
    fi
  fi
fi
if ! command -v kind >/dev/null 2>&1; then
  problems+=("kind is not installed (https://kind.sigs.k8s.io/docs/user/quick-start/#installation)")
fi

# kubectl: $KUBECTL, else the one `make controlplane` built, else the one on PATH.
kubectl_bin="${KUBECTL:-}"
if [[ -z "$kubectl_bin" && -n "${PYSCHEDULER_CONTROLPLANE_BIN:-}" && -x "$PYSCHEDULER_CONTROLPLANE_BIN/kubectl" ]]; then
  kubectl_bin="$PYSCHEDULER_CONTROLPLANE_BIN/kubectl"
fi
if [[ -z "$kubectl_bin" ]]; then
  cache_root="${PYSCHEDULER_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/pyscheduler}"
  for k in "$cache_root"/controlplane/*/kubectl; do  # the newest build
    [[ -x "$k" ]] || continue
    if [[ -z "$kubectl_bin" || "$k" -nt "$kubectl_bin" ]]; then kubectl_bin="$k"; fi
  done
fi
if [[ -z "$kubectl_bin" ]] && command -v kubectl >/dev/null 2>&1; then
  kubectl_bin="$(command -v kubectl)"
fi
if [[ -z "$kubectl_bin" || ! -x "$kubectl_bin" ]]; then
  problems+=("no kubectl: set KUBECTL, run 'make controlplane', or install kubectl")
fi
if [[ ! -x .venv/bin/pytest ]]; then
  problems+=(".venv/bin/pytest is missing: run 'make install'")
fi

if (( ${#problems[@]} )); then
  say "cannot run the kind end-to-end suite:"
  for p in "${problems[@]}"; do say "  - $p"; done
  say "(the same suite runs without Docker against a local control plane: make e2e)"
  exit 2
fi

# ------------------------------------------------------------------------------------------ cluster
workdir="$(mktemp -d "${TMPDIR:-/tmp}/pyscheduler-kind.XXXXXX")"
kubeconfig="$workdir/kubeconfig"
kc() { timeout 300 "$kubectl_bin" --kubeconfig "$kubeconfig" "$@"; }

cleanup() {
  local rc=$?
  if [[ $rc != 0 && -s "$kubeconfig" ]]; then
    say "failed (exit $rc); scheduler state:"
    kc -n py-scheduler get deployment,pods,lease -o wide >&2 || true
    kc -n py-scheduler logs deployment/py-scheduler --all-containers --tail=50 >&2 || true
  fi
  if [[ "$keep" == 1 ]]; then
    say "KEEP_CLUSTER=1: keeping cluster '$cluster' (kubeconfig: $kubeconfig); delete it with: kind delete cluster --name $cluster"
  else
    say "deleting cluster '$cluster'"
    timeout 300 kind delete cluster --name "$cluster" >&2 || say "deleting the cluster failed"
    rm -rf "$workdir"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

reused=0
if kind get clusters 2>/dev/null | grep -qx "$cluster"; then
  say "reusing existing cluster '$cluster'"
  reused=1
else
  say "creating cluster '$cluster' (1 control plane, 3 workers)"
  create=(kind create cluster --name "$cluster" --config e2e/kind-config.yaml --wait 180s)
  [[ -n "${KIND_NODE_IMAGE:-}" ]] && create+=(--image "$KIND_NODE_IMAGE")
  timeout 900 "${create[@]}"
fi
timeout 60 kind get kubeconfig --name "$cluster" >"$kubeconfig"
export KUBECONFIG="$kubeconfig"
export PYSCHEDULER_E2E_KUBECONFIG="$kubeconfig"

kc wait --for=condition=Ready nodes --all --timeout=180s
gpu_node="$(kc get nodes -l '!node-role.kubernetes.io/control-plane' -o jsonpath='{.items[0].metadata.name}')"
say "labelling node $gpu_node scheduler.pyscheduler.io/filter=gpu"
kc label node "$gpu_node" scheduler.pyscheduler.io/filter=gpu --overwrite

# ------------------------------------------------------------------------------------------ image
say "building image $image"
DOCKER_BUILDKIT=1 timeout 1800 docker build -t "$image" .
say "loading $image into the nodes"
timeout 600 kind load docker-image "$image" --name "$cluster"

# ------------------------------------------------------------------------------------------ deploy
say "applying manifests/ with $kubectl_bin"
kc apply -k manifests/
# The LabelMatch example profile (the image ships the example plugins), so the e2e LabelMatch test runs.
kc apply -f manifests/examples/label-match/configmap.yaml
if [[ "$image" != "pyscheduler:dev" ]]; then
  kc -n py-scheduler set image deployment/py-scheduler "scheduler=$image"
fi
# New config or, when reused, the same tag with a new image: start fresh pods either way.
kc -n py-scheduler rollout restart deployment/py-scheduler
kc -n py-scheduler rollout status deployment/py-scheduler --timeout=300s
say "waiting for a leader"
holder=""
for _ in $(seq 1 60); do
  holder="$(kc -n py-scheduler get lease py-scheduler -o jsonpath='{.spec.holderIdentity}' 2>/dev/null || true)"
  [[ -n "$holder" ]] && break
  sleep 2
done
if [[ -z "$holder" ]]; then
  say "no replica acquired the lease py-scheduler/py-scheduler within 120s"
  exit 1
fi
say "leader: $holder"

# ------------------------------------------------------------------------------------------ tests
say "running the e2e suite against cluster '$cluster'"
# shellcheck disable=SC2086  # PYTEST_ARGS is split on purpose
.venv/bin/pytest -q e2e --kind ${PYTEST_ARGS:-}
