"""PodTopologySpread default constraints: System defaulting from Services and owners, List defaulting."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.plugins.pod_topology_spread._fixtures import (
    DNS,
    FOO,
    HOST,
    HOST4,
    JSON,
    OK,
    SA,
    UNSCHED,
    ZONE,
    ZONE_NODES,
    cluster,
    n_pods,
    node,
    owner_obj,
    plugin,
    service,
)
from pyscheduler.testing import filter_all, score_all
from pyscheduler.testing.builders import make_pod

# ------------------------------------------------------------------------------------------- defaults


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
