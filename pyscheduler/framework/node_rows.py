"""Per-node values derived from the snapshot's NodeTable, kept by a plugin across cycles (used by
PodTopologySpread and InterPodAffinity).

PreFilter and PreScore of topology plugins walk every pod on every node for every incoming pod, and
Filter / Score look a node label up per node. Most of that is the same from one cycle to the next:

- ``TableLabels``: one node label as integer codes, one per table row (``-1``: the node lacks the
  label or has no Node), with the distinct values. Rebuilt when the table or its ``node_epoch``
  changes (any row's Node object replaced: labels can only change that way).
- ``RowStore``: integers derived from a node's pods (how many match a selector or term), per row, each
  stamped with the generation of the NodeInfo it was computed from. A NodeInfo generation names one
  content (node and pods: every change takes a new one, clones keep it), so a value is reused while the
  stamp equals the generation the table holds for the row, and recomputed otherwise. Callers only pass
  rows that ``NodeTable.rows`` vouched for (their generations are those of the NodeInfos passed).

Counts of the pods a selector picks are kept by ``pod_kinds.PodKindIndex`` instead (current for every
selector at once); PodTopologySpread still uses ``RowStore`` when that index cannot be brought to the table.

The caches hold no per-pod state; keys name everything the value depends on.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from itertools import repeat
from operator import attrgetter
from typing import Any

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.node_table import NodeBatch, NodeTable, batch_rows
from pyscheduler.framework.types import NodeInfo, PodInfo

I64 = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]


_GENERATION = attrgetter("generation")
_ARANGE: dict[int, I64] = {}  # read-only 0..n-1, per n


def _arange(n: int) -> I64:
    a = _ARANGE.get(n)
    if a is None:
        if len(_ARANGE) > 8:
            _ARANGE.clear()
        a = _ARANGE[n] = np.arange(n, dtype=np.int64)
        a.flags.writeable = False
    return a


def rows_of(table: NodeTable, nodes: Sequence[NodeInfo], snapshot: Any = None) -> I64 | None:
    """``table.rows(nodes)``; for the table's own node list (the snapshot's ``list()``), row i is
    ``nodes[i]`` by identity, so only the generations need reading (one pass instead of two).

    ``snapshot``: the snapshot ``table`` is of. When ``nodes`` is that snapshot's ``list()`` itself, its
    rows are 0..n-1 without reading a generation: the snapshot is written only by the cache, which
    rewrites the table rows of what it changes (``Cache._copy_changed``), the same trust the scheduler's
    Filter chunks of that list get (``NodeBatch`` with the rows given). Reading 5,000 generations was a
    third of PodTopologySpread's PreFilter on a hostname spread."""
    if isinstance(nodes, NodeBatch) and nodes.table is table:
        return nodes.rows()  # rows given by the snapshot (its sublists) or looked up and checked once
    n = len(nodes)
    if snapshot is not None and n == table.size and nodes is _own_list(snapshot, table):
        return _arange(n)
    if n == table.size and isinstance(nodes, list) and nodes == table.infos:  # identity, element-wise
        gens = np.fromiter(map(_GENERATION, nodes), np.int64, n)
        if not np.array_equal(gens, table.generation):
            return None
        return _arange(n)
    return table.rows(nodes)


def _own_list(snapshot: Any, table: NodeTable) -> Any:
    """The snapshot's node list when ``table`` is its table, else None."""
    return snapshot.list() if snapshot_table(snapshot) is table else None


def table_rows(nodes: Sequence[NodeInfo], snapshot: Any) -> tuple[NodeTable, I64] | None:
    """``batch_rows(nodes)``, or, for a plain sequence (the scheduler scores a list), the rows the
    snapshot's table vouches for (same check: each NodeInfo's row and generation); None: node by node."""
    br = batch_rows(nodes)
    if br is not None:
        return br
    if isinstance(nodes, NodeBatch):
        return None
    table = snapshot_table(snapshot)
    if table is None:
        return None
    rows = rows_of(table, nodes, snapshot)
    return None if rows is None else (table, rows)


def snapshot_table(snapshot: Any) -> NodeTable | None:
    """The snapshot's NodeTable, or None when the snapshot has none."""
    if snapshot is None:
        return None
    get = getattr(snapshot, "node_table", None)
    if get is None:
        return None
    table = get()
    return table if isinstance(table, NodeTable) else None


class LabelColumn:
    """One label over the table rows: ``codes[row]`` indexes ``values`` (-1: absent)."""

    __slots__ = ("codes", "index", "values")

    def __init__(self, table: NodeTable, key: str) -> None:
        values: list[str] = []
        index: dict[str, int] = {}
        codes = np.full(table.size, -1, dtype=np.int64)
        for row, node in enumerate(table.nodes):
            if node is None:
                continue
            v = node.labels.get(key)
            if v is None:
                continue
            c = index.get(v)
            if c is None:
                c = index[v] = len(values)
                values.append(v)
            codes[row] = c
        self.values = values
        self.index = index
        self.codes: I64 = codes

    def per_code(self, counts: dict[str, int]) -> I64:
        """``counts`` (value -> n) as an array over codes, plus a trailing 0 for code -1."""
        missing = len(self.values)  # the trailing slot: values this column does not have land there
        out = np.zeros(missing + 1, dtype=np.int64)
        if counts:
            k = len(counts)
            codes = np.fromiter(map(self.index.get, counts, repeat(missing)), dtype=np.int64, count=k)
            out[codes] = np.fromiter(counts.values(), dtype=np.int64, count=k)
            out[missing] = 0
        return out


