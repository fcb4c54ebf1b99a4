from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.selectors import LabelSelector, compile_selector
from pyscheduler.framework.status import Code, code_of
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo, Taint
from pyscheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
    PLUGIN,
    PodTopologySpread,
    PodTopologySpreadArgs,
    PreFilterState,
    PreScoreState,
    go_round,
    go_round_array,
)
from pyscheduler.testing import make_handle, plain_snapshot, score_list
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


def filter_all(pl: PodTopologySpread, pod: Pod, infos: list[NodeInfo]) -> dict[str, Code]:
    state = CycleState()
    _, st = pl.pre_filter(state, pod, infos)
    if st is not None and st.is_skip():
        return {n.name: OK for n in infos}
    assert st is None
    return {n.name: code_of(pl.filter(state, pod, n)) for n in infos}


def score_all(pl: PodTopologySpread, pod: Pod, candidates: list[NodeInfo]) -> dict[str, int] | None:
    state = CycleState()
    st = pl.pre_score(state, pod, candidates)
    if st is not None and st.is_skip():
        return None
    assert st is None
    scores = []
    for n in candidates:
        s, sst = pl.score(state, pod, n)
        assert sst is None
        scores.append(NodeScore(n.name, s))
    assert pl.normalize_score(state, pod, scores) is None
    return {s.name: s.score for s in scores}


def plugin(infos: list[NodeInfo], objects: Sequence[JSON] = (), **args: Any) -> PodTopologySpread:
    """The plugin over ``infos`` as built (no NodeTable: node by node) with ``objects`` in its handle."""
    return PodTopologySpread(PLUGIN.decode(args, "args"), make_handle(plain_snapshot(infos), objects=objects))


ZONE_NODES = [
    node("node-a", zone="zone1"),
    node("node-b", zone="zone1"),
    node("node-x", zone="zone2"),
    node("node-y", zone="zone2"),
]


# ------------------------------------------------------------------------------------------- Filter


FILTER_CASES: list[tuple[str, Any, list[Node], list[Pod], dict[str, Code]]] = [
    (
        "no existing pods: every node fits",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "incoming pod does not match its own selector",
        make_pod("p").labels(BAR).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],  # 2+0-0 > 1
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
    ),
    (
        "pods spread 3/3: all nodes fit",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO) for i in range(2)]
        + [pod_on("b1", "node-b", FOO)]
        + [pod_on(f"x{i}", "node-x", FOO) for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "pods spread 2/1: the fuller zone is rejected (2+1-1 > 1)",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("b1", "node-b", FOO), pod_on("y1", "node-y", FOO)],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
    ),
    (
        "maxSkew 2 tolerates the 2/1 spread",
        make_pod("p").labels(FOO).spread(2, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("b1", "node-b", FOO), pod_on("y1", "node-y", FOO)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "pods in another namespace do not count",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO, ns="other") for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "terminating pods do not count",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO, terminating=True) for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "pods not matching the selector do not count",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", BAR) for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "a node without the topology key is unresolvable",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        [*ZONE_NODES, node("node-z")],
        [],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK, "node-z": UNRES},
    ),
    (
        "pods on a node without the key do not form a domain",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        [node("node-a", zone="zone1"), node("node-x", zone="zone2"), node("node-z")],
        [pod_on(f"z{i}", "node-z", FOO) for i in range(5)] + [pod_on("a1", "node-a", FOO)],
        {"node-a": UNSCHED, "node-x": OK, "node-z": UNRES},
    ),
    (
        "hostname spreading: 2/1/0",
        make_pod("p").labels(FOO).spread(1, HOST, DNS, FOO),
        [node("n1"), node("n2"), node("n3")],
        [pod_on("a", "n1", FOO), pod_on("b", "n1", FOO), pod_on("c", "n2", FOO)],
        {"n1": UNSCHED, "n2": UNSCHED, "n3": OK},
    ),
    (
        "two constraints (zone and hostname) must both hold",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).spread(1, HOST, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("x1", "node-x", FOO)],
        # zone 1/1: all fit by zone; hostname 1/0/1/0: node-a and node-x break hostname skew
        {"node-a": UNSCHED, "node-b": OK, "node-x": UNSCHED, "node-y": OK},
    ),
    (
        "two constraints on the same key with different selectors are counted apart",
        make_pod("p").labels({"foo": "", "bar": ""}).spread(1, ZONE, DNS, FOO).spread(1, ZONE, DNS, BAR),
        ZONE_NODES,
        # foo: 1/0, bar: 0/1 -> every zone breaks one of them
        [pod_on("a1", "node-a", FOO), pod_on("x1", "node-x", BAR)],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "minDomains above the number of domains makes the global minimum 0",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, minDomains=3),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("x1", "node-x", FOO)],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "minDomains equal to the number of domains keeps the real minimum",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, minDomains=2),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("x1", "node-x", FOO)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "nodeAffinityPolicy Honor (default): nodes the pod cannot use are not domains",
        make_pod("p").labels(FOO).node_selector({ZONE: "zone1"}).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("b1", "node-b", FOO)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "nodeAffinityPolicy Ignore: zone2 counts as an empty domain",
        make_pod("p")
        .labels(FOO)
        .node_selector({ZONE: "zone1"})
        .spread(1, ZONE, DNS, FOO, nodeAffinityPolicy="Ignore"),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("b1", "node-b", FOO)],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
    ),
    (
        "nodeAffinityPolicy Honor with required node affinity",
        make_pod("p").labels(FOO).node_affinity_in(ZONE, ["zone1"]).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("b1", "node-b", FOO)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "nodeTaintsPolicy Ignore (default): a tainted empty zone still counts",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO),
        [node("node-a", zone="zone1"), node("node-x", taints=(Taint("t", "", "NoSchedule"),), zone="zone2")],
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],
        {"node-a": UNSCHED, "node-x": OK},
    ),
    (
        "nodeTaintsPolicy Honor: an untolerated tainted zone is not a domain",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, nodeTaintsPolicy="Honor"),
        [node("node-a", zone="zone1"), node("node-x", taints=(Taint("t", "", "NoSchedule"),), zone="zone2")],
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],
        {"node-a": OK, "node-x": OK},
    ),
    (
        "nodeTaintsPolicy Honor: a tolerated taint keeps the domain",
        make_pod("p")
        .labels(FOO)
        .toleration("t", effect="NoSchedule")
        .spread(1, ZONE, DNS, FOO, nodeTaintsPolicy="Honor"),
        [node("node-a", zone="zone1"), node("node-x", taints=(Taint("t", "", "NoSchedule"),), zone="zone2")],
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],
        {"node-a": UNSCHED, "node-x": OK},
    ),
    (
        "nodeTaintsPolicy Honor ignores PreferNoSchedule taints",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, nodeTaintsPolicy="Honor"),
        [
            node("node-a", zone="zone1"),
            node("node-x", taints=(Taint("t", "", "PreferNoSchedule"),), zone="zone2"),
        ],
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],
        {"node-a": UNSCHED, "node-x": OK},
    ),
    (
        "matchLabelKeys: only pods with the same value of the key count",
        make_pod("p")
        .labels({"foo": "", "version": "v2"})
        .spread(1, ZONE, DNS, FOO, matchLabelKeys=["version"]),
        ZONE_NODES,
        [
            pod_on("a1", "node-a", {"foo": "", "version": "v1"}),
            pod_on("a2", "node-a", {"foo": "", "version": "v1"}),
            pod_on("x1", "node-x", {"foo": "", "version": "v2"}),
            pod_on("x2", "node-x", {"foo": "", "version": "v2"}),
        ],
        {"node-a": OK, "node-b": OK, "node-x": UNSCHED, "node-y": UNSCHED},
    ),
    (
        "without matchLabelKeys the versions are counted together",
        make_pod("p").labels({"foo": "", "version": "v2"}).spread(1, ZONE, DNS, FOO),
        ZONE_NODES,
        [
            pod_on("a1", "node-a", {"foo": "", "version": "v1"}),
            pod_on("a2", "node-a", {"foo": "", "version": "v1"}),
            pod_on("x1", "node-x", {"foo": "", "version": "v2"}),
            pod_on("x2", "node-x", {"foo": "", "version": "v2"}),
        ],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "matchLabelKeys naming a label the pod lacks changes nothing",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, matchLabelKeys=["version"]),
        ZONE_NODES,
        [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
    ),
    (
        "a constraint without labelSelector counts nothing",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, None),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO) for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "an empty labelSelector counts no existing pod (kube's countPodsMatchSelector)",
        make_pod("p").labels(FOO).spread(1, ZONE, DNS, None, labelSelector={}),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO) for i in range(3)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
    (
        "matchExpressions selectors",
        make_pod("p")
        .labels(FOO)
        .spread(
            1, ZONE, DNS, None, labelSelector={"matchExpressions": [{"key": "foo", "operator": "Exists"}]}
        ),
        ZONE_NODES,
        [pod_on("a1", "node-a", {"foo": "x"}), pod_on("a2", "node-a", {"foo": "y"})],
        {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK},
    ),
    (
        "ScheduleAnyway constraints never filter",
        make_pod("p").labels(FOO).spread(1, ZONE, SA, FOO),
        ZONE_NODES,
        [pod_on(f"a{i}", "node-a", FOO) for i in range(5)],
        {"node-a": OK, "node-b": OK, "node-x": OK, "node-y": OK},
    ),
]


