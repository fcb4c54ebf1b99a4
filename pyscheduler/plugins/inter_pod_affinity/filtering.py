"""PreFilter (topology counts of matching affinity, anti-affinity and existing pods' anti-affinity),
its add/remove extensions for preemption, and Filter node by node and over a NodeBatch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import (
    PreFilterResult,
)
from pyscheduler.framework.node_rows import (
    I64,
    LabelColumn,
    Mask,
    rows_of,
    snapshot_table,
    sum_by_code,
)
from pyscheduler.framework.node_table import batch_rows
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity.common import (
    ERR_REASON_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH,
    ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH,
    NAME,
    PRE_FILTER_STATE_KEY,
    PluginBase,
    TopologyCounts,
    nonzero_pairs,
    pair_codes,
    update_counts,
)
from pyscheduler.plugins.inter_pod_affinity.terms import (
    AffinityTerm,
    ParsedAffinity,
    affinity_of,
    pod_matches_all_terms,
    term_picks,
    terms_of,
)

_KINDS = ("affinity", "anti", "existing")


class PreFilterState:
    """The three TopologyCounts. The fast PreFilter leaves them as arrays over label codes (in
    ``_per_code``, the kinds listed in ``_pending``); the dicts are built on first access (Filter node
    by node, add/remove_pod, clone), and filter_nodes reads the arrays."""

    __slots__ = (
        "_counts",
        "_existing_keys",
        "_has",
        "_pending",
        "_per_code",
        "affinity_terms",
        "anti_affinity_terms",
        "namespace_labels",
        "pod",
    )

    def __init__(
        self,
        pod: Pod,
        affinity_terms: tuple[AffinityTerm, ...],
        anti_affinity_terms: tuple[AffinityTerm, ...],
        namespace_labels: Mapping[str, str] | None,
    ) -> None:
        self.pod = pod
        self.affinity_terms = affinity_terms
        self.anti_affinity_terms = anti_affinity_terms
        self.namespace_labels = namespace_labels
        self._counts: dict[str, TopologyCounts] = {k: {} for k in _KINDS}
        # (kind, topology key) -> (label column, counts over its codes with a trailing 0)
        self._per_code: dict[tuple[str, str], tuple[LabelColumn, I64]] = {}
        self._pending: set[str] = set()  # kinds whose dict is still to be built from _per_code
        self._existing_keys: list[str] | None = None
        self._has: dict[str, bool] = {}  # has(kind) on the arrays, asked once per Filter chunk

    def _get(self, kind: str) -> TopologyCounts:
        if kind in self._pending:
            d: TopologyCounts = {}
            for (k, key), (col, arr) in self._per_code.items():
                if k == kind:
                    d.update(nonzero_pairs(key, col, arr))
            self._counts[kind] = d
            self._pending.discard(kind)
        return self._counts[kind]

    @property
    def affinity_counts(self) -> TopologyCounts:
        return self._get("affinity")

    @affinity_counts.setter
    def affinity_counts(self, value: TopologyCounts) -> None:
        self._set("affinity", value)

    @property
    def anti_affinity_counts(self) -> TopologyCounts:
        return self._get("anti")

    @anti_affinity_counts.setter
    def anti_affinity_counts(self, value: TopologyCounts) -> None:
        self._set("anti", value)

    @property
    def existing_anti_affinity_counts(self) -> TopologyCounts:
        return self._get("existing")

    @existing_anti_affinity_counts.setter
    def existing_anti_affinity_counts(self, value: TopologyCounts) -> None:
        self._set("existing", value)

    def _set(self, kind: str, value: TopologyCounts) -> None:
        for k in _KINDS:
            self._get(k)
        self._counts[kind] = value
        self._per_code = {}
        self._existing_keys = None
        self._has = {}

    def set_arrays(self, kind: str, key: str, col: LabelColumn, arr: I64) -> None:
        """Counts of ``kind`` for ``key`` as an array over ``col``'s codes (fast PreFilter, on a fresh
        state: every entry non-negative, zero meaning no pair)."""
        self._per_code[(kind, key)] = (col, arr)
        self._pending.add(kind)
        self._has = {}

    def has(self, kind: str) -> bool:
        """Whether the counts of ``kind`` are non-empty, without building the dict."""
        if kind in self._pending:
            hit = self._has.get(kind)
            if hit is None:
                hit = self._has[kind] = any(
                    k == kind and bool(arr.any()) for (k, _), (_, arr) in self._per_code.items()
                )
            return hit
        return bool(self._counts[kind])

    def existing_keys(self) -> list[str]:
        """The topology keys of the pairs with a positive existing anti-affinity count (cached)."""
        keys = self._existing_keys
        if keys is None:
            if "existing" in self._pending:
                found = {
                    key for (k, key), (_, arr) in self._per_code.items() if k == "existing" and arr.max() > 0
                }
            else:
                found = {k for (k, _), c in self._counts["existing"].items() if c > 0}
            keys = self._existing_keys = sorted(found)
        return keys

    def per_code(self, kind: str, key: str, col: LabelColumn) -> I64:
        """The counts of ``kind`` for ``key`` over ``col``'s codes; cached until updated."""
        hit = self._per_code.get((kind, key))
        if hit is not None and hit[0] is col:
            return hit[1]
        if hit is None and kind in self._pending:
            arr = np.zeros(len(col.values) + 1, dtype=np.int64)  # no pair with this key
        else:
            arr = pair_codes(self._get(kind), key, col)
        self._per_code[(kind, key)] = (col, arr)
        return arr

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.pod, self.affinity_terms, self.anti_affinity_terms, self.namespace_labels)
        c._counts = {k: dict(self._get(k)) for k in _KINDS}
        return c

    def update_with_pod(self, pi: PodInfo, node: Node | None, multiplier: int) -> None:
        if node is None:
            return
        existing, aff, anti = (self._get(k) for k in ("existing", "affinity", "anti"))
        self._per_code = {}
        self._existing_keys = None
        self._has = {}
        other = pi.pod
        for t in terms_of(pi).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                update_counts(existing, node, t.topology_key, multiplier)
        if pod_matches_all_terms(self.affinity_terms, other):
            for t in self.affinity_terms:
                update_counts(aff, node, t.topology_key, multiplier)
        for t in self.anti_affinity_terms:
            if t.matches(other, None):
                update_counts(anti, node, t.topology_key, multiplier)