class TableLabels:
    """Label columns of one table at one ``node_epoch``."""

    __slots__ = ("_cols", "_epoch", "_no_node", "_table")

    def __init__(self) -> None:
        self._table: NodeTable | None = None
        self._epoch = -1
        self._cols: dict[str, LabelColumn] = {}
        self._no_node: Mask | None = None

    def _check(self, table: NodeTable) -> None:
        if table is not self._table or table.node_epoch != self._epoch:
            self._table = table
            self._epoch = table.node_epoch
            self._cols = {}
            self._no_node = None

    def column(self, table: NodeTable, key: str) -> LabelColumn:
        self._check(table)
        col = self._cols.get(key)
        if col is None:
            col = self._cols[key] = LabelColumn(table, key)
        return col

    def no_node(self, table: NodeTable) -> Mask:
        """Rows whose NodeInfo has no Node."""
        self._check(table)
        m = self._no_node
        if m is None:
            m = self._no_node = np.fromiter((n is None for n in table.nodes), np.bool_, table.size)
        return m


class RowInts:
    """One integer per table row, each stamped with the generation it was computed for."""

    __slots__ = ("gens", "values")

    def __init__(self, size: int) -> None:
        self.gens: I64 = np.full(size, -1, dtype=np.int64)
        self.values: I64 = np.zeros(size, dtype=np.int64)

    def get(self, rows: I64, gens: I64, nodes: Sequence[NodeInfo], fn: Callable[[NodeInfo], int]) -> I64:
        """The values of ``rows`` (``nodes[k]`` is at ``rows[k]``, of generation ``gens[k]``)."""
        stale = np.flatnonzero(self.gens[rows] != gens)
        if len(stale):
            values = self.values
            stamps = self.gens
            for k in stale.tolist():
                r = rows[k]
                values[r] = fn(nodes[k])
                stamps[r] = gens[k]
        return self.values[rows]


class RowStore:
    """RowInts by key, for one table size; the oldest are dropped beyond ``limit``."""

    __slots__ = ("_entries", "_size", "limit")

    def __init__(self, limit: int = 64) -> None:
        self._entries: dict[Hashable, RowInts] = {}
        self._size = -1
        self.limit = limit

    def _get(self, key: Hashable, size: int) -> RowInts | None:
        if size != self._size:
            self._entries = {}
            self._size = size
        e = self._entries.get(key)
        if e is None:
            while len(self._entries) >= self.limit:
                del self._entries[next(iter(self._entries))]
        return e

    def ints(self, key: Hashable, size: int) -> RowInts:
        e = self._get(key, size)
        if not isinstance(e, RowInts):
            e = self._entries[key] = RowInts(size)
        return e


def sum_by_code(size: int, codes: I64, weights: I64, include: Mask) -> tuple[I64, Mask] | None:
    """Over the rows where ``include`` holds and ``codes`` >= 0: per code (of ``size``), the sum of
    ``weights`` with a trailing 0 (for code -1), and which codes occur; None when no row counts."""
    m = include & (codes >= 0)
    if not m.any():
        return None
    c = codes[m]
    tot = np.zeros(size + 1, dtype=np.int64)
    np.add.at(tot, c, weights[m])
    present = np.zeros(size, dtype=np.bool_)
    present[c] = True
    return tot, present


def sum_by_value(values: Sequence[str], codes: I64, weights: I64, include: Mask) -> dict[str, int]:
    """For the rows where ``include`` holds and ``codes`` >= 0: value -> sum of ``weights`` (every
    such value present, even with sum 0)."""
    r = sum_by_code(len(values), codes, weights, include)
    if r is None:
        return {}
    tot, present = r
    ks = np.flatnonzero(present)
    return dict(zip([values[k] for k in ks.tolist()], tot[ks].tolist(), strict=True))


class RowStampedIndex:
    """Base of the indexes kept current row by row against a NodeTable (``pod_kinds.PodKindIndex``,
    ``inter_pod_affinity.existing_index.ExistingTermsIndex``), from what each row's pods contribute.

    Each row remembers the NodeInfo generation it was read at (``_gens``) and the PodInfos it counted
    (``_members``); ``_catch_up`` visits the rows whose stamp differs from the table's generation column
    and applies only the difference: PodInfos new on the row are added (``_add``), those gone are taken
    back (``_remove``). A PodInfo is one pod version (an update makes a new one), so a bind touches one
    pod's contribution however many pods share its node, as kube keeps per-pod parsed terms in PodInfo.
    The members are compared by identity; a row whose NodeInfo has no Node counts nothing.

    Subclasses say which of a NodeInfo's pods count (``_pods_of``) and how a batch of them on one row is
    added or removed; the result must not depend on the order of those calls (the tests compare with a
    from-scratch read after random histories)."""

    __slots__ = ()
    _gens: I64
    _members: dict[int, set[PodInfo]]

    def _pods_of(self, ni: NodeInfo) -> Sequence[PodInfo]:
        raise NotImplementedError

    def _add(self, row: int, pods: Iterable[PodInfo]) -> None:
        raise NotImplementedError

    def _remove(self, row: int, pods: Iterable[PodInfo]) -> None:
        raise NotImplementedError

    def _catch_up(self, table: NodeTable) -> bool:
        """False (the index not to be used this cycle) when a row's NodeInfo changed after the table was
        written; the rows read so far stay read."""
        gens = table.generation
        infos = table.infos
        members = self._members
        for r in np.flatnonzero(self._gens != gens).tolist():
            ni = infos[r]
            g = int(gens[r])
            if ni.generation != g:
                return False
            new = set(self._pods_of(ni)) if ni.node is not None else set()
            old = members.get(r)
            if old is None:
                if new:
                    self._add(r, new)
            elif old != new:
                # added first: a pod replaced by its next version keeps its entry alive in between
                self._add(r, new - old)
                self._remove(r, old - new)
            if new:
                members[r] = new
            else:
                members.pop(r, None)
            self._gens[r] = g
        return True
