"""PodTopologySpread batch hooks (filter_nodes/score_nodes over the NodeTable) checked against the
node-by-node path on random clusters, and the compiled selector matcher."""

from __future__ import annotations

import random
from typing import Any

import pytest

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.selectors import LabelSelector, compile_selector
from pyscheduler.framework.status import code_of
from pyscheduler.framework.types import Node, Pod, PodInfo, Taint
from pyscheduler.plugins.pod_topology_spread import (
    NAME,
    PLUGIN,
    PodTopologySpread,
    PreFilterState,
    PreScoreState,
)
from pyscheduler.plugins.pod_topology_spread._fixtures import (
    DNS,
    FOO,
    HOST,
    OK,
    SA,
    UNSCHED,
    node,
    pod_on,
    service,
)
from pyscheduler.testing import make_handle, plain_snapshot, score_list
from pyscheduler.testing.builders import make_pod

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


def test_hostname_spread_honoring_taints_places_like_node_by_node() -> None:
    """scheduler_perf's SchedulingWithNodeInclusionPolicy in small: one node in five tainted, pods spread
    on hostname (maxSkew 1) with both inclusion policies Honor, bound one after the other. The counts
    PreFilter keeps as arrays over the hostname codes give each pod the same feasible nodes and the same
    rejections as the node-by-node path, the tainted nodes never count as domains, and preemption's
    add_pod on a clone of the state moves the minimum without touching the original."""
    nodes = [node(f"n{i}", (Taint("foo", "", "NoSchedule"),) if i % 5 == 4 else ()) for i in range(20)]
    cache = Cache()
    for n in nodes:
        cache.add_node(n)
    snap = Snapshot()
    fast = PodTopologySpread(None, make_handle(snap))
    placed: list[str] = []
    for k in range(20):
        cache.update_snapshot(snap)
        slow = PodTopologySpread(None, make_handle(plain_snapshot(snap.list())))
        pod = (
            make_pod(f"p{k}")
            .labels(FOO)
            .spread(1, HOST, DNS, FOO, nodeTaintsPolicy="Honor", nodeAffinityPolicy="Honor")
            .obj()
        )
        fs, ss = CycleState(), CycleState()
        assert fast.pre_filter(fs, pod, snap.list()) == slow.pre_filter(ss, pod, list(snap.list()))
        assert pre_filter_summary(fs) == pre_filter_summary(ss)
        s = fs.get("PreFilter" + NAME)
        assert isinstance(s, PreFilterState)
        assert s.n_domains == [16]  # the untainted nodes only
        batch = NodeBatch(snap.list(), snap.node_table())
        assert batch.rows() is not None
        got = fast.filter_nodes(fs, pod, batch)
        assert got == [slow.filter(ss, pod, ni) for ni in snap.list()]
        assert got == [fast.filter(fs, pod, ni) for ni in snap.list()]
        feasible = [ni.name for ni, st in zip(snap.list(), got, strict=True) if st is None]
        # maxSkew 1 on hostname: of the untainted nodes only those holding the fewest pods fit; a tainted
        # node is no domain (0 pods counted there) and passes here (TaintToleration turns it away)
        level = k // 16
        tainted = {n.name for n in nodes if n.taints}
        assert feasible == [n.name for n in nodes if n.name in tainted or placed.count(n.name) == level]
        feasible = [name for name in feasible if name not in tainted]
        if k == 3:  # preemption's what-if: a clone moves, the original state stays
            clone = fs.clone()
            target = snap.get(feasible[0])
            assert target is not None
            fast.add_pod(clone, pod, PodInfo(pod_on("extra", feasible[0], FOO)), target)
            c = clone.get("PreFilter" + NAME)
            assert isinstance(c, PreFilterState)
            assert c.counts[0][feasible[0]] == 1 and c.min_match == s.min_match
            assert fast.filter_nodes(fs, pod, batch) == got
        placed.append(feasible[0])
        cache.add_pod(pod_on(f"p{k}", feasible[0], FOO))
