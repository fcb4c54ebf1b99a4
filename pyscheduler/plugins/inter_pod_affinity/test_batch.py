"""InterPodAffinity batch hooks and table-backed PreFilter/PreScore checked against the node-by-node path
on random clusters, across cache changes, stale rows and namespace label changes."""

from __future__ import annotations

import random
from typing import Any

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.status import Code, code_of
from pyscheduler.framework.types import Node, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity import (
    NAME,
    InterPodAffinity,
    InterPodAffinityArgs,
    PreFilterState,
    PreScoreState,
)
from pyscheduler.plugins.inter_pod_affinity._fixtures import (
    HOST,
    JSON,
    OK,
    PREF,
    REQ,
    UNSCHED,
    mk_node,
    namespace,
    pod,
    preferred,
    required,
    sel_in,
    term,
)
from pyscheduler.testing import make_handle, plain_snapshot, score_list

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
