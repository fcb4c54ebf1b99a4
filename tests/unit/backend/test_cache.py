"""Cache: assumed pods, node lifecycle, and incremental snapshots."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from pyscheduler.backend import cache as cache_module
from pyscheduler.backend.cache import Cache, CacheError
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.resource import CPU, MEMORY
from pyscheduler.framework.types import Node, NodeInfo, Pod
from pyscheduler.testing.builders import make_node, make_pod

ZONE = "topology.kubernetes.io/zone"


def node(
    name: str, zone: str = "", cpu: str = "4", images: dict[str, int] | None = None, **labels: str
) -> Node:
    b = make_node(name).capacity(cpu=cpu, memory="8Gi", pods=110)
    if zone:
        b.label(ZONE, zone)
    for k, v in labels.items():
        b.label(k, v)
    for image, size in (images or {}).items():
        b.image(image, size)
    return b.obj()


def pod(name: str, node_name: str = "", cpu: str = "1", affinity: str = "") -> Pod:
    b = make_pod(name).req(cpu=cpu, memory="1Gi")
    if node_name:
        b.node(node_name)
    if affinity == "affinity":
        b.pod_affinity("zone", {"app": "x"})
    elif affinity == "anti":
        b.pod_affinity("zone", {"app": "x"}, anti=True)
    return b.obj()


def on(p: Pod, node_name: str) -> Pod:
    return dataclasses.replace(p, node_name=node_name)


def snap_of(cache: Cache, snap: Snapshot | None = None) -> Snapshot:
    snap = snap or Snapshot()
    cache.update_snapshot(snap)
    return snap


def requested_cpu(snap: Snapshot, name: str) -> int:
    ni = snap.get(name)
    assert ni is not None
    return ni.requested.get(CPU)


# ========================================================================================== overcommit


def test_assumed_pod_counts_in_next_snapshot_before_bind_and_forget_releases_it() -> None:
    cache = Cache()
    cache.add_node(node("n1", cpu="2"))
    snap = snap_of(cache)
    assert requested_cpu(snap, "n1") == 0

    pending = pod("web", cpu="1500m")
    assumed = on(pending, "n1")
    cache.assume_pod(assumed)  # scheduling cycle done; bind not even started
    cache.update_snapshot(snap)  # next cycle
    n1 = snap.get("n1")
    assert n1 is not None
    assert n1.requested.get(CPU) == 1500
    assert n1.requested.get(MEMORY) == 1024**3
    assert [p.pod.name for p in n1.pods] == ["web"]
    assert cache.is_assumed(pending.uid)
    # a second 1-cpu pod would not fit: 1500m + 1000m > 2000m allocatable
    assert n1.allocatable.get(CPU) - n1.requested.get(CPU) < 1000

    assert cache.forget_pod(assumed)  # bind failed
    cache.update_snapshot(snap)
    assert requested_cpu(snap, "n1") == 0
    n1 = snap.get("n1")
    assert n1 is not None and n1.pods == []
    assert not cache.is_assumed(pending.uid)
    assert cache.get_pod(pending.uid) is None


def test_confirmed_pod_survives_forget() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    p = pod("a", "n1")
    cache.assume_pod(p)
    cache.finish_binding(p)
    assert cache.dump().binding_finished == {p.uid}
    cache.add_pod(p)  # the watch confirms
    assert not cache.is_assumed(p.uid)
    assert not cache.forget_pod(p)  # bound, whatever the bind call said
    assert requested_cpu(snap_of(cache), "n1") == 1000


def test_watch_shows_pod_on_other_node_than_assumed() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    p = pod("a", cpu="2")
    cache.assume_pod(on(p, "n1"))
    cache.add_pod(on(p, "n2"))
    snap = snap_of(cache)
    assert requested_cpu(snap, "n1") == 0
    assert requested_cpu(snap, "n2") == 2000
    got = cache.get_pod(p.uid)
    assert got is not None and got.node_name == "n2"
    assert not cache.is_assumed(p.uid)


def test_assume_errors() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    with pytest.raises(CacheError):
        cache.assume_pod(pod("a"))  # no node_name
    cache.assume_pod(pod("a", "n1"))
    with pytest.raises(CacheError):
        cache.assume_pod(pod("a", "n1"))
    cache.add_pod(pod("b", "n1"))
    with pytest.raises(CacheError):
        cache.assume_pod(pod("b", "n1"))


def test_forget_unknown_and_on_wrong_node() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    assert not cache.forget_pod(pod("x", "n1"))
    cache.assume_pod(pod("a", "n1"))
    assert cache.forget_pod(pod("a", "n2"))  # forgotten from where it was assumed
    assert cache.pod_count() == 0


def test_finish_binding_of_unknown_pod_is_harmless() -> None:
    cache = Cache()
    cache.finish_binding(pod("a", "n1"))
    assert cache.dump().binding_finished == frozenset()


# ========================================================================================== pods


def test_add_update_remove_pod() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    snap = snap_of(cache)
    cache.add_pod(pod("a", "n1", cpu="1"))
    cache.update_pod(pod("a", "n1", cpu="1"), pod("a", "n1", cpu="3"))
    cache.update_snapshot(snap)
    assert requested_cpu(snap, "n1") == 3000
    assert cache.pod_count() == 1
    assert cache.remove_pod(pod("a", "n1"))
    assert not cache.remove_pod(pod("a", "n1"))
    cache.update_snapshot(snap)
    assert requested_cpu(snap, "n1") == 0


def test_add_pod_twice_updates() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1", cpu="1"))
    cache.add_pod(pod("a", "n1", cpu="2"))
    assert cache.pod_count() == 1
    assert requested_cpu(snap_of(cache), "n1") == 2000


def test_update_of_unknown_or_assumed_pod_adds_or_confirms() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.update_pod(None, pod("a", "n1"))
    assert cache.get_pod("uid-default-a") is not None
    cache.assume_pod(pod("b", "n1"))
    cache.update_pod(None, pod("b", "n1"))
    assert not cache.is_assumed("uid-default-b")
    assert cache.pod_count() == 2


def test_update_moving_node_and_losing_node_name() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.add_pod(pod("a", "n1"))
    cache.update_pod(pod("a", "n1"), pod("a", "n2"))
    snap = snap_of(cache)
    assert requested_cpu(snap, "n1") == 0 and requested_cpu(snap, "n2") == 1000
    cache.update_pod(pod("a", "n2"), pod("a"))  # no node: treated as removal
    assert cache.pod_count() == 0


def test_pod_level_and_resized_pods_are_counted_at_what_kube_counts() -> None:
    cache = Cache()
    cache.add_node(node("n1", cpu="8"))
    # pod-level cpu 3 although the container asks 100m
    cache.add_pod(make_pod("a").req(cpu="100m").pod_requests(cpu="3").node("n1").obj())
    assert requested_cpu(snap_of(cache), "n1") == 3000
    # its kubelet resizing it: spec cpu 1, actuated 2, allocated 3 -> the largest, 3
    old = make_pod("b").req(cpu="1").node("n1").obj()
    cache.add_pod(old)
    assert requested_cpu(snap_of(cache), "n1") == 4000
    resizing = make_pod("b").req(cpu="1").resized(cpu="2", allocated={"cpu": "3"}).node("n1").obj()
    cache.update_pod(old, resizing)
    assert requested_cpu(snap_of(cache), "n1") == 6000
    # the resize marked Infeasible: the desired (spec) value no longer counts, the allocated one does
    infeasible = make_pod("b").req(cpu="5").resized(cpu="2", allocated={"cpu": "3"}).node("n1")
    cache.update_pod(resizing, infeasible.resize_pending("Infeasible").obj())
    assert requested_cpu(snap_of(cache), "n1") == 6000


def test_add_pod_without_node_is_ignored() -> None:
    cache = Cache()
    cache.add_pod(pod("a"))
    assert cache.pod_count() == 0 and cache.node_count() == 0


def test_remove_pod_uses_cached_node() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1"))
    assert cache.remove_pod(pod("a", "n9"))
    assert cache.pod_count() == 0


# ========================================================================================== nodes


def test_removed_node_with_pods_is_a_ghost_until_pods_go() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_node(node("n2"))
    cache.add_pod(pod("a", "n1"))
    snap = snap_of(cache)
    assert cache.remove_node(node("n1"))
    assert not cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert snap.node_names() == ["n2"]
    assert snap.get("n1") is None
    ghost = cache.node_info("n1")
    assert ghost is not None and ghost.node is None and len(ghost.pods) == 1
    assert cache.node_count() == 2 and cache.pod_count() == 1
    cache.remove_pod(pod("a", "n1"))
    assert cache.node_info("n1") is None
    assert cache.node_count() == 1
    cache.update_snapshot(snap)
    assert snap.node_names() == ["n2"]


def test_ghost_node_comes_back_with_its_pods() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1"))
    snap = snap_of(cache)
    cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert len(snap) == 0
    cache.add_node(node("n1"))
    cache.update_snapshot(snap)
    assert snap.node_names() == ["n1"] and requested_cpu(snap, "n1") == 1000


def test_pods_before_their_node() -> None:
    cache = Cache()
    cache.add_pod(pod("a", "late"))
    snap = snap_of(cache)
    assert len(snap) == 0 and cache.node_count() == 1
    cache.update_node(None, node("late"))
    cache.update_snapshot(snap)
    assert snap.node_names() == ["late"] and requested_cpu(snap, "late") == 1000


def test_remove_node_without_pods_forgets_it() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    assert cache.remove_node("n1")
    assert cache.node_count() == 0
    assert not cache.remove_node("n1")


def test_update_node_changes_allocatable() -> None:
    cache = Cache()
    cache.add_node(node("n1", cpu="2"))
    snap = snap_of(cache)
    before = snap.get("n1")
    cache.update_node(node("n1", cpu="2"), node("n1", cpu="8"))
    cache.update_snapshot(snap)
    after = snap.get("n1")
    assert after is before  # updated in place
    assert after is not None and after.allocatable.get(CPU) == 8000


# ========================================================================================== snapshot


def test_snapshot_orders_by_zone_round_robin() -> None:
    cache = Cache()
    for name, zone in [("a1", "a"), ("a2", "a"), ("a3", "a"), ("b1", "b"), ("c1", "c"), ("b2", "b")]:
        cache.add_node(node(name, zone))
    snap = snap_of(cache)
    assert snap.node_names() == ["a1", "b1", "c1", "a2", "b2", "a3"]
    cache.update_node(None, node("a1", "c"))  # zone change: a1 becomes zone c's second node
    cache.update_snapshot(snap)
    assert snap.node_names() == ["a2", "b1", "c1", "a3", "b2", "a1"]
    cache.remove_node("b1")
    cache.update_snapshot(snap)
    assert snap.node_names() == ["a2", "b2", "c1", "a3", "a1"]
    assert cache.dump().zones_order == snap.node_names()


def test_incremental_update_copies_only_changed_nodes(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = Cache()
    for i in range(50):
        cache.add_node(node(f"n{i}"))
    snap = snap_of(cache)
    objects = {ni.name: ni for ni in snap.list()}
    cloned: list[str] = []
    original_clone, original_copy = NodeInfo.clone, NodeInfo.copy_from

    def counting_clone(self: NodeInfo) -> NodeInfo:
        cloned.append(self.name)
        return original_clone(self)

    def counting_copy(self: NodeInfo, src: NodeInfo) -> None:
        cloned.append(src.name)
        original_copy(self, src)

    monkeypatch.setattr(NodeInfo, "clone", counting_clone)
    monkeypatch.setattr(NodeInfo, "copy_from", counting_copy)
    cache.update_snapshot(snap)
    assert cloned == []  # nothing changed
    cache.add_pod(pod("a", "n7"))
    cache.update_snapshot(snap)
    assert cloned == ["n7"]
    assert all(snap.get(name) is obj for name, obj in objects.items())  # same objects, in place
    assert requested_cpu(snap, "n7") == 1000


def test_snapshot_from_elsewhere_is_rebuilt() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    foreign = Snapshot.from_nodes([node("other")])
    cache.update_snapshot(foreign)
    assert foreign.node_names() == ["n1"]
    other_cache = Cache()
    other_cache.add_node(node("z"))
    other_cache.update_snapshot(foreign)
    assert foreign.node_names() == ["z"]


def test_affinity_lists_follow_pods() -> None:
    cache = Cache()
    for name in ["n1", "n2", "n3"]:
        cache.add_node(node(name))
    snap = snap_of(cache)
    assert list(snap.have_pods_with_affinity_list()) == []
    cache.add_pod(pod("aff", "n2", affinity="affinity"))
    cache.add_pod(pod("anti", "n3", affinity="anti"))
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n2", "n3"]
    assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == ["n3"]
    cache.remove_pod(pod("anti", "n3"))
    cache.update_snapshot(snap)
    assert [ni.name for ni in snap.have_pods_with_affinity_list()] == ["n2"]
    assert list(snap.have_pods_with_required_anti_affinity_list()) == []


def test_image_counts_stay_exact_on_every_node() -> None:
    cache = Cache()
    cache.add_node(node("n1", images={"img": 10, "only1": 5}))
    snap = snap_of(cache)
    n1 = snap.get("n1")
    assert n1 is not None and n1.image_states["img"].num_nodes == 1
    cache.add_node(node("n2", images={"img": 10}))
    cache.add_node(node("n3", images={"img": 10}))
    cache.update_snapshot(snap)
    assert snap.num_nodes_with_image("img") == 3
    for name in ["n1", "n2", "n3"]:
        ni = snap.get(name)
        assert ni is not None and ni.image_states["img"].num_nodes == 3  # n1 was not re-cloned
    cache.remove_node("n3")
    cache.update_node(None, node("n1", images={"only1": 5}))  # n1 dropped img
    cache.update_snapshot(snap)
    assert snap.num_nodes_with_image("img") == 1
    assert snap.num_nodes_with_image("only1") == 1
    n1, n2 = snap.get("n1"), snap.get("n2")
    assert n1 is not None and n2 is not None
    assert "img" not in n1.image_states
    assert n2.image_states["img"].num_nodes == 1
    cache.remove_node("n1")
    cache.update_snapshot(snap)
    assert snap.num_nodes_with_image("only1") == 0


def test_image_summaries_are_shared_and_updated_in_place() -> None:
    cache = Cache()
    for i in range(4):
        cache.add_node(node(f"n{i}", images={"img": 10}))
    snap = snap_of(cache)
    states = [ni.image_states["img"] for ni in snap.list()]
    assert all(s is states[0] for s in states) and states[0].num_nodes == 4
    cache.remove_node("n3")
    cache.update_snapshot(snap)
    assert states[0].num_nodes == 3  # same object, every node sees the new count
    n0 = snap.get("n0")
    assert n0 is not None and n0.image_states["img"] is states[0]


def test_node_update_with_same_images_changes_no_counts() -> None:
    cache = Cache()
    cache.add_node(node("n1", images={"a": 1, "b": 2}))
    cache.add_node(node("n2", images={"a": 1}))
    snap = snap_of(cache)
    log_before = dict(cache._image_log)
    cache.update_node(None, node("n1", cpu="8", images={"b": 2, "a": 1}))
    assert dict(cache._image_log) == log_before
    cache.update_snapshot(snap)
    assert snap.num_nodes_with_image("a") == 2
    n1 = snap.get("n1")
    assert n1 is not None and n1.image_states["a"].num_nodes == 2


def test_snapshot_is_isolated_from_cache_until_refreshed() -> None:
    cache = Cache()
    cache.add_node(node("n1", images={"img": 1}))
    old, new = snap_of(cache), snap_of(cache)
    cache.add_pod(pod("a", "n1"))
    cache.add_node(node("n2", images={"img": 1}))
    assert requested_cpu(old, "n1") == 0 and old.num_nodes_with_image("img") == 1
    cache.update_snapshot(new)
    assert requested_cpu(new, "n1") == 1000 and new.num_nodes_with_image("img") == 2
    old_n1 = old.get("n1")
    assert old_n1 is not None and old_n1.image_states["img"].num_nodes == 1  # summaries are per snapshot
    assert old.node_names() == ["n1"]


def test_image_log_pruning_forces_recount_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cache_module, "_IMAGE_LOG_SLACK", 2)
    cache = Cache()
    cache.add_node(node("keep", images={"common": 1}))
    first, second = Snapshot(), Snapshot()
    cache.update_snapshot(first)
    cache.update_snapshot(second)
    for i in range(10):  # churn images no node keeps
        cache.add_node(node(f"tmp{i}", images={f"gone{i}": 1, "common": 1}))
        cache.remove_node(f"tmp{i}")
    cache.add_node(node("other", images={"common": 1}))
    cache.update_snapshot(first)  # prunes the log
    assert len(cache._image_log) <= 2 * len(cache._images) + 2
    cache.update_snapshot(second)  # missed the pruned entries: recounts
    for snap in (first, second):
        assert snap.num_nodes_with_image("common") == 2
        assert all(snap.num_nodes_with_image(f"gone{i}") == 0 for i in range(10))
        keep = snap.get("keep")
        assert keep is not None and keep.image_states["common"].num_nodes == 2


def test_dump_and_counts() -> None:
    cache = Cache()
    cache.add_node(node("n1"))
    cache.add_pod(pod("a", "n1"))
    cache.assume_pod(pod("b", "n1"))
    d = cache.dump()
    assert set(d.nodes) == {"n1"} and len(d.nodes["n1"].pods) == 2
    assert d.assumed_pods == {"uid-default-b"}
    assert cache.assumed_pod_count() == 1 and cache.pod_count() == 2 and cache.node_count() == 1
    assert "assumed=1" in repr(cache)
    d.nodes["n1"].pods.clear()  # a copy
    assert cache.pod_count() == 2


# ========================================================================================== stateful


NODES = ["n0", "n1", "n2", "n3"]
PODS = ["p0", "p1", "p2", "p3", "p4"]
IMAGES = ["i0", "i1", "i2"]


def canonical(snap: Snapshot) -> dict[str, Any]:
    def info(ni: NodeInfo) -> tuple[Any, ...]:
        return (
            ni.name,
            ni.node,
            sorted(p.pod.uid for p in ni.pods),
            ni.requested.get(CPU),
            ni.requested.allowed_pod_number,
            ni.non_zero_requested.milli_cpu,
            sorted((k, v.num_nodes, v.size) for k, v in ni.image_states.items()),
        )

    return {
        "list": [info(ni) for ni in snap.list()],
        "affinity": [ni.name for ni in snap.have_pods_with_affinity_list()],
        "anti": [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()],
        "images": {i: snap.num_nodes_with_image(i) for i in IMAGES},
        "map": sorted(ni.name for ni in snap.list() if snap.get(ni.name) is ni),
    }


class CacheMachine(RuleBasedStateMachine):
    """After any sequence of operations, the incrementally refreshed snapshot equals one rebuilt from
    scratch, and both match the model of what should be running where."""

    def __init__(self) -> None:
        super().__init__()
        self.cache = Cache()
        self.snap = Snapshot()
        self.nodes: dict[str, Node] = {}
        self.pods: dict[str, Pod] = {}  # uid -> pod as the cache should hold it

    @rule(
        name=st.sampled_from(NODES),
        zone=st.sampled_from(["", "a", "b"]),
        images=st.sets(st.sampled_from(IMAGES)),
        cpu=st.sampled_from(["2", "4"]),
    )
    def set_node(self, name: str, zone: str, images: set[str], cpu: str) -> None:
        n = node(name, zone, cpu=cpu, images={i: 100 for i in sorted(images)})
        self.cache.update_node(self.nodes.get(name), n)
        self.nodes[name] = n

    @rule(name=st.sampled_from(NODES))
    def remove_node(self, name: str) -> None:
        assert self.cache.remove_node(name) == (name in self.nodes)
        self.nodes.pop(name, None)

    @rule(
        name=st.sampled_from(PODS),
        node_name=st.sampled_from(NODES),
        cpu=st.sampled_from(["1", "2"]),
        affinity=st.sampled_from(["", "affinity", "anti"]),
        assume=st.booleans(),
    )
    def place_pod(self, name: str, node_name: str, cpu: str, affinity: str, assume: bool) -> None:
        p = pod(name, node_name, cpu=cpu, affinity=affinity)
        if assume:
            if p.uid in self.pods:
                with pytest.raises(CacheError):
                    self.cache.assume_pod(p)
                return
            self.cache.assume_pod(p)
        else:
            self.cache.add_pod(p)
        self.pods[p.uid] = p

    @rule(name=st.sampled_from(PODS))
    def forget_or_remove(self, name: str) -> None:
        uid = f"uid-default-{name}"
        p = self.pods.get(uid)
        if p is not None and self.cache.is_assumed(uid):
            assert self.cache.forget_pod(p)
        else:
            assert self.cache.remove_pod(pod(name)) == (p is not None)
        self.pods.pop(uid, None)

    @rule()
    def refresh(self) -> None:
        self.cache.update_snapshot(self.snap)

    @invariant()
    def incremental_equals_fresh(self) -> None:
        self.cache.update_snapshot(self.snap)
        fresh = Snapshot()
        self.cache.update_snapshot(fresh)
        assert canonical(self.snap) == canonical(fresh)
        # and the model: the nodes that exist, with the pods placed on them
        listed = {ni.name: ni for ni in self.snap.list()}
        assert set(listed) == set(self.nodes)
        for name, ni in listed.items():
            expect = sorted(u for u, p in self.pods.items() if p.node_name == name)
            assert sorted(p.pod.uid for p in ni.pods) == expect
            assert ni.requested.get(CPU) == sum(self.pods[u].requests.get(CPU) for u in expect)
            for image, state in ni.image_states.items():
                assert state.num_nodes == sum(
                    1 for n in self.nodes.values() if any(image in img.names for img in n.images)
                )
        assert self.cache.pod_count() == len(self.pods)
        from_nodes = Snapshot.from_nodes(list(self.nodes.values()), list(self.pods.values()))
        assert canonical(from_nodes)["images"] == canonical(self.snap)["images"]
        assert sorted(from_nodes.node_names()) == sorted(self.snap.node_names())


CacheMachine.TestCase.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
TestCacheStateMachine = CacheMachine.TestCase


@pytest.mark.parametrize("seed", range(20))
def test_snapshot_affinity_lists_follow_pods_coming_and_going(seed: int) -> None:
    """The snapshot updates its lists of nodes with (anti-)affinity pods in place, node by node; they
    must always equal a fresh scan, in list order, with each node's table row."""
    import random

    rng = random.Random(seed)
    cache = Cache()
    for i in range(30):
        cache.add_node(make_node(f"n{i}").label("topology.kubernetes.io/zone", f"z{i % 3}").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    placed: dict[str, Pod] = {}
    for step in range(200):
        if placed and rng.random() < 0.4:
            pod = placed.pop(rng.choice(sorted(placed)))
            cache.remove_pod(pod)
        else:
            b = make_pod(f"p{step}").uid(f"u{step}").node(f"n{rng.randrange(30)}")
            kind = rng.randrange(3)
            if kind == 1:
                b.pod_affinity("kubernetes.io/hostname", {"app": "x"}, weight=5)
            elif kind == 2:
                b.pod_affinity("kubernetes.io/hostname", {"app": "x"}, anti=True)
            pod = b.obj()
            cache.add_pod(pod)
            placed[pod.name] = pod
        cache.update_snapshot(snap)
        nodes = snap.list()
        want_aff = [ni.name for ni in nodes if ni.pods_with_affinity]
        want_anti = [ni.name for ni in nodes if ni.pods_with_required_anti_affinity]
        assert [ni.name for ni in snap.have_pods_with_affinity_list()] == want_aff
        assert [ni.name for ni in snap.have_pods_with_required_anti_affinity_list()] == want_anti
        table = snap.node_table()
        for lst in (snap.have_pods_with_affinity_list(), snap.have_pods_with_required_anti_affinity_list()):
            rows = table.rows(lst)  # looked up from the nodes themselves and checked
            assert rows is not None and [nodes[r].name for r in rows] == [ni.name for ni in lst]
            assert list(lst.rows()) == [nodes.index(ni) for ni in lst]  # type: ignore[attr-defined]


# ---------------------------------------------------------------------------- pod group states


def test_pod_group_states_follow_members_through_assume_forget_bind_and_delete() -> None:
    """kube's podGroupState: pending members are unscheduled; assuming one makes it scheduled, forgetting
    it unscheduled again; the watch's confirmation makes it assigned; the group goes with its last pod."""
    from pyscheduler.framework.podgroup import PodGroupStateNotFound
    from pyscheduler.testing.builders import make_node, make_pod

    cache = Cache(pod_groups=True)
    cache.add_node(make_node("n1").obj())
    a, b = (make_pod(n).group("pg").obj() for n in ("a", "b"))
    lone = make_pod("lone").obj()
    for p in (a, b, lone):
        cache.add_pod_group_member(p)
    g = cache.pod_group_state("default", "pg")
    assert (g.all_pods_count(), g.scheduled_pods_count(), {p.name for p in g.unscheduled_pods()}) == (
        2,
        0,
        {"a", "b"},
    )
    cache.assume_pod(a.with_node_name("n1"))
    g = cache.pod_group_state("default", "pg")
    assert (g.scheduled_pods_count(), g.assumed_uids(), len(g.unscheduled_pods())) == (1, {a.uid}, 1)
    cache.forget_pod(a.with_node_name("n1"))
    assert cache.pod_group_state("default", "pg").scheduled_pods_count() == 0
    cache.assume_pod(a.with_node_name("n1"))
    cache.add_pod(a.with_node_name("n1"))  # the watch confirms the binding
    g = cache.pod_group_state("default", "pg")
    assert (g.scheduled_pods_count(), g.assumed_uids(), g.assigned) == (1, set(), {a.uid})
    cache.remove_pod(a.with_node_name("n1"))
    cache.remove_pod_group_member(b)
    with pytest.raises(PodGroupStateNotFound, match="pod group state not found for pod group default/pg"):
        cache.pod_group_state("default", "pg")
    # without the gate nothing is kept
    off = Cache()
    off.add_pod_group_member(a)
    with pytest.raises(PodGroupStateNotFound):
        off.pod_group_states.get("default", "pg")


def exact(ni: NodeInfo | None) -> tuple[Any, ...]:
    """Everything a plugin reads from a NodeInfo, in order."""
    assert ni is not None
    return (
        [p.pod.uid for p in ni.pods],
        [p.pod.uid for p in ni.pods_with_affinity],
        [p.pod.uid for p in ni.pods_with_required_anti_affinity],
        (ni.requested.get(CPU), ni.requested.get(MEMORY), ni.requested.allowed_pod_number),
        (ni.non_zero_requested.milli_cpu, ni.non_zero_requested.memory),
        len(ni.used_ports),
        dict(ni.pvc_ref_counts),
        ni.generation,
    )


def busy_node_step(cache: Cache, rng: Any, placed: dict[str, Pod], step: int) -> None:
    """One random change: mostly pods landing on "busy", some removed, forgotten or confirmed."""
    roll = rng.random()
    if placed and roll < 0.35:
        p = placed.pop(rng.choice(sorted(placed)))
        if cache.is_assumed(p.uid) and rng.random() < 0.5:
            cache.forget_pod(p)
        else:
            cache.remove_pod(p)
    elif placed and roll < 0.45:  # a bind confirmation: the assumed version replaced
        p = placed[rng.choice(sorted(placed))]
        cache.add_pod(p)
    else:
        target = "busy" if rng.random() < 0.9 else "small"
        b = make_pod(f"p{step}").uid(f"u{step}").node(target).req(cpu="10m", memory="1Mi")
        kind = rng.randrange(5)
        if kind == 1:
            b.pod_affinity("kubernetes.io/hostname", {"app": "x"}, weight=5)
        elif kind == 2:
            b.pod_affinity("kubernetes.io/hostname", {"app": "x"}, anti=True)
        elif kind == 3:
            b.host_port(10000 + step).pvc(f"claim-{step % 7}")
        p = b.obj()
        cache.assume_pod(p) if rng.random() < 0.5 else cache.add_pod(p)
        placed[p.uid] = p


@pytest.mark.parametrize("seed", range(12))
def test_snapshots_of_busy_nodes_catch_up_to_exactly_the_cache(
    seed: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Snapshot copies of nodes with many pods replay the pod changes they missed instead of copying
    every pod; refreshed after one change or after hundreds (past the journal's restart), by two
    snapshots at different paces, or after someone changed a snapshot's copy in place, each copy must
    equal the cache's NodeInfo exactly: pod order, (anti-)affinity lists, totals, ports, claims. The
    journal never holds more than an eighth as many changes as the node has pods (removed pods are not
    kept alive by it), and none on a node below the replay size."""
    import random

    from pyscheduler.framework import node_info as node_info_module

    monkeypatch.setattr(node_info_module, "_REPLAY_MIN_PODS", 32)  # 256 in production: a smaller test
    rng = random.Random(seed)
    replays: list[bool] = []
    catch_up = NodeInfo.catch_up

    def counted(self: NodeInfo, src: NodeInfo) -> bool:
        replays.append(catch_up(self, src))
        return replays[-1]

    monkeypatch.setattr(NodeInfo, "catch_up", counted)
    cache = Cache()
    names = ["busy", "small"]
    for n in names:
        cache.add_node(make_node(n).capacity(cpu="1000", memory="1000Gi", pods=5000).obj())
    fast, slow = Snapshot(), Snapshot()
    placed: dict[str, Pod] = {}
    for step in range(900):
        busy_node_step(cache, rng, placed, step)
        for n in names:
            held = cache._nodes[n]
            assert held._journal is not None
            assert len(held._journal) <= (len(held.pods) // 8 if len(held.pods) >= 32 else 0)
        cache.update_snapshot(fast)
        if rng.random() < 0.02:  # a plugin breaking the contract: the next refresh must still be right
            ni = fast.get("busy")
            if ni is not None and ni.pods:
                ni.remove_pod(ni.pods[0].pod)
        if step % 97 == 0 or rng.random() < 0.05:
            cache.update_snapshot(slow)
            for n in names:
                assert exact(slow.get(n)) == exact(cache.node_info(n)), (step, n)
    cache.update_snapshot(fast)
    cache.update_snapshot(slow)
    for snap in (fast, slow):
        for n in names:
            assert exact(snap.get(n)) == exact(cache.node_info(n))
    assert replays.count(True) > 500 and replays.count(False) > 5  # both ways were taken
