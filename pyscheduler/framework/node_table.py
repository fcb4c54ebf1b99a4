"""NodeTable and NodeBatch: the snapshot's nodes as NumPy columns, so a plugin can Filter or Score many
nodes in one call.

Design
------
A scheduling cycle calls each Filter plugin once per node and each Score plugin once per feasible node.
At 500 to 5,000 nodes the per-call cost of Python dominates: kube-scheduler spreads the same work over 16
goroutines, we cannot. So the snapshot also keeps, row by row in ``list()`` order, the numbers the
default plugins read most (allocatable, requested, non-zero requested, pod count, unschedulable), and
the runtime hands plugins that implement ``filter_nodes`` / ``score_nodes`` the whole candidate list at
once as a ``NodeBatch``. The plugin answers for every node with a few array operations.

Exactness comes first: a batch method must give, node by node, what the per-node method gives (the
plugin tests compare both on random clusters). Two rules keep that true:

- A row is only trusted for a NodeInfo the table wrote and that has not changed since: ``rows()``
  compares each NodeInfo's ``generation`` with the one stored for its row. Preemption's dry runs work
  on clones with pods removed (a new generation), explanations on ad-hoc snapshots; for those
  ``rows()`` returns None and the plugin answers node by node. The snapshot's own ``list()`` (and the
  scheduler's chunks of it) are taken as rows 0..n-1 unchecked: only the cache writes the snapshot, and
  it rewrites the rows of what it changed (``node_rows.rows_of`` with the snapshot).
- Only what the columns hold is vectorised; anything else (extended resources, a pod's host ports, a
  node that fails, where the exact Status with its reasons is wanted) goes through the per-node method.

Lifecycle (the cache is the only writer, via the snapshot)::

    Snapshot._rebuild_lists  ──► table.rebuild(list)     every row rewritten, NodeInfo.row set
    Cache._copy_changed      ──► table.update(changed)   only the rows of NodeInfos that changed
    plugin (read only)       ──► batch.rows()            row indices, or None if any node is stale

``node_epoch`` counts changes to any row's Node object (labels, taints, allocatable, a node added or
removed): a plugin may cache per-node derived values (a label mask, a taint check per toleration set)
keyed by ``(table, node_epoch)``; ``NodeEpochCache`` is the base such caches share.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.types import NodeInfo, Taint

__all__ = ["NodeBatch", "NodeEpochCache", "NodeTable", "batch_rows"]

I64 = npt.NDArray[np.int64]
_ROW = operator.attrgetter("row")
_GENERATION = operator.attrgetter("generation")


class NodeTable:
    """Per-node columns in the snapshot's list order. Row ``i`` describes ``infos[i]``."""

    __slots__ = (
        "alloc_cpu",
        "alloc_eph",
        "alloc_mem",
        "alloc_pods",
        "generation",
        "has_scalar",
        "infos",
        "node_epoch",
        "nodes",
        "nz_cpu",
        "nz_mem",
        "pod_count",
        "req_cpu",
        "req_eph",
        "req_mem",
        "size",
        "unschedulable",
    )

    def __init__(self) -> None:
        self.infos: list[NodeInfo] = []
        self.nodes: list[Any] = []  # the Node object each row was written from (identity = unchanged)
        self.size = 0
        self.node_epoch = 0
        self._alloc(0)

    def _alloc(self, n: int) -> None:
        z = np.zeros
        self.generation: I64 = z(n, np.int64)
        self.alloc_cpu: I64 = z(n, np.int64)
        self.alloc_mem: I64 = z(n, np.int64)
        self.alloc_eph: I64 = z(n, np.int64)
        self.alloc_pods: I64 = z(n, np.int64)
        self.req_cpu: I64 = z(n, np.int64)
        self.req_mem: I64 = z(n, np.int64)
        self.req_eph: I64 = z(n, np.int64)
        self.pod_count: I64 = z(n, np.int64)
        self.nz_cpu: I64 = z(n, np.int64)
        self.nz_mem: I64 = z(n, np.int64)
        self.has_scalar: npt.NDArray[np.bool_] = z(n, np.bool_)
        self.unschedulable: npt.NDArray[np.bool_] = z(n, np.bool_)

    def rebuild(self, infos: Sequence[NodeInfo]) -> None:
        """Rewrite every row from ``infos`` (the snapshot's new list)."""
        self.infos = list(infos)
        self.size = n = len(self.infos)
        self.nodes = [None] * n
        self._alloc(n)
        for i, ni in enumerate(self.infos):
            ni.row = i
            self._write(i, ni)
        self.node_epoch += 1

    def update(self, changed: Iterable[NodeInfo]) -> None:
        """Rewrite the rows of NodeInfos that changed in place since they were written."""
        for ni in changed:
            i = ni.row
            if 0 <= i < self.size and self.infos[i] is ni:
                self._write(i, ni)

    def _write(self, i: int, ni: NodeInfo) -> None:
        a = ni.allocatable
        r = ni.requested
        self.generation[i] = ni.generation
        self.alloc_cpu[i] = a.milli_cpu
        self.alloc_mem[i] = a.memory
        self.alloc_eph[i] = a.ephemeral_storage
        self.alloc_pods[i] = a.allowed_pod_number
        self.req_cpu[i] = r.milli_cpu
        self.req_mem[i] = r.memory
        self.req_eph[i] = r.ephemeral_storage
        self.pod_count[i] = len(ni.pods)
        self.nz_cpu[i] = ni.non_zero_requested.milli_cpu
        self.nz_mem[i] = ni.non_zero_requested.memory
        self.has_scalar[i] = bool(a.scalar) or bool(r.scalar)
        node = ni.node
        self.unschedulable[i] = bool(node is not None and node.unschedulable)
        if self.nodes[i] is not node:
            self.nodes[i] = node
            self.node_epoch += 1

    def rows(self, nodes: Sequence[NodeInfo]) -> I64 | None:
        """Row indices of ``nodes``, or None if any of them is not a current row of this table."""
        n = self.size
        try:
            rows = np.fromiter(map(_ROW, nodes), np.int64, len(nodes))
        except AttributeError:
            return None
        if len(rows) and (rows.min() < 0 or rows.max() >= n):
            return None
        gens = np.fromiter(map(_GENERATION, nodes), np.int64, len(nodes))
        if not np.array_equal(self.generation[rows], gens):
            return None
        # generations are unique: the same one means the row's own NodeInfo or an unchanged clone
        return rows


