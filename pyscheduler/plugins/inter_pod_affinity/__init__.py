"""InterPodAffinity: place pods near (affinity) or away from (anti-affinity) other pods.

A term selects pods (``labelSelector``, in ``namespaces`` and/or namespaces matching
``namespaceSelector``; neither means the pod's own namespace, ``namespaceSelector: {}`` means all) and
names a ``topologyKey``: a node is "near" a pod when both nodes have the same value for that label.

Extension points
----------------
- PreFilter: counts, per topology pair (key, value): existing pods whose *required anti-affinity*
  selects the incoming pod; existing pods matching *all* the incoming pod's required affinity terms;
  existing pods matching each of its required anti-affinity terms. The incoming pod's namespace
  selectors are resolved to namespace names here (Namespace objects from ``handle.objects``); existing
  pods' selectors are matched against the incoming pod's namespace labels. Returns Skip when the pod
  has no required term and no existing pod's anti-affinity selects it; UnschedulableAndUnresolvable
  when one of the pod's selectors does not parse.
- PreFilterExtensions (add_pod / remove_pod): adjust those counts for preemption's what-ifs.
- Filter, in this order:
  * affinity: the node must have every term's topology key and a matching pod in each term's domain,
    else UnschedulableAndUnresolvable ``ERR_REASON_AFFINITY_RULES_NOT_MATCH``. Exception: when no pod
    anywhere matches and the pod matches its own terms (the first pod of a group), any node with the
    keys passes.
  * anti-affinity: no pod matching a term in the node's domain, else Unschedulable
    ``ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH``.
  * existing pods' anti-affinity: no existing pod whose required anti-affinity selects the incoming pod
    in the node's domain, else Unschedulable ``ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH``.
- PreScore / Score / NormalizeScore: per topology pair, sum ``+weight`` for existing pods matching the
  incoming pod's preferred affinity terms, ``-weight`` for its preferred anti-affinity terms, and, for
  existing pods' terms that select the incoming pod, ``+hardPodAffinityWeight`` (required affinity),
  ``+weight`` (preferred affinity) and ``-weight`` (preferred anti-affinity). A node's raw score is the
  sum over its labels; normalized as ``int(100 * (s - min) / (max - min))`` (0 when all are equal).
- EnqueueExtensions: assigned pod add/delete/label changes (with a hint), node add/label/taint changes
  that bring a topology key the pod needs.

Args (``InterPodAffinityArgs``): ``hardPodAffinityWeight`` (default 1, 0-100),
``ignorePreferredTermsOfExistingPods`` (default false: when true and the incoming pod has no preferred
terms, scoring is skipped).

Parsed terms of existing pods are cached in ``PodInfo.memo["InterPodAffinity"]``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_node,
    as_pod,
)
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    ClusterObjects,
    Handle,
    NodeScoreList,
    PreFilterResult,
    ScoreValues,
)
from pyscheduler.framework.node_rows import (
    I64,
    LabelColumn,
    Mask,
    RowStore,
    TableLabels,
    rows_of,
    snapshot_table,
    sum_by_code,
    table_rows,
)
from pyscheduler.framework.node_table import batch_rows
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity.terms import (
    MEMO_KEY,
    AffinityTerm,
    ParsedAffinity,
    WeightedAffinityTerm,
    parse_affinity,
    pod_matches_all_terms,
    terms_of,
)

NAME = MEMO_KEY  # "InterPodAffinity": parsed terms are memoized under the plugin's name

ERR_REASON_EXISTING_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY_RULES_NOT_MATCH = "node(s) didn't match pod anti-affinity rules"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

TopologyPair = tuple[str, str]
TopologyCounts = dict[TopologyPair, int]


@dataclass(frozen=True)
class InterPodAffinityArgs:
    hard_pod_affinity_weight: int = 1
    ignore_preferred_terms_of_existing_pods: bool = False

    def validate(self, path: str) -> None:
        w = self.hard_pod_affinity_weight
        if w < 0 or w > 100:
            raise ArgsError(
                f"{path}.hardPodAffinityWeight", f"Invalid value: {w}: not in valid range [0, 100]"
            )


def _update(m: TopologyCounts, node: Node, key: str, value: int) -> None:
    tv = node.labels.get(key)
    if tv is None:
        return
    pair = (key, tv)
    n = m.get(pair, 0) + value
    if n == 0:
        m.pop(pair, None)
    else:
        m[pair] = n


def _frozen(labels: Mapping[str, str] | None) -> frozenset[tuple[str, str]] | None:
    return None if labels is None else frozenset(labels.items())


def _pair_codes(counts: TopologyCounts, key: str, col: LabelColumn) -> I64:
    """The counts of the pairs (``key``, value) as an array over ``col``'s codes (trailing 0)."""
    out = [0] * (len(col.values) + 1)
    index = col.index
    for (k, v), n in counts.items():
        if k == key:
            c = index.get(v)
            if c is not None:
                out[c] = n
    return np.array(out, dtype=np.int64)


