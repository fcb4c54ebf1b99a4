"""PreScore (weighted topology scores from preferred terms, both ways), Score node by node and over a
NodeBatch, and NormalizeScore."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    NodeScoreList,
    ScoreValues,
)
from pyscheduler.framework.node_rows import (
    I64,
    LabelColumn,
    Mask,
    rows_of,
    snapshot_table,
    sum_by_code,
    table_rows,
)
from pyscheduler.framework.node_table import NodeTable
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo
from pyscheduler.plugins.inter_pod_affinity.common import (
    NAME,
    PRE_SCORE_STATE_KEY,
    PluginBase,
)
from pyscheduler.plugins.inter_pod_affinity.terms import (
    WeightedAffinityTerm,
    affinity_of,
    term_picks,
    terms_of,
)


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


class Scoring(PluginBase):
    # -- Score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        has_constraints = _has_preferred_terms(pod)
        if self.args.ignore_preferred_terms_of_existing_pods and not has_constraints:
            return Status.skip(plugin=NAME)
        snap = self._snapshot()
        scan: Sequence[NodeInfo]
        if snap is not None:
            scan = snap.list() if has_constraints else snap.have_pods_with_affinity_list()
        else:
            scan = nodes if has_constraints else [n for n in nodes if n.pods_with_affinity]
        parsed = affinity_of(pod)
        if parsed.errors:
            return Status.as_error(f"failed to parse pod: {'; '.join(parsed.errors)}", plugin=NAME)
        if not has_constraints and not scan:  # no terms on either side: nothing would score
            return Status.skip(plugin=NAME)
        q = _ScoreQuery(
            pod,
            scan,
            has_constraints,
            self._merge_weighted(parsed.preferred_affinity),
            self._merge_weighted(parsed.preferred_anti_affinity),
            self.namespace_labels(pod.namespace),
            self.args.hard_pod_affinity_weight,
        )
        s = self._indexed_pre_score(q)
        if s is None:
            s = PreScoreState(_node_by_node_scores(q))
        if s.is_empty():
            return Status.skip(plugin=NAME)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def _indexed_pre_score(self, q: _ScoreQuery) -> PreScoreState | None:
        """pre_score's topology scores as arrays over label codes: the existing pods' terms from the
        index (existing_index.py), the incoming pod's preferred terms from per-row counts cached per
        term set; None when ``q.scan`` is not the table's current rows."""
        table = snapshot_table(self._snapshot())
        if table is None:
            return None
        index = self._existing_index(table)
        if index is None:
            return None
        # The existing pods' terms come over the whole table (rows without such pods add nothing); the
        # incoming pod's terms need the scanned rows (every node, in the table's order, when it has
        # preferred terms).
        rows: I64 | None = None
        if q.has_constraints:
            rows = rows_of(table, q.scan)
            if rows is None:
                return None
            if len(rows) == table.size and (not len(rows) or (rows[0] == 0 and rows[-1] == len(rows) - 1)):
                rows = None  # the whole table in order: no indexing needed
        parts: dict[str, tuple[I64, Mask]] = {
            k: (sums, present) if rows is None else (sums[rows], present[rows])
            for k, (sums, present) in index.score_rows(q.pod, q.ns_labels, q.hard_weight).items()
        }
        if q.has_constraints and (q.pref_aff or q.pref_anti):
            incoming = self._incoming_parts(table, rows, q)
            if incoming is None:
                return None
            for k, (add, hits) in incoming.items():
                prev = parts.get(k)
                if prev is None:
                    parts[k] = (add, hits)
                else:  # score_rows' arrays are fresh: add in place
                    prev[0][:] += add
                    prev[1][:] |= hits
        arrays: dict[str, tuple[LabelColumn, I64, Mask]] = {}
        for k, (sums, present) in parts.items():
            col = self._labels.column(table, k)
            r = sum_by_code(len(col.values), col.codes if rows is None else col.codes[rows], sums, present)
            if r is not None:
                arrays[k] = (col, r[0], r[1])
        return PreScoreState(arrays=arrays)

    def _incoming_parts(
        self, table: NodeTable, rows: I64 | None, q: _ScoreQuery
    ) -> dict[str, tuple[I64, Mask]] | None:
        """The incoming pod's preferred terms against every existing pod, per topology key: weights and
        hits per scanned row (all rows when ``rows`` is None); None when the table is behind its
        NodeInfos. Each term's per-row counts come from the pods by kind (framework/pod_kinds.py)."""
        kinds = self._pod_kinds(table)
        if kinds is None:
            return None
        out: dict[str, tuple[I64, Mask]] = {}
        for terms, sign in ((q.pref_aff, 1), (q.pref_anti, -1)):
            for w in terms:
                t = w.term
                cnt = kinds.counts(("term", t), partial(term_picks, t))
                if rows is not None:
                    cnt = cnt[rows]
                hit = out.get(t.topology_key)
                if hit is None:
                    out[t.topology_key] = (cnt * (sign * w.weight), cnt > 0)
                else:
                    hit[0][:] += cnt * (sign * w.weight)
                    hit[1][:] |= cnt > 0
        return out

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

    def score_extensions(self) -> Scoring:
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


