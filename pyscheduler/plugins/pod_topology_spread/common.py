"""What filtering and scoring share: the parsed constraint, node eligibility under the inclusion
policies, matching-pod counts, Go's rounding, and ``PluginBase`` (the pod's constraints, own or
defaulted from its Services and controller)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pyscheduler.framework.helpers.node_affinity import RequiredNodeAffinity
from pyscheduler.framework.interfaces import (
    ClusterObjects,
    Handle,
    SnapshotLister,
)
from pyscheduler.framework.node_rows import (
    I64,
    Mask,
    RowStore,
    TableLabels,
)
from pyscheduler.framework.node_table import NodeEpochCache, NodeTable, tainted_rows
from pyscheduler.framework.pod_kinds import PodKindIndex, selector_picks
from pyscheduler.framework.selectors import (
    LabelMatcher,
    LabelSelector,
    Requirement,
    SelectorError,
    compile_selector,
)
from pyscheduler.framework.types import JSON, Node, NodeInfo, Pod, PodInfo, Taint, Toleration
from pyscheduler.plugins.pod_topology_spread.args import (
    HONOR,
    IGNORE,
    SYSTEM_DEFAULT_CONSTRAINTS,
    SYSTEM_DEFAULTING,
    PodTopologySpreadArgs,
)

NAME = "PodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME


@dataclass(frozen=True, slots=True)
class Constraint:
    """A parsed constraint. ``selector`` None matches nothing (a constraint without labelSelector)."""

    max_skew: int
    topology_key: str
    selector: LabelSelector | None
    min_domains: int = 1
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE
    matcher: LabelMatcher = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "matcher", compile_selector(self.selector))

    def matches(self, labels: Mapping[str, str]) -> bool:
        return self.matcher(labels)


def parse_constraints(
    raw: Iterable[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str
) -> list[Constraint]:
    """The constraints whose whenUnsatisfiable is ``action``, with matchLabelKeys merged in.
    Raises SelectorError on a bad labelSelector."""
    out: list[Constraint] = []
    for i, c in enumerate(raw):
        if c.get("whenUnsatisfiable") != action:
            continue
        selector = LabelSelector.parse(
            c.get("labelSelector"), f"topologySpreadConstraints[{i}].labelSelector"
        )
        keys = c.get("matchLabelKeys") or ()
        if keys and selector is not None:
            extra = tuple(Requirement(k, "In", frozenset((pod_labels[k],))) for k in keys if k in pod_labels)
            if extra:
                selector = LabelSelector(extra + selector.requirements)
        md = c.get("minDomains")
        out.append(
            Constraint(
                max_skew=int(c.get("maxSkew") or 0),
                topology_key=str(c.get("topologyKey") or ""),
                selector=selector,
                min_domains=1 if md is None else int(md),
                node_affinity_policy=c.get("nodeAffinityPolicy") or HONOR,
                node_taints_policy=c.get("nodeTaintsPolicy") or IGNORE,
            )
        )
    return out


def node_has_all_keys(labels: Mapping[str, str], constraints: Sequence[Constraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def count_pods_matching(
    pods: Iterable[PodInfo],
    selector: LabelSelector | None,
    namespace: str,
    matcher: LabelMatcher | None = None,
) -> int:
    """Matching pods in ``namespace``, terminating ones excluded. An empty (or absent) selector counts 0."""
    if selector is None or selector.is_empty():
        return 0
    match = matcher or compile_selector(selector)
    n = 0
    for pi in pods:
        p = pi.pod
        if p.deleting or p.namespace != namespace:
            continue
        if match(p.labels):
            n += 1
    return n


def tolerates_all_hard_taints(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """No NoSchedule/NoExecute taint is left untolerated."""
    for t in taints:
        if t.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tol.tolerates(t) for tol in tolerations):
            return False
    return True


class NodeChecks:
    """Per pod: the inclusion-policy checks, computed lazily per node."""

    __slots__ = ("_pod", "_req", "need_affinity", "need_taints", "trivial_affinity")

    def __init__(self, pod: Pod, constraints: Sequence[Constraint], req: RequiredNodeAffinity) -> None:
        self._pod = pod
        self._req = req
        self.need_affinity = any(c.node_affinity_policy == HONOR for c in constraints)
        self.need_taints = any(c.node_taints_policy == HONOR for c in constraints)
        self.trivial_affinity = req.trivial

    @property
    def required(self) -> RequiredNodeAffinity:
        return self._req

    @property
    def tolerations(self) -> tuple[Toleration, ...]:
        return self._pod.tolerations

    def eligible(self, node: Node) -> tuple[bool, bool]:
        """(node affinity matches, taints tolerated), each True when no constraint honours it."""
        aff = self._req.matches(node) if self.need_affinity and not self.trivial_affinity else True
        taints = tolerates_all_hard_taints(node.taints, self._pod.tolerations) if self.need_taints else True
        return aff, taints

    @staticmethod
    def included(c: Constraint, aff: bool, taints: bool) -> bool:
        if c.node_affinity_policy == HONOR and not aff:
            return False
        return not (c.node_taints_policy == HONOR and not taints)


class EligibilityCache(NodeEpochCache):
    """The inclusion policies' per-node answers over every row of one (NodeTable, node_epoch).

    Whether a node's hard taints are all tolerated, and whether a required node affinity matches it,
    read only the Node object, so each answer holds until ``node_epoch`` moves (a Node added, removed or
    changed). Kept per toleration set and per required node affinity (each bounded to ``limit``), a pod
    like one seen before gets its masks by indexing, instead of checking every node again.
    """

    __slots__ = ("affinity", "limit", "tainted", "taints")

    def __init__(self, limit: int = 64) -> None:
        super().__init__()
        self.limit = limit
        self.tainted: list[tuple[int, tuple[Taint, ...]]] = []
        self.taints: dict[tuple[Toleration, ...], Mask] = {}
        self.affinity: dict[object, Mask] = {}

    def sync(self, table: NodeTable) -> None:
        if self.moved(table):
            self.tainted = tainted_rows(table)
            self.taints = {}
            self.affinity = {}

    def _put(self, d: dict[Any, Mask], key: Any, mask: Mask) -> None:
        while len(d) >= self.limit:
            del d[next(iter(d))]
        d[key] = mask

    def taints_tolerated(self, tolerations: tuple[Toleration, ...]) -> Mask:
        """Per row of the synced table: no NoSchedule/NoExecute taint is left untolerated."""
        mask = self.taints.get(tolerations)
        if mask is None:
            assert self.table is not None
            mask = np.ones(self.table.size, dtype=np.bool_)
            memo: dict[tuple[Taint, ...], bool] = {}
            for i, taints in self.tainted:
                ok = memo.get(taints)
                if ok is None:
                    ok = memo[taints] = tolerates_all_hard_taints(taints, tolerations)
                mask[i] = ok
            self._put(self.taints, tolerations, mask)
        return mask

    def affinity_matches(self, req: RequiredNodeAffinity) -> Mask:
        """Per row of the synced table: ``req`` matches the row's node (False for an empty row)."""
        key: object = (req.selector, req.terms, req.errors)
        try:
            mask = self.affinity.get(key)
        except TypeError:  # a term that cannot be hashed: answered, not kept
            key, mask = None, None
        if mask is None:
            assert self.table is not None
            nodes = self.table.nodes
            mask = np.fromiter(
                (n is not None and req.matches(n) for n in nodes), dtype=np.bool_, count=len(nodes)
            )
            if key is not None:
                self._put(self.affinity, key, mask)
        return mask


