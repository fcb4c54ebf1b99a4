"""PodTopologySpread tests' shared support: the constants, node and pod builders, the plugin over a
hand-built cluster (node by node, ``pyscheduler.testing.plain_snapshot``) and the Filter/Score drivers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Node, NodeInfo, Pod, Taint
from pyscheduler.plugins.pod_topology_spread import (
    PLUGIN,
    PodTopologySpread,
)
from pyscheduler.testing import make_handle, plain_snapshot
from pyscheduler.testing.builders import make_node_info, make_pod

HOST = "kubernetes.io/hostname"
ZONE = "zone"
DNS = "DoNotSchedule"
SA = "ScheduleAnyway"
FOO = {"foo": ""}
BAR = {"bar": ""}
OK = Code.SUCCESS
UNSCHED = Code.UNSCHEDULABLE
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
JSON = dict[str, Any]


# ------------------------------------------------------------------------------------------- helpers


def node(name: str, taints: tuple[Taint, ...] = (), **labels: str) -> Node:
    lb = {HOST: name}
    lb.update(labels)
    return Node(name=name, labels=lb, taints=taints)


def bare_node(name: str, **labels: str) -> Node:
    """A node without the hostname label."""
    return Node(name=name, labels=dict(labels))


def pod_on(
    name: str, node_name: str, labels: dict[str, str], ns: str = "default", terminating: bool = False
) -> Pod:
    b = make_pod(name, ns).labels(labels).node(node_name)
    if terminating:
        b.terminating()
    return b.obj()


def cluster(nodes: list[Node], pods: list[Pod]) -> list[NodeInfo]:
    infos = []
    for n in nodes:
        infos.append(make_node_info(n, *[p for p in pods if p.node_name == n.name]))
    return infos


def plugin(infos: list[NodeInfo], objects: Sequence[JSON] = (), **args: Any) -> PodTopologySpread:
    """The plugin over ``infos`` as built (no NodeTable: node by node) with ``objects`` in its handle."""
    return PodTopologySpread(PLUGIN.decode(args, "args"), make_handle(plain_snapshot(infos), objects=objects))


ZONE_NODES = [
    node("node-a", zone="zone1"),
    node("node-b", zone="zone1"),
    node("node-x", zone="zone2"),
    node("node-y", zone="zone2"),
]


def n_pods(node_name: str, count: int, labels: dict[str, str] = FOO, prefix: str = "") -> list[Pod]:
    return [pod_on(f"{prefix or node_name}-{i}", node_name, labels) for i in range(count)]


HOST4 = [node("node-a"), node("node-b"), node("node-c"), node("node-d")]


def service(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def owner_obj(kind: str, name: str, selector: Any, ns: str = "default") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}}
