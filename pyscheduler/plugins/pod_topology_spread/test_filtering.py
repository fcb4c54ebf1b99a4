"""PodTopologySpread PreFilter/Filter (kube's cases) and the preemption hooks (AddPod/RemovePod)."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code, code_of
from pyscheduler.framework.types import Node, Pod, PodInfo, Taint
from pyscheduler.plugins.pod_topology_spread import (
    ERR_REASON_CONSTRAINTS_NOT_MATCH,
    ERR_REASON_NODE_LABEL_NOT_MATCH,
    NAME,
)
from pyscheduler.plugins.pod_topology_spread._fixtures import (
    BAR,
    DNS,
    FOO,
    HOST,
    OK,
    SA,
    UNRES,
    UNSCHED,
    ZONE,
    ZONE_NODES,
    cluster,
    node,
    plugin,
    pod_on,
)
from pyscheduler.testing import filter_all
from pyscheduler.testing.builders import make_node_info, make_pod

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