class PluginBase:
    """What every extension point of the plugin reads: its args, the handle, the pod's constraints
    (its own or the defaults) and the per-node caches over the snapshot's NodeTable."""

    name = NAME

    def __init__(self, args: PodTopologySpreadArgs | None = None, handle: Handle | None = None) -> None:
        args = args or PodTopologySpreadArgs()
        self._handle = handle
        self.system_defaulted = args.defaulting_type == SYSTEM_DEFAULTING
        self.default_constraints: tuple[JSON, ...] = (
            SYSTEM_DEFAULT_CONSTRAINTS if self.system_defaulted else tuple(args.default_constraints)
        )
        # the default constraints parsed, per whenUnsatisfiable: they have no labelSelector (checked at
        # load), so neither the pod's labels (matchLabelKeys) nor a parse error can change them
        self._parsed_defaults: dict[str, list[Constraint]] = {}
        # per-node caches over the snapshot's NodeTable (see _rows): label codes, matching pod counts
        self._labels = TableLabels()
        self._rows = RowStore()
        # the existing pods by namespace and labels, per row (see framework/pod_kinds.py)
        self._kinds = PodKindIndex()
        # the inclusion policies' node checks over the table's rows (see EligibilityCache)
        self._eligible = EligibilityCache()

    # -- helpers ------------------------------------------------------------------------------------

    def _objects(self) -> ClusterObjects | None:
        """The cluster's objects; None for a plugin built without a handle (unit tests of one point)."""
        return self._handle.objects if self._handle is not None else None

    def _snapshot(self) -> SnapshotLister | None:
        return self._handle.snapshot if self._handle is not None else None

    def _all_nodes(self, fallback: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        snap = self._snapshot()
        if snap is None:
            return fallback
        nodes: Sequence[NodeInfo] = snap.list()
        return nodes

    def _pod_counts(
        self,
        table: NodeTable,
        rows: I64,
        nodes: Sequence[NodeInfo],
        selector: LabelSelector | None,
        matcher: LabelMatcher,
        namespace: str,
    ) -> I64:
        """count_pods_matching for each of ``nodes`` (at ``rows`` of ``table``), cached per row."""
        if selector is None or selector.is_empty():
            return np.zeros(len(rows), dtype=np.int64)
        kinds = self._kinds
        if kinds.refresh(table):
            picks = selector_picks(namespace, matcher)
            return kinds.counts(("match", selector, namespace), picks)[rows]
        ri = self._rows.ints(("match", selector, namespace), table.size)

        def count(ni: NodeInfo) -> int:
            return count_pods_matching(ni.pods, selector, namespace, matcher)

        out: I64 = ri.get(rows, table.generation[rows], nodes, count)
        return out

    def _eligibility(
        self, checks: NodeChecks, table: NodeTable, rows: I64
    ) -> tuple[Mask | None, Mask | None]:
        """NodeChecks.eligible for the nodes at ``rows`` of ``table``, as masks (None: every node passes).
        Callers AND them with their own candidate mask (rows without a node answer False)."""
        need_aff = checks.need_affinity and not checks.trivial_affinity
        if not need_aff and not checks.need_taints:
            return None, None
        cache = self._eligible
        cache.sync(table)
        aff = cache.affinity_matches(checks.required)[rows] if need_aff else None
        taints = cache.taints_tolerated(checks.tolerations)[rows] if checks.need_taints else None
        return aff, taints

    def get_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's own constraints for ``action``, or the default ones if it declares none."""
        if pod.topology_spread_constraints:
            return parse_constraints(pod.topology_spread_constraints, pod.labels, action)
        return self._build_default_constraints(pod, action)

    def _build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = self._parsed_defaults[action] = parse_constraints(
                self.default_constraints, {}, action
            )
        if not constraints:
            return []
        selector = self.default_selector(pod)
        if selector is None or selector.is_empty():
            return []
        return [
            Constraint(
                c.max_skew,
                c.topology_key,
                selector,
                c.min_domains,
                c.node_affinity_policy,
                c.node_taints_policy,
            )
            for c in constraints
        ]

    def default_selector(self, pod: Pod) -> LabelSelector | None:
        """The selector kube deduces from the Services selecting the pod and its controller."""
        objects = self._objects()
        if objects is None:
            return None
        label_set: dict[str, str] = {}
        for svc in objects.list("Service", pod.namespace):
            sel = (svc.get("spec") or {}).get("selector")
            if sel is None:
                continue  # a nil selector selects nothing
            if all(pod.labels.get(k) == v for k, v in sel.items()):
                label_set.update(sel)
        reqs: tuple[Requirement, ...] = _set_requirements(label_set)
        owner = pod.controller_ref()
        if owner is None:
            return LabelSelector(reqs)
        if owner.kind == "ReplicationController":
            rc = objects.get("ReplicationController", pod.namespace, owner.name)
            if rc is not None:
                label_set.update((rc.get("spec") or {}).get("selector") or {})
                reqs = _set_requirements(label_set)
        elif owner.kind in ("ReplicaSet", "StatefulSet"):
            obj = objects.get(owner.kind, pod.namespace, owner.name)
            if obj is not None:
                try:
                    other = LabelSelector.parse((obj.get("spec") or {}).get("selector"))
                except SelectorError:
                    other = None
                if other is not None:
                    reqs = reqs + other.requirements
        return LabelSelector(reqs)


def _set_requirements(label_set: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, "In", frozenset((str(v),))) for k, v in sorted(label_set.items()))
