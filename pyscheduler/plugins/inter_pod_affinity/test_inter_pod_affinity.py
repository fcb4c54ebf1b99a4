from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, code_of
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PLUGIN,
    InterPodAffinity,
    InterPodAffinityArgs,
    PreFilterState,
    PreScoreState,
)
from pyscheduler.plugins.inter_pod_affinity.terms import ParsedAffinity, terms_of
from pyscheduler.testing import make_handle, plain_snapshot, score_list
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


def filter_all(pl: InterPodAffinity, p: Pod, infos: list[NodeInfo]) -> dict[str, Code]:
    state = CycleState()
    _, st = pl.pre_filter(state, p, infos)
    if st is not None and st.is_skip():
        return {n.name: OK for n in infos}
    assert st is None, st
    return {n.name: code_of(pl.filter(state, p, n)) for n in infos}


def score_all(pl: InterPodAffinity, p: Pod, candidates: list[NodeInfo]) -> dict[str, int] | None:
    state = CycleState()
    st = pl.pre_score(state, p, candidates)
    if st is not None and st.is_skip():
        return None
    assert st is None, st
    scores = []
    for n in candidates:
        s, sst = pl.score(state, p, n)
        assert sst is None
        scores.append(NodeScore(n.name, s))
    assert pl.normalize_score(state, p, scores) is None
    return {s.name: s.score for s in scores}


REGION_NODES = [
    mk_node("china-1", region="China", zone="z1", **{HOST: "china-1"}),
    mk_node("china-2", region="China", zone="z2", **{HOST: "china-2"}),
    mk_node("india-1", region="India", zone="z3", **{HOST: "india-1"}),
    mk_node("nokey", **{HOST: "nokey"}),
]
ALL4 = ["china-1", "china-2", "india-1", "nokey"]


def codes(*c: Code) -> dict[str, Code]:
    return dict(zip(ALL4, c, strict=True))


# ------------------------------------------------------------------------------------------- Filter


