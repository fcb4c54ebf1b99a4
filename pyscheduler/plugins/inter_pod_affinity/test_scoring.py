"""InterPodAffinity PreScore/Score/NormalizeScore (kube's numbers) and the per-pod term memo."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import Node, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity import (
    NAME,
    InterPodAffinity,
)
from pyscheduler.plugins.inter_pod_affinity._fixtures import (
    NAMESPACES,
    S1,
    S2,
    cluster,
    mk_node,
    plugin,
    pod,
    preferred,
    required,
    sel_in,
    term,
)
from pyscheduler.plugins.inter_pod_affinity.terms import ParsedAffinity, terms_of
from pyscheduler.testing import score_all
from pyscheduler.testing.builders import make_node_info

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