def _nonzero_pairs(key: str, col: LabelColumn, arr: I64) -> dict[TopologyPair, int]:
    ks = np.flatnonzero(arr[:-1])
    values = col.values
    return dict(zip([(key, values[k]) for k in ks.tolist()], arr[ks].tolist(), strict=True))


_KINDS = ("affinity", "anti", "existing")


class PreFilterState:
    """The three TopologyCounts. The fast PreFilter leaves them as arrays over label codes (in
    ``_per_code``, the kinds listed in ``_pending``); the dicts are built on first access (Filter node
    by node, add/remove_pod, clone), and filter_nodes reads the arrays."""

    __slots__ = (
        "_counts",
        "_existing_keys",
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

    def _get(self, kind: str) -> TopologyCounts:
        if kind in self._pending:
            d: TopologyCounts = {}
            for (k, key), (col, arr) in self._per_code.items():
                if k == kind:
                    d.update(_nonzero_pairs(key, col, arr))
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

    def set_arrays(self, kind: str, key: str, col: LabelColumn, arr: I64) -> None:
        """Counts of ``kind`` for ``key`` as an array over ``col``'s codes (fast PreFilter, on a fresh
        state: every entry non-negative, zero meaning no pair)."""
        self._per_code[(kind, key)] = (col, arr)
        self._pending.add(kind)

    def has(self, kind: str) -> bool:
        """Whether the counts of ``kind`` are non-empty, without building the dict."""
        if kind in self._pending:
            return any(k == kind and bool(arr.any()) for (k, _), (_, arr) in self._per_code.items())
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
            arr = _pair_codes(self._get(kind), key, col)
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
        other = pi.pod
        for t in terms_of(pi).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                _update(existing, node, t.topology_key, multiplier)
        if pod_matches_all_terms(self.affinity_terms, other):
            for t in self.affinity_terms:
                _update(aff, node, t.topology_key, multiplier)
        for t in self.anti_affinity_terms:
            if t.matches(other, None):
                _update(anti, node, t.topology_key, multiplier)


class PreScoreState:
    """Topology key -> value -> score. The fast PreScore gives arrays over label codes instead
    (``arrays``: key -> (label column, scores with a trailing 0, which codes have a score)); the dict
    is built on first access."""

    __slots__ = ("_score", "arrays")

    def __init__(
        self,
        topology_score: dict[str, dict[str, int]] | None = None,
        arrays: dict[str, tuple[LabelColumn, I64, Mask]] | None = None,
    ) -> None:
        self._score = topology_score
        self.arrays = arrays

    @property
    def topology_score(self) -> dict[str, dict[str, int]]:
        if self._score is None:
            score: dict[str, dict[str, int]] = {}
            for key, (col, tot, present) in (self.arrays or {}).items():
                ks = np.flatnonzero(present)
                score[key] = dict(zip([col.values[k] for k in ks.tolist()], tot[ks].tolist(), strict=True))
            self._score = score
        return self._score

    def is_empty(self) -> bool:
        if self._score is None:
            return not self.arrays
        return not self._score

    def clone(self) -> PreScoreState:
        return self


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args or InterPodAffinityArgs()
        self._handle = handle
        # per-node caches over the snapshot's NodeTable (see _rows): label codes, per-node matches
        self._labels = TableLabels()
        self._rows = RowStore()

    # -- helpers ------------------------------------------------------------------------------------

    def _objects(self) -> ClusterObjects | None:
        objs: ClusterObjects | None = getattr(self._handle, "objects", None)
        return objs

    def _snapshot(self) -> Any:
        return getattr(self._handle, "snapshot", None)

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
        # existing pods' required anti-affinity selecting the incoming pod
        snap = self._snapshot()
        if snap is not None:
            anti_nodes: Sequence[NodeInfo] = snap.have_pods_with_required_anti_affinity_list()
        else:
            anti_nodes = [n for n in all_nodes if n.pods_with_required_anti_affinity]
        existing = s.existing_anti_affinity_counts
        ns_labels = s.namespace_labels
        for ni in anti_nodes:
            node = ni.node
            if node is None:
                continue
            for epi in ni.pods_with_required_anti_affinity:
                for t in terms_of(epi).required_anti_affinity:
                    if t.matches(pod, ns_labels):
                        _update(existing, node, t.topology_key, 1)

        # existing pods matching the incoming pod's required (anti-)affinity
        aff_terms = s.affinity_terms
        anti_terms = s.anti_affinity_terms
        if aff_terms or anti_terms:
            aff = s.affinity_counts
            anti = s.anti_affinity_counts
            for ni in all_nodes:
                node = ni.node
                if node is None:
                    continue
                for epi in ni.pods:
                    other = epi.pod
                    if aff_terms and pod_matches_all_terms(aff_terms, other):
                        for t in aff_terms:
                            _update(aff, node, t.topology_key, 1)
                    for t in anti_terms:
                        if t.matches(other, None):
                            _update(anti, node, t.topology_key, 1)
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
        if table is None:
            return False
        anti_nodes: Sequence[NodeInfo] = snap.have_pods_with_required_anti_affinity_list()
        aff_terms = s.affinity_terms
        if not anti_nodes and not aff_terms and not s.anti_affinity_terms:
            return True  # nothing to count
        anti_rows = rows_of(table, anti_nodes)
        if anti_rows is None:
            return False
        rows = rows_of(table, all_nodes) if aff_terms or s.anti_affinity_terms else anti_rows
        if rows is None:
            return False
        size = table.size
        labels = self._labels
        acc: dict[tuple[str, str], tuple[LabelColumn, I64]] = {}

        # existing pods' required anti-affinity selecting the incoming pod
        if len(anti_nodes):
            ns_labels = s.namespace_labels
            key = ("existing", pod.namespace, _frozen(pod.labels), _frozen(ns_labels))
            rk = self._rows.keyed(key, size)

            def existing(ni: NodeInfo) -> dict[str, list[int]]:
                out: dict[str, list[int]] = {}
                for epi in ni.pods_with_required_anti_affinity:
                    for t in terms_of(epi).required_anti_affinity:
                        if t.matches(pod, ns_labels):
                            e = out.get(t.topology_key)
                            if e is None:
                                out[t.topology_key] = [1, 1]
                            else:
                                e[0] += 1
                                e[1] += 1
                return out

            rk.refresh(anti_rows, table.generation[anti_rows], anti_nodes, existing)
            for tk, sums in rk.sums.items():
                col = labels.column(table, tk)
                hits = rk.hits[tk][anti_rows] > 0
                self._accumulate(acc, "existing", tk, col, col.codes[anti_rows], sums[anti_rows], hits)

        # existing pods matching the incoming pod's required (anti-)affinity
        gens = table.generation[rows]
        for t in s.anti_affinity_terms:

            def anti_matches(ni: NodeInfo, t: AffinityTerm = t) -> int:
                return sum(1 for epi in ni.pods if t.matches(epi.pod, None))

            cnt = self._rows.ints(("anti", t), size).get(rows, gens, all_nodes, anti_matches)
            col = labels.column(table, t.topology_key)
            self._accumulate(acc, "anti", t.topology_key, col, col.codes[rows], cnt, cnt > 0)
        if aff_terms:

            def aff_matches(ni: NodeInfo) -> int:
                return sum(1 for epi in ni.pods if pod_matches_all_terms(aff_terms, epi.pod))

            cnt = self._rows.ints(("affinity", aff_terms), size).get(rows, gens, all_nodes, aff_matches)
            for t in aff_terms:
                col = labels.column(table, t.topology_key)
                self._accumulate(acc, "affinity", t.topology_key, col, col.codes[rows], cnt, cnt > 0)
        for (kind, tk), (col, arr) in acc.items():
            s.set_arrays(kind, tk, col, arr)
        return True

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        parsed = parse_affinity(pod)
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

    def pre_filter_extensions(self) -> InterPodAffinity:
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
            parsed = parse_affinity(pod)
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

    # -- Score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        aff = pod.affinity or {}
        pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
        has_constraints = bool((aff.get("podAffinity") or {}).get(pref_key)) or bool(
            (aff.get("podAntiAffinity") or {}).get(pref_key)
        )
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip(plugin=NAME)

        snap = self._snapshot()
        scan: Sequence[NodeInfo]
        if snap is not None:
            scan = snap.list() if has_constraints else snap.have_pods_with_affinity_list()
        else:
            scan = nodes if has_constraints else [n for n in nodes if n.pods_with_affinity]

        parsed = parse_affinity(pod)
        if parsed.errors:
            return Status.as_error(f"failed to parse pod: {'; '.join(parsed.errors)}", plugin=NAME)
        if not has_constraints and not scan:  # no terms on either side: nothing would score
            return Status.skip(plugin=NAME)
        pref_aff = self._merge_weighted(parsed.preferred_affinity)
        pref_anti = self._merge_weighted(parsed.preferred_anti_affinity)
        ns_labels = self.namespace_labels(pod.namespace)
        hard_weight = self.args.hard_pod_affinity_weight

        fast = self._fast_pre_score(pod, scan, has_constraints, pref_aff, pref_anti, ns_labels, hard_weight)
        if fast is not None:
            if fast.is_empty():
                return Status.skip(plugin=NAME)
            state.write(PRE_SCORE_STATE_KEY, fast)
            return None

        score: dict[str, dict[str, int]] = {}

        def add(key: str, node_labels: Mapping[str, str], value: int) -> None:
            tv = node_labels.get(key)
            if tv is None:
                return
            per_key = score.get(key)
            if per_key is None:
                per_key = score[key] = {}
            per_key[tv] = per_key.get(tv, 0) + value

        for ni in scan:
            node = ni.node
            if node is None or not node.labels:
                continue
            node_labels = node.labels
            pods = ni.pods if has_constraints else ni.pods_with_affinity
            for epi in pods:
                other = epi.pod
                # the incoming pod's preferred terms against the existing pod
                for w in pref_aff:
                    if w.term.matches(other, None):
                        add(w.term.topology_key, node_labels, w.weight)
                for w in pref_anti:
                    if w.term.matches(other, None):
                        add(w.term.topology_key, node_labels, -w.weight)
                if not epi.has_affinity:
                    continue
                # the existing pod's terms against the incoming pod
                et = terms_of(epi)
                if hard_weight > 0:
                    for t in et.required_affinity:
                        if t.matches(pod, ns_labels):
                            add(t.topology_key, node_labels, hard_weight)
                for w in et.preferred_affinity:
                    if w.term.matches(pod, ns_labels):
                        add(w.term.topology_key, node_labels, w.weight)
                for w in et.preferred_anti_affinity:
                    if w.term.matches(pod, ns_labels):
                        add(w.term.topology_key, node_labels, -w.weight)

        if not score:
            return Status.skip(plugin=NAME)
        state.write(PRE_SCORE_STATE_KEY, PreScoreState(score))
        return None

    def _fast_pre_score(
        self,
        pod: Pod,
        scan: Sequence[NodeInfo],
        has_constraints: bool,
        pref_aff: tuple[WeightedAffinityTerm, ...],
        pref_anti: tuple[WeightedAffinityTerm, ...],
        ns_labels: Mapping[str, str] | None,
        hard_weight: int,
    ) -> PreScoreState | None:
        """pre_score's topology scores, as arrays over label codes, from per-row caches; None when
        ``scan`` is not table rows."""
        table = snapshot_table(self._snapshot())
        if table is None:
            return None
        rows = rows_of(table, scan)
        if rows is None:
            return None
        key: Hashable = (
            "score",
            has_constraints,
            pref_aff,
            pref_anti,
            pod.namespace,
            _frozen(pod.labels),
            _frozen(ns_labels),
            hard_weight,
        )
        rk = self._rows.keyed(key, table.size)

        def node_score(ni: NodeInfo) -> dict[str, list[int]]:
            out: dict[str, list[int]] = {}

            def add(k: str, value: int) -> None:
                e = out.get(k)
                if e is None:
                    out[k] = [value, 1]
                else:
                    e[0] += value
                    e[1] += 1

            for epi in ni.pods if has_constraints else ni.pods_with_affinity:
                other = epi.pod
                for w in pref_aff:
                    if w.term.matches(other, None):
                        add(w.term.topology_key, w.weight)
                for w in pref_anti:
                    if w.term.matches(other, None):
                        add(w.term.topology_key, -w.weight)
                if not epi.has_affinity:
                    continue
                et = terms_of(epi)
                if hard_weight > 0:
                    for t in et.required_affinity:
                        if t.matches(pod, ns_labels):
                            add(t.topology_key, hard_weight)
                for w in et.preferred_affinity:
                    if w.term.matches(pod, ns_labels):
                        add(w.term.topology_key, w.weight)
                for w in et.preferred_anti_affinity:
                    if w.term.matches(pod, ns_labels):
                        add(w.term.topology_key, -w.weight)
            return out

        rk.refresh(rows, table.generation[rows], scan, node_score)
        arrays: dict[str, tuple[LabelColumn, I64, Mask]] = {}
        for k, sums in rk.sums.items():
            col = self._labels.column(table, k)
            r = sum_by_code(len(col.values), col.codes[rows], sums[rows], rk.hits[k][rows] > 0)
            if r is not None:
                arrays[k] = (col, r[0], r[1])
        return PreScoreState(arrays=arrays)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        node = node_info.node
        if not isinstance(s, PreScoreState) or node is None:
            return 0, None
        labels = node.labels
        total = 0
        for key, values in s.topology_score.items():
            tv = labels.get(key)
            if tv is not None:
                total += values.get(tv, 0)
        return total, None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        """``score`` for every node: per topology key, the scores looked up by label code."""
        s = state.get(PRE_SCORE_STATE_KEY)
        br = table_rows(nodes, self._snapshot())
        if br is None or not isinstance(s, PreScoreState):
            return [self.score(state, pod, ni)[0] for ni in nodes], None
        table, rows = br
        total = np.zeros(len(rows), dtype=np.int64)
        arrays = s.arrays
        for key in arrays if arrays is not None else s.topology_score:
            col = self._labels.column(table, key)
            hit = arrays.get(key) if arrays is not None else None
            if hit is not None and hit[0] is col:
                per = hit[1]  # zero for codes without a score, as values.get(v, 0)
            else:
                per = col.per_code(s.topology_score[key])
            total += per[col.codes[rows]]
        return total, None

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or s.is_empty() or not scores:
            return None
        max_count = max(ns.score for ns in scores)
        min_count = min(ns.score for ns in scores)
        diff = max_count - min_count
        for ns in scores:
            f = 0.0
            if diff > 0:
                f = float(MAX_NODE_SCORE) * (float(ns.score - min_count) / float(diff))
            ns.score = int(f)
        return None

    # -- queueing hints ------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.ADD | Action.UPDATE_POD_LABEL | Action.DELETE),
                self.is_schedulable_after_pod_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        try:
            old_pod = as_pod(old)
            new_pod = as_pod(new)
        except (TypeError, ValueError):
            return QueueingHint.QUEUE
        if (new_pod is not None and not new_pod.node_name) or (old_pod is not None and not old_pod.node_name):
            return QueueingHint.SKIP
        parsed = parse_affinity(pod)
        if parsed.errors:
            return QueueingHint.QUEUE
        terms = parsed.required_affinity
        anti = parsed.required_anti_affinity
        if new_pod is not None and old_pod is not None:
            if not pod_matches_all_terms(terms, old_pod) and pod_matches_all_terms(terms, new_pod):
                return QueueingHint.QUEUE
            if pod_matches_all_terms(anti, old_pod) and not pod_matches_all_terms(anti, new_pod):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_pod is not None:
            return QueueingHint.QUEUE if pod_matches_all_terms(terms, new_pod) else QueueingHint.SKIP
        if old_pod is not None and pod_matches_all_terms(anti, old_pod):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        try:
            node = as_node(new)
        except (TypeError, ValueError):
            return QueueingHint.QUEUE
        if node is None:
            return QueueingHint.QUEUE
        parsed = parse_affinity(pod)
        if parsed.errors:
            return QueueingHint.QUEUE
        for t in (*parsed.required_affinity, *parsed.required_anti_affinity):
            if t.topology_key in node.labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: InterPodAffinityArgs | None, handle: Handle) -> InterPodAffinity:
    return InterPodAffinity(args, handle)


PLUGIN = PluginSpec(
    NAME, new, InterPodAffinityArgs, "pod affinity and anti-affinity (required and preferred)"
)
