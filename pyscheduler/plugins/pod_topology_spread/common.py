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
from pyscheduler.framework.node_table import NodeTable
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

    def eligible(self, node: Node) -> tuple[bool, bool]:
        """(node affinity matches, taints tolerated), each True when no constraint honours it."""
        aff = self._req.matches(node) if self.need_affinity else True
        taints = tolerates_all_hard_taints(node.taints, self._pod.tolerations) if self.need_taints else True
        return aff, taints

    @staticmethod
    def included(c: Constraint, aff: bool, taints: bool) -> bool:
        if c.node_affinity_policy == HONOR and not aff:
            return False
        return not (c.node_taints_policy == HONOR and not taints)


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

    @staticmethod
    def _eligibility(
        checks: NodeChecks, nodes: Sequence[NodeInfo], candidates: Mask
    ) -> tuple[Mask | None, Mask | None]:
        """NodeChecks.eligible for the candidate nodes, as masks (None: every node passes)."""
        aff: Mask | None = None
        taints: Mask | None = None
        if checks.need_affinity and not checks.trivial_affinity:
            aff = np.zeros(len(nodes), dtype=np.bool_)
        if checks.need_taints:
            taints = np.zeros(len(nodes), dtype=np.bool_)
        if aff is None and taints is None:
            return None, None
        for k in np.flatnonzero(candidates).tolist():
            node = nodes[k].node
            assert node is not None
            a, t = checks.eligible(node)
            if aff is not None:
                aff[k] = a
            if taints is not None:
                taints[k] = t
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