FILTER_CASES: list[tuple[str, Pod, list[Pod], Sequence[JSON] | None, dict[str, Code]]] = [
    (
        "no affinity: PreFilter skips",
        pod(labels=S1),
        [pod("e", S1, node="china-1")],
        None,
        codes(OK, OK, OK, OK),
    ),
    (
        "required affinity satisfied in the region of a matching pod",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")))),
        [pod("e", S1, node="china-1")],
        None,
        codes(OK, OK, UNRES, UNRES),
    ),
    (
        "required affinity: no matching pod anywhere and the pod does not match itself",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")))),
        [pod("e", S2, node="china-1")],
        None,
        codes(UNRES, UNRES, UNRES, UNRES),
    ),
    (
        "first pod of a self-affine group: any node with the topology key",
        pod(labels=S1, affinity=required(term("region", sel_in("security", "S1")))),
        [pod("e", S2, node="china-1")],
        None,
        codes(OK, OK, OK, UNRES),
    ),
    (
        "self-affinity exemption does not apply once a matching pod exists",
        pod(labels=S1, affinity=required(term("region", sel_in("security", "S1")))),
        [pod("e", S1, node="india-1")],
        None,
        codes(UNRES, UNRES, OK, UNRES),
    ),
    (
        "an existing pod must match all affinity terms",
        pod(
            labels=S2,
            affinity=required(term("region", sel_in("security", "S1")), term("zone", sel_in("app", "web"))),
        ),
        [pod("e1", S1, node="china-1"), pod("e2", {"app": "web"}, node="china-2")],
        None,
        codes(UNRES, UNRES, UNRES, UNRES),
    ),
    (
        "all terms matched by one pod: both domains must hold it",
        pod(
            labels=S2,
            affinity=required(term("region", sel_in("security", "S1")), term("zone", sel_in("app", "web"))),
        ),
        [pod("e1", {"security": "S1", "app": "web"}, node="china-1")],
        None,
        codes(OK, UNRES, UNRES, UNRES),
    ),
    (
        "affinity counts only the pod's own namespace by default",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")))),
        [pod("e", S1, ns="other", node="china-1")],
        None,
        codes(UNRES, UNRES, UNRES, UNRES),
    ),
    (
        "affinity with explicit namespaces",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1"), namespaces=["other"]))),
        [pod("e", S1, ns="other", node="china-1")],
        None,
        codes(OK, OK, UNRES, UNRES),
    ),
    (
        "affinity with a namespaceSelector",
        pod(
            labels=S2,
            affinity=required(
                term("region", sel_in("security", "S1"), namespaceSelector={"matchLabels": {"team": "team1"}})
            ),
        ),
        [
            pod("e1", S1, ns="subteam2.team1", node="india-1"),
            pod("e2", S1, ns="subteam1.team2", node="china-1"),
        ],
        NAMESPACES,
        codes(UNRES, UNRES, OK, UNRES),
    ),
    (
        "affinity with an empty namespaceSelector matches every namespace",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1"), namespaceSelector={}))),
        [pod("e", S1, ns="anywhere", node="china-1")],
        None,
        codes(OK, OK, UNRES, UNRES),
    ),
    (
        "namespaceSelector without Namespace objects matches nothing",
        pod(
            labels=S2,
            affinity=required(
                term("region", sel_in("security", "S1"), namespaceSelector={"matchLabels": {"team": "team1"}})
            ),
        ),
        [pod("e1", S1, ns="subteam2.team1", node="india-1")],
        None,
        codes(UNRES, UNRES, UNRES, UNRES),
    ),
    (
        "a term without labelSelector matches no pod",
        pod(labels=S2, affinity=required(term("region", None))),
        [pod("e", S1, node="china-1")],
        None,
        codes(UNRES, UNRES, UNRES, UNRES),
    ),
    (
        "required anti-affinity: the region of a matching pod is excluded",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")), anti=True)),
        [pod("e", S1, node="china-1")],
        None,
        codes(UNSCHED, UNSCHED, OK, OK),
    ),
    (
        "hostname anti-affinity: one per node",
        pod(labels=S1, affinity=required(term(HOST, sel_in("security", "S1")), anti=True)),
        [pod("e", S1, node="china-1")],
        None,
        codes(UNSCHED, OK, OK, OK),
    ),
    (
        "anti-affinity ignores pods in other namespaces",
        pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")), anti=True)),
        [pod("e", S1, ns="other", node="china-1")],
        None,
        codes(OK, OK, OK, OK),
    ),
    (
        "anti-affinity with a namespaceSelector",
        pod(
            labels=S2,
            affinity=required(
                term(
                    "region", sel_in("security", "S1"), namespaceSelector={"matchLabels": {"team": "team2"}}
                ),
                anti=True,
            ),
        ),
        [
            pod("e1", S1, ns="subteam1.team1", node="china-1"),
            pod("e2", S1, ns="subteam1.team2", node="india-1"),
        ],
        NAMESPACES,
        codes(OK, OK, UNSCHED, OK),
    ),
    (
        "an existing pod's anti-affinity rejects the incoming pod in its region",
        pod(labels=S1),
        [
            pod(
                "e",
                S2,
                affinity=required(term("region", sel_in("security", "S1")), anti=True),
                node="china-1",
            )
        ],
        None,
        codes(UNSCHED, UNSCHED, OK, OK),
    ),
    (
        "an existing pod's anti-affinity that does not select the incoming pod",
        pod(labels=S2),
        [
            pod(
                "e",
                S2,
                affinity=required(term("region", sel_in("security", "S1")), anti=True),
                node="china-1",
            )
        ],
        None,
        codes(OK, OK, OK, OK),
    ),
    (
        "an existing pod's anti-affinity only covers its own namespace",
        pod(labels=S1, ns="other"),
        [
            pod(
                "e",
                S2,
                affinity=required(term("region", sel_in("security", "S1")), anti=True),
                node="china-1",
            )
        ],
        None,
        codes(OK, OK, OK, OK),
    ),
    (
        "an existing pod's anti-affinity namespaceSelector sees the incoming pod's namespace labels",
        pod(labels=S1, ns="subteam1.team1"),
        [
            pod(
                "e",
                S2,
                affinity=required(
                    term(
                        "region",
                        sel_in("security", "S1"),
                        namespaceSelector={"matchLabels": {"team": "team1"}},
                    ),
                    anti=True,
                ),
                node="india-1",
            )
        ],
        NAMESPACES,
        codes(OK, OK, UNSCHED, OK),
    ),
    (
        "an existing pod's anti-affinity with a namespaceSelector, incoming namespace unlabeled",
        pod(labels=S1, ns="subteam1.team2"),
        [
            pod(
                "e",
                S2,
                affinity=required(
                    term(
                        "region",
                        sel_in("security", "S1"),
                        namespaceSelector={"matchLabels": {"team": "team1"}},
                    ),
                    anti=True,
                ),
                node="india-1",
            )
        ],
        NAMESPACES,
        codes(OK, OK, OK, OK),
    ),
    (
        "an existing pod's anti-affinity on a key the node lacks does not reject it",
        pod(labels=S1),
        [pod("e", S2, affinity=required(term("region", sel_in("security", "S1")), anti=True), node="nokey")],
        None,
        codes(OK, OK, OK, OK),
    ),
    (
        "affinity and anti-affinity together",
        pod(
            labels=S1,
            affinity={
                **required(term("region", sel_in("security", "S1"))),
                **required(term(HOST, sel_in("security", "S1")), anti=True),
            },
        ),
        [pod("e", S1, node="china-1")],
        None,
        codes(UNSCHED, OK, UNRES, UNRES),
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "objects", "want"), FILTER_CASES, ids=[c[0] for c in FILTER_CASES]
)
def test_filter(
    name: str, incoming: Pod, pods: list[Pod], objects: Sequence[JSON] | None, want: dict[str, Code]
) -> None:
    infos = cluster(REGION_NODES, pods)
    assert filter_all(plugin(infos, objects), incoming, infos) == want


@pytest.mark.parametrize(
    ("incoming", "pods", "node_index", "code", "reason"),
    [
        (
            pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")))),
            [pod("e", S1, node="china-1")],
            2,
            UNRES,
            ERR_REASON_AFFINITY_RULES_NOT_MATCH,
        ),
        (
            pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")), anti=True)),
            [pod("e", S1, node="china-1")],
            0,
            UNSCHED,
            ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
        ),
        (
            pod(labels=S1),
            [
                pod(
                    "e",
                    S2,
                    affinity=required(term("region", sel_in("security", "S1")), anti=True),
                    node="china-1",
                )
            ],
            1,
            UNSCHED,
            ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
        ),
    ],
)
def test_filter_reasons(incoming: Pod, pods: list[Pod], node_index: int, code: Code, reason: str) -> None:
    infos = cluster(REGION_NODES, pods)
    pl = plugin(infos)
    state = CycleState()
    assert pl.pre_filter(state, incoming, infos) == (None, None)
    st = pl.filter(state, incoming, infos[node_index])
    assert st is not None
    assert (st.code, st.reasons, st.plugin) == (code, (reason,), NAME)


def test_reason_strings_are_kubes() -> None:
    assert ERR_REASON_AFFINITY_RULES_NOT_MATCH == "node(s) didn't match pod affinity rules"
    assert ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH == "node(s) didn't match pod anti-affinity rules"
    assert (
        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH
        == "node(s) didn't satisfy existing pods anti-affinity rules"
    )


def test_pre_filter_rejects_unparsable_selector() -> None:
    bad = pod(affinity=required(term("region", {"matchExpressions": [{"key": "a", "operator": "Near"}]})))
    infos = cluster(REGION_NODES, [])
    _, st = plugin(infos).pre_filter(CycleState(), bad, infos)
    assert st is not None and st.code == UNRES and st.reasons[0].startswith("parsing pod:")