class NodeBatch(list[NodeInfo]):
    """The nodes one batch call covers, with their rows in the snapshot's table (computed once)."""

    __slots__ = ("_rows", "_rows_done", "table")

    def __init__(self, nodes: Iterable[NodeInfo], table: NodeTable | None, rows: I64 | None = None) -> None:
        """``rows``: the nodes' rows when the caller knows them (a range of the snapshot's own list,
        whose row i is its i-th node); otherwise they are looked up and checked on first use."""
        super().__init__(nodes)
        self.table = table
        self._rows: I64 | None = rows
        self._rows_done = rows is not None

    def subset(self, idx: list[int]) -> NodeBatch:
        """The nodes at positions ``idx``, with their rows taken from this batch's (no recount)."""
        b = NodeBatch([self[i] for i in idx], self.table)
        if self._rows_done:
            b._rows = None if self._rows is None else self._rows[np.asarray(idx, dtype=np.int64)]
            b._rows_done = True
        return b

    @property
    def known_rows(self) -> I64 | None:
        """The rows if already known (given or looked up), without looking them up."""
        return self._rows if self._rows_done else None

    def rows(self) -> I64 | None:
        if not self._rows_done:
            self._rows = self.table.rows(self) if self.table is not None else None
            self._rows_done = True
        return self._rows


def batch_rows(nodes: Sequence[NodeInfo]) -> tuple[NodeTable, I64] | None:
    """(table, rows) when ``nodes`` is a NodeBatch whose rows are current; None means: go node by node."""
    if isinstance(nodes, NodeBatch) and nodes.table is not None:
        rows = nodes.rows()
        if rows is not None:
            return nodes.table, rows
    return None


class NodeEpochCache:
    """Base of the caches of values derived from a table's Node objects alone (labels, taints,
    allocatable), valid for one ``(table, node_epoch)``. ``moved(table)`` says whether the subclass
    must drop what it holds; it then records ``table`` (held, not its id: a live object's id cannot be
    reused by another table) and its epoch as current."""

    __slots__ = ("epoch", "table")

    def __init__(self) -> None:
        self.table: NodeTable | None = None
        self.epoch = -1

    def moved(self, table: NodeTable) -> bool:
        if self.table is table and self.epoch == table.node_epoch:
            return False
        self.table = table
        self.epoch = table.node_epoch
        return True


def tainted_rows(table: NodeTable) -> list[tuple[int, tuple[Taint, ...]]]:
    """(row, taints) of every row whose node has taints."""
    return [(i, n.taints) for i, n in enumerate(table.nodes) if n is not None and n.taints]
