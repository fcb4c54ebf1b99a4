"""InterPodAffinity tests' shared support: the constants, affinity-term and pod builders, the plugin over
a hand-built cluster (node by node, ``pyscheduler.testing.plain_snapshot``) and the Filter/Score drivers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Node, NodeInfo, Pod
from pyscheduler.plugins.inter_pod_affinity import (
    PLUGIN,
    InterPodAffinity,
)
from pyscheduler.testing import make_handle, plain_snapshot
from pyscheduler.testing.builders import make_node_info, make_pod

OK = Code.SUCCESS
UNSCHED = Code.UNSCHEDULABLE
UNRES = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
JSON = dict[str, Any]
REQ = "requiredDuringSchedulingIgnoredDuringExecution"
PREF = "preferredDuringSchedulingIgnoredDuringExecution"
HOST = "kubernetes.io/hostname"

S1 = {"security": "S1"}
S2 = {"security": "S2"}


def namespace(name: str, **labels: str) -> dict[str, Any]:
    return {"kind": "Namespace", "metadata": {"name": name, "labels": labels}}


NAMESPACES: tuple[JSON, ...] = (
    namespace("subteam1.team1", team="team1"),
    namespace("subteam2.team1", team="team1"),
    namespace("subteam1.team2", team="team2"),
    namespace("subteam2.team2", team="team2"),
)


# ------------------------------------------------------------------------------------------- helpers


def sel_in(key: str, *values: str) -> dict[str, Any]:
    return {"matchExpressions": [{"key": key, "operator": "In", "values": list(values)}]}


def term(topology_key: str, selector: dict[str, Any] | None, **extra: Any) -> dict[str, Any]:
    t: dict[str, Any] = {"topologyKey": topology_key, **extra}
    if selector is not None:
        t["labelSelector"] = selector
    return t


def required(*terms: dict[str, Any], anti: bool = False) -> dict[str, Any]:
    return {"podAntiAffinity" if anti else "podAffinity": {REQ: list(terms)}}


def preferred(*weighted: tuple[int, dict[str, Any]], anti: bool = False) -> dict[str, Any]:
    return {
        "podAntiAffinity" if anti else "podAffinity": {
            PREF: [{"weight": w, "podAffinityTerm": t} for w, t in weighted]
        }
    }


def pod(
    name: str = "p",
    labels: dict[str, str] | None = None,
    affinity: dict[str, Any] | None = None,
    ns: str = "default",
    node: str = "",
) -> Pod:
    b = make_pod(name, ns).labels(labels or {})
    if affinity:
        b.affinity(affinity)
    if node:
        b.node(node)
    return b.obj()


def mk_node(name: str, **labels: str) -> Node:
    return Node(name=name, labels=dict(labels))


def cluster(nodes: list[Node], pods: list[Pod]) -> list[NodeInfo]:
    return [make_node_info(n, *[p for p in pods if p.node_name == n.name]) for n in nodes]


def plugin(infos: list[NodeInfo], objects: Sequence[JSON] | None = None, **args: Any) -> InterPodAffinity:
    """The plugin over ``infos`` as built (no NodeTable: node by node) with ``objects`` in its handle."""
    handle = make_handle(plain_snapshot(infos), objects=objects or ())
    return InterPodAffinity(PLUGIN.decode(args, "args"), handle)


REGION_NODES = [
    mk_node("china-1", region="China", zone="z1", **{HOST: "china-1"}),
    mk_node("china-2", region="China", zone="z2", **{HOST: "china-2"}),
    mk_node("india-1", region="India", zone="z3", **{HOST: "india-1"}),
    mk_node("nokey", **{HOST: "nokey"}),
]
ALL4 = ["china-1", "china-2", "india-1", "nokey"]


def codes(*c: Code) -> dict[str, Code]:
    return dict(zip(ALL4, c, strict=True))
