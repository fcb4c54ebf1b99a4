"""Permit waits, Unreserve on timeout, and scheduling that survives etcd compaction and an apiserver restart.

These run the scheduler in-process (``build_app``) against the real control plane, with a test Permit
plugin added to the registry, so the test can allow a waiting pod and see Unreserve run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from pyscheduler.app import App, build_app
from pyscheduler.client.api import Api
from pyscheduler.client.connection import load_configuration
from pyscheduler.config.load import parse_config
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.registry import full_registry, plugin_extension_points
from pyscheduler.testing.builders import make_pod
from pyscheduler.testing.cluster import LocalCluster
from pyscheduler.testing.kube import create, events_for, eventually, get_pod, list_pods, node_of

WAIT_LABEL = "test.pyscheduler.io/permit"


class GatekeeperPermit:
    """Pods labelled permit=wait wait up to the label's timeout; tests allow them through the handle.
    permit=once: the pod's first attempt waits (30 s), every later one is rejected."""

    name = "GatekeeperPermit"

    def __init__(self) -> None:
        self.unreserved: list[str] = []
        self.reserved: list[str] = []
        self.permitted: set[str] = set()
        self.lock = threading.Lock()

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        with self.lock:
            self.reserved.append(pod.name)
        return None

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        with self.lock:
            self.unreserved.append(pod.name)

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        mode = pod.labels.get(WAIT_LABEL)
        if mode == "wait":
            return Status.wait("waiting for the test", plugin=self.name), 30.0
        if mode == "short":
            return Status.wait("waiting briefly", plugin=self.name), 1.0
        if mode == "once":
            with self.lock:
                first = pod.uid not in self.permitted
                self.permitted.add(pod.uid)
            if first:
                return Status.wait("waiting for the test", plugin=self.name), 30.0
            return Status.unschedulable("the test lets it wait only once", plugin=self.name), 0.0
        return None, 0.0


@pytest.fixture(scope="module")
def app(cluster: LocalCluster) -> Iterator[tuple[App, GatekeeperPermit]]:
    gate = GatekeeperPermit()
    registry = {**full_registry(), gate.name: PluginSpec(gate.name, lambda args, handle: gate)}

    def eps(name: str) -> set[str]:
        if name == gate.name:
            return {"reserve", "permit"}
        return plugin_extension_points(registry[name])

    config = parse_config(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [
                {"schedulerName": "py-permit", "plugins": {"multiPoint": {"enabled": [{"name": gate.name}]}}}
            ],
        },
        registry,
        eps,
    )
    api = Api(load_configuration(str(cluster.kubeconfig)), qps=200, burst=400)
    a = build_app(config, registry, api)
    a.start_informers()
    a.start_scheduling()
    yield a, gate
    a.stop()
    api.close()


def pod(ns: str, name: str) -> Any:
    return make_pod(name, ns).scheduler("py-permit").node_selector({"pool": ns})


def test_permit_wait_then_allow_binds(
    cluster: LocalCluster, ns: str, app: tuple[App, GatekeeperPermit]
) -> None:
    a, gate = app
    (node,) = cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns})
    create(cluster, pod(ns, "held").label(WAIT_LABEL, "wait").json())
    fwk = a.profiles["py-permit"]
    wp = eventually(
        lambda: next((w for w in fwk.handle.iterate_waiting_pods() if w.pod.name == "held"), None)
    )
    assert wp is not None
    assert wp.pending_plugins() == [gate.name]
    assert node_of(cluster, ns, "held") == ""  # waiting, not bound
    wp.allow(gate.name)
    eventually(lambda: node_of(cluster, ns, "held") == node, timeout=10)
    assert "held" not in gate.unreserved


def test_permit_timeout_unreserves_and_requeues(
    cluster: LocalCluster, ns: str, app: tuple[App, GatekeeperPermit]
) -> None:
    _, gate = app
    cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns}, cpu="1")
    create(cluster, pod(ns, "impatient").label(WAIT_LABEL, "short").req(cpu="600m").json())
    eventually(lambda: "impatient" in gate.unreserved, timeout=15, what="Unreserve after the Permit timeout")
    ev = eventually(lambda: events_for(cluster, ns, "impatient", "FailedScheduling"))
    assert "rejected due to timeout after waiting 1s at plugin GatekeeperPermit" in ev[0]["note"]
    assert node_of(cluster, ns, "impatient") == ""
    # The reservation was released: a pod needing the same cpu fits on the node meanwhile.
    create(cluster, pod(ns, "next").req(cpu="600m").json())
    eventually(lambda: node_of(cluster, ns, "next"), timeout=10)