@pytest.mark.parametrize(
    ("name", "builder", "nodes", "pods", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_filter(name: str, builder: Any, nodes: list[Node], pods: list[Pod], want: dict[str, Code]) -> None:
    infos = cluster(nodes, pods)
    pl = plugin(infos)
    assert filter_all(pl, builder.obj(), infos) == want


def test_filter_reasons_and_plugin_name() -> None:
    infos = cluster(
        [node("node-a", zone="zone1"), node("node-x", zone="zone2"), node("node-z")],
        [pod_on("a1", "node-a", FOO)],
    )
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).obj()
    state = CycleState()
    assert pl.pre_filter(state, pod, infos) == (None, None)
    st = pl.filter(state, pod, infos[0])
    assert st is not None and st.code == UNSCHED and st.reasons == (ERR_REASON_CONSTRAINTS_NOT_MATCH,)
    assert st.plugin == NAME
    st = pl.filter(state, pod, infos[2])
    assert st is not None and st.code == UNRES and st.reasons == (ERR_REASON_NODE_LABEL_NOT_MATCH,)
    assert (
        ERR_REASON_NODE_LABEL_NOT_MATCH
        == "node(s) didn't match pod topology spread constraints (missing required label)"
    )
    assert pl.filter(state, pod, infos[1]) is None


@pytest.mark.parametrize(
    ("builder", "code"),
    [
        (make_pod("p").labels(FOO), Code.SKIP),  # no constraints, no owner: no defaults
        (make_pod("p").labels(FOO).spread(1, ZONE, SA, FOO), Code.SKIP),  # only soft constraints
        (make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO), Code.SUCCESS),
        (
            make_pod("p").spread(
                1, ZONE, DNS, None, labelSelector={"matchExpressions": [{"key": "a", "operator": "Bad"}]}
            ),
            Code.ERROR,
        ),
    ],
)
def test_pre_filter_status(builder: Any, code: Code) -> None:
    infos = cluster(ZONE_NODES, [])
    _, st = plugin(infos).pre_filter(CycleState(), builder.obj(), infos)
    assert code_of(st) == code


def test_filter_without_pre_filter_state_computes_it() -> None:
    infos = cluster(ZONE_NODES, [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO)])
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).obj()
    state = CycleState()
    assert code_of(pl.filter(state, pod, infos[0])) == UNSCHED
    assert code_of(pl.filter(state, pod, infos[2])) == OK


# ------------------------------------------------------------------------------------------- preemption


def test_remove_pod_makes_room_and_clone_is_isolated() -> None:
    pods = [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO), pod_on("x1", "node-x", FOO)]
    infos = cluster(ZONE_NODES, pods)
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).obj()
    state = CycleState()
    pl.pre_filter(state, pod, infos)
    assert code_of(pl.filter(state, pod, infos[0])) == UNSCHED  # 2+1-1 > 1

    what_if = state.clone()
    ext = pl.pre_filter_extensions()
    assert ext.remove_pod(what_if, pod, PodInfo(pods[0]), infos[0]) is None
    assert code_of(pl.filter(what_if, pod, infos[0])) == OK  # 1+1-1
    # the real cycle's state is untouched
    assert code_of(pl.filter(state, pod, infos[0])) == UNSCHED

    # adding it back restores the verdict
    ext.add_pod(what_if, pod, PodInfo(pods[0]), infos[0])
    assert code_of(pl.filter(what_if, pod, infos[0])) == UNSCHED


