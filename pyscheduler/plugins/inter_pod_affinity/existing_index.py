"""The existing pods' affinity terms, indexed by term and kept current node by node.

Why
---
For every incoming pod, PreFilter must count the existing pods whose *required anti-affinity* selects it,
per topology pair (kube's ``existingAntiAffinityCounts``), and PreScore must sum the weights of the existing
pods' *required affinity* (``hardPodAffinityWeight``) and *preferred (anti-)affinity* terms that select it.
Done the plain way, that is one pass over every pod with affinity on every node, per incoming pod: at 5,000
nodes and one such pod per node, ~5,000 term matches per cycle. A cluster runs few *distinct* terms (one per
Deployment, typically), so this index keeps, per distinct term, how many existing pods carry it on each
topology pair; an incoming pod is then matched once against each distinct term.

How it stays current
--------------------
The index covers every row of the snapshot's NodeTable. Each row remembers the NodeInfo generation it was
read at and which pods with affinity it counted (``RowStampedIndex``): a row whose stamp differs from the
table's generation column (pods added or removed, node relabelled or replaced) gets only its difference
applied, the terms of the pods new on it added and those of the pods gone taken back. Finding those rows
is one vector comparison; between two cycles they are the one or two nodes the last binding touched, and
on them the one pod bound, however many pods the node holds. A pod's entry keys are built once per
PodInfo (``PodInfo.memo``, beside its parsed terms). A table of another size (nodes added or removed)
starts the index afresh.

Each distinct term keeps its occurrences as one int32 per table row (a vector add per matching term at
query time; 20 KB per term at 5,000 nodes). Answers are per-row arrays per topology key, which the callers
fold by label code exactly as their other batch paths do, and equal those of the node-by-node passes in
``filtering.py`` and ``scoring.py`` (checked by the randomized tests beside them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from pyscheduler.framework.node_rows import I64, Mask, RowStampedIndex
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity.terms import MEMO_KEY, AffinityTerm, terms_of

# Entry kinds: what an existing pod's term does to the incoming pod.
REQUIRED_ANTI = 0  # PreFilter: the incoming pod may not share the pair
REQUIRED_AFFINITY = 1  # PreScore: + hardPodAffinityWeight
PREFERRED_AFFINITY = 2  # PreScore: + weight
PREFERRED_ANTI = 3  # PreScore: - weight

EntryKey = tuple[int, AffinityTerm, int]  # (kind, term, weight; 0 for required terms)


class _Entry:
    __slots__ = ("n", "rows", "term")

    def __init__(self, term: AffinityTerm, size: int) -> None:
        self.term = term
        self.rows = np.zeros(size, dtype=np.int32)  # occurrences of the term per table row
        self.n = 0  # occurrences in all


class ExistingTermsIndex(RowStampedIndex):
    """See the module docstring. Not thread-safe: one scheduling cycle at a time uses it."""

    __slots__ = ("_by_kind", "_entries", "_gens", "_members", "_size")

    def __init__(self) -> None:
        self._reset(-1)

    def _reset(self, size: int) -> None:
        self._size = size
        self._gens: I64 = np.full(max(size, 0), -1, dtype=np.int64)
        self._members: dict[int, set[PodInfo]] = {}  # row -> the pods with affinity counted there
        self._entries: dict[EntryKey, _Entry] = {}
        self._by_kind: tuple[dict[EntryKey, _Entry], ...] = ({}, {}, {}, {})

    def refresh(self, table: NodeTable) -> bool:
        """Bring the index to ``table``: apply the difference on each row whose generation stamp differs
        from the table's. False (the index not to be used this cycle) when a row's NodeInfo changed after the
        table was written; the rows read so far stay read."""
        if table.size != self._size:
            self._reset(table.size)
        return self._catch_up(table)

    def anti_rows(self, pod: Pod, ns_labels: Mapping[str, str] | None) -> dict[str, I64]:
        """Topology key -> per table row, the existing pods' required anti-affinity terms that select
        ``pod`` (rows without the key's label are the caller's to leave out)."""
        out: dict[str, I64] = {}
        for entry in self._by_kind[REQUIRED_ANTI].values():
            if entry.term.matches(pod, ns_labels):
                key = entry.term.topology_key
                acc = out.get(key)
                if acc is None:
                    out[key] = entry.rows.astype(np.int64)
                else:
                    acc += entry.rows
        return out

    def score_rows(
        self, pod: Pod, ns_labels: Mapping[str, str] | None, hard_weight: int
    ) -> dict[str, tuple[I64, Mask]]:
        """Topology key -> (per table row, the weights of the existing pods' terms that select ``pod``:
        required affinity at ``hard_weight`` when > 0, preferred affinity +weight, preferred anti
        -weight; the rows where any such term occurs)."""
        out: dict[str, tuple[I64, Mask]] = {}
        kinds = [(PREFERRED_AFFINITY, 1), (PREFERRED_ANTI, -1)]  # (kind, sign)
        if hard_weight > 0:
            kinds.insert(0, (REQUIRED_AFFINITY, 1))
        for kind, sign in kinds:
            for (_, _, weight), entry in self._by_kind[kind].items():
                if not entry.term.matches(pod, ns_labels):
                    continue
                w = hard_weight if kind == REQUIRED_AFFINITY else sign * weight
                key = entry.term.topology_key
                hit = out.get(key)
                if hit is None:
                    out[key] = (entry.rows * np.int64(w), entry.rows > 0)
                else:
                    sums, present = hit
                    sums += entry.rows * np.int64(w)
                    present |= entry.rows > 0
        return out

    # -- rows -----------------------------------------------------------------------------------------

    def _pods_of(self, ni: NodeInfo) -> Sequence[PodInfo]:
        return ni.pods_with_affinity

    def _add(self, row: int, pods: Iterable[PodInfo]) -> None:
        entries = self._entries
        for pi in pods:
            for key in _keys_of(pi):
                entry = entries.get(key)
                if entry is None:
                    entry = entries[key] = _Entry(key[1], self._size)
                    self._by_kind[key[0]][key] = entry
                entry.rows[row] += 1
                entry.n += 1

    def _remove(self, row: int, pods: Iterable[PodInfo]) -> None:
        entries = self._entries
        for pi in pods:
            for key in _keys_of(pi):
                entry = entries[key]
                entry.rows[row] -= 1
                entry.n -= 1
                if not entry.n:
                    del entries[key]
                    del self._by_kind[key[0]][key]


_KEYS_MEMO = MEMO_KEY + ".entries"  # PodInfo.memo: the pod's entry keys


def _keys_of(pi: PodInfo) -> tuple[EntryKey, ...]:
    """What the pod contributes to the index, one key per term (a term twice in a pod counts twice)."""
    keys: tuple[EntryKey, ...] | None = pi.memo.get(_KEYS_MEMO)
    if keys is None:
        terms = terms_of(pi)
        keys = (
            *((REQUIRED_ANTI, t, 0) for t in terms.required_anti_affinity),
            *((REQUIRED_AFFINITY, t, 0) for t in terms.required_affinity),
            *((PREFERRED_AFFINITY, w.term, w.weight) for w in terms.preferred_affinity),
            *((PREFERRED_ANTI, w.term, w.weight) for w in terms.preferred_anti_affinity),
        )
        pi.memo[_KEYS_MEMO] = keys
    return keys
