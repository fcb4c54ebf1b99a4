"""NodeAffinity: a pod goes only to nodes matching its nodeSelector and required node affinity, and
prefers nodes matching its preferred node affinity terms.

Filter: the node must match

1. the profile's ``addedAffinity.requiredDuringSchedulingIgnoredDuringExecution`` if set, else the reason
   is "node(s) didn't match scheduler-enforced node affinity";
2. every ``spec.nodeSelector`` label, and
3. at least one term of ``spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution``
   (a term ANDs its ``matchExpressions`` on labels and ``matchFields`` on ``metadata.name``; a term with
   neither matches nothing, and so does a required affinity with no terms),

else the reason is "node(s) didn't match Pod's node affinity/selector". Both are UnschedulableAndUnresolvable.
As in kube, a pod term that does not parse is ignored (the others still count).

PreFilter: Skip (so Filter does not run) when the pod has no nodeSelector, no required node affinity and
the profile no required ``addedAffinity``. When every required term names nodes with ``matchFields
metadata.name In [...]``, the result narrows Filter to those nodes (the union over terms of each term's
intersection); if that set is empty the pod fails with "pod affinity terms conflict"
(UnschedulableAndUnresolvable).

PreScore/Score: the score of a node is the sum of the weights of the preferred terms it matches, the pod's
``preferredDuringSchedulingIgnoredDuringExecution`` plus the profile's ``addedAffinity`` preferred terms.
PreScore returns Skip when there are neither. NormalizeScore is kube's DefaultNormalizeScore:
``100 * score // max`` (all zero stays zero).

Extension points: PreFilter, Filter, PreScore, Score (+ NormalizeScore), EnqueueExtensions.

Batch: ``filter_nodes`` / ``score_nodes`` answer for a NodeBatch from per-row answers cached per
snapshot table epoch and requirement (``batch``); terms with ``matchFields`` and other node lists go
node by node.

Args (``NodeAffinityArgs``):

- ``addedAffinity`` (a v1 NodeAffinity object, default none): applied to every pod of the profile on top of
  the pod's own; its required part is ANDed with the pod's requirements, its preferred terms add to the
  score. Validated at load (operators, values, label keys, ``matchFields`` only on ``metadata.name``);
  errors name the field, e.g.
  ``args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator``.

Queueing hint (kube's): Node Add / UpdateNodeLabel queue the pod when the node matches the added affinity
and the pod's required affinity, and (for an update) did not match it before.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_node,
)
from pyscheduler.framework.helpers import default_normalize_score, default_normalize_values, signers
from pyscheduler.framework.helpers.node_affinity import (
    PREFERRED,
    REQUIRED,
    RequiredNodeAffinity,
    WeightedTerm,
    compile_node_selector,
    compile_preferred,
    pod_node_affinity,
    preferred_score,
    split_error,
    terms_match,
)
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    NodeScoreList,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
    ScoreValues,
)
from pyscheduler.framework.node_table import NodeTable, batch_rows
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.selectors import NodeSelectorTerm
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import JSON, Node, NodeInfo, Pod
from pyscheduler.plugins.node_affinity.batch import RowCache, per_row, term_keys

NAME = "NodeAffinity"
PRE_FILTER_STATE_KEY = f"PreFilter{NAME}"
PRE_SCORE_STATE_KEY = f"PreScore{NAME}"

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"

_ADDED_AFFINITY_KEYS = frozenset({REQUIRED, PREFERRED})

# Statuses are immutable: one object serves every node Filter rejects.
_REJECT_POD = Status.unresolvable(ERR_REASON_POD, plugin=NAME)
_REJECT_ENFORCED = Status.unresolvable(ERR_REASON_ENFORCED, plugin=NAME)


# ------------------------------------------------------------------------------------------ args


@dataclass(frozen=True)
class NodeAffinityArgs:
    """``addedAffinity``: a v1 NodeAffinity applied to all pods of the profile (None: none)."""

    added_affinity: JSON | None = None

    def validate(self, path: str) -> None:
        compile_added_affinity(self.added_affinity, f"{path}.addedAffinity")


@dataclass(frozen=True, slots=True)
class AddedAffinity:
    """``required`` None: no enforced selector; ``preferred`` None: no added preferred terms."""

    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[WeightedTerm, ...] | None = None


def compile_added_affinity(raw: Mapping[str, Any] | None, where: str) -> AddedAffinity:
    """Parse ``addedAffinity``; ArgsError naming the first bad field."""
    if raw is None:
        return AddedAffinity()
    if not isinstance(raw, Mapping):
        raise ArgsError(where, f"must be an object, got {type(raw).__name__}")
    for k in raw:
        if k not in _ADDED_AFFINITY_KEYS:
            raise ArgsError(
                f"{where}.{k}", f"unknown field; known fields: {', '.join(sorted(_ADDED_AFFINITY_KEYS))}"
            )
    required: tuple[NodeSelectorTerm, ...] | None = None
    preferred: tuple[WeightedTerm, ...] | None = None
    if raw.get(REQUIRED) is not None:
        required, errors = compile_node_selector(raw[REQUIRED], f"{where}.{REQUIRED}", strict=True)
        if errors:
            raise ArgsError(*split_error(errors[0]))
    raw_preferred = raw.get(PREFERRED)
    if raw_preferred is not None and not isinstance(raw_preferred, list | tuple):
        raise ArgsError(f"{where}.{PREFERRED}", f"must be a list, got {type(raw_preferred).__name__}")
    if raw_preferred:
        preferred, errors = compile_preferred(raw[PREFERRED], f"{where}.{PREFERRED}", strict=True)
        if errors:
            raise ArgsError(*split_error(errors[0]))
    return AddedAffinity(required, preferred)


# ------------------------------------------------------------------------------- pod's affinity


def pod_preferred_terms(pod: Pod) -> tuple[tuple[WeightedTerm, ...] | None, tuple[str, ...]]:
    """The pod's preferred node affinity terms (None when it has none) and their parse errors."""
    raw = pod_node_affinity(pod).get(PREFERRED)
    if raw is None:
        return None, ()
    return compile_preferred(raw, f"spec.affinity.nodeAffinity.{PREFERRED}")


