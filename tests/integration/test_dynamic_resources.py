"""DynamicResources on the real control plane: ``pyscheduler run`` (default profile) with KWOK nodes
publishing ResourceSlices, claims from a ResourceClaimTemplate (created by the controller manager's
resourceclaim controller) and claims created directly.

Each test uses its own driver name (``gpu-<namespace>.example.com``), DeviceClass and slices, so tests
sharing the session's cluster do not see each other's devices.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.daemon import SchedulerProcess
from pyscheduler.testing.dra import (
    claim_template,
    device,
    device_class,
    exactly,
    resource_claim,
    resource_slice,
    without_server_fields,
)
from pyscheduler.testing.kube import eventually, list_pods, scheduled_condition

RESOURCE = "/apis/resource.k8s.io/v1"
CONFIG = {"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration"}


@pytest.fixture(scope="module")
def daemon(cluster: LocalCluster) -> Iterator[SchedulerProcess]:
    with SchedulerProcess(cluster.kubeconfig, CONFIG) as d:
        yield d
        assert d.alive(), f"the daemon died during the tests:\n{d.log_tail()}"


@pytest.fixture
def devices(cluster: LocalCluster, ns: str) -> Iterator[dict[str, Any]]:
    """This test's driver and DeviceClass; the cluster-scoped objects are deleted afterwards."""
    driver = f"gpu-{ns}.example.com"
    made: list[str] = []

    def post(path: str, obj: dict[str, Any]) -> None:
        cluster.api("POST", path, without_server_fields(obj))
        made.append(f"{path}/{obj['metadata']['name']}")

    def add_slice(node: str, count: int) -> None:
        post(
            f"{RESOURCE}/resourceslices",
            resource_slice(f"{node}-gpus", driver, [device(f"gpu-{i}") for i in range(count)], node=node),
        )

    post(f"{RESOURCE}/deviceclasses", device_class(f"{ns}-gpu", driver=driver))
    yield {"driver": driver, "class": f"{ns}-gpu", "add_slice": add_slice}
    for path in reversed(made):
        cluster.request("DELETE", path)


def claims(cluster: LocalCluster, ns: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = cluster.api("GET", f"{RESOURCE}/namespaces/{ns}/resourceclaims")["items"]
    return items


def managers(claim: dict[str, Any]) -> set[tuple[str, str]]:
    """(manager, subresource) of each managedFields entry."""
    return {
        (e.get("manager", ""), e.get("subresource", "")) for e in claim["metadata"].get("managedFields") or ()
    }


def allocated_devices(cluster: LocalCluster, ns: str) -> list[tuple[str, str, str]]:
    out = []
    for c in claims(cluster, ns):
        for r in ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results", []):
            out.append((r["driver"], r["pool"], r["device"]))
    return out


def bound(cluster: LocalCluster, ns: str) -> dict[str, str]:
    return {p["metadata"]["name"]: p["spec"].get("nodeName", "") for p in list_pods(cluster, ns)}


def total_nodes(cluster: LocalCluster) -> int:
    return len(cluster.api("GET", "/api/v1/nodes")["items"])


def pool_pod(ns: str, name: str) -> Any:
    """A pod pinned to this test's nodes, tolerating every taint: the session's other nodes (some tainted
    or cordoned by other tests) all say the same thing, "didn't match Pod's node affinity/selector"."""
    return (
        make_pod(name, ns).scheduler("py-scheduler").node_selector({"pool": ns}).toleration(operator="Exists")
    )


def not_allocatable_message(n: int, mine: int) -> str:
    """kube 1.36's FailedScheduling text when none of this test's ``mine`` nodes has a free device
    (DynamicResources' PostFilter runs before preemption, which finds nothing: every rejection is
    UnschedulableAndUnresolvable). kube sorts the "count reason" strings."""
    reasons = sorted(
        [f"{mine} cannot allocate all claims"]
        + ([f"{n - mine} node(s) didn't match Pod's node affinity/selector"] if n > mine else [])
    )
    return (
        f"0/{n} nodes are available: {', '.join(reasons)}. still not schedulable, "
        f"preemption: 0/{n} nodes are available: {n} Preemption is not helpful for scheduling."
    )


def test_200_pods_compete_for_50_devices_from_a_template(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, devices: dict[str, Any]
) -> None:
    nodes = cluster.create_nodes(5, prefix=f"{ns}-n", labels={"pool": ns}, pods=110)
    # a tainted node outside the pool, as other tests leave behind: it must not change the reason
    cluster.create_nodes(1, prefix=f"{ns}-other", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}])
    for node in nodes:
        devices["add_slice"](node, 10)
    cluster.api(
        "POST",
        f"{RESOURCE}/namespaces/{ns}/resourceclaimtemplates",
        claim_template("one-gpu", exactly("gpu", devices["class"]), namespace=ns),
    )
    for i in range(200):
        pod = pool_pod(ns, f"p{i}").resource_claim("gpu", template="one-gpu")
        cluster.api("POST", f"/api/v1/namespaces/{ns}/pods", pod.json())

    eventually(lambda: len(claims(cluster, ns)) == 200, timeout=120, what="the controller created 200 claims")
    eventually(
        lambda: sum(1 for n in bound(cluster, ns).values() if n) == 50, timeout=180, what="50 pods bound"
    )

    def all_pending_explained() -> list[str]:
        want = not_allocatable_message(total_nodes(cluster), len(nodes))
        off = []
        for p in list_pods(cluster, ns):
            if p["spec"].get("nodeName"):
                continue
            cond = scheduled_condition(p)
            if cond is None or cond.get("reason") != "Unschedulable" or cond.get("message") != want:
                off.append(f"{p['metadata']['name']}: {cond}")
        return off

    try:
        eventually(
            lambda: not all_pending_explained(), timeout=180, what="150 pending pods with kube's reason"
        )
    except AssertionError as e:
        raise AssertionError(f"{e}; e.g. {all_pending_explained()[:2]}") from None

    placed = bound(cluster, ns)
    assert sum(1 for n in placed.values() if n) == 50  # still exactly 50: nobody got a device twice
    taken = allocated_devices(cluster, ns)
    assert len(taken) == 50 and len(set(taken)) == 50, Counter(taken).most_common(3)
    assert all(d[0] == devices["driver"] for d in taken)
    assert Counter(pool for _, pool, _ in taken) == {n: 10 for n in nodes}
    # each bound pod's claim is allocated on its own node and reserved for it
    by_owner = {(c["metadata"].get("ownerReferences") or [{}])[0].get("name"): c for c in claims(cluster, ns)}
    for pod_name, node in placed.items():
        c = by_owner[pod_name]
        alloc = (c.get("status") or {}).get("allocation")
        if not node:
            assert alloc is None, f"{pod_name} is pending but its claim is allocated"
            continue
        assert alloc is not None and {r["pool"] for r in alloc["devices"]["results"]} == {node}
        assert [r["name"] for r in c["status"]["reservedFor"]] == [pod_name]
        assert "resource.kubernetes.io/delete-protection" in c["metadata"]["finalizers"]
        assert alloc["allocationTimestamp"]


