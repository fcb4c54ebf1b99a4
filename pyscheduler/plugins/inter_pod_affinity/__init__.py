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

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

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
)
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


class PreFilterState:
    __slots__ = (
        "affinity_counts",
        "affinity_terms",
        "anti_affinity_counts",
        "anti_affinity_terms",
        "existing_anti_affinity_counts",
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
        self.existing_anti_affinity_counts: TopologyCounts = {}
        self.affinity_counts: TopologyCounts = {}
        self.anti_affinity_counts: TopologyCounts = {}

    def clone(self) -> PreFilterState:
        c = PreFilterState(self.pod, self.affinity_terms, self.anti_affinity_terms, self.namespace_labels)
        c.existing_anti_affinity_counts = dict(self.existing_anti_affinity_counts)
        c.affinity_counts = dict(self.affinity_counts)
        c.anti_affinity_counts = dict(self.anti_affinity_counts)
        return c

    def update_with_pod(self, pi: PodInfo, node: Node | None, multiplier: int) -> None:
        if node is None:
            return
        other = pi.pod
        for t in terms_of(pi).required_anti_affinity:
            if t.matches(self.pod, self.namespace_labels):
                _update(self.existing_anti_affinity_counts, node, t.topology_key, multiplier)
        if pod_matches_all_terms(self.affinity_terms, other):
            for t in self.affinity_terms:
                _update(self.affinity_counts, node, t.topology_key, multiplier)
        for t in self.anti_affinity_terms:
            if t.matches(other, None):
                _update(self.anti_affinity_counts, node, t.topology_key, multiplier)


class PreScoreState:
    __slots__ = ("topology_score",)

    def __init__(self, topology_score: dict[str, dict[str, int]]) -> None:
        self.topology_score = topology_score

    def clone(self) -> PreScoreState:
        return self


class InterPodAffinity:
    name = NAME

    def __init__(self, args: InterPodAffinityArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args or InterPodAffinityArgs()
        self._handle = handle

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

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        parsed = parse_affinity(pod)
        if parsed.errors:
            return None, Status.unresolvable(f"parsing pod: {'; '.join(parsed.errors)}", plugin=NAME)
        s = self.calc_pre_filter_state(pod, parsed, nodes)
        if not s.existing_anti_affinity_counts and not s.affinity_terms and not s.anti_affinity_terms:
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
        pref_aff = self._merge_weighted(parsed.preferred_affinity)
        pref_anti = self._merge_weighted(parsed.preferred_anti_affinity)
        ns_labels = self.namespace_labels(pod.namespace)
        hard_weight = self.args.hard_pod_affinity_weight

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

    def score_extensions(self) -> InterPodAffinity:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState) or not s.topology_score or not scores:
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