def test_filter_without_pre_filter_state_computes_it() -> None:
    infos = cluster(REGION_NODES, [pod("e", S1, node="china-1")])
    pl = plugin(infos)
    incoming = pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")), anti=True))
    state = CycleState()
    assert code_of(pl.filter(state, incoming, infos[0])) == UNSCHED
    assert code_of(pl.filter(state, incoming, infos[2])) == OK


# ------------------------------------------------------------------------------------------- preemption


def test_remove_pod_lifts_anti_affinity_and_clone_is_isolated() -> None:
    victim = pod("e", S1, node="china-1")
    infos = cluster(REGION_NODES, [victim])
    pl = plugin(infos)
    incoming = pod(labels=S2, affinity=required(term("region", sel_in("security", "S1")), anti=True))
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert code_of(pl.filter(state, incoming, infos[1])) == UNSCHED

    what_if = state.clone()
    ext = pl.pre_filter_extensions()
    assert ext.remove_pod(what_if, incoming, PodInfo(victim), infos[0]) is None
    assert code_of(pl.filter(what_if, incoming, infos[1])) == OK
    assert code_of(pl.filter(state, incoming, infos[1])) == UNSCHED
    ext.add_pod(what_if, incoming, PodInfo(victim), infos[0])
    assert code_of(pl.filter(what_if, incoming, infos[1])) == UNSCHED


def test_remove_pod_with_anti_affinity_lifts_existing_anti_affinity() -> None:
    victim = pod(
        "e", S2, affinity=required(term("region", sel_in("security", "S1")), anti=True), node="china-1"
    )
    infos = cluster(REGION_NODES, [victim])
    pl = plugin(infos)
    incoming = pod(labels=S1)
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert code_of(pl.filter(state, incoming, infos[0])) == UNSCHED
    pl.remove_pod(state, incoming, PodInfo(victim), infos[0])
    assert code_of(pl.filter(state, incoming, infos[0])) == OK


def test_add_pod_satisfies_affinity() -> None:
    infos = cluster(REGION_NODES, [pod("x", S1, node="india-1")])
    pl = plugin(infos)
    incoming = pod(labels=S2, affinity=required(term("region", sel_in("security", "S1"))))
    state = CycleState()
    pl.pre_filter(state, incoming, infos)
    assert code_of(pl.filter(state, incoming, infos[0])) == UNRES
    pl.add_pod(state, incoming, PodInfo(pod("n", S1, node="china-2")), infos[1])
    assert code_of(pl.filter(state, incoming, infos[0])) == OK
    # a pod that does not match changes nothing
    state2 = CycleState()
    pl.pre_filter(state2, incoming, infos)
    pl.add_pod(state2, incoming, PodInfo(pod("n", S2, node="china-2")), infos[1])
    assert code_of(pl.filter(state2, incoming, infos[0])) == UNRES


def test_extensions_without_state_are_noops() -> None:
    info = make_node_info(mk_node("n"))
    p = pod()
    assert InterPodAffinity().add_pod(CycleState(), p, PodInfo(p), info) is None
    assert InterPodAffinity().remove_pod(CycleState(), p, PodInfo(p), info) is None


# ------------------------------------------------------------------------------------------- Score

STAY_S1_REGION = preferred((5, term("region", sel_in("security", "S1"))))
STAY_S2_REGION = preferred((6, term("region", sel_in("security", "S2"))))
AFFINITY3 = preferred(
    (
        8,
        term(
            "region",
            {
                "matchExpressions": [
                    {"key": "security", "operator": "NotIn", "values": ["S1"]},
                    {"key": "security", "operator": "In", "values": ["S2"]},
                ]
            },
        ),
    ),
    (
        2,
        term(
            "region",
            {
                "matchExpressions": [
                    {"key": "security", "operator": "Exists"},
                    {"key": "wrongkey", "operator": "DoesNotExist"},
                ]
            },
        ),
    ),
)
HARD_AFFINITY = required(
    term("region", sel_in("security", "S1", "value2")),
    term(
        "region",
        {
            "matchExpressions": [
                {"key": "security", "operator": "Exists"},
                {"key": "wrongkey", "operator": "DoesNotExist"},
            ]
        },
    ),
)
AWAY_S1_AZ = preferred((5, term("az", sel_in("security", "S1"))), anti=True)
AWAY_S2_AZ = preferred((5, term("az", sel_in("security", "S2"))), anti=True)
STAY_S1_REGION_AWAY_S2_AZ = {
    **preferred((8, term("region", sel_in("security", "S1")))),
    **preferred((5, term("az", sel_in("security", "S2"))), anti=True),
}
NS_SELECTOR_TERM = term(
    "region",
    sel_in("security", "S1"),
    namespaces=["subteam2.team2"],
    namespaceSelector={"matchExpressions": [{"key": "team", "operator": "In", "values": ["team1"]}]},
)
AFFINITY_NS_SELECTOR = preferred((5, NS_SELECTOR_TERM))
ANTI_AFFINITY_NS_SELECTOR = preferred((5, NS_SELECTOR_TERM), anti=True)

CHINA = {"region": "China"}
INDIA = {"region": "India"}
AZ1 = {"az": "az1"}
AZ2 = {"az": "az2"}
CHINA_AZ1 = {"region": "China", "az": "az1"}


def nodes(*labels: dict[str, str]) -> list[Node]:
    return [mk_node(f"node{i + 1}", **lb) for i, lb in enumerate(labels)]


