"""OpportunisticBatching in the daemon against the real API server: identical one-per-node pods pending
together are batched under a profile with PodTopologySpread ``defaultingType: List``, never under the
default profile, and the metrics say so with kube-scheduler's names and labels (bench.batch_probe runs
the same against kube-scheduler itself; docs/benchmark.md has both)."""

from __future__ import annotations

import re
from typing import Any

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.kube import create, eventually, list_pods

BATCHING = "py-batching"
DEFAULT = "py-scheduler"
CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {"schedulerName": DEFAULT},
        {
            "schedulerName": BATCHING,
            "pluginConfig": [{"name": "PodTopologySpread", "args": {"defaultingType": "List"}}],
        },
    ],
}


def _series(page: str, name: str, profile: str) -> dict[str, float]:
    """label value (result / reason) -> count of one batch counter for one profile."""
    out: dict[str, float] = {}
    for m in re.finditer(rf'^{name}\{{profile="{profile}",(?:result|reason)="(\w+)"\}} (\S+)$', page, re.M):
        out[m.group(1)] = float(m.group(2))
    return out


def _bound(cluster: LocalCluster, ns: str, scheduler: str) -> dict[str, str]:
    return {
        p["metadata"]["name"]: p["spec"].get("nodeName", "")
        for p in list_pods(cluster, ns)
        if p["spec"].get("schedulerName") == scheduler and p["spec"].get("nodeName")
    }


def _pod(ns: str, name: str, scheduler: str) -> dict[str, Any]:
    return (
        make_pod(name, ns)
        .scheduler(scheduler)
        .node_selector({"pool": ns})
        .res({"cpu": "100m", "memory": "128Mi"})
        .labels({"app": "batch"})
        .host_port(8080)
        .json()
    )


def test_identical_one_per_node_pods_are_batched_only_under_list_defaulting(cluster: LocalCluster) -> None:
    ns = "opportunistic-batching"
    cluster.api(
        "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}
    )
    cluster.create_nodes(12, prefix=f"{ns}-n", labels={"pool": ns})
    # pending together before the daemon starts: popped one right after the other
    for i in range(10):
        create(cluster, _pod(ns, f"b{i}", BATCHING))
    with SchedulerProcess(cluster.kubeconfig, CONFIG) as d:
        eventually(lambda: len(_bound(cluster, ns, BATCHING)) == 10, 60)
        got = _bound(cluster, ns, BATCHING)
        assert len(set(got.values())) == 10  # one per node (the host port)
        for p in list(got):
            cluster.api("DELETE", f"/api/v1/namespaces/{ns}/pods/{p}?gracePeriodSeconds=0")
        eventually(lambda: not _bound(cluster, ns, BATCHING), 30)
        for i in range(10):
            create(cluster, _pod(ns, f"d{i}", DEFAULT))
        eventually(lambda: len(_bound(cluster, ns, DEFAULT)) == 10, 60)

        def scraped() -> str:  # the metrics of the tenth default-profile cycle are in
            page = d.metrics()
            return page if f'profile="{DEFAULT}",result="no_hint"}} 10.0' in page else ""

        page = eventually(scraped, 10)
        assert d.alive()
    attempts = _series(page, "scheduler_batch_attempts_total", BATCHING)
    flushed = _series(page, "scheduler_batch_cache_flushed_total", BATCHING)
    # the first pod finds nothing stored; every later one its hint, unless a pause past 500 ms (a loaded
    # machine) expired the state, which then counts as a flush and a full cycle
    assert attempts.get("hint_used", 0) >= 1, page
    assert attempts.get("hint_used", 0) + attempts.get("no_hint", 0) == 10, attempts
    assert set(flushed) <= {"expired"}, flushed
    assert attempts.get("no_hint", 0) == 1 + flushed.get("expired", 0), (attempts, flushed)
    # default profile: PodTopologySpread's System defaulting refuses every pod, so nothing is stored
    assert _series(page, "scheduler_batch_attempts_total", DEFAULT) == {"no_hint": 10.0}
    assert _series(page, "scheduler_batch_cache_flushed_total", DEFAULT) == {"pod_not_batchable": 10.0}