def test_remove_pod_lowers_the_global_minimum() -> None:
    pods = [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO), pod_on("x1", "node-x", FOO)]
    infos = cluster(ZONE_NODES, pods)
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).spread(2, ZONE, DNS, FOO).obj()
    state = CycleState()
    pl.pre_filter(state, pod, infos)
    assert code_of(pl.filter(state, pod, infos[0])) == OK  # 2+1-1 = 2
    pl.remove_pod(state, pod, PodInfo(pods[2]), infos[2])  # zone2 drops to 0
    assert code_of(pl.filter(state, pod, infos[0])) == UNSCHED  # 2+1-0 = 3
    pl.add_pod(state, pod, PodInfo(pods[2]), infos[2])
    assert code_of(pl.filter(state, pod, infos[0])) == OK


@pytest.mark.parametrize(
    ("added", "on", "changes"),
    [
        (pod_on("n1", "node-x", FOO, ns="other"), 2, False),  # another namespace
        (pod_on("n1", "node-x", BAR), 2, False),  # does not match the selector
        (pod_on("n1", "node-x", FOO), 2, True),
    ],
)
def test_add_pod_only_counts_relevant_pods(added: Pod, on: int, changes: bool) -> None:
    pods = [pod_on("a1", "node-a", FOO), pod_on("a2", "node-a", FOO), pod_on("x1", "node-x", FOO)]
    infos = cluster(ZONE_NODES, pods)
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).obj()
    state = CycleState()
    pl.pre_filter(state, pod, infos)
    pl.add_pod(state, pod, PodInfo(added), infos[on])
    # zone2 goes to 2: zone1 (2+1-2) now fits
    assert (code_of(pl.filter(state, pod, infos[0])) == OK) is changes


def test_add_pod_on_node_excluded_by_node_affinity_is_ignored() -> None:
    infos = cluster(ZONE_NODES, [pod_on("a1", "node-a", FOO)])
    pl = plugin(infos)
    pod = make_pod("p").labels(FOO).node_selector({ZONE: "zone1"}).spread(1, HOST, DNS, FOO).obj()
    state = CycleState()
    pl.pre_filter(state, pod, infos)
    # hostname domains: node-a 1, node-b 0 -> node-a rejected
    assert code_of(pl.filter(state, pod, infos[0])) == UNSCHED
    pl.add_pod(state, pod, PodInfo(pod_on("y1", "node-y", FOO)), infos[3])
    pl.add_pod(state, pod, PodInfo(pod_on("b1", "node-b", FOO)), infos[1])
    assert code_of(pl.filter(state, pod, infos[0])) == OK


def test_extensions_without_state_are_noops() -> None:
    pl = plugin([])
    info = make_node_info(node("n"))
    pod = make_pod("p").obj()
    assert pl.add_pod(CycleState(), pod, PodInfo(pod), info) is None
    assert pl.remove_pod(CycleState(), pod, PodInfo(pod), info) is None


# ------------------------------------------------------------------------------------------- Score


def n_pods(node_name: str, count: int, labels: dict[str, str] = FOO, prefix: str = "") -> list[Pod]:
    return [pod_on(f"{prefix or node_name}-{i}", node_name, labels) for i in range(count)]


HOST4 = [node("node-a"), node("node-b"), node("node-c"), node("node-d")]

