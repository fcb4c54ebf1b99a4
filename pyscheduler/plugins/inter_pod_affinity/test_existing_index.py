"""ExistingTermsIndex kept current by difference (only the pods new on a row or gone from it) equals the
index read from scratch, after any history of pod adds, updates, assumes and deletes and node changes."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins.inter_pod_affinity.existing_index import ExistingTermsIndex
from pyscheduler.testing.builders import make_node, make_pod

HOST = "kubernetes.io/hostname"
APPS = ("a", "b", "c")


def _node(name: str, zone: int) -> Node:
    return make_node(name).label("zone", f"z{zone}").label(HOST, name).obj()


def _pod(name: str, node: str, app: int, shape: int, ns: int) -> Pod:
    """One of a few shapes of (anti-)affinity, shared between pods so terms repeat across pods."""
    b = make_pod(name, ("default", "other")[ns]).node(node).label("app", APPS[app])
    other = {"app": APPS[(app + 1) % 3]}
    if shape == 1:
        b = b.pod_affinity(HOST, {"app": APPS[app]}, anti=True)
    elif shape == 2:
        b = b.pod_affinity("zone", other)
    elif shape == 3:
        b = b.pod_affinity("zone", other, weight=5).pod_affinity(HOST, {"app": "a"}, anti=True, weight=3)
    elif shape == 4:  # the same term twice, and a namespace selector
        b = b.pod_affinity(HOST, other, anti=True).pod_affinity(HOST, other, anti=True)
        b = b.pod_affinity("zone", {"app": "b"}, weight=7, namespace_selector={})
    return b.obj()


def state(index: ExistingTermsIndex) -> dict[Any, list[int]]:
    """The index's content: per entry key, its count per row (entries with no occurrence must be gone)."""
    out = {}
    for key, entry in index._entries.items():
        assert entry.n == int(entry.rows.sum()) > 0
        assert index._by_kind[key[0]][key] is entry
        out[key] = entry.rows.tolist()
    assert sum(len(k) for k in index._by_kind) == len(index._entries)
    return out


_op = st.one_of(
    st.tuples(st.just("add"), st.integers(0, 5), st.integers(0, 2), st.integers(0, 4), st.integers(0, 1)),
    st.tuples(st.just("assume"), st.integers(0, 5), st.integers(0, 2), st.integers(0, 4), st.integers(0, 1)),
    st.tuples(st.just("update"), st.integers(0, 99), st.integers(0, 2), st.integers(0, 4)),
    st.tuples(st.just("delete"), st.integers(0, 99)),
    st.tuples(st.just("relabel"), st.integers(0, 5), st.integers(0, 2)),
    st.tuples(st.just("add_node"), st.integers(0, 2)),
    st.tuples(st.just("remove_node"), st.integers(0, 5)),
    st.tuples(st.just("cycle"), st.integers(0, 2)),
)


@settings(max_examples=150, deadline=None)
@given(n_nodes=st.integers(1, 4), ops=st.lists(_op, max_size=40))
def test_index_by_difference_equals_a_fresh_read(n_nodes: int, ops: list[tuple[Any, ...]]) -> None:
    cache = Cache()
    nodes = [_node(f"n{i}", i % 3) for i in range(n_nodes)]
    for n in nodes:
        cache.add_node(n)
    snap = Snapshot()
    index = ExistingTermsIndex()
    live: list[Pod] = []
    made = 0
    compared = 0

    def cycle() -> None:
        nonlocal compared
        cache.update_snapshot(snap)
        table = snap.node_table()
        fresh = ExistingTermsIndex()
        assert index.refresh(table) and fresh.refresh(table)
        assert state(index) == state(fresh)
        # and what the plugin reads from it
        incoming = make_pod("in", "default").label("app", "a").obj()
        got, want = index.anti_rows(incoming, {}), fresh.anti_rows(incoming, {})
        assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in got)
        got_s, want_s = index.score_rows(incoming, {}, 1), fresh.score_rows(incoming, {}, 1)
        assert got_s.keys() == want_s.keys()
        for k in got_s:
            assert np.array_equal(got_s[k][0], want_s[k][0]) and np.array_equal(got_s[k][1], want_s[k][1])
        compared += 1

    for op in ops:
        kind = op[0]
        if kind in ("add", "assume") and nodes:
            made += 1
            p = _pod(f"p{made}", nodes[op[1] % len(nodes)].name, op[2], op[3], op[4])
            (cache.add_pod if kind == "add" else cache.assume_pod)(p)
            live.append(p)
        elif kind == "update" and live:
            old = live[op[1] % len(live)]
            # a new version of the pod (labels and terms may change; same node, same uid); for an
            # assumed pod, the watch confirming it
            new = _pod(old.name, old.node_name, op[2], op[3], 0 if old.namespace == "default" else 1)
            assert new.uid == old.uid
            cache.update_pod(old, new)
            live[live.index(old)] = new
        elif kind == "delete" and live:
            p = live.pop(op[1] % len(live))
            cache.remove_pod(p)
        elif kind == "relabel" and nodes:
            i = op[1] % len(nodes)
            new_node = _node(nodes[i].name, op[2])
            cache.update_node(nodes[i], new_node)
            nodes[i] = new_node
        elif kind == "add_node":
            made += 1
            n = _node(f"m{made}", op[1])
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
    assert compared
