"""The test control plane is a real Kubernetes: these are the facts every other integration test relies on."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster


def eventually(fn: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"condition not met within {timeout}s (last value {last!r})")


def test_apiserver_reports_pinned_version(cluster: LocalCluster) -> None:
    assert cluster.api("GET", "/version")["gitVersion"] == "v1.36.3"


def test_kwok_keeps_fake_nodes_ready(cluster: LocalCluster) -> None:
    names = cluster.create_nodes(
        3,
        prefix="cp-ready",
        cpu="2",
        memory="4Gi",
        pods=20,
        labels={"pool": "a"},
        taints=[{"key": "dedicated", "value": "x", "effect": "NoSchedule"}],
    )
    for name in names:
        node = cluster.api("GET", f"/api/v1/nodes/{name}")
        assert node["status"]["allocatable"]["cpu"] == "2"
        assert node["metadata"]["labels"]["pool"] == "a"
        assert node["spec"]["taints"][0]["key"] == "dedicated"

    # KWOK renews the heartbeat (our node-heartbeat stage runs every 20-25 s); wait for one renewal.
    def heartbeat(name: str) -> str:
        conds = cluster.api("GET", f"/api/v1/nodes/{name}")["status"].get("conditions", [])
        return next((c.get("lastHeartbeatTime", "") for c in conds if c["type"] == "Ready"), "")

    first = heartbeat(names[0])
    renewed = eventually(lambda: heartbeat(names[0]) != first and heartbeat(names[0]), timeout=40)
    assert renewed
    ready = [
        c
        for c in cluster.api("GET", f"/api/v1/nodes/{names[0]}")["status"]["conditions"]
        if c["type"] == "Ready"
    ]
    assert ready[0]["status"] == "True"


def test_hand_made_binding_runs_the_pod_and_delete_removes_it(cluster: LocalCluster, ns: str) -> None:
    (node,) = cluster.create_nodes(1, prefix="cp-bind")
    pod = make_pod("hand-bound", ns).scheduler("nobody").req(cpu="100m").json()
    cluster.api("POST", f"/api/v1/namespaces/{ns}/pods", pod)
    binding = {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": "hand-bound"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": node},
    }
    cluster.api("POST", f"/api/v1/namespaces/{ns}/pods/hand-bound/binding", binding)

    def running() -> bool:
        p = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods/hand-bound")
        return p["spec"].get("nodeName") == node and p["status"].get("phase") == "Running"

    eventually(running)
    # A second binding is refused: a pod is bound once.
    status, _ = cluster.request("POST", f"/api/v1/namespaces/{ns}/pods/hand-bound/binding", binding)
    assert status == 409

    cluster.api("DELETE", f"/api/v1/namespaces/{ns}/pods/hand-bound")
    eventually(lambda: cluster.request("GET", f"/api/v1/namespaces/{ns}/pods/hand-bound")[0] == 404)


def test_service_account_token_is_limited_by_rbac(cluster: LocalCluster, ns: str) -> None:
    cluster.api(
        "POST",
        f"/api/v1/namespaces/{ns}/serviceaccounts",
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "reader"}},
    )
    cluster.api(
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}],
        },
    )
    cluster.api(
        "POST",
        f"/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "pod-reader"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "reader", "namespace": ns}],
        },
    )
    token = cluster.create_token(ns, "reader")

    status, _ = cluster.request("GET", f"/api/v1/namespaces/{ns}/pods", token=token)
    assert status == 200
    status, body = cluster.request("GET", "/api/v1/nodes", token=token)
    assert status == 403
    assert 'cannot list resource "nodes"' in body["message"]
    status, _ = cluster.request("DELETE", f"/api/v1/namespaces/{ns}/pods/x", token=token)
    assert status == 403


def test_controller_manager_gives_a_deployment_its_pods(cluster: LocalCluster, ns: str) -> None:
    dep = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "web"},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "schedulerName": "nobody",
                    "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}],
                },
            },
        },
    }
    cluster.api("POST", f"/apis/apps/v1/namespaces/{ns}/deployments", dep)

    def pods() -> int:
        items = cluster.api("GET", f"/api/v1/namespaces/{ns}/pods?labelSelector=app%3Dweb")["items"]
        return len(items) if len(items) == 3 else 0

    eventually(pods, timeout=60)


def test_two_clusters_run_at_once_and_stop_leaves_no_process(cluster: LocalCluster) -> None:
    import os

    with LocalCluster(with_kwok=False, name="second") as other:
        assert other.port != cluster.port
        assert other.request("GET", "/readyz")[0] == 200
        # objects in one cluster are not in the other
        cluster.api(
            "POST",
            "/api/v1/namespaces",
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "only-first"}},
        )
        assert other.request("GET", "/api/v1/namespaces/only-first")[0] == 404
        pids = [p.popen.pid for p in other.procs]
        state = other.state_dir
    for pid in pids:
        try:
            os.kill(pid, 0)
            alive = True
        except ProcessLookupError:
            alive = False
        assert not alive, f"process {pid} survived stop()"
    assert state is not None and not state.exists()
    # stopped: nothing listens any more
    status = None
    try:
        status, _ = other.request("GET", "/readyz", timeout=2)
    except OSError:
        status = -1
    assert status == -1