# (name, pod, nodes (candidates), failed nodes, existing pods, want) -- the numbers are kube's.
SCORE_CASES: list[tuple[str, Any, list[Node], list[Node], list[Pod], dict[str, int]]] = [
    (
        "one constraint on node, no existing pods",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), node("node-b")],
        [],
        [],
        {"node-a": 100, "node-b": 100},
    ),
    (
        "only one candidate node scores 100",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a")],
        [node("node-b")],
        n_pods("node-a", 2) + n_pods("node-b", 1),
        {"node-a": 100},
    ),
    (
        "same number of matching pods everywhere",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), node("node-b")],
        [],
        n_pods("node-a", 1) + n_pods("node-b", 1),
        {"node-a": 100, "node-b": 100},
    ),
    (
        "spread 2/1/0/3",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        HOST4,
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-d", 3),
        {"node-a": 20, "node-b": 60, "node-c": 100, "node-d": 0},
    ),
    (
        "null selector: everything scores 100",
        make_pod("p").labels(FOO).spread(1, HOST, SA, None),
        HOST4,
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-d", 3),
        {"node-a": 100, "node-b": 100, "node-c": 100, "node-d": 100},
    ),
    (
        "spread 2/1/0/3, maxSkew 2",
        make_pod("p").labels(FOO).spread(2, HOST, SA, FOO),
        HOST4,
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-d", 3),
        {"node-a": 33, "node-b": 66, "node-c": 100, "node-d": 16},
    ),
    (
        "spread 4/3/2/1, maxSkew 3",
        make_pod("p").labels(FOO).spread(3, HOST, SA, FOO),
        HOST4,
        [],
        n_pods("node-a", 4) + n_pods("node-b", 3) + n_pods("node-c", 2) + n_pods("node-d", 1),
        {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
    ),
    (
        "spread 4/2/1/~3~ (node-y not a candidate)",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), node("node-b"), node("node-x")],
        [node("node-y")],
        n_pods("node-a", 4) + n_pods("node-b", 2) + n_pods("node-x", 1) + n_pods("node-y", 3),
        {"node-a": 33, "node-b": 83, "node-x": 100},
    ),
    (
        "a candidate without the topology key scores 0",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), bare_node("node-b", n="node-b"), node("node-x")],
        [node("node-y")],
        n_pods("node-a", 4) + n_pods("node-b", 2) + n_pods("node-x", 1) + n_pods("node-y", 3),
        {"node-a": 16, "node-b": 0, "node-x": 100},
    ),
    (
        "zone constraint, 3 of 4 nodes candidates",
        make_pod("p").labels(FOO).spread(1, ZONE, SA, FOO),
        ZONE_NODES[:3],
        ZONE_NODES[3:],
        n_pods("node-a", 4) + n_pods("node-b", 2) + n_pods("node-x", 1) + n_pods("node-y", 3),
        {"node-a": 75, "node-b": 75, "node-x": 100},
    ),
    (
        "zone and hostname, 2 of 4 candidates",
        make_pod("p").labels(FOO).spread(1, ZONE, SA, FOO).spread(1, HOST, SA, FOO),
        [ZONE_NODES[0], ZONE_NODES[2]],
        [ZONE_NODES[1], ZONE_NODES[3]],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-x", 2) + n_pods("node-y", 4),
        {"node-a": 100, "node-x": 63},
    ),
    (
        "two zone constraints with different selectors",
        make_pod("p").labels({"foo": "", "bar": ""}).spread(1, ZONE, SA, FOO).spread(1, ZONE, SA, BAR),
        [bare_node("node-a", zone="zone1"), bare_node("node-x", zone="zone2")],
        [bare_node("node-b", zone="zone1"), bare_node("node-y", zone="zone2")],
        [
            pod_on("a1", "node-a", {"foo": "", "bar": ""}),
            pod_on("a2", "node-a", FOO),
            pod_on("b1", "node-b", {"foo": "", "bar": ""}),
            pod_on("y1", "node-y", FOO),
            pod_on("y2", "node-y", {"foo": "", "bar": ""}),
            pod_on("y3", "node-y", FOO),
        ],
        {"node-a": 85, "node-x": 100},
    ),
    (
        "zone and hostname with different selectors",
        make_pod("p").labels({"foo": "", "bar": ""}).spread(1, ZONE, SA, FOO).spread(1, HOST, SA, BAR),
        ZONE_NODES,
        [],
        [
            pod_on("a1", "node-a", FOO),
            pod_on("b1", "node-b", {"foo": "", "bar": ""}),
            pod_on("y1", "node-y", FOO),
            pod_on("y2", "node-y", BAR),
        ],
        {"node-a": 60, "node-b": 20, "node-x": 100, "node-y": 60},
    ),
    (
        "zone and hostname with different selectors, some nodes empty",
        make_pod("p").labels({"foo": "", "bar": ""}).spread(1, ZONE, SA, FOO).spread(1, HOST, SA, BAR),
        ZONE_NODES,
        [],
        [
            pod_on("b1", "node-b", BAR),
            pod_on("x1", "node-x", FOO),
            pod_on("y1", "node-y", {"foo": "", "bar": ""}),
        ],
        {"node-a": 100, "node-b": 60, "node-x": 40, "node-y": 0},
    ),
    (
        "zone and hostname with different selectors, 3 of 4 candidates",
        make_pod("p").labels({"foo": "", "bar": ""}).spread(1, ZONE, SA, FOO).spread(1, HOST, SA, BAR),
        ZONE_NODES[:3],
        ZONE_NODES[3:],
        [
            pod_on("a1", "node-a", FOO),
            pod_on("b1", "node-b", {"foo": "", "bar": ""}),
            pod_on("y1", "node-y", FOO),
            pod_on("y2", "node-y", BAR),
        ],
        {"node-a": 50, "node-b": 25, "node-x": 100},
    ),
    (
        "pods in another namespace do not count",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), node("node-b")],
        [],
        [pod_on("a1", "node-a", FOO, ns="ns1"), pod_on("a2", "node-a", FOO), *n_pods("node-b", 2)],
        {"node-a": 100, "node-b": 33},
    ),
    (
        "terminating pods do not count",
        make_pod("p").labels(FOO).spread(1, HOST, SA, FOO),
        [node("node-a"), node("node-b")],
        [],
        [pod_on("a", "node-a", FOO, terminating=True), pod_on("b", "node-b", FOO)],
        {"node-a": 100, "node-b": 0},
    ),
    (
        "minDomains has no effect on scoring",
        make_pod("p").labels(FOO).spread(2, "node", SA, FOO, minDomains=10),
        [
            bare_node("node-a", node="node-a"),
            bare_node("node-b", node="node-b"),
            bare_node("node-c", node="node-c"),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 2) + n_pods("node-c", 1),
        {"node-a": 75, "node-b": 75, "node-c": 100},
    ),
    (
        "nodeAffinityPolicy Honor (nodeSelector)",
        make_pod("p").labels(FOO).node_selector(FOO).spread(1, "node", SA, FOO),
        [
            bare_node("node-a", node="node-a", foo=""),
            bare_node("node-b", node="node-b", foo=""),
            bare_node("node-c", node="node-c"),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-c", 1),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "nodeAffinityPolicy Ignore (nodeSelector)",
        make_pod("p").labels(FOO).node_selector(FOO).spread(1, "node", SA, FOO, nodeAffinityPolicy="Ignore"),
        [
            bare_node("node-a", node="node-a", foo=""),
            bare_node("node-b", node="node-b", foo=""),
            bare_node("node-c", node="node-c"),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-c", 1),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "nodeAffinityPolicy Honor (required node affinity)",
        make_pod("p").labels(FOO).node_affinity_in("foo", [""]).spread(1, "node", SA, FOO),
        [
            bare_node("node-a", node="node-a", foo=""),
            bare_node("node-b", node="node-b", foo=""),
            bare_node("node-c", node="node-c"),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-c", 1),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "nodeTaintsPolicy Honor",
        make_pod("p").labels(FOO).spread(1, "node", SA, FOO, nodeTaintsPolicy="Honor"),
        [
            bare_node("node-a", node="node-a"),
            bare_node("node-b", node="node-b"),
            Node("node-c", labels={"node": "node-c"}, taints=(Taint("foo", "", "NoSchedule"),)),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-c", 1),
        {"node-a": 0, "node-b": 33, "node-c": 100},
    ),
    (
        "nodeTaintsPolicy Ignore (default)",
        make_pod("p").labels(FOO).spread(1, "node", SA, FOO),
        [
            bare_node("node-a", node="node-a"),
            bare_node("node-b", node="node-b"),
            Node("node-c", labels={"node": "node-c"}, taints=(Taint("foo", "", "NoSchedule"),)),
        ],
        [],
        n_pods("node-a", 2) + n_pods("node-b", 1) + n_pods("node-c", 1),
        {"node-a": 66, "node-b": 100, "node-c": 100},
    ),
    (
        "matchLabelKeys ANDed with an empty labelSelector",
        make_pod("p")
        .labels({"foo": "", "bar": ""})
        .spread(1, ZONE, SA, None, labelSelector={}, matchLabelKeys=["foo"])
        .spread(1, HOST, SA, None, labelSelector={}, matchLabelKeys=["bar"]),
        [
            node("node-a", zone="zone1"),
            node("node-b", zone="zone1"),
            node("node-c", zone="zone2"),
            node("node-d", zone="zone2"),
        ],
        [],
        [
            pod_on("a1", "node-a", FOO),
            pod_on("b1", "node-b", {"foo": "", "bar": ""}),
            pod_on("y1", "node-c", FOO),
            pod_on("y2", "node-c", BAR),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
    (
        "matchLabelKeys ANDed with a labelSelector",
        make_pod("p")
        .labels({"foo": "", "bar": "", "baz": ""})
        .spread(1, ZONE, SA, FOO)
        .spread(1, HOST, SA, BAR, matchLabelKeys=["baz"]),
        [
            node("node-a", zone="zone1"),
            node("node-b", zone="zone1"),
            node("node-c", zone="zone2"),
            node("node-d", zone="zone2"),
        ],
        [],
        [
            pod_on("a1", "node-a", FOO),
            pod_on("b1", "node-b", {"foo": "", "bar": "", "baz": ""}),
            pod_on("c1", "node-c", FOO),
            pod_on("c2", "node-c", BAR),
            pod_on("d3", "node-c", {"bar": "", "baz": ""}),
        ],
        {"node-a": 60, "node-b": 20, "node-c": 60, "node-d": 100},
    ),
]


@pytest.mark.parametrize(
    ("name", "builder", "nodes", "failed", "pods", "want"), SCORE_CASES, ids=[c[0] for c in SCORE_CASES]
)
def test_score(
    name: str, builder: Any, nodes: list[Node], failed: list[Node], pods: list[Pod], want: dict[str, int]
) -> None:
    infos = cluster(nodes + failed, pods)
    pl = plugin(infos)
    candidates = infos[: len(nodes)]
    assert score_all(pl, builder.obj(), candidates) == want


def test_pre_score_skips_without_soft_constraints() -> None:
    infos = cluster(ZONE_NODES, [])
    pl = plugin(infos)
    assert score_all(pl, make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO).obj(), infos) is None
    assert score_all(pl, make_pod("p").labels(FOO).obj(), infos) is None
    assert score_all(plugin([]), make_pod("p").labels(FOO).spread(1, ZONE, SA, FOO).obj(), []) is None


def test_score_without_pre_score_state_is_zero() -> None:
    info = make_node_info(node("n"))
    assert PodTopologySpread().score(CycleState(), make_pod("p").obj(), info) == (0, None)


@pytest.mark.parametrize(("x", "want"), [(0.5, 1), (1.5, 2), (2.5, 3), (2.4999, 2), (0.0, 0), (-0.5, -1)])
def test_go_round_is_half_away_from_zero(x: float, want: int) -> None:
    assert go_round(x) == want
    assert go_round_array(np.array([x])).tolist() == [want]


def test_go_round_array_equals_go_round() -> None:
    rng = random.Random(7)
    xs = [rng.choice([k / 2, k / 4, rng.uniform(-1e6, 1e6), 0.49999999999999994]) for k in range(-400, 400)]
    assert go_round_array(np.array(xs)).tolist() == [go_round(x) for x in xs]


# ------------------------------------------------------------------------------------------- defaults


def service(name: str, selector: dict[str, str] | None, ns: str = "default") -> dict[str, Any]:
    spec: dict[str, Any] = {} if selector is None else {"selector": selector}
    return {"kind": "Service", "metadata": {"name": name, "namespace": ns}, "spec": spec}


def owner_obj(kind: str, name: str, selector: Any, ns: str = "default") -> dict[str, Any]:
    return {"kind": kind, "metadata": {"name": name, "namespace": ns}, "spec": {"selector": selector}}


SPREAD_4321 = n_pods("node-a", 4) + n_pods("node-b", 3) + n_pods("node-c", 2) + n_pods("node-d", 1)


@pytest.mark.parametrize(
    ("name", "builder", "objects", "want"),
    [
        (
            "system defaulting, nodes without zone, pod selected by a Service",
            make_pod("p").labels(FOO),
            [service("s", FOO)],
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
        (
            "Service in another namespace does not select the pod",
            make_pod("p").labels(FOO),
            [service("s", FOO, ns="other")],
            None,
        ),
        (
            "Service with a nil selector selects nothing",
            make_pod("p").labels(FOO),
            [service("s", None)],
            None,
        ),
        (
            "Service with an empty selector adds no label: no defaults",
            make_pod("p").labels(FOO),
            [service("s", {})],
            None,
        ),
        ("no Service, no owner: no defaults", make_pod("p").labels(FOO), [], None),
        (
            "objects of other kinds only: no defaults",
            make_pod("p").labels(FOO),
            [{"kind": "Namespace", "metadata": {"name": "default"}}],
            None,
        ),
        (
            "owned by a ReplicaSet",
            make_pod("p").labels(FOO).owner("ReplicaSet", "rs"),
            [owner_obj("ReplicaSet", "rs", {"matchLabels": FOO})],
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
        (
            "owned by a StatefulSet",
            make_pod("p").labels(FOO).owner("StatefulSet", "ss"),
            [owner_obj("StatefulSet", "ss", {"matchExpressions": [{"key": "foo", "operator": "Exists"}]})],
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
        (
            "owned by a ReplicationController",
            make_pod("p").labels(FOO).owner("ReplicationController", "rc"),
            [owner_obj("ReplicationController", "rc", FOO)],
            {"node-a": 44, "node-b": 66, "node-c": 77, "node-d": 100},
        ),
        (
            "owner not found: no defaults",
            make_pod("p").labels(FOO).owner("ReplicaSet", "gone"),
            [],
            None,
        ),
        (
            "unsupported owner kind: no defaults",
            make_pod("p").labels(FOO).owner("Job", "j"),
            [owner_obj("Job", "j", {"matchLabels": FOO})],
            None,
        ),
        (
            "a pod with its own constraints ignores the defaults",
            make_pod("p").labels(FOO).spread(1, HOST, DNS, FOO),
            [service("s", FOO)],
            None,
        ),
    ],
)
def test_system_default_constraints(name: str, builder: Any, objects: list[JSON], want: Any) -> None:
    infos = cluster(HOST4, SPREAD_4321)
    pl = plugin(infos, objects)
    assert score_all(pl, builder.obj(), infos) == want


def test_system_defaults_score_nodes_without_zone_but_list_defaults_do_not() -> None:
    # With System defaulting a node lacking the zone label is still scored for hostname spreading;
    # with the same constraints given as a List, every topology key is required.
    nodes = [node("node-a", (), **{"topology.kubernetes.io/zone": "z1"}), node("node-b")]
    infos = cluster(nodes, n_pods("node-a", 1))
    objs = [service("s", FOO)]
    pod = make_pod("p").labels(FOO).obj()
    # node-a: 1*ln(4)+2 (hostname) + 1*ln(4)+4 (zone; node-b's missing zone counts as domain "") = 9
    # node-b: 0*ln(4)+2 = 2 -> 100*(9+2-9)//9 = 22 and 100
    assert score_all(plugin(infos, objs), pod, infos) == {"node-a": 22, "node-b": 100}
    lst = plugin(
        infos,
        objs,
        defaultingType="List",
        defaultConstraints=[
            {"maxSkew": 3, "topologyKey": HOST, "whenUnsatisfiable": SA},
            {"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": SA},
        ],
    )
    assert score_all(lst, pod, infos) == {"node-a": 100, "node-b": 0}


def test_list_default_hard_constraints_filter_owned_pods() -> None:
    infos = cluster(ZONE_NODES, n_pods("node-a", 2))
    objs = [owner_obj("ReplicaSet", "rs", {"matchLabels": FOO})]
    pl = plugin(
        infos,
        objs,
        defaultingType="List",
        defaultConstraints=[{"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}],
    )
    owned = make_pod("p").labels(FOO).owner("ReplicaSet", "rs").obj()
    assert filter_all(pl, owned, infos) == {"node-a": UNSCHED, "node-b": UNSCHED, "node-x": OK, "node-y": OK}
    # a pod with no owner gets no default constraint
    assert filter_all(pl, make_pod("q").labels(FOO).obj(), infos) == dict.fromkeys(
        ["node-a", "node-b", "node-x", "node-y"], OK
    )


def test_list_defaulting_with_no_constraints_means_no_defaults() -> None:
    infos = cluster(HOST4, SPREAD_4321)
    pl = plugin(infos, [service("s", FOO)], defaultingType="List")
    assert score_all(pl, make_pod("p").labels(FOO).obj(), infos) is None


# ------------------------------------------------------------------------------------------- args


def test_default_args() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == PodTopologySpreadArgs(default_constraints=(), defaulting_type="System")
    assert PLUGIN.name == "PodTopologySpread"


GOOD = {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": DNS}


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"defaultingType": "Bogus"}, "args.defaultingType"),
        ({"defaultConstraints": [GOOD]}, "args.defaultingType"),  # System with constraints
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "maxSkew": 0}]},
            "args.defaultConstraints[0].maxSkew",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "maxSkew": "1"}]},
            "args.defaultConstraints[0].maxSkew",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": ""}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": "-bad-"}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "topologyKey": "a/b/c"}]},
            "args.defaultConstraints[0].topologyKey",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "whenUnsatisfiable": ""}]},
            "args.defaultConstraints[0].whenUnsatisfiable",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "whenUnsatisfiable": "Maybe"}]},
            "args.defaultConstraints[0].whenUnsatisfiable",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "labelSelector": {}}]},
            "args.defaultConstraints[0].labelSelector",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "minDomains": 0}]},
            "args.defaultConstraints[0].minDomains",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [{**GOOD, "nodeTaintsPolicy": "Sometimes"}]},
            "args.defaultConstraints[0].nodeTaintsPolicy",
        ),
        (
            {"defaultingType": "List", "defaultConstraints": [GOOD, {**GOOD, "maxSkew": 2}]},
            "args.defaultConstraints[1]",
        ),
        ({"defaultingType": "List", "defaultConstraints": ["x"]}, "args.defaultConstraints[0]"),
        ({"defaultConstraint": []}, "args.defaultConstraint"),
    ],
)
def test_bad_args(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == field


@pytest.mark.parametrize(
    "raw",
    [
        {"defaultingType": "List"},
        {"defaultingType": "List", "defaultConstraints": [GOOD, {**GOOD, "whenUnsatisfiable": SA}]},
        {
            "defaultingType": "List",
            "defaultConstraints": [{**GOOD, "topologyKey": "topology.kubernetes.io/zone"}],
        },
        {"defaultingType": "System", "defaultConstraints": []},
    ],
)
def test_good_args(raw: dict[str, Any]) -> None:
    PLUGIN.decode(raw, "args")


# ------------------------------------------------------------------------------------------- queueing hints


def test_events_registered() -> None:
    events = PodTopologySpread().events_to_register()
    assert {str(e.event.resource) for e in events} == {"Pod", "Node"}
    assert all(e.hint is not None for e in events)


HARD = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO)


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    [
        ("assigned matching pod added", HARD.obj(), None, pod_on("e", "n1", FOO), QueueingHint.QUEUE),
        ("assigned non-matching pod added", HARD.obj(), None, pod_on("e", "n1", BAR), QueueingHint.SKIP),
        ("unscheduled pod added", HARD.obj(), None, make_pod("e").labels(FOO).obj(), QueueingHint.SKIP),
        ("pod in another namespace", HARD.obj(), None, pod_on("e", "n1", FOO, ns="x"), QueueingHint.SKIP),
        ("matching pod deleted", HARD.obj(), pod_on("e", "n1", FOO), None, QueueingHint.QUEUE),
        ("non-matching pod deleted", HARD.obj(), pod_on("e", "n1", BAR), None, QueueingHint.SKIP),
        (
            "label change flips the match",
            HARD.obj(),
            pod_on("e", "n1", BAR),
            pod_on("e", "n1", FOO),
            QueueingHint.QUEUE,
        ),
        ("labels unchanged", HARD.obj(), pod_on("e", "n1", FOO), pod_on("e", "n1", FOO), QueueingHint.SKIP),
        (
            "label change unrelated to the selector",
            HARD.obj(),
            pod_on("e", "n1", {"foo": "", "a": "1"}),
            pod_on("e", "n1", {"foo": "", "a": "2"}),
            QueueingHint.SKIP,
        ),
        (
            "target pod gets a toleration with nodeTaintsPolicy Honor",
            make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, nodeTaintsPolicy="Honor").obj(),
            make_pod("p").labels(FOO).obj(),
            make_pod("p").labels(FOO).toleration("t").obj(),
            QueueingHint.QUEUE,
        ),
        (
            "target pod gets a toleration, taints ignored",
            HARD.obj(),
            make_pod("p").labels(FOO).obj(),
            make_pod("p").labels(FOO).toleration("t").obj(),
            QueueingHint.SKIP,
        ),
    ],
)
def test_pod_change_hint(
    name: str, target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert PodTopologySpread().is_schedulable_after_pod_change(target, old, new) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("node with the key added", None, node("n", zone="z1"), QueueingHint.QUEUE),
        ("node without the key added", None, node("n"), QueueingHint.SKIP),
        ("node with the key deleted", node("n", zone="z1"), None, QueueingHint.QUEUE),
        ("node without the key deleted", node("n"), None, QueueingHint.SKIP),
        ("key added by an update", node("n"), node("n", zone="z1"), QueueingHint.QUEUE),
        ("key value changed", node("n", zone="z1"), node("n", zone="z2"), QueueingHint.QUEUE),
        ("unrelated label changed", node("n", zone="z1"), node("n", zone="z1", x="y"), QueueingHint.SKIP),
        (
            "taint changed",
            node("n", zone="z1"),
            node("n", taints=(Taint("t"),), zone="z1"),
            QueueingHint.QUEUE,
        ),
        (
            "taint changed on node without the key",
            node("n"),
            node("n", taints=(Taint("t"),)),
            QueueingHint.SKIP,
        ),
    ],
)
def test_node_change_hint(name: str, old: Node | None, new: Node | None, want: QueueingHint) -> None:
    assert PodTopologySpread().is_schedulable_after_node_change(HARD.obj(), old, new) == want


