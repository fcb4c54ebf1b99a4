"""PodKindIndex (framework/pod_kinds.py): per-row counts of the pods a selector picks, kept current as the
cache's snapshot changes in place, equal to counting every node's pods."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.pod_kinds import PodKindIndex, selector_picks
from pyscheduler.framework.selectors import LabelSelector, compile_selector
from pyscheduler.framework.types import Node, Pod
from pyscheduler.testing.builders import make_node, make_pod

APPS = ("a", "b", "c")


def _node(i: int) -> Node:
    return make_node(f"n{i}").label("zone", f"z{i % 3}").obj()


def _pod(rng: random.Random, name: str, node: str) -> Pod:
    b = make_pod(name, rng.choice(("default", "other"))).node(node).label("app", rng.choice(APPS))
    if rng.random() < 0.4:
        b = b.label("tier", rng.choice(("web", "db")))
    if rng.random() < 0.15:
        b = b.terminating()
    return b.obj()


def _selectors() -> list[tuple[str, LabelSelector]]:
    raw: list[dict[str, Any]] = [
        {"matchLabels": {"app": "a"}},
        {"matchLabels": {"app": "b", "tier": "web"}},
        {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
        {"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["c"]}]},
    ]
    out = []
    for r in raw:
        sel = LabelSelector.parse(r, "sel")
        assert sel is not None
        out += [(ns, sel) for ns in ("default", "other")]
    return out


def test_counts_follow_pods_added_removed_and_nodes_replaced() -> None:
    rng = random.Random(7)
    checked = 0
    for _ in range(25):
        cache = Cache()
        nodes = [_node(i) for i in range(rng.randint(1, 9))]
        for n in nodes:
            cache.add_node(n)
        snap = Snapshot()
        index = PodKindIndex()
        live: list[Pod] = []
        for step in range(30):
            r = rng.random()
            if r < 0.55 or not live:
                for k in range(rng.randint(1, 4)):
                    p = _pod(rng, f"p{step}-{k}", rng.choice(nodes).name)
                    cache.add_pod(p)
                    live.append(p)
            elif r < 0.9:
                cache.remove_pod(live.pop(rng.randrange(len(live))))
            else:
                i = rng.randrange(len(nodes))
                new = make_node(nodes[i].name).label("zone", f"z{rng.randrange(3)}").obj()
                cache.update_node(nodes[i], new)
                nodes[i] = new
            cache.update_snapshot(snap)
            table = snap.node_table()
            assert index.refresh(table)
            for ns, sel in _selectors():
                match = compile_selector(sel)
                got = index.counts(("sel", ns, sel), selector_picks(ns, match)).tolist()
                want = [
                    sum(
                        1
                        for pi in ni.pods
                        if not pi.pod.deleting and pi.pod.namespace == ns and match(pi.pod.labels)
                    )
                    for ni in table.infos
                ]
                assert got == want
                checked += sum(want)
    assert checked > 1000


def test_refresh_refuses_a_table_behind_its_node_infos() -> None:
    """A NodeInfo changed after the table was written is not read: the callers go node by node."""
    cache = Cache()
    cache.add_node(_node(0))
    cache.add_pod(make_pod("p0").node("n0").label("app", "a").obj())
    snap = Snapshot()
    cache.update_snapshot(snap)
    table = snap.node_table()
    table.infos[0].add_pod(make_pod("p1").node("n0").label("app", "a").obj())
    assert not PodKindIndex().refresh(table)


def _kinds_state(index: PodKindIndex) -> dict[Any, dict[int, int]]:
    """Per live kind, its pods per row (a kind with no pod must be gone; dense rows in step)."""
    out: dict[Any, dict[int, int]] = {}
    for k in index._kinds:
        if k is None:
            continue
        assert k.n == sum(k.rows.values()) > 0 and all(k.rows.values())
        if k.dense is not None:
            assert {r: int(c) for r, c in enumerate(k.dense.tolist()) if c} == k.rows
        out[(k.pod.namespace, frozenset(k.pod.labels.items()), k.pod.deleting)] = dict(k.rows)
    assert len(out) == index._live == len(index._ids)
    return out


_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.integers(0, 2), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("assume"), st.integers(0, 5), st.integers(0, 2), st.integers(0, 1), st.booleans()),
    st.tuples(st.just("update"), st.integers(0, 99), st.integers(0, 2), st.booleans()),
    st.tuples(st.just("delete"), st.integers(0, 99)),
    st.tuples(st.just("relabel"), st.integers(0, 5), st.integers(0, 2)),
    st.tuples(st.just("add_node"), st.integers(0, 2)),
    st.tuples(st.just("remove_node"), st.integers(0, 5)),
    st.tuples(st.just("cycle"), st.integers(0, 2)),
)


@settings(max_examples=150, deadline=None)
@given(n_nodes=st.integers(1, 4), many=st.booleans(), ops=st.lists(_op, max_size=40))
def test_index_by_difference_equals_a_fresh_read(
    n_nodes: int, many: bool, ops: list[tuple[Any, ...]]
) -> None:
    """Kept current by difference (the pods new on a changed row added, those gone taken back), the index
    holds what one read from scratch holds, after any history of pod and node changes."""

    def pod(name: str, node: str, app: int, ns: int, terminating: bool) -> Pod:
        b = make_pod(name, ("default", "other")[ns]).node(node).label("app", APPS[app])
        return (b.terminating() if terminating else b).obj()

    cache = Cache()
    # ``many``: 70 nodes and 70 pods per add, so kinds get dense rows (a kind on 64 rows or more)
    nodes = [_node(i) for i in range(70 if many else n_nodes)]
    for n in nodes:
        cache.add_node(n)
    snap = Snapshot()
    index = PodKindIndex()
    live: list[Pod] = []
    made = 0

    def cycle() -> None:
        cache.update_snapshot(snap)
        table = snap.node_table()
        fresh = PodKindIndex()
        assert index.refresh(table) and fresh.refresh(table)
        assert _kinds_state(index) == _kinds_state(fresh)
        for ns, sel in _selectors():
            picks = selector_picks(ns, compile_selector(sel))
            assert (
                index.counts(("sel", ns, sel), picks).tolist()
                == fresh.counts(("sel", ns, sel), picks).tolist()
            )

    for op in ops:
        kind = op[0]
        if kind in ("add", "assume"):
            for _ in range(70 if many and kind == "add" else 1):
                made += 1
                p = pod(f"p{made}", nodes[(op[1] + made) % len(nodes)].name, op[2], op[3], op[4])
                (cache.add_pod if kind == "add" else cache.assume_pod)(p)
                live.append(p)
        elif kind == "update" and live:
            old = live[op[1] % len(live)]
            new = pod(old.name, old.node_name, op[2], 0 if old.namespace == "default" else 1, op[3])
            cache.update_pod(old, new)
            live[live.index(old)] = new
        elif kind == "delete" and live:
            cache.remove_pod(live.pop(op[1] % len(live)))
        elif kind == "relabel":
            i = op[1] % len(nodes)
            new_node = make_node(nodes[i].name).label("zone", f"z{op[2]}").obj()
            cache.update_node(nodes[i], new_node)
            nodes[i] = new_node
        elif kind == "add_node":
            made += 1
            n = make_node(f"m{made}").label("zone", f"z{op[1]}").obj()
            cache.add_node(n)
            nodes.append(n)
        elif kind == "remove_node" and len(nodes) > 1:
            n = nodes.pop(op[1] % len(nodes))
            for p in [p for p in live if p.node_name == n.name]:
                cache.remove_pod(p)
                live.remove(p)
            cache.remove_node(n)
        elif kind == "cycle":
            cycle()
    cycle()
