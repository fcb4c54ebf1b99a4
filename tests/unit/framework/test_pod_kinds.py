"""PodKindIndex (framework/pod_kinds.py): per-row counts of the pods a selector picks, kept current as the
cache's snapshot changes in place, equal to counting every node's pods."""

from __future__ import annotations

import random
from typing import Any

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
