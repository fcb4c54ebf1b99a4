"""PodTopologySpread PreScore/Score/NormalizeScore (kube's numbers) and Go's rounding."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.types import Node, Pod, Taint
from pyscheduler.plugins.pod_topology_spread import (
    PodTopologySpread,
    go_round,
    go_round_array,
)
from pyscheduler.plugins.pod_topology_spread._fixtures import (
    BAR,
    DNS,
    FOO,
    HOST,
    HOST4,
    SA,
    ZONE,
    ZONE_NODES,
    bare_node,
    cluster,
    n_pods,
    node,
    plugin,
    pod_on,
)
from pyscheduler.testing import score_all
from pyscheduler.testing.builders import make_node_info, make_pod

# ------------------------------------------------------------------------------------------- Score

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