def _node_names_from_fields(raw_terms: Sequence[Any]) -> frozenset[str] | None:
    """kube's PreFilter narrowing: None unless every term has ``metadata.name In`` matchFields; then the
    union over terms of the intersection of each term's name sets."""
    names: set[str] = set()
    for t in raw_terms:
        term_names: set[str] | None = None
        fields = t.get("matchFields") if isinstance(t, Mapping) else None
        for r in fields or ():
            if isinstance(r, Mapping) and r.get("key") == "metadata.name" and r.get("operator") == "In":
                values = {str(v) for v in r.get("values") or ()}
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None  # this term does not pin node names: any node may match
        names |= term_names
    return frozenset(names)


# ---------------------------------------------------------------------------------------- helpers


# ----------------------------------------------------------------------------------------- plugin


class NodeAffinity:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [
            (signers.NODE_AFFINITY, signers.node_affinity(pod)),
            (signers.NODE_SELECTOR, signers.mapping(pod.node_selector)),
        ], None

    def __init__(self, args: NodeAffinityArgs | None = None) -> None:
        args = args or NodeAffinityArgs()
        added = compile_added_affinity(args.added_affinity, "addedAffinity")
        self.added_required = added.required
        self.added_preferred = added.preferred
        self._added_keys, self._added_uses_name = term_keys(added.required or ())
        self._pref_keys, self._pref_uses_name = term_keys(w.term for w in added.preferred or ())
        self._filter_cache: RowCache[list[Status | None]] = RowCache()
        self._score_cache: RowCache[npt.NDArray[np.int64]] = RowCache()

    # ---------------------------------------------------------------------------------- Filter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        required = pod_node_affinity(pod).get(REQUIRED)
        if required is None and self.added_required is None and not pod.node_selector:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, RequiredNodeAffinity.of(pod))
        raw_terms = required.get("nodeSelectorTerms") if isinstance(required, Mapping) else None
        if not raw_terms or not isinstance(raw_terms, list | tuple):
            return None, None
        names = _node_names_from_fields(raw_terms)
        if names is None:
            return None, None
        if not names:
            return None, Status.unresolvable(ERR_REASON_CONFLICT, plugin=NAME)
        return PreFilterResult(names), None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return _REJECT_POD
        if self.added_required is not None and not terms_match(self.added_required, node):
            return _REJECT_ENFORCED
        req = state.get(PRE_FILTER_STATE_KEY)
        if req is None:
            req = RequiredNodeAffinity.of(pod)  # PreFilter did not run
        if not req.matches(node):
            return _REJECT_POD
        return None

    def _filter_node(self, req: RequiredNodeAffinity, node: Node) -> Status | None:
        """``filter`` for a node that is there, with the pod's requirement in hand."""
        if self.added_required is not None and not terms_match(self.added_required, node):
            return _REJECT_ENFORCED
        if not req.matches(node):
            return _REJECT_POD
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Sequence[Status | None]:
        req: RequiredNodeAffinity | None = state.get(PRE_FILTER_STATE_KEY)
        if req is None:
            req = RequiredNodeAffinity.of(pod)  # PreFilter did not run
        tr = batch_rows(nodes)
        if tr is not None:
            table, rows = tr
            statuses = self._row_statuses(table, req)
            if statuses is not None:
                return [statuses[r] for r in rows.tolist()]
        check = self._filter_node
        return [_REJECT_POD if (n := ni.node) is None else check(req, n) for ni in nodes]

    def _row_statuses(self, table: NodeTable, req: RequiredNodeAffinity) -> list[Status | None] | None:
        """Filter's answer for every row of ``table``, or None for terms that read node names."""
        cache = self._filter_cache
        cache.sync(table)
        last = cache.last
        if last is not None and last[0] is req:  # the same pod again (the next chunk of its nodes)
            return last[1]
        keys, uses_name = term_keys(req.terms or ())
        statuses: list[Status | None] | None = None
        if not uses_name and not self._added_uses_name:
            key = (req.selector, req.terms)
            statuses = cache.get(key)
            if statuses is None:
                keys.update(k for k, _ in req.selector)
                keys.update(self._added_keys)
                check = self._filter_node
                statuses = per_row(table, keys, lambda n: check(req, n), _REJECT_POD)
                cache.put(key, statuses)
        cache.last = (req, statuses)
        return statuses

    # ----------------------------------------------------------------------------------- Score
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        preferred, errors = pod_preferred_terms(pod)
        if errors:
            return Status.as_error(f"parsing pod's preferred node affinity: {'; '.join(errors)}", plugin=NAME)
        if preferred is None and self.added_preferred is None:
            return Status.skip(plugin=NAME)
        state.write(PRE_SCORE_STATE_KEY, preferred or ())
        return None

    def _score_node(self, preferred: Sequence[WeightedTerm] | None, node: Node) -> int:
        """``score`` for a node that is there, with the pod's preferred terms in hand."""
        total = 0
        if self.added_preferred:
            total += preferred_score(self.added_preferred, node)
        if preferred:
            total += preferred_score(preferred, node)
        return total

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        preferred: tuple[WeightedTerm, ...] | None = state.get(PRE_SCORE_STATE_KEY)
        if preferred is None:  # PreScore did not run
            preferred, errors = pod_preferred_terms(pod)
            if errors and any(ni.node is not None for ni in nodes):  # ``score`` fails on such a node
                return [], Status.as_error(
                    f"parsing pod's preferred node affinity: {'; '.join(errors)}", plugin=NAME
                )
        if not preferred and not self.added_preferred:
            return [0] * len(nodes), None
        tr = batch_rows(nodes)
        if tr is not None:
            table, rows = tr
            values = self._row_scores(table, preferred or ())
            if values is not None:
                return values[rows], None
        score = self._score_node
        return [0 if (n := ni.node) is None else score(preferred, n) for ni in nodes], None

    def _row_scores(
        self, table: NodeTable, preferred: tuple[WeightedTerm, ...]
    ) -> npt.NDArray[np.int64] | None:
        """Score for every row of ``table``, or None for terms that read node names."""
        cache = self._score_cache
        cache.sync(table)
        last = cache.last
        if last is not None and last[0] is preferred:
            return last[1]
        keys, uses_name = term_keys(w.term for w in preferred)
        values: npt.NDArray[np.int64] | None = None
        if not uses_name and not self._pref_uses_name:
            values = cache.get(preferred)
            if values is None:
                keys.update(self._pref_keys)
                score = self._score_node
                values = np.array(per_row(table, keys, lambda n: score(preferred, n), 0), dtype=np.int64)
                cache.put(preferred, values)
        cache.last = (preferred, values)
        return values

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        node = node_info.node
        if node is None:
            return 0, None
        total = 0
        if self.added_preferred:
            total += preferred_score(self.added_preferred, node)
        preferred = state.get(PRE_SCORE_STATE_KEY)
        if preferred is None:  # PreScore did not run
            preferred, errors = pod_preferred_terms(pod)
            if errors:
                return 0, Status.as_error(
                    f"parsing pod's preferred node affinity: {'; '.join(errors)}", plugin=NAME
                )
        if preferred:
            total += preferred_score(preferred, node)
        return total, None

    def score_extensions(self) -> ScoreExtensions | None:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        default_normalize_score(MAX_NODE_SCORE, False, scores)
        return None

    def normalize_scores(
        self, state: CycleState, pod: Pod, values: ScoreValues
    ) -> tuple[ScoreValues, Status | None]:
        return default_normalize_values(MAX_NODE_SCORE, False, values), None

    # ------------------------------------------------------------------------------ Enqueueing
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL),
                self.is_schedulable_after_node_change,
            )
        ]

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            old, new = as_node(old_obj), as_node(new_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if new is None:
            return QueueingHint.QUEUE
        if self.added_required is not None and not terms_match(self.added_required, new):
            return QueueingHint.SKIP
        req = RequiredNodeAffinity.of(pod)
        is_matched = req.match_or_error(new)
        if is_matched is None:
            return QueueingHint.QUEUE  # some term does not parse: kube queues rather than guess
        if not is_matched:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if req.match_or_error(old) is True:
            return QueueingHint.SKIP  # it already matched: this change is not what helps
        return QueueingHint.QUEUE


def new(args: NodeAffinityArgs | None, handle: Handle) -> NodeAffinity:
    return NodeAffinity(args)


PLUGIN = PluginSpec(
    NAME,
    new,
    NodeAffinityArgs,
    "nodeSelector and node affinity: required terms filter, preferred terms score",
)