def test_hints_accept_api_json() -> None:
    pl = PodTopologySpread()
    assert (
        pl.is_schedulable_after_pod_change(HARD.obj(), None, make_pod("e").labels(FOO).node("n").json())
        == QueueingHint.QUEUE
    )


# ------------------------------------------------------------------------------------------- fast matcher

SELECTORS = [
    None,
    {},
    {"matchLabels": {"a": "1"}},
    {"matchLabels": {"a": "1", "b": "2"}},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
    {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
    {"matchExpressions": [{"key": "a", "operator": "Exists"}, {"key": "b", "operator": "DoesNotExist"}]},
]
LABEL_SETS = [{}, {"a": "1"}, {"a": "2"}, {"a": "1", "b": "2"}, {"b": "2"}, {"a": ""}]


@pytest.mark.parametrize("raw", SELECTORS)
def test_compiled_selector_agrees_with_label_selector(raw: Any) -> None:
    sel = LabelSelector.parse(raw)
    fast = compile_selector(sel)
    for labels in LABEL_SETS:
        assert fast(labels) == (sel is not None and sel.matches(labels)), labels


# ------------------------------------------------------------------------------------------- batch hooks
# filter_nodes / score_nodes, and PreFilter / PreScore computed from the NodeTable, must give exactly
# what the node-by-node code gives: compared on random clusters, against the same plugin over a
# snapshot without a NodeTable (which takes the original path).

RZONE = "topology.kubernetes.io/zone"
RACK = "rack"
KEYS = [HOST, RZONE, RACK]
POD_LABELS = [{"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}, {"tier": "x"}]


def rand_node(rng: random.Random, i: int) -> Node:
    labels: dict[str, str] = {}
    if rng.random() < 0.9:
        labels[HOST] = f"n{i}"
    r = rng.random()
    if r < 0.8:
        labels[RZONE] = rng.choice(["z1", "z2", "z3"])
    elif r < 0.85:
        labels[RZONE] = ""
    if rng.random() < 0.6:
        labels[RACK] = rng.choice(["r1", "r2"])
    taints: tuple[Taint, ...] = ()
    if rng.random() < 0.2:
        taints = (Taint("dedicated", rng.choice(["a", "b"]), rng.choice(["NoSchedule", "PreferNoSchedule"])),)
    return Node(name=f"n{i}", labels=labels, taints=taints)


def rand_pods(rng: random.Random, nodes: list[Node], count: int, tag: str) -> list[Pod]:
    out = []
    for j in range(count):
        b = make_pod(f"{tag}{j}", rng.choice(["default", "default", "other"]))
        b.labels(rng.choice(POD_LABELS)).node(rng.choice(nodes).name)
        if rng.random() < 0.05:
            b.terminating()
        out.append(b.obj())
    return out


def rand_selector(rng: random.Random) -> dict[str, str] | None:
    return rng.choice([{"app": "a"}, {"app": "b"}, {"tier": "x"}, {}, None, {"app": "a"}])


def rand_incoming(rng: random.Random, nodes: list[Node]) -> Pod:
    b = make_pod("incoming", rng.choice(["default", "default", "other"])).labels(rng.choice(POD_LABELS))
    if rng.random() < 0.85:
        keys = rng.sample(KEYS, rng.randint(1, 2))
        for key in keys:
            extra: dict[str, Any] = {}
            if rng.random() < 0.2:
                extra["minDomains"] = rng.randint(1, 4)
            if rng.random() < 0.3:
                extra["nodeAffinityPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.3:
                extra["nodeTaintsPolicy"] = rng.choice(["Honor", "Ignore"])
            if rng.random() < 0.15:
                extra["matchLabelKeys"] = ["tier"]
            b.spread(rng.randint(0, 3), key, rng.choice([DNS, SA]), rand_selector(rng), **extra)
    if rng.random() < 0.2:
        b.node_selector({RZONE: rng.choice(["z1", "z2"])})
    if rng.random() < 0.2:
        b.node_affinity_in(RACK, [rng.choice(["r1", "r2"])])
    if rng.random() < 0.3:
        b.toleration("dedicated", rng.choice(["a", "b"]), "NoSchedule")
    return b.obj()


def pre_filter_summary(state: CycleState) -> Any:
    s = state.get("PreFilter" + NAME)
    if not isinstance(s, PreFilterState):
        return None
    return (s.counts, s.min_match, s.domains_at_count, s.self_match)


def pre_score_summary(state: CycleState) -> Any:
    s = state.get("PreScore" + NAME)
    if not isinstance(s, PreScoreState):
        return None
    return (s.topology_counts, s.weights, s.ignored_nodes)


def compare_cycle(
    rng: random.Random, fast: PodTopologySpread, slow: PodTopologySpread, snap: Snapshot, pod: Pod
) -> dict[str, int]:
    """One cycle, fast vs slow; returns how often each fast path ran (to check the test tests)."""
    used = {"filter": 0, "score": 0}
    all_nodes = snap.list()
    table = snap.node_table()
    fs, ss = CycleState(), CycleState()
    _, st_fast = fast.pre_filter(fs, pod, all_nodes)
    _, st_slow = slow.pre_filter(ss, pod, list(all_nodes))
    assert st_fast == st_slow
    assert pre_filter_summary(fs) == pre_filter_summary(ss)
    if st_fast is None:
        n = len(all_nodes)
        start = rng.randrange(n)
        chunk = NodeBatch([all_nodes[(start + i) % n] for i in range(rng.randint(1, n))], table)
        want = [slow.filter(ss, pod, ni) for ni in chunk]
        assert [fast.filter(fs, pod, ni) for ni in chunk] == want
        used["filter"] += chunk.rows() is not None
        assert fast.filter_nodes(fs, pod, chunk) == want
        assert fast.filter_nodes(fs, pod, list(chunk)) == want  # a plain list: node by node
    candidates = [ni for ni in all_nodes if rng.random() < 0.7] or list(all_nodes[:1])
    st_fast = fast.pre_score(fs, pod, candidates)
    st_slow = slow.pre_score(ss, pod, list(candidates))
    assert st_fast == st_slow
    assert pre_score_summary(fs) == pre_score_summary(ss)
    if st_fast is None:
        batch = NodeBatch(candidates, table)
        want_scores = [slow.score(ss, pod, ni)[0] for ni in candidates]
        assert [fast.score(fs, pod, ni)[0] for ni in candidates] == want_scores
        used["score"] += batch.rows() is not None
        assert score_list(fast.score_nodes(fs, pod, batch)) == (want_scores, None)
        assert score_list(fast.score_nodes(fs, pod, list(candidates))) == (want_scores, None)
    return used


def rand_args(rng: random.Random) -> dict[str, Any]:
    if rng.random() < 0.7:
        return {}
    return {
        "defaultingType": "List",
        "defaultConstraints": [
            {"maxSkew": rng.randint(1, 3), "topologyKey": RZONE, "whenUnsatisfiable": rng.choice([DNS, SA])},
            {"maxSkew": rng.randint(1, 3), "topologyKey": HOST, "whenUnsatisfiable": SA},
        ],
    }


def test_batch_hooks_match_node_by_node_on_random_clusters() -> None:
    rng = random.Random(20260501)
    used = {"filter": 0, "score": 0}
    for _ in range(400):
        nodes = [rand_node(rng, i) for i in range(rng.randint(1, 14))]
        pods = rand_pods(rng, nodes, rng.randint(0, 30), "e")
        snap = Snapshot.from_nodes(nodes, pods)
        objects = [service("svc", {"app": "a"})] if rng.random() < 0.5 else []
        args = PLUGIN.decode(rand_args(rng), "args")
        fast = PodTopologySpread(args, make_handle(snap, objects=objects))
        slow = PodTopologySpread(args, make_handle(plain_snapshot(snap.list()), objects=objects))
        for _ in range(3):  # the caches carry over between pods
            got = compare_cycle(rng, fast, slow, snap, rand_incoming(rng, nodes))
            used["filter"] += got["filter"]
            used["score"] += got["score"]
    assert used["filter"] > 300
    assert used["score"] > 300


def test_batch_hooks_follow_cache_changes_between_cycles() -> None:
    """The per-row caches follow a snapshot refreshed in place: pods added and removed, nodes relabelled."""
    rng = random.Random(7)
    for _ in range(30):
        cache = Cache()
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 10))]
        for n in nodes:
            cache.add_node(n)
        live: list[Pod] = []
        snap = Snapshot()
        fast = PodTopologySpread(None, make_handle(snap))
        for step in range(15):
            r = rng.random()
            if r < 0.5 or not live:
                for p in rand_pods(rng, nodes, rng.randint(1, 3), f"s{step}-"):
                    cache.add_pod(p)
                    live.append(p)
            elif r < 0.8:
                cache.remove_pod(live.pop(rng.randrange(len(live))))
            else:
                i = rng.randrange(len(nodes))
                new = rand_node(rng, i)
                cache.update_node(nodes[i], new)
                nodes[i] = new
            cache.update_snapshot(snap)
            slow = PodTopologySpread(None, make_handle(plain_snapshot(snap.list())))
            compare_cycle(rng, fast, slow, snap, rand_incoming(rng, nodes))


def test_batch_hooks_fall_back_for_stale_rows() -> None:
    """A clone with a pod removed (preemption's what-if) is not a current row: node by node."""
    rng = random.Random(3)
    checked = 0
    for _ in range(100):
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 8))]
        pods = rand_pods(rng, nodes, rng.randint(1, 20), "e")
        snap = Snapshot.from_nodes(nodes, pods)
        fast = PodTopologySpread(None, make_handle(snap))
        pod = rand_incoming(rng, nodes)
        state = CycleState()
        _, st = fast.pre_filter(state, pod, snap.list())
        if st is not None:
            continue
        victims = [ni for ni in snap.list() if ni.pods]
        if not victims:
            continue
        clone = victims[0].clone()
        removed = clone.pods[0]
        clone.remove_pod(removed.pod)
        st2 = state.clone()
        assert fast.remove_pod(st2, pod, removed, clone) is None
        batch = NodeBatch([clone, *[ni for ni in snap.list() if ni is not victims[0]]], snap.node_table())
        assert batch.rows() is None
        assert fast.filter_nodes(st2, pod, batch) == [fast.filter(st2, pod, ni) for ni in batch]
        if fast.pre_score(st2, pod, batch) is None:
            want = [fast.score(st2, pod, ni)[0] for ni in batch]
            assert score_list(fast.score_nodes(st2, pod, batch)) == (want, None)
            assert score_list(fast.score_nodes(st2, pod, list(batch))) == (
                want,
                None,
            )  # plain list, stale: by node
        # the cached per-code counts follow remove_pod: the original state is unchanged
        assert fast.filter_nodes(state, pod, NodeBatch(snap.list(), snap.node_table())) == [
            fast.filter(state, pod, ni) for ni in snap.list()
        ]
        checked += 1
    assert checked > 20