class Filtering(PluginBase):
    # -- PreFilter -----------------------------------------------------------------------------------

    def calc_pre_filter_state(
        self, pod: Pod, parsed: ParsedAffinity, all_nodes: Sequence[NodeInfo]
    ) -> PreFilterState:
        s = PreFilterState(
            pod,
            self._merge_all(parsed.required_affinity),
            self._merge_all(parsed.required_anti_affinity),
            self.namespace_labels(pod.namespace),
        )
        if self._fast_pre_filter(s, pod, all_nodes):
            return s
        snap = self._snapshot()
        if snap is not None:
            anti_nodes: Sequence[NodeInfo] = snap.have_pods_with_required_anti_affinity_list()
        else:
            anti_nodes = [n for n in all_nodes if n.pods_with_required_anti_affinity]
        _count_existing_anti(s, pod, anti_nodes)
        if s.affinity_terms or s.anti_affinity_terms:
            _count_matching_existing(s, all_nodes)
        return s

    @staticmethod
    def _accumulate(
        acc: dict[tuple[str, str], tuple[LabelColumn, I64]],
        kind: str,
        key: str,
        col: LabelColumn,
        codes: I64,
        sums: I64,
        include: Mask,
    ) -> None:
        """Add ``sums`` of the included rows, per code of ``col``, to ``acc[(kind, key)]``."""
        r = sum_by_code(len(col.values), codes, sums, include)
        if r is None:
            return
        prev = acc.get((kind, key))
        acc[(kind, key)] = (col, r[0] if prev is None else prev[1] + r[0])

    def _fast_pre_filter(self, s: PreFilterState, pod: Pod, all_nodes: Sequence[NodeInfo]) -> bool:
        """calc_pre_filter_state's counts, as arrays over label codes, from the NodeTable and per-row
        caches; False (``s`` untouched) when the nodes are not the table's current rows."""
        snap = self._snapshot()
        table = snapshot_table(snap)
        if table is None or snap is None:
            return False
        anti_nodes: Sequence[NodeInfo] = snap.have_pods_with_required_anti_affinity_list()
        aff_terms = s.affinity_terms
        own_terms = bool(aff_terms or s.anti_affinity_terms)
        if not anti_nodes and not own_terms:
            return True  # nothing to count
        # the nodes must be the table's rows; the index below covers every row, so checking the
        # larger list is enough when the pod has terms of its own
        rows = rows_of(table, all_nodes if own_terms else anti_nodes, snap)
        if rows is None:
            return False
        labels = self._labels
        acc: dict[tuple[str, str], tuple[LabelColumn, I64]] = {}

        # existing pods' required anti-affinity selecting the incoming pod: one match per distinct term
        if len(anti_nodes):
            index = self._existing_index(table)
            if index is None:
                return False
            for tk, cnt in index.anti_rows(pod, s.namespace_labels).items():
                col = labels.column(table, tk)
                self._accumulate(acc, "existing", tk, col, col.codes, cnt, cnt > 0)
        if not own_terms:
            for (kind, tk), (col, arr) in acc.items():
                s.set_arrays(kind, tk, col, arr)
            return True

        # existing pods matching the incoming pod's required (anti-)affinity: one match per pod kind
        kinds = self._pod_kinds(table)
        if kinds is None:
            return False
        for t in s.anti_affinity_terms:
            cnt = kinds.counts(("term", t), partial(term_picks, t))[rows]
            col = labels.column(table, t.topology_key)
            self._accumulate(acc, "anti", t.topology_key, col, col.codes[rows], cnt, cnt > 0)
        if aff_terms:
            cnt = kinds.counts(("affinity", aff_terms), partial(pod_matches_all_terms, aff_terms))[rows]
            for t in aff_terms:
                col = labels.column(table, t.topology_key)
                self._accumulate(acc, "affinity", t.topology_key, col, col.codes[rows], cnt, cnt > 0)
        for (kind, tk), (col, arr) in acc.items():
            s.set_arrays(kind, tk, col, arr)
        return True

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        parsed = affinity_of(pod)
        if parsed.errors:
            return None, Status.unresolvable(f"parsing pod: {'; '.join(parsed.errors)}", plugin=NAME)
        if not parsed.required_affinity and not parsed.required_anti_affinity:
            snap = self._snapshot()
            if snap is not None and not snap.have_pods_with_required_anti_affinity_list():
                return None, Status.skip(plugin=NAME)  # no required terms on either side
        s = self.calc_pre_filter_state(pod, parsed, nodes)
        if not s.has("existing") and not s.affinity_terms and not s.anti_affinity_terms:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> Filtering:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            s.update_with_pod(pod_to_add, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            s.update_with_pod(pod_to_remove, node_info.node, -1)
        return None

    # -- Filter --------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            parsed = affinity_of(pod)
            if parsed.errors:
                return Status.unresolvable(f"parsing pod: {'; '.join(parsed.errors)}", plugin=NAME)
            snap = self._snapshot()
            all_nodes: Sequence[NodeInfo] = snap.list() if snap is not None else [node_info]
            s = self.calc_pre_filter_state(pod, parsed, all_nodes)
            state.write(PRE_FILTER_STATE_KEY, s)
        labels = node.labels

        # the incoming pod's required affinity
        if s.affinity_terms:
            pods_exist = True
            for t in s.affinity_terms:
                tv = labels.get(t.topology_key)
                if tv is None:
                    return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)
                if s.affinity_counts.get((t.topology_key, tv), 0) <= 0:
                    pods_exist = False
            # The first pod of a group with affinity to itself: nothing matches anywhere yet.
            if not pods_exist and not (
                not s.affinity_counts and pod_matches_all_terms(s.affinity_terms, s.pod)
            ):
                return Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME)

        # the incoming pod's required anti-affinity
        if s.anti_affinity_counts:
            for t in s.anti_affinity_terms:
                tv = labels.get(t.topology_key)
                if tv is not None and s.anti_affinity_counts.get((t.topology_key, tv), 0) > 0:
                    return Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME)

        # existing pods' required anti-affinity
        existing = s.existing_anti_affinity_counts
        if existing:
            for item in labels.items():
                if existing.get(item, 0) > 0:
                    return Status.unschedulable(
                        ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME
                    )
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for every node: the three checks as arrays over the nodes' label codes."""
        s = state.get(PRE_FILTER_STATE_KEY)
        br = batch_rows(nodes)
        if br is None or not isinstance(s, PreFilterState):
            return [self.filter(state, pod, ni) for ni in nodes]
        table, rows = br
        labels = self._labels
        if labels.no_node(table)[rows].any():
            return [self.filter(state, pod, ni) for ni in nodes]
        n = len(rows)
        verdict = np.zeros(n, dtype=np.int8)  # 0 pass, 1 affinity, 2 anti-affinity, 3 existing

        if s.affinity_terms:
            missing = np.zeros(n, dtype=np.bool_)
            exist = np.ones(n, dtype=np.bool_)
            for t in s.affinity_terms:
                col = labels.column(table, t.topology_key)
                codes = col.codes[rows]
                missing |= codes < 0
                exist &= s.per_code("affinity", t.topology_key, col)[codes] > 0
            first_of_group = not s.has("affinity") and pod_matches_all_terms(s.affinity_terms, s.pod)
            verdict[missing if first_of_group else missing | ~exist] = 1

        if s.has("anti"):
            bad = np.zeros(n, dtype=np.bool_)
            for t in s.anti_affinity_terms:
                col = labels.column(table, t.topology_key)
                codes = col.codes[rows]
                bad |= (codes >= 0) & (s.per_code("anti", t.topology_key, col)[codes] > 0)
            verdict[(verdict == 0) & bad] = 2

        if s.has("existing"):
            bad = np.zeros(n, dtype=np.bool_)
            for key in s.existing_keys():
                col = labels.column(table, key)
                bad |= s.per_code("existing", key, col)[col.codes[rows]] > 0
            verdict[(verdict == 0) & bad] = 3

        if not verdict.any():
            return [None] * n
        answers = (
            None,
            Status.unresolvable(ERR_REASON_AFFINITY_RULES_NOT_MATCH, plugin=NAME),
            Status.unschedulable(ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME),
            Status.unschedulable(ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH, plugin=NAME),
        )
        return list(map(answers.__getitem__, verdict.tolist()))


