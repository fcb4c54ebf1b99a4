"""Snapshot.from_nodes, the SnapshotLister view, and NodeTree's zone interleaving."""

from __future__ import annotations

from pyscheduler.backend.snapshot import NodeTree, Snapshot, zone_key
from pyscheduler.framework.interfaces import SnapshotLister
from pyscheduler.framework.types import CPU, Node
from pyscheduler.testing.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"
REGION = "topology.kubernetes.io/region"


def node(name: str, zone: str = "", images: dict[str, int] | None = None) -> Node:
    b = make_node(name).capacity(cpu="4", memory="8Gi", pods=110)
    if zone:
        b.label(ZONE, zone)
    for image, size in (images or {}).items():
        b.image(image, size)
    return b.obj()


# ========================================================================================== zone keys


def test_zone_key() -> None:
    assert zone_key(node("n")) == ""
    assert zone_key(node("n", "a")) == ":\x00:a"
    assert zone_key(make_node("n").label(REGION, "r").obj()) == "r:\x00:"
    both = make_node("n").label(REGION, "r").label(ZONE, "z").obj()
    assert zone_key(both) == "r:\x00:z"
    beta = make_node("n").label("failure-domain.beta.kubernetes.io/zone", "old").obj()
    assert zone_key(beta) == ":\x00:old"
    ga_wins = make_node("n").label("failure-domain.beta.kubernetes.io/zone", "old").label(ZONE, "new").obj()
    assert zone_key(ga_wins) == ":\x00:new"


# ========================================================================================== NodeTree


def test_node_tree_interleaves_zones_round_robin() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "a"), ("a2", "a"), ("b1", "b"), ("a3", "a"), ("c1", "c"), ("b2", "b")]:
        tree.add(node(name, zone))
    assert tree.list() == ["a1", "b1", "c1", "a2", "b2", "a3"]
    assert tree.num_nodes == 6
    assert "a2" in tree and "zz" not in tree


def test_node_tree_single_zone_keeps_insertion_order() -> None:
    tree = NodeTree()
    for name in ["n3", "n1", "n2"]:
        tree.add(node(name))
    assert tree.list() == ["n3", "n1", "n2"]


def test_node_tree_add_is_idempotent_and_moves_on_zone_change() -> None:
    tree = NodeTree()
    tree.add(node("a1", "a"))
    tree.add(node("b1", "b"))
    gen = tree.generation
    tree.add(node("a1", "a"))
    assert tree.generation == gen  # no change
    tree.add(node("a1", "b"))  # moved zone: now after b1 in zone b, zone a is gone
    assert tree.list() == ["b1", "a1"]
    assert tree.generation > gen


def test_node_tree_remove_drops_empty_zones() -> None:
    tree = NodeTree()
    for name, zone in [("a1", "a"), ("b1", "b"), ("b2", "b")]:
        tree.add(node(name, zone))
    assert tree.remove("a1")
    assert not tree.remove("a1")
    assert tree.list() == ["b1", "b2"]
    tree.add(node("a2", "a"))  # zone a comes back, now after b
    assert tree.list() == ["b1", "a2", "b2"]
    assert NodeTree().list() == []


# ========================================================================================== from_nodes


def test_from_nodes_assigns_pods_and_lists_in_tree_order() -> None:
    nodes = [node("a1", "a"), node("a2", "a"), node("b1", "b")]
    pods = [
        make_pod("p1").req(cpu="1").node("a1").obj(),
        make_pod("p2").req(cpu="500m").node("a1").obj(),
        make_pod("p3").node("b1").obj(),
        make_pod("pending").req(cpu="3").obj(),  # unassigned: ignored
        make_pod("elsewhere").node("gone").obj(),  # unknown node: ignored
    ]
    snap = Snapshot.from_nodes(nodes, pods)
    assert [ni.name for ni in snap.list()] == ["a1", "b1", "a2"]
    assert snap.node_names() == ["a1", "b1", "a2"]
    assert len(snap) == snap.num_nodes() == 3
    a1 = snap.get("a1")
    assert a1 is not None
    assert a1.requested.get(CPU) == 1500
    assert [p.pod.name for p in a1.pods] == ["p1", "p2"]
    b1 = snap.get("b1")
    assert b1 is not None and len(b1.pods) == 1
    assert snap.get("gone") is None
    assert snap.generation > 0
    assert "nodes=3" in repr(snap)


def test_affinity_lists() -> None:
    nodes = [node("n1"), node("n2"), node("n3")]
    pods = [
        make_pod("aff").pod_affinity("zone", {"app": "x"}).node("n1").obj(),
        make_pod("anti").pod_affinity("zone", {"app": "x"}, anti=True).node("n2").obj(),
        make_pod("pref-anti").pod_affinity("zone", {"app": "x"}, anti=True, weight=5).node("n3").obj(),
    ]
    snap = Snapshot.from_nodes(nodes, pods)
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n1", "n2", "n3"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == ["n2"]


def test_image_counts_and_states() -> None:
    nodes = [
        node("n1", images={"img-a": 100, "img-b": 200}),
        node("n2", images={"img-a": 100}),
        node("n3"),
    ]
    snap = Snapshot.from_nodes(nodes)
    assert snap.num_nodes_with_image("img-a") == 2
    assert snap.num_nodes_with_image("img-b") == 1
    assert snap.num_nodes_with_image("missing") == 0
    n1 = snap.get("n1")
    assert n1 is not None
    assert n1.image_states["img-a"].num_nodes == 2 and n1.image_states["img-a"].size == 100
    assert n1.image_states["img-b"].num_nodes == 1
    n3 = snap.get("n3")
    assert n3 is not None and n3.image_states == {}


def test_empty_snapshot() -> None:
    snap = Snapshot()
    assert list(snap.list()) == []
    assert snap.get("x") is None
    assert snap.num_nodes_with_image("x") == 0
    assert list(snap.have_pods_with_affinity_list()) == []
    assert list(snap.have_pods_with_required_anti_affinity_list()) == []
    assert Snapshot.from_nodes([]).list() == []


def test_snapshot_is_a_snapshot_lister() -> None:
    lister: SnapshotLister = Snapshot.from_nodes([node("n1")])  # checked by mypy
    assert [ni.name for ni in lister.list()] == ["n1"]