# (name, incoming pod, existing pods, nodes, args, objects, want) -- the numbers are kube's.
SCORE_CASES: list[tuple[str, Pod, list[Pod], list[Node], dict[str, Any], Any, Any]] = [
    ("no affinity anywhere: Skip", pod(labels=S1), [], nodes(CHINA, INDIA, AZ1), {}, None, None),
    (
        "preferred affinity: matching topology and pod score high",
        pod(labels=S1, affinity=STAY_S1_REGION),
        [pod("e1", S1, node="node1"), pod("e2", S2, node="node2"), pod("e3", S1, node="node3")],
        nodes(CHINA, INDIA, AZ1),
        {},
        None,
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    (
        "every node in the matching domain gets the same score",
        pod(affinity=STAY_S1_REGION),
        [pod("e1", S1, node="node1")],
        nodes(CHINA, CHINA_AZ1, INDIA),
        {},
        None,
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    (
        "the region with more matching pods scores higher",
        pod(labels=S1, affinity=STAY_S2_REGION),
        [
            pod(f"e{i}", S2, node=n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node4", "node5"])
        ],
        nodes(CHINA, INDIA, CHINA, CHINA, INDIA),
        {},
        None,
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    (
        "different operators, some terms not matching",
        pod(labels=S1, affinity=AFFINITY3),
        [pod("e1", S1, node="node1"), pod("e2", S2, node="node2"), pod("e3", S1, node="node3")],
        nodes(CHINA, INDIA, AZ1),
        {},
        None,
        {"node1": 20, "node2": 100, "node3": 0},
    ),
    (
        "symmetry: existing pods' preferred affinity",
        pod(labels=S2),
        [pod("e1", S1, STAY_S1_REGION, node="node1"), pod("e2", S2, STAY_S2_REGION, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {},
        None,
        {"node1": 0, "node2": 100, "node3": 0},
    ),
    (
        "symmetry with a namespaceSelector on the existing pod's term",
        pod(labels=S1, ns="subteam1.team1"),
        [pod("e1", S1, AFFINITY_NS_SELECTOR, node="node1"), pod("e2", S2, STAY_S2_REGION, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {},
        NAMESPACES,
        {"node1": 100, "node2": 0, "node3": 0},
    ),
    (
        "anti-affinity symmetry with a namespaceSelector",
        pod(labels=S1, ns="subteam1.team1"),
        [pod("e1", S1, ANTI_AFFINITY_NS_SELECTOR, node="node1"), pod("e2", S2, STAY_S2_REGION, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {},
        NAMESPACES,
        {"node1": 0, "node2": 100, "node3": 100},
    ),
    (
        "symmetry: existing pods' required affinity weighs hardPodAffinityWeight",
        pod(labels=S1),
        [pod("e1", S1, HARD_AFFINITY, node="node1"), pod("e2", S2, HARD_AFFINITY, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {},
        None,
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    (
        "hardPodAffinityWeight 0 ignores existing pods' required affinity",
        pod(labels=S1),
        [pod("e1", S1, HARD_AFFINITY, node="node1")],
        nodes(CHINA, INDIA, AZ1),
        {"hardPodAffinityWeight": 0},
        None,
        None,
    ),
    (
        "hardPodAffinityWeight scales the symmetric required affinity",
        pod(labels=S1),
        [pod("e1", S1, HARD_AFFINITY, node="node1"), pod("e2", S1, STAY_S1_REGION, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {"hardPodAffinityWeight": 10},
        None,
        # China: 2 terms x 10 = 20; India: 5 -> 100, 25, 0
        {"node1": 100, "node2": 25, "node3": 0},
    ),
    (
        "preferred anti-affinity: the node with a matching pod scores low",
        pod(labels=S1, affinity=AWAY_S1_AZ),
        [pod("e1", S1, node="node1"), pod("e2", S2, node="node2")],
        nodes(AZ1, CHINA),
        {},
        None,
        {"node1": 0, "node2": 100},
    ),
    (
        "preferred anti-affinity: more matching pods, lower score",
        pod(labels=S1, affinity=AWAY_S1_AZ),
        [pod("e1", S1, node="node1"), pod("e2", S1, node="node1"), pod("e3", S2, node="node2")],
        nodes(AZ1, INDIA),
        {},
        None,
        {"node1": 0, "node2": 100},
    ),
    (
        "anti-affinity symmetry",
        pod(labels=S2),
        [pod("e1", S1, AWAY_S2_AZ, node="node1"), pod("e2", S2, AWAY_S1_AZ, node="node2")],
        nodes(AZ1, AZ2),
        {},
        None,
        {"node1": 0, "node2": 100},
    ),
    (
        "affinity and anti-affinity",
        pod(labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ),
        [pod("e1", S1, node="node1"), pod("e2", S1, node="node2")],
        nodes(CHINA, AZ1),
        {},
        None,
        {"node1": 100, "node2": 0},
    ),
    (
        "affinity and anti-affinity, same labels (stay in the region, apart by az)",
        pod(labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ),
        [
            pod(f"e{i}", S1, node=n)
            for i, n in enumerate(["node1", "node1", "node2", "node3", "node3", "node4", "node5"])
        ],
        nodes(CHINA_AZ1, INDIA, CHINA, CHINA, INDIA),
        {},
        None,
        {"node1": 100, "node2": 0, "node3": 100, "node4": 100, "node5": 0},
    ),
    (
        "affinity, anti-affinity and symmetry together",
        pod(labels=S1, affinity=STAY_S1_REGION_AWAY_S2_AZ),
        [
            pod("e1", S1, node="node1"),
            pod("e2", S2, node="node2"),
            pod("e3", {}, STAY_S1_REGION_AWAY_S2_AZ, node="node3"),
            pod("e4", {}, AWAY_S1_AZ, node="node4"),
        ],
        nodes(CHINA, AZ1, INDIA, AZ2),
        {},
        None,
        {"node1": 100, "node2": 0, "node3": 100, "node4": 0},
    ),
    (
        "a topology where only some nodes have pods with affinity",
        pod(labels=S1),
        [pod("e1", S1, node="node1"), pod("e2", {}, STAY_S1_REGION_AWAY_S2_AZ, node="node2")],
        nodes(CHINA, CHINA),
        {},
        None,
        {"node1": 0, "node2": 0},
    ),
    (
        "incoming pod's preferred term with a namespaceSelector",
        pod(labels=S1, ns="subteam1.team1", affinity=AFFINITY_NS_SELECTOR),
        [
            pod("e1", S1, ns="subteam1.team1", node="node1"),
            pod("e2", S1, ns="subteam2.team2", node="node2"),
            pod("e3", S1, ns="subteam1.team2", node="node3"),
        ],
        nodes(CHINA, INDIA, {"region": "Japan"}),
        {},
        NAMESPACES,
        {"node1": 100, "node2": 100, "node3": 0},
    ),
    (
        "ignorePreferredTermsOfExistingPods skips pods without preferred terms",
        pod(labels=S2),
        [pod("e1", S1, STAY_S1_REGION, node="node1"), pod("e2", S2, STAY_S2_REGION, node="node2")],
        nodes(CHINA, INDIA, AZ1),
        {"ignorePreferredTermsOfExistingPods": True},
        None,
        None,
    ),
    (
        "ignorePreferredTermsOfExistingPods has no effect when the incoming pod has preferred terms",
        pod(labels=S1, affinity=STAY_S1_REGION),
        [pod("e1", S1, node="node1"), pod("e2", S1, AWAY_S1_AZ, node="node2")],
        nodes(CHINA, {"region": "India", "az": "az1"}),
        {"ignorePreferredTermsOfExistingPods": True},
        None,
        # China 5; India 5 - 5 (e2's anti-affinity still counts) = 0
        {"node1": 100, "node2": 0},
    ),
    (
        "existing pods' preferred anti-affinity counts against the incoming pod",
        pod(labels=S1, affinity=STAY_S1_REGION),
        [pod("e1", S1, node="node1"), pod("e2", S1, AWAY_S1_AZ, node="node2")],
        nodes(CHINA, {"region": "India", "az": "az1"}),
        {},
        None,
        # China 5; India 5 - 5 = 0
        {"node1": 100, "node2": 0},
    ),
]


@pytest.mark.parametrize(
    ("name", "incoming", "pods", "node_list", "args", "objects", "want"),
    SCORE_CASES,
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    name: str,
    incoming: Pod,
    pods: list[Pod],
    node_list: list[Node],
    args: dict[str, Any],
    objects: Any,
    want: Any,
) -> None:
    infos = cluster(node_list, pods)
    assert score_all(plugin(infos, objects, **args), incoming, infos) == want


def test_score_uses_all_nodes_not_only_candidates() -> None:
    # the matching pod sits on a node that failed Filter: its domain still scores
    infos = cluster(nodes(CHINA, CHINA, INDIA), [pod("e1", S1, node="node2")])
    pl = plugin(infos)
    assert score_all(pl, pod(affinity=STAY_S1_REGION), [infos[0], infos[2]]) == {"node1": 100, "node3": 0}


def test_normalize_with_negative_scores() -> None:
    # anti-affinity only: -5 on az1, 0 elsewhere -> min -5, max 0
    infos = cluster(nodes(AZ1, AZ2, AZ2), [pod("e1", S1, node="node1")])
    assert score_all(plugin(infos), pod(affinity=AWAY_S1_AZ), infos) == {
        "node1": 0,
        "node2": 100,
        "node3": 100,
    }


def test_pre_score_rejects_unparsable_selector() -> None:
    bad = pod(
        affinity=preferred((1, term("region", {"matchExpressions": [{"key": "a", "operator": "Near"}]})))
    )
    infos = cluster(nodes(CHINA), [])
    st = plugin(infos).pre_score(CycleState(), bad, infos)
    assert st is not None and st.code == Code.ERROR


def test_score_without_state_is_zero() -> None:
    assert InterPodAffinity().score(CycleState(), pod(), make_node_info(mk_node("n"))) == (0, None)


# ------------------------------------------------------------------------------------------- memo


def test_parsed_terms_are_memoized_per_pod_info() -> None:
    pi = PodInfo(pod("e", S1, HARD_AFFINITY, node="n"))
    parsed = terms_of(pi)
    assert isinstance(parsed, ParsedAffinity) and len(parsed.required_affinity) == 2
    assert pi.memo[NAME] is parsed
    assert terms_of(pi) is parsed
    assert terms_of(PodInfo(pod("plain"))).required_affinity == ()


def test_namespaces_default_to_the_pods_own() -> None:
    parsed = terms_of(PodInfo(pod("e", affinity=required(term("r", sel_in("a", "b"))), ns="team")))
    assert parsed.required_affinity[0].namespaces == frozenset({"team"})
    parsed = terms_of(
        PodInfo(pod("e", affinity=required(term("r", sel_in("a", "b"), namespaces=["x"])), ns="team"))
    )
    assert parsed.required_affinity[0].namespaces == frozenset({"x"})


# ------------------------------------------------------------------------------------------- args


def test_default_args() -> None:
    assert PLUGIN.decode(None, "args") == InterPodAffinityArgs(1, False)
    assert PLUGIN.name == "InterPodAffinity"


@pytest.mark.parametrize(
    ("raw", "field"),
    [
        ({"hardPodAffinityWeight": -1}, "args.hardPodAffinityWeight"),
        ({"hardPodAffinityWeight": 101}, "args.hardPodAffinityWeight"),
        ({"hardPodAffinityWeight": "1"}, "args.hardPodAffinityWeight"),
        ({"ignorePreferredTermsOfExistingPods": "yes"}, "args.ignorePreferredTermsOfExistingPods"),
        ({"hardPodAffinityWeigth": 1}, "args.hardPodAffinityWeigth"),
    ],
)
def test_bad_args(raw: dict[str, Any], field: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == field


@pytest.mark.parametrize("w", [0, 1, 100])
def test_good_weights(w: int) -> None:
    assert PLUGIN.decode({"hardPodAffinityWeight": w}, "args").hard_pod_affinity_weight == w


# ------------------------------------------------------------------------------------------- hints


def test_events_registered() -> None:
    events = InterPodAffinity().events_to_register()
    assert {str(e.event.resource) for e in events} == {"Pod", "Node"}
    assert all(e.hint is not None for e in events)


TARGET = pod(
    labels=S2,
    affinity={
        **required(term("region", sel_in("security", "S1"))),
        **required(term("zone", sel_in("app", "db")), anti=True),
    },
)
Q = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("assigned pod matching affinity added", None, pod("e", S1, node="n"), Q),
        ("assigned pod not matching affinity added", None, pod("e", S2, node="n"), SKIP),
        ("unscheduled pod added", None, pod("e", S1), SKIP),
        ("pod matching anti-affinity deleted", pod("e", {"app": "db"}, node="n"), None, Q),
        ("pod not matching anti-affinity deleted", pod("e", {"app": "web"}, node="n"), None, SKIP),
        ("label update starts matching affinity", pod("e", S2, node="n"), pod("e", S1, node="n"), Q),
        (
            "label update stops matching anti-affinity",
            pod("e", {"app": "db"}, node="n"),
            pod("e", {"app": "x"}, node="n"),
            Q,
        ),
        ("unrelated label update", pod("e", {"x": "1"}, node="n"), pod("e", {"x": "2"}, node="n"), SKIP),
    ],
)
def test_pod_change_hint(name: str, old: Pod | None, new: Pod | None, want: QueueingHint) -> None:
    assert InterPodAffinity().is_schedulable_after_pod_change(TARGET, old, new) == want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        (mk_node("n", region="r"), Q),  # affinity topology key
        (mk_node("n", zone="z"), Q),  # anti-affinity topology key
        (mk_node("n", other="x"), SKIP),
    ],
)
def test_node_change_hint(new: Node, want: QueueingHint) -> None:
    assert InterPodAffinity().is_schedulable_after_node_change(TARGET, None, new) == want


# ------------------------------------------------------------------------------------------- batch hooks
# filter_nodes / score_nodes, and PreFilter / PreScore computed from the NodeTable and per-row caches,
# must give exactly what the node-by-node code gives: compared on random clusters against the same
# plugin over a snapshot without a NodeTable (which takes the original path).

ZONE = "topology.kubernetes.io/zone"
RACK = "rack"
RKEYS = [HOST, ZONE, RACK]
RLABELS = [{"app": "a"}, {"app": "b"}, {"app": "a", "tier": "x"}, {}, {"tier": "x"}]
RNAMESPACES = ["default", "default", "team1-ns", "team2-ns"]
RNS_OBJECTS: tuple[JSON, ...] = (
    namespace("default", team="none"),
    namespace("team1-ns", team="team1"),
    namespace("team2-ns", team="team2"),
)


def rand_node(rng: random.Random, i: int) -> Node:
    labels: dict[str, str] = {}
    if rng.random() < 0.9:
        labels[HOST] = f"n{i}"
    if rng.random() < 0.8:
        labels[ZONE] = rng.choice(["z1", "z2", "z3"])
    if rng.random() < 0.5:
        labels[RACK] = rng.choice(["r1", "r2", ""])
    return Node(name=f"n{i}", labels=labels)


def rand_term(rng: random.Random) -> dict[str, Any]:
    extra: dict[str, Any] = {}
    r = rng.random()
    if r < 0.1:
        extra["namespaces"] = [rng.choice(RNAMESPACES)]
    elif r < 0.2:
        extra["namespaceSelector"] = rng.choice([{}, {"matchLabels": {"team": "team1"}}])
    sel: dict[str, Any] | None = rng.choice(
        [{"matchLabels": {"app": "a"}}, {"matchLabels": {"app": "b"}}, sel_in("tier", "x"), {}, None]
    )
    return term(rng.choice(RKEYS), sel, **extra)


def rand_affinity(rng: random.Random, p: float) -> dict[str, Any] | None:
    aff: dict[str, Any] = {}
    for kind in ("podAffinity", "podAntiAffinity"):
        if rng.random() < p:
            aff.setdefault(kind, {})[REQ] = [rand_term(rng) for _ in range(rng.randint(1, 2))]
        if rng.random() < p:
            aff.setdefault(kind, {})[PREF] = [
                {"weight": rng.randint(1, 100), "podAffinityTerm": rand_term(rng)}
                for _ in range(rng.randint(1, 2))
            ]
    return aff or None


def rand_pod(rng: random.Random, name: str, node_name: str = "", p: float = 0.15) -> Pod:
    return pod(name, dict(rng.choice(RLABELS)), rand_affinity(rng, p), rng.choice(RNAMESPACES), node_name)


def rand_pods(rng: random.Random, nodes: list[Node], count: int, tag: str) -> list[Pod]:
    return [rand_pod(rng, f"{tag}{j}", rng.choice(nodes).name) for j in range(count)]


def pre_filter_summary(state: CycleState) -> Any:
    s = state.get("PreFilter" + NAME)
    if not isinstance(s, PreFilterState):
        return None
    return (s.existing_anti_affinity_counts, s.affinity_counts, s.anti_affinity_counts)


def pre_score_summary(state: CycleState) -> Any:
    s = state.get("PreScore" + NAME)
    return s.topology_score if isinstance(s, PreScoreState) else None


def compare_cycle(
    rng: random.Random, fast: InterPodAffinity, slow: InterPodAffinity, snap: Snapshot, incoming: Pod
) -> dict[str, int]:
    """One cycle, fast vs slow; returns how often the batch paths ran (to check the test tests)."""
    used = {"filter": 0, "score": 0}
    all_nodes = snap.list()
    table = snap.node_table()
    fs, ss = CycleState(), CycleState()
    _, st_fast = fast.pre_filter(fs, incoming, all_nodes)
    _, st_slow = slow.pre_filter(ss, incoming, list(all_nodes))
    assert st_fast == st_slow
    if st_fast is None:
        n = len(all_nodes)
        start = rng.randrange(n)
        chunk = NodeBatch([all_nodes[(start + i) % n] for i in range(rng.randint(1, n))], table)
        want = [slow.filter(ss, incoming, ni) for ni in chunk]
        # first from the arrays the fast PreFilter left (the dicts not built yet), then node by node
        assert fast.filter_nodes(fs, incoming, chunk) == want
        used["filter"] += chunk.rows() is not None
        assert [fast.filter(fs, incoming, ni) for ni in chunk] == want
        assert fast.filter_nodes(fs, incoming, chunk) == want
        assert fast.filter_nodes(fs, incoming, list(chunk)) == want  # a plain list: node by node
    assert pre_filter_summary(fs) == pre_filter_summary(ss)
    candidates = [ni for ni in all_nodes if rng.random() < 0.7] or list(all_nodes[:1])
    st_fast = fast.pre_score(fs, incoming, candidates)
    st_slow = slow.pre_score(ss, incoming, list(candidates))
    assert st_fast == st_slow
    if st_fast is None:
        batch = NodeBatch(candidates, table)
        want_scores = [slow.score(ss, incoming, ni)[0] for ni in candidates]
        assert score_list(fast.score_nodes(fs, incoming, batch)) == (want_scores, None)
        used["score"] += batch.rows() is not None
        assert score_list(fast.score_nodes(fs, incoming, list(candidates))) == (want_scores, None)
        assert [fast.score(fs, incoming, ni)[0] for ni in candidates] == want_scores
        assert score_list(fast.score_nodes(fs, incoming, batch)) == (want_scores, None)
        want_norm = [NodeScore(ni.name, v) for ni, v in zip(candidates, want_scores, strict=True)]
        got_norm = [NodeScore(ni.name, v) for ni, v in zip(candidates, want_scores, strict=True)]
        assert slow.normalize_score(ss, incoming, want_norm) == fast.normalize_score(fs, incoming, got_norm)
        assert got_norm == want_norm
    assert pre_score_summary(fs) == pre_score_summary(ss)
    return used


def rand_args(rng: random.Random) -> InterPodAffinityArgs:
    if rng.random() < 0.6:
        return InterPodAffinityArgs()
    return InterPodAffinityArgs(rng.randint(0, 5), rng.random() < 0.5)


def test_batch_hooks_match_node_by_node_on_random_clusters() -> None:
    rng = random.Random(20260502)
    used = {"filter": 0, "score": 0}
    for _ in range(400):
        nodes = [rand_node(rng, i) for i in range(rng.randint(1, 14))]
        snap = Snapshot.from_nodes(nodes, rand_pods(rng, nodes, rng.randint(0, 30), "e"))
        objects = RNS_OBJECTS if rng.random() < 0.7 else None
        args = rand_args(rng)
        fast = InterPodAffinity(args, make_handle(snap, objects=objects or ()))
        slow = InterPodAffinity(args, make_handle(plain_snapshot(snap.list()), objects=objects or ()))
        for _ in range(3):  # the caches carry over between pods
            got = compare_cycle(rng, fast, slow, snap, rand_pod(rng, "incoming", p=0.5))
            used["filter"] += got["filter"]
            used["score"] += got["score"]
    assert used["filter"] > 300
    assert used["score"] > 300


def test_batch_hooks_follow_cache_changes_between_cycles() -> None:
    """The per-row caches follow a snapshot refreshed in place: pods added and removed, nodes relabelled."""
    rng = random.Random(11)
    for _ in range(30):
        cache = Cache()
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 10))]
        for n in nodes:
            cache.add_node(n)
        live: list[Pod] = []
        snap = Snapshot()
        fast = InterPodAffinity(None, make_handle(snap, objects=RNS_OBJECTS))
        # the same incoming pod every cycle, as a workload of replicas: the caches are reused
        incoming = rand_pod(rng, "incoming", p=0.6)
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
            slow = InterPodAffinity(None, make_handle(plain_snapshot(snap.list()), objects=RNS_OBJECTS))
            compare_cycle(rng, fast, slow, snap, incoming)


def test_existing_terms_index_follows_pods_and_nodes_with_a_new_incoming_pod_each_cycle() -> None:
    """The index of existing pods' terms (existing_index.py) is read for every incoming pod, whatever its
    labels: with pods of many groups arriving in turn, while pods with affinity come and go (a node
    losing its last one leaves the index) and nodes are relabelled, PreFilter and PreScore agree with the
    node-by-node passes."""
    rng = random.Random(23)
    index_used = 0
    for _ in range(40):
        cache = Cache()
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 10))]
        for n in nodes:
            cache.add_node(n)
        live: list[Pod] = []
        snap = Snapshot()
        fast = InterPodAffinity(rand_args(rng), make_handle(snap, objects=RNS_OBJECTS))
        for step in range(20):
            r = rng.random()
            if r < 0.45 or not live:
                for p in rand_pods(rng, nodes, rng.randint(1, 3), f"s{step}-"):
                    cache.add_pod(p)
                    live.append(p)
            elif r < 0.85:
                cache.remove_pod(live.pop(rng.randrange(len(live))))
            else:
                i = rng.randrange(len(nodes))
                new = rand_node(rng, i)
                cache.update_node(nodes[i], new)
                nodes[i] = new
            cache.update_snapshot(snap)
            slow = InterPodAffinity(fast.args, make_handle(plain_snapshot(snap.list()), objects=RNS_OBJECTS))
            compare_cycle(rng, fast, slow, snap, rand_pod(rng, f"in{step}", p=0.4))
            index_used += fast._existing._size == len(snap.list())
    assert index_used > 500


def test_batch_hooks_fall_back_for_stale_rows() -> None:
    """A clone with a pod removed (preemption's what-if) is not a current row: node by node; and the
    per-code counts cached in the state follow remove_pod."""
    rng = random.Random(5)
    checked = 0
    for _ in range(150):
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 8))]
        snap = Snapshot.from_nodes(nodes, rand_pods(rng, nodes, rng.randint(1, 20), "e"))
        fast = InterPodAffinity(None, make_handle(snap, objects=RNS_OBJECTS))
        incoming = rand_pod(rng, "incoming", p=0.6)
        state = CycleState()
        _, st = fast.pre_filter(state, incoming, snap.list())
        if st is not None:
            continue
        full = NodeBatch(snap.list(), snap.node_table())
        before = fast.filter_nodes(state, incoming, full)  # fills the per-code caches
        victims = [ni for ni in snap.list() if ni.pods]
        if not victims:
            continue
        clone = victims[0].clone()
        removed = clone.pods[0]
        clone.remove_pod(removed.pod)
        st2 = state.clone()
        fast.filter_nodes(st2, incoming, full)  # fills st2's per-code caches, which remove_pod must drop
        assert fast.remove_pod(st2, incoming, removed, clone) is None
        batch = NodeBatch([clone, *[ni for ni in snap.list() if ni is not victims[0]]], snap.node_table())
        assert batch.rows() is None
        assert fast.filter_nodes(st2, incoming, batch) == [fast.filter(st2, incoming, ni) for ni in batch]
        if fast.pre_score(st2, incoming, batch) is None:
            want = [fast.score(st2, incoming, ni)[0] for ni in batch]
            assert score_list(fast.score_nodes(st2, incoming, batch)) == (want, None)
            assert score_list(fast.score_nodes(st2, incoming, list(batch))) == (
                want,
                None,
            )  # plain list, stale
        # the same state after remove_pod, on current rows: the cached arrays were dropped
        assert fast.filter_nodes(st2, incoming, full) == [fast.filter(st2, incoming, ni) for ni in full]
        assert fast.filter_nodes(state, incoming, full) == before
        checked += 1
    assert checked > 30


def test_batch_hooks_follow_namespace_label_changes() -> None:
    """Existing pods' namespaceSelectors see the incoming pod's namespace labels, which may change
    between cycles while the pods and nodes do not: the per-row caches must not be reused then."""
    sel = {"matchLabels": {"team": "team1"}}
    anti = required(term(HOST, {"matchLabels": {"app": "a"}}, namespaceSelector=sel), anti=True)
    pref = preferred((5, term(HOST, {"matchLabels": {"app": "a"}}, namespaceSelector=sel)))
    nodes = [mk_node("n1", **{HOST: "n1"}), mk_node("n2", **{HOST: "n2"})]
    pods = [pod("e1", {"x": "1"}, anti, "default", "n1"), pod("e2", {"x": "2"}, pref, "default", "n2")]
    snap = Snapshot.from_nodes(nodes, pods)
    ns_obj = namespace("blue", team="team1")
    pl = InterPodAffinity(None, make_handle(snap, objects=[ns_obj]))
    incoming = pod("in", {"app": "a"}, None, "blue")
    batch = NodeBatch(snap.list(), snap.node_table())

    def cycle() -> tuple[list[Code], list[int] | None]:
        state = CycleState()
        _, st = pl.pre_filter(state, incoming, snap.list())
        codes = [OK, OK] if st is not None else [code_of(s) for s in pl.filter_nodes(state, incoming, batch)]
        if pl.pre_score(state, incoming, snap.list()) is not None:
            return codes, None
        return codes, list(pl.score_nodes(state, incoming, batch)[0])

    assert cycle() == ([UNSCHED, OK], [0, 5])
    ns_obj["metadata"]["labels"] = {"team": "team2"}
    assert cycle() == ([OK, OK], None)
    ns_obj["metadata"]["labels"] = {"team": "team1"}
    assert cycle() == ([UNSCHED, OK], [0, 5])


def test_add_and_remove_pod_on_a_fresh_fast_state() -> None:
    """add_pod / remove_pod straight after the fast PreFilter (counts still held as arrays) act on
    the full counts, as on the node-by-node state."""
    rng = random.Random(17)
    checked = 0
    for _ in range(150):
        nodes = [rand_node(rng, i) for i in range(rng.randint(2, 8))]
        snap = Snapshot.from_nodes(nodes, rand_pods(rng, nodes, rng.randint(1, 20), "e"))
        fast = InterPodAffinity(None, make_handle(snap, objects=RNS_OBJECTS))
        slow = InterPodAffinity(None, make_handle(plain_snapshot(snap.list()), objects=RNS_OBJECTS))
        incoming = rand_pod(rng, "incoming", p=0.6)
        fs, ss = CycleState(), CycleState()
        _, st = fast.pre_filter(fs, incoming, snap.list())
        assert slow.pre_filter(ss, incoming, list(snap.list()))[1] == st
        if st is not None:
            continue
        target = rng.choice(list(snap.list()))
        extra = PodInfo(rand_pod(rng, "extra", target.name, p=0.6))
        if rng.random() < 0.5 or not target.pods:
            assert fast.add_pod(fs, incoming, extra, target) is None
            assert slow.add_pod(ss, incoming, extra, target) is None
        else:
            victim = rng.choice(target.pods)
            assert fast.remove_pod(fs, incoming, victim, target) is None
            assert slow.remove_pod(ss, incoming, victim, target) is None
        assert pre_filter_summary(fs) == pre_filter_summary(ss)
        assert [fast.filter(fs, incoming, ni) for ni in snap.list()] == [
            slow.filter(ss, incoming, ni) for ni in snap.list()
        ]
        checked += 1
    assert checked > 50
