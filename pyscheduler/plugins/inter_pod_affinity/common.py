"""What filtering and scoring share: names and reasons, topology counts keyed by (label, value),
their array forms over a label column, and ``PluginBase``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace

import numpy as np

from pyscheduler.framework.interfaces import (
    ClusterObjects,
    Handle,
    SnapshotLister,
)
from pyscheduler.framework.node_rows import (
    I64,
    LabelColumn,
    TableLabels,
)
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.pod_kinds import PodKindIndex
from pyscheduler.framework.types import Node
from pyscheduler.plugins.inter_pod_affinity.args import InterPodAffinityArgs
from pyscheduler.plugins.inter_pod_affinity.existing_index import ExistingTermsIndex
from pyscheduler.plugins.inter_pod_affinity.terms import (
    MEMO_KEY,
    AffinityTerm,
    ParsedCache,
    WeightedAffinityTerm,
)

NAME = MEMO_KEY  # "InterPodAffinity": parsed terms are memoized under the plugin's name

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

TopologyPair = tuple[str, str]
TopologyCounts = dict[TopologyPair, int]


def update_counts(m: TopologyCounts, node: Node, key: str, value: int) -> None:
    tv = node.labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = m.get(pair, 0) + value
    if n == 0:
        m.pop(pair, None)
    else:
        m[pair] = n


def frozen_labels(labels: Mapping[str, str] | None) -> frozenset[tuple[str, str]] | None:
    return None if labels is None else frozenset(labels.items())


def pair_codes(counts: TopologyCounts, key: str, col: LabelColumn) -> I64:
    """The counts of the pairs (``key``, value) as an array over ``col``'s codes (trailing 0)."""
    out = [0] * (len(col.values) + 1)
    index = col.index
    for (k, v), n in counts.items():
        if k == key:
            c = index.get(v)
            if c is not None:
                out[c] = n
    return np.array(out, dtype=np.int64)


def nonzero_pairs(key: str, col: LabelColumn, arr: I64) -> dict[TopologyPair, int]:
    ks = np.flatnonzero(arr[:-1])
    values = col.values
    return dict(zip([(key, values[k]) for k in ks.tolist()], arr[ks].tolist(), strict=True))


class PluginBase:
    """What every extension point reads: the args, the handle, and the pod's terms with their
    namespaces merged (namespaceSelector resolved through the cluster's Namespaces)."""

    name = NAME

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args or InterPodAffinityArgs()
        self._handle = handle
        # label codes per row of the snapshot's NodeTable (see framework/node_rows.py)
        self._labels = TableLabels()
        # the existing pods' terms by distinct term (see existing_index.py)
        self._existing = ExistingTermsIndex()
        # the existing pods by namespace and labels, per row (see framework/pod_kinds.py)
        self._kinds = PodKindIndex()
        # the waiting pods' own terms, for the queueing hints (see hints.py)
        self._hint_terms = ParsedCache()

    # -- helpers ------------------------------------------------------------------------------------

    def _objects(self) -> ClusterObjects | None:
        """The cluster's objects; None for a plugin built without a handle (unit tests of one point)."""
        return self._handle.objects if self._handle is not None else None

    def _snapshot(self) -> SnapshotLister | None:
        return self._handle.snapshot if self._handle is not None else None

    def _existing_index(self, table: NodeTable) -> ExistingTermsIndex | None:
        """The index of the existing pods' terms, brought to the snapshot's table; None when the table
        is behind its NodeInfos (then node by node)."""
        return self._existing if self._existing.refresh(table) else None

    def _pod_kinds(self, table: NodeTable) -> PodKindIndex | None:
        """The existing pods by kind, brought to the snapshot's table; None when the table is behind
        its NodeInfos (then node by node)."""
        return self._kinds if self._kinds.refresh(table) else None

    def namespace_labels(self, namespace: str) -> Mapping[str, str] | None:
        """The labels of the pod's namespace; None (no labels) when it is not known."""
        objects = self._objects()
        if objects is None:
            return None
        ns = objects.get("Namespace", "", namespace)
        if ns is None:
            return None
        labels: Mapping[str, str] = (ns.get("metadata") or {}).get("labels") or {}
        return dict(labels)

    def merge_namespaces(self, term: AffinityTerm) -> AffinityTerm:
        """Resolve a non-empty namespaceSelector of the incoming pod's term into namespace names."""
        sel = term.namespace_selector
        if sel is None or sel.is_empty():
            return term
        names = set(term.namespaces)
        objects = self._objects()
        if objects is not None:
            for ns in objects.list("Namespace"):
                meta = ns.get("metadata") or {}
                if sel.matches(meta.get("labels") or {}):
                    names.add(str(meta.get("name", "")))
        return replace(term, namespaces=frozenset(names), namespace_selector=None)

    def _merge_all(self, terms: tuple[AffinityTerm, ...]) -> tuple[AffinityTerm, ...]:
        return tuple(self.merge_namespaces(t) for t in terms)

    def _merge_weighted(self, terms: tuple[WeightedAffinityTerm, ...]) -> tuple[WeightedAffinityTerm, ...]:
        return tuple(WeightedAffinityTerm(self.merge_namespaces(w.term), w.weight) for w in terms)