@dataclass(frozen=True, slots=True)
class _ScoreQuery:
    """What PreScore asks of the existing pods for one incoming pod."""

    pod: Pod
    scan: Sequence[NodeInfo]
    has_constraints: bool  # the incoming pod has preferred terms: every node is scanned
    pref_aff: tuple[WeightedAffinityTerm, ...]
    pref_anti: tuple[WeightedAffinityTerm, ...]
    ns_labels: Mapping[str, str] | None
    hard_weight: int


def _has_preferred_terms(pod: Pod) -> bool:
    aff = pod.affinity or {}
    pref_key = "preferredDuringSchedulingIgnoredDuringExecution"
    return bool((aff.get("podAffinity") or {}).get(pref_key)) or bool(
        (aff.get("podAntiAffinity") or {}).get(pref_key)
    )


def _incoming_hits(
    pref_aff: Sequence[WeightedAffinityTerm], pref_anti: Sequence[WeightedAffinityTerm], other: Pod
) -> Iterator[tuple[str, int]]:
    """(topology key, weight) of each of the incoming pod's preferred terms that selects ``other``."""
    for w in pref_aff:
        if w.term.matches(other, None):
            yield w.term.topology_key, w.weight
    for w in pref_anti:
        if w.term.matches(other, None):
            yield w.term.topology_key, -w.weight


def _existing_hits(epi: PodInfo, q: _ScoreQuery) -> Iterator[tuple[str, int]]:
    """(topology key, weight) of each of an existing pod's terms that selects the incoming pod."""
    et = terms_of(epi)
    if q.hard_weight > 0:
        for t in et.required_affinity:
            if t.matches(q.pod, q.ns_labels):
                yield t.topology_key, q.hard_weight
    for w in et.preferred_affinity:
        if w.term.matches(q.pod, q.ns_labels):
            yield w.term.topology_key, w.weight
    for w in et.preferred_anti_affinity:
        if w.term.matches(q.pod, q.ns_labels):
            yield w.term.topology_key, -w.weight


def _node_by_node_scores(q: _ScoreQuery) -> dict[str, dict[str, int]]:
    """PreScore's topology scores node by node (kube's processExistingPod over the scanned nodes): the
    path for nodes that are not the table's current rows."""
    score: dict[str, dict[str, int]] = {}
    for ni in q.scan:
        node = ni.node
        if node is None or not node.labels:
            continue
        labels = node.labels
        for epi in ni.pods if q.has_constraints else ni.pods_with_affinity:
            hits = _incoming_hits(q.pref_aff, q.pref_anti, epi.pod)
            if epi.has_affinity:
                hits = itertools.chain(hits, _existing_hits(epi, q))
            for key, value in hits:
                tv = labels.get(key)
                if tv is not None:
                    per_key = score.setdefault(key, {})
                    per_key[tv] = per_key.get(tv, 0) + value
    return score