def test_a_preemptor_whose_binding_cycle_fails_is_no_longer_nominated(
    cluster: LocalCluster, ns: str, app: tuple[App, GatekeeperPermit]
) -> None:
    """kube-scheduler clears a pod's nomination when its binding cycle fails (clearNominatedNode): the
    preemptor's status.nominatedNodeName goes, and the node it was nominated to is free for pods of the
    same priority, which its nomination kept out."""
    a, gate = app
    (node,) = cluster.create_nodes(1, prefix=f"{ns}-n", labels={"pool": ns}, cpu="1")
    low_class, high_class = f"{ns}-low", f"{ns}-high"
    try:
        for name, value in ((low_class, 10), (high_class, 1000)):
            create(
                cluster,
                {
                    "apiVersion": "scheduling.k8s.io/v1",
                    "kind": "PriorityClass",
                    "metadata": {"name": name},
                    "value": value,
                },
            )
        create(cluster, pod(ns, "low").req(cpu="800m").priority_class(low_class).json())
        eventually(lambda: node_of(cluster, ns, "low") == node, what="the victim bound")
        create(
            cluster,
            pod(ns, "high").req(cpu="800m").priority_class(high_class).label(WAIT_LABEL, "once").json(),
        )
        fwk = a.profiles["py-permit"]
        # it preempts "low", is nominated to the node, and once the victim is gone waits in Permit there
        wp = eventually(
            lambda: next((w for w in fwk.handle.iterate_waiting_pods() if w.pod.name == "high"), None),
            what="the preemptor waiting in Permit",
        )
        assert wp is not None and wp.node_name == node
        eventually(
            lambda: get_pod(cluster, ns, "high")["status"].get("nominatedNodeName") == node,
            what="the preemptor nominated in its status",
        )
        wp.reject(gate.name, "rejected by the test")  # its binding cycle fails
        eventually(lambda: "high" in gate.unreserved, what="Unreserve after the rejection")
        eventually(
            lambda: "nominatedNodeName" not in get_pod(cluster, ns, "high")["status"],
            timeout=10,
            what="status.nominatedNodeName cleared",
        )
        # a pod of the same priority fits where the preemptor was nominated (its nomination held it)
        create(cluster, pod(ns, "same").req(cpu="800m").priority_class(high_class).json())
        eventually(lambda: node_of(cluster, ns, "same") == node, timeout=15, what="the freed node used")
        assert node_of(cluster, ns, "high") == ""
        assert "nominatedNodeName" not in get_pod(cluster, ns, "high")["status"]
    finally:
        for name in (low_class, high_class):
            cluster.request("DELETE", f"/apis/scheduling.k8s.io/v1/priorityclasses/{name}")


def test_scheduling_survives_etcd_compaction(
    cluster: LocalCluster, ns: str, app: tuple[App, GatekeeperPermit]
) -> None:
    _ = app  # the scheduler runs in the background
    cluster.create_nodes(2, prefix=f"{ns}-n", labels={"pool": ns})
    create(cluster, pod(ns, "before").json())
    eventually(lambda: node_of(cluster, ns, "before"))
    # Compact etcd under the running watches (the reflector tests force real 410s on a cluster without
    # the watch cache; the apiserver restart below forces a relist here).
    for i in range(20):
        create(cluster, make_pod(f"churn{i}", ns).scheduler("nobody").json())
    cluster.compact_etcd()
    for i in range(5):
        create(cluster, pod(ns, f"after{i}").json())
    eventually(
        lambda: all(node_of(cluster, ns, f"after{i}") for i in range(5)),
        timeout=60,
        what="pods created after compaction bound",
    )


def test_scheduling_survives_apiserver_restart(
    cluster: LocalCluster, ns: str, app: tuple[App, GatekeeperPermit]
) -> None:
    _ = app  # the scheduler runs in the background
    cluster.create_nodes(2, prefix=f"{ns}-n", labels={"pool": ns})
    for i in range(3):
        create(cluster, pod(ns, f"pre{i}").json())
    cluster.restart_apiserver(down_seconds=2)
    for i in range(3):
        create(cluster, pod(ns, f"post{i}").json())
    eventually(
        lambda: (
            all(p["spec"].get("nodeName") for p in list_pods(cluster, ns))
            and len(list_pods(cluster, ns)) == 6
        ),
        timeout=90,
        what="every pod bound after the apiserver restart",
    )
    for p in list_pods(cluster, ns):
        assert get_pod(cluster, ns, p["metadata"]["name"])["spec"]["nodeName"].startswith(f"{ns}-n")
