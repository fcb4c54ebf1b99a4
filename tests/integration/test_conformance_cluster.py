"""The cluster `make conformance` runs the upstream specs on: what its fake kubelet (KWOK with
testing/kwok/conformance-stages.yaml), its nodes and its API server must do that a real cluster does."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pyscheduler.testing import conformance
from pyscheduler.testing.cluster import LocalCluster

pytestmark = [pytest.mark.cluster, pytest.mark.slow]

NS = "default"


@pytest.fixture(scope="module")
def ccluster() -> Iterator[LocalCluster]:
    c = conformance.start_cluster(2, "itest")
    try:
        yield c
    finally:
        c.stop()


def eventually(fn: Callable[[], Any], timeout: float = 20.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value {last!r})")


def pod(name: str, node: str, *, prestop: int | None = None, grace: int = 30) -> dict[str, Any]:
    container: dict[str, Any] = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if prestop is not None:
        container["lifecycle"] = {"preStop": {"sleep": {"seconds": prestop}}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"nodeName": node, "containers": [container], "terminationGracePeriodSeconds": grace},
    }


def get_pod(c: LocalCluster, name: str) -> dict[str, Any] | None:
    status, out = c.request("GET", f"/api/v1/namespaces/{NS}/pods/{name}")
    return out if status == 200 else None


def running(c: LocalCluster, name: str) -> bool:
    p = get_pod(c, name)
    return bool(p and p["status"].get("phase") == "Running")


def test_nodes_have_what_a_kubelet_reports(ccluster: LocalCluster) -> None:
    nodes = ccluster.api("GET", "/api/v1/nodes")["items"]
    assert len(nodes) == 2
    zones = {n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes}
    assert len(zones) == 2
    for n in nodes:
        st = n["status"]
        assert st["allocatable"]["ephemeral-storage"] == "100Gi"
        assert any(a["type"] == "InternalIP" and a["address"] for a in st["addresses"])
        assert st["nodeInfo"]["kubeletVersion"]
        ready = next(c for c in st["conditions"] if c["type"] == "Ready")
        assert ready["status"] == "True"


def test_workload_and_podgroup_alpha_api_is_served(ccluster: LocalCluster) -> None:
    group = ccluster.api("GET", "/apis/scheduling.k8s.io/v1alpha2")
    names = {r["name"] for r in group["resources"]}
    assert {"workloads", "podgroups"} <= names


def test_extended_resource_patched_into_capacity_reaches_allocatable_and_leaves(
    ccluster: LocalCluster,
) -> None:
    path = "/api/v1/nodes/node-1/status"
    node = ccluster.api("GET", "/api/v1/nodes/node-1")
    node["status"]["capacity"]["example.com/beardsecond"] = "1000"
    ccluster.api("PUT", path, node)  # as the pod-overhead spec does (UpdateStatus)

    def allocatable() -> dict[str, str]:
        return dict(ccluster.api("GET", "/api/v1/nodes/node-1")["status"]["allocatable"])

    # the API server writes the quantity back in canonical form
    eventually(lambda: allocatable().get("example.com/beardsecond") in ("1000", "1k"), timeout=10)
    assert allocatable()["cpu"] == "4"

    node = ccluster.api("GET", "/api/v1/nodes/node-1")
    del node["status"]["capacity"]["example.com/beardsecond"]
    ccluster.api("PUT", path, node)
    eventually(lambda: "example.com/beardsecond" not in allocatable(), timeout=10)


def test_terminating_pod_stays_while_its_prestop_hook_runs(ccluster: LocalCluster) -> None:
    ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("hooked", "node-0", prestop=4, grace=30))
    eventually(lambda: running(ccluster, "hooked"))
    ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/hooked")
    started = time.monotonic()
    time.sleep(2)
    p = get_pod(ccluster, "hooked")
    assert p is not None and p["metadata"].get("deletionTimestamp"), "deleted before its preStop sleep ended"
    eventually(lambda: get_pod(ccluster, "hooked") is None, timeout=15)
    assert time.monotonic() - started < 12, "kept for the whole grace period instead of the preStop sleep"


def test_terminating_pod_without_hook_goes_at_once(ccluster: LocalCluster) -> None:
    ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("plain", "node-0"))
    eventually(lambda: running(ccluster, "plain"))
    ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/plain")
    eventually(lambda: get_pod(ccluster, "plain") is None, timeout=5)


def test_a_new_pod_with_a_terminated_pods_name_is_left_alone(ccluster: LocalCluster) -> None:
    ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("reused", "node-0", prestop=3))
    eventually(lambda: running(ccluster, "reused"))
    old = get_pod(ccluster, "reused")
    assert old is not None
    ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/reused")  # graceful: KWOK's job due in 3 s
    ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/reused?gracePeriodSeconds=0")
    eventually(lambda: get_pod(ccluster, "reused") is None, timeout=5)
    ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("reused", "node-1"))
    eventually(lambda: running(ccluster, "reused"))
    time.sleep(5)  # past the first pod's preStop sleep
    new = get_pod(ccluster, "reused")
    assert new is not None, "the new pod was deleted through the old one's name"
    assert new["metadata"]["uid"] != old["metadata"]["uid"]
    assert not new["metadata"].get("deletionTimestamp")
    assert new["status"]["phase"] == "Running"


def test_a_running_pod_reports_podscheduled_as_a_kubelet_does(ccluster: LocalCluster) -> None:
    # upstream's GetPodsScheduled fails a spec on any bound pod without the condition (here: the
    # per-node system pods, bound by nodeName without a scheduler)
    pods = ccluster.api("GET", "/api/v1/namespaces/kube-system/pods")["items"]
    assert len(pods) == 2 * len(conformance.SYSTEM_PODS)
    for p in pods:
        conds = {c["type"]: c["status"] for c in p["status"].get("conditions", [])}
        assert conds.get("PodScheduled") == "True", p["metadata"]["name"]


def test_a_deleted_podgroup_goes_once_its_protection_finalizer_is_removed(ccluster: LocalCluster) -> None:
    base = f"/apis/scheduling.k8s.io/v1alpha2/namespaces/{NS}/podgroups"
    body = {
        "apiVersion": "scheduling.k8s.io/v1alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "pg"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    ccluster.api("POST", base, body)
    ccluster.api("DELETE", f"{base}/pg")
    eventually(lambda: ccluster.request("GET", f"{base}/pg")[0] == 404, timeout=15)


def test_force_deleted_pod_replaced_at_once_by_a_same_named_one_keeps_the_new_one(
    ccluster: LocalCluster,
) -> None:
    # what upstream's Get2NodesThatCanRunPod does: delete "without-label" with gracePeriodSeconds=0 and
    # at once create another "without-label"; the fake kubelet must not delete or stall the new one
    for i in range(8):
        ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("again", f"node-{i % 2}"))
        eventually(lambda: running(ccluster, "again"), timeout=10)
        ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/again?gracePeriodSeconds=0")
        ccluster.api("POST", f"/api/v1/namespaces/{NS}/pods", pod("again", f"node-{(i + 1) % 2}"))
        eventually(lambda: running(ccluster, "again"), timeout=10)
        time.sleep(0.5)
        p = get_pod(ccluster, "again")
        assert p is not None and not p["metadata"].get("deletionTimestamp"), (
            f"round {i}: the new pod was deleted"
        )
        ccluster.api("DELETE", f"/api/v1/namespaces/{NS}/pods/again?gracePeriodSeconds=0")
        eventually(lambda: get_pod(ccluster, "again") is None, timeout=5)