def _count_existing_anti(s: PreFilterState, pod: Pod, anti_nodes: Sequence[NodeInfo]) -> None:
    """Node by node: the existing pods' required anti-affinity terms that select the incoming pod."""
    existing = s.existing_anti_affinity_counts
    for ni in anti_nodes:
        node = ni.node
        if node is None:
            continue
        for epi in ni.pods_with_required_anti_affinity:
            for t in terms_of(epi).required_anti_affinity:
                if t.matches(pod, s.namespace_labels):
                    update_counts(existing, node, t.topology_key, 1)


def _count_matching_existing(s: PreFilterState, all_nodes: Sequence[NodeInfo]) -> None:
    """Node by node: the existing pods the incoming pod's required (anti-)affinity terms select."""
    aff_terms, anti_terms = s.affinity_terms, s.anti_affinity_terms
    aff, anti = s.affinity_counts, s.anti_affinity_counts
    for ni in all_nodes:
        node = ni.node
        if node is None:
            continue
        for epi in ni.pods:
            other = epi.pod
            if aff_terms and pod_matches_all_terms(aff_terms, other):
                for t in aff_terms:
                    update_counts(aff, node, t.topology_key, 1)
            for t in anti_terms:
                if t.matches(other, None):
                    update_counts(anti, node, t.topology_key, 1)
