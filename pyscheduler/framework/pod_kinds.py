"""The existing pods grouped by what selectors can see of them, per NodeTable row, kept current row by row
(used by InterPodAffinity and PodTopologySpread).

Why
---
PreFilter of both plugins counts, per node, the existing pods a selector picks (kube walks every pod on
every node per incoming pod). A per-selector cache per row (``node_rows.RowInts``) only helps while the
same selector comes back before its rows change; with many groups each selector's rows go stale between
two of its pods, and every stale row is walked again, per selector. Yet selectors see only a pod's
namespace, labels and whether it is terminating, and a cluster's pods share few such *kinds* (one per
Deployment revision, typically). This index keeps, per kind, how many pods of that kind sit on each row;
a selector is then tried once per kind (and once only per kind ever: the kinds it picks are remembered),
and its per-row counts are the sum of its kinds' rows.

How it stays current
--------------------
As ``inter_pod_affinity.existing_index`` (``node_rows.RowStampedIndex``): each row remembers the NodeInfo
generation it was read at and the pods it counted; on rows whose stamp differs from the table's generation
column (the one or two nodes the last binding touched) only the pods new there are added and those gone
taken back. A table of another size starts the index afresh, and so does a
build-up of kinds no pod has any more (rollouts leave them behind).

A kind's rows are a dict row -> count while it is on few rows, and a dense int32 array per table row (kept
in step) once it is on many, so memory stays at most one array per 64 pods.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.node_rows import RowStampedIndex
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

I64 = npt.NDArray[np.int64]

_MEMO_KEY = "pod_kinds"  # PodInfo.memo: the pod's kind key
_DENSE_AT = 64  # rows a kind is on before it gets a dense array
_MATCH_CACHE = 256  # selectors whose kinds are remembered

KindKey = tuple[str, frozenset[tuple[str, str]], bool]  # namespace, labels, terminating


def kind_of(pi: PodInfo) -> KindKey:
    key: KindKey | None = pi.memo.get(_MEMO_KEY)
    if key is None:
        p = pi.pod
        key = pi.memo[_MEMO_KEY] = (p.namespace, frozenset(p.labels.items()), p.deleting)
    return key


class _Kind:
    __slots__ = ("dense", "n", "pod", "rows")

    def __init__(self, pod: Pod) -> None:
        self.pod = pod  # one pod of the kind: what selectors are tried on
        self.rows: dict[int, int] = {}  # row -> pods of the kind there
        self.dense: npt.NDArray[np.int32] | None = None
        self.n = 0  # pods of the kind in all


class PodKindIndex(RowStampedIndex):
    """See the module docstring. Not thread-safe: one scheduling cycle at a time uses it."""

    __slots__ = ("_gens", "_ids", "_kinds", "_live", "_matched", "_members", "_size")

    def __init__(self) -> None:
        self._reset(-1)

    def _reset(self, size: int) -> None:
        self._size = size
        self._gens: I64 = np.full(max(size, 0), -1, dtype=np.int64)
        self._members: dict[int, set[PodInfo]] = {}  # row -> the pods counted there
        self._ids: dict[KindKey, int] = {}
        self._kinds: list[_Kind | None] = []  # by id; None once the index dropped it
        self._live = 0
        # selector key -> (kinds tried so far, ids of those it picks)
        self._matched: dict[Hashable, tuple[int, list[int]]] = {}

    def refresh(self, table: NodeTable) -> bool:
        """Bring the index to ``table``; False (not to be used this cycle) when a row's NodeInfo changed
        after the table was written."""
        if table.size != self._size or len(self._kinds) > 2 * self._live + 1024:
            self._reset(table.size)
        return self._catch_up(table)

    def counts(self, key: Hashable, picks: Callable[[Pod], bool]) -> I64:
        """Per table row, the pods ``picks`` selects (it must depend only on the pod's namespace, labels
        and terminating state; ``key`` names it)."""
        kinds = self._kinds
        hit = self._matched.get(key)
        tried, ids = hit if hit is not None else (0, [])
        if tried < len(kinds):
            ids = list(ids)
            for i in range(tried, len(kinds)):
                k = kinds[i]
                if k is not None and picks(k.pod):
                    ids.append(i)
            if hit is None and len(self._matched) >= _MATCH_CACHE:
                del self._matched[next(iter(self._matched))]
            self._matched[key] = (len(kinds), ids)
        out = np.zeros(max(self._size, 0), dtype=np.int64)
        # kinds on few rows summed in a dict and added once: with thousands of kinds on one node (one
        # label set per pod) two numpy calls per kind were most of PreFilter's time
        sparse: dict[int, int] = {}
        get = sparse.get
        for i in ids:
            k = kinds[i]
            if k is None or not k.n:
                continue
            if k.dense is not None:
                out += k.dense
            else:
                for r, c in k.rows.items():
                    sparse[r] = get(r, 0) + c
        if sparse:
            n = len(sparse)
            out[np.fromiter(sparse.keys(), np.int64, n)] += np.fromiter(sparse.values(), np.int64, n)
        return out

    # -- rows -----------------------------------------------------------------------------------------

    def _pods_of(self, ni: NodeInfo) -> Sequence[PodInfo]:
        return ni.pods

    def _add(self, row: int, pods: Iterable[PodInfo]) -> None:
        per: dict[int, int] = {}
        ids = self._ids
        kinds = self._kinds
        for pi in pods:
            key = kind_of(pi)
            i = ids.get(key)
            if i is None:
                i = ids[key] = len(kinds)
                kinds.append(_Kind(pi.pod))
                self._live += 1
            per[i] = per.get(i, 0) + 1
        for i, c in per.items():
            k = kinds[i]
            assert k is not None
            k.rows[row] = k.rows.get(row, 0) + c
            k.n += c
            if k.dense is not None:
                k.dense[row] += c
            elif len(k.rows) >= _DENSE_AT:
                d = k.dense = np.zeros(self._size, dtype=np.int32)
                d[np.fromiter(k.rows.keys(), np.int64, len(k.rows))] = np.fromiter(
                    k.rows.values(), np.int32, len(k.rows)
                )

    def _remove(self, row: int, pods: Iterable[PodInfo]) -> None:
        per: dict[int, int] = {}
        ids = self._ids
        for pi in pods:
            i = ids[kind_of(pi)]
            per[i] = per.get(i, 0) + 1
        kinds = self._kinds
        for i, c in per.items():
            k = kinds[i]
            assert k is not None
            left = k.rows[row] - c
            if left:
                k.rows[row] = left
            else:
                del k.rows[row]
            if k.dense is not None:
                k.dense[row] -= c
            k.n -= c
            if not k.n:  # no pod of the kind left: forget it (ids stay, so cached matches stay right)
                kinds[i] = None
                del self._ids[_key_of(k.pod)]
                self._live -= 1


def _key_of(pod: Pod) -> KindKey:
    return (pod.namespace, frozenset(pod.labels.items()), pod.deleting)


def selector_picks(namespace: str, match: Callable[[Mapping[str, str]], bool]) -> Callable[[Pod], bool]:
    """PodTopologySpread's count: non-terminating pods of ``namespace`` whose labels ``match``."""

    def picks(p: Pod) -> bool:
        return not p.deleting and p.namespace == namespace and match(p.labels)

    return picks