def test_filter_nodes_sees_counts_updated_after_a_batch_call() -> None:
    """per_code arrays cached in the state are dropped by add_pod/remove_pod."""
    nodes = [node("a", zone="z1"), node("b", zone="z2")]
    nodes = [Node(name=n.name, labels={**n.labels, RZONE: n.labels["zone"]}) for n in nodes]
    pods = [pod_on("p1", "a", FOO)]
    snap = Snapshot.from_nodes(nodes, pods)
    pl = PodTopologySpread(None, make_handle(snap))
    pod = make_pod("in").labels(FOO).spread(1, RZONE, DNS, FOO).obj()
    state = CycleState()
    pl.pre_filter(state, pod, snap.list())
    batch = NodeBatch(snap.list(), snap.node_table())
    # z1: 1, z2: 0 -> a: 1+1-0 > 1
    assert [code_of(s) for s in pl.filter_nodes(state, pod, batch)] == [UNSCHED, OK]
    b = snap.get("b")
    assert b is not None
    pl.add_pod(state, pod, PodInfo(pod_on("p2", "b", FOO)), b)
    pl.add_pod(state, pod, PodInfo(pod_on("p3", "b", FOO)), b)
    # z1: 1, z2: 2 -> a: 1+1-1 = 1, b: 2+1-1 > 1
    assert [code_of(s) for s in pl.filter_nodes(state, pod, batch)] == [OK, UNSCHED]
