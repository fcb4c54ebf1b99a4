"""InterPodAffinity PreFilter/Filter (kube's cases, namespaces and namespaceSelectors) and the preemption
hooks (AddPod/RemovePod)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.status import Code, code_of
from pyscheduler.framework.types import Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    InterPodAffinity,
)
from pyscheduler.plugins.inter_pod_affinity._fixtures import (
    HOST,
    JSON,
    NAMESPACES,
    OK,
    REGION_NODES,
    S1,
    S2,
    UNRES,
    UNSCHED,
    cluster,
    codes,
    mk_node,
    plugin,
    pod,
    required,
    sel_in,
    term,
)
from pyscheduler.testing import filter_all
from pyscheduler.testing.builders import make_node_info

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