def test_direct_claims_one_device_and_a_shared_claim(
    cluster: LocalCluster, ns: str, daemon: SchedulerProcess, devices: dict[str, Any]
) -> None:
    [node] = cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns})
    devices["add_slice"](node, 2)
    for name in ("a", "b", "shared"):
        cluster.api(
            "POST",
            f"{RESOURCE}/namespaces/{ns}/resourceclaims",
            without_server_fields(resource_claim(name, exactly("gpu", devices["class"]), namespace=ns)),
        )
    created = {c["metadata"]["name"]: managers(c) for c in claims(cluster, ns)}
    # p1 and p2 share one claim (one device); pa takes the other device; pb finds none
    for pod, claim in (("p1", "shared"), ("p2", "shared"), ("pa", "a"), ("pb", "b")):
        body = pool_pod(ns, pod).resource_claim("gpu", claim=claim).json()
        cluster.api("POST", f"/api/v1/namespaces/{ns}/pods", body)

    eventually(
        lambda: sum(1 for n in bound(cluster, ns).values() if n) == 3, timeout=60, what="three pods bound"
    )
    placed = bound(cluster, ns)
    assert placed == {"p1": node, "p2": node, "pa": node, "pb": ""}
    by_name = {c["metadata"]["name"]: c for c in claims(cluster, ns)}
    assert sorted(r["name"] for r in by_name["shared"]["status"]["reservedFor"]) == ["p1", "p2"]
    assert len(by_name["shared"]["status"]["allocation"]["devices"]["results"]) == 1
    assert (by_name["b"].get("status") or {}).get("allocation") is None
    # the daemon's records keep no managedFields; its status writes leave the creator's entries in place
    assert created["a"] and created["a"] < managers(by_name["a"])
    taken = allocated_devices(cluster, ns)
    assert len(taken) == len(set(taken)) == 2

    def pb_reason() -> str:
        p = next(p for p in list_pods(cluster, ns) if p["metadata"]["name"] == "pb")
        cond = scheduled_condition(p) or {}
        return str(cond.get("message", ""))

    want = not_allocatable_message(total_nodes(cluster), 1)
    try:
        eventually(lambda: pb_reason() == want, what="pb's reason")
    except AssertionError as e:
        raise AssertionError(f"{e}: {pb_reason()!r} != {want!r}") from None
