"""node_rows.rows_of: which table rows a node list stands for, and when it must answer None (the plugins
then go node by node)."""

from __future__ import annotations

from typing import Any

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.node_rows import rows_of, table_rows
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.types import Node
from pyscheduler.testing.builders import make_pod


def _rows(table: NodeTable, nodes: Any, snap: Snapshot | None = None) -> list[int] | None:
    r = rows_of(table, nodes, snap)
    return None if r is None else [int(x) for x in r.tolist()]


def _snapshot(n: int) -> tuple[Cache, Snapshot]:
    cache = Cache()
    for i in range(n):
        cache.add_node(Node(name=f"n{i}", labels={"kubernetes.io/hostname": f"n{i}"}))
    snap = Snapshot()
    cache.update_snapshot(snap)
    return cache, snap


def test_the_snapshots_own_list_is_every_row_in_order() -> None:
    cache, snap = _snapshot(6)
    table = snap.node_table()
    own = snap.list()
    assert _rows(table, own, snap) == list(range(6))
    assert _rows(table, own) == list(range(6))  # checked by generation: same answer
    # pods bound since: the cache rewrote the changed rows, the list still is the table
    cache.add_pod(make_pod("p").node("n3").obj())
    cache.update_snapshot(snap)
    assert _rows(table, snap.list(), snap) == list(range(6))
    assert _rows(table, snap.list()) == list(range(6))
    found = table_rows(list(snap.list()), snap)
    assert found is not None and found[1].tolist() == list(range(6))


def test_other_lists_are_checked_node_by_node() -> None:
    _, snap = _snapshot(4)
    table = snap.node_table()
    own = snap.list()
    assert _rows(table, [own[2], own[0]], snap) == [2, 0]
    # a clone with a pod added (preemption's what-if) is no row of the table
    clone = own[1].clone()
    clone.add_pod(make_pod("q").node("n1").obj())
    assert rows_of(table, [own[0], clone, own[2], own[3]], snap) is None
    # the snapshot's list given with another table: not taken for that table's rows unchecked
    other = NodeTable()
    other.rebuild([own[0]])
    assert rows_of(other, own, snap) is None
