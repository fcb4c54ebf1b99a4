"""PodTopologySpread: spread matching pods evenly over topology domains (zones, nodes, racks...).

A pod's ``topologySpreadConstraints`` name a node label (``topologyKey``: every value is a *domain*), a
``labelSelector`` (which pods count) and a ``maxSkew``. The skew of a domain is the number of matching pods
in it, plus one if the incoming pod itself matches, minus the smallest number in any eligible domain.

Extension points
----------------
- PreFilter: for the hard constraints (``whenUnsatisfiable: DoNotSchedule``) count, over all nodes, the
  matching pods per domain. Only pods in the incoming pod's namespace count, terminating pods do not, and
  only *eligible* nodes form domains: nodes that carry every constraint's topology key and pass the
  constraint's inclusion policies (``nodeAffinityPolicy``: Honor (default) = the pod's nodeSelector and
  required node affinity must match; ``nodeTaintsPolicy``: Ignore (default), Honor = the pod must tolerate
  the node's NoSchedule/NoExecute taints). ``matchLabelKeys`` adds the pod's own values of those labels to
  the selector. With fewer domains than ``minDomains`` (default 1) the global minimum is taken as 0.
  Returns Skip when the pod has no hard constraint.
- PreFilterExtensions (add_pod / remove_pod): adjust the counts for preemption's what-ifs.
- Filter: a node without a constraint's topology key is rejected UnschedulableAndUnresolvable
  (``ERR_REASON_NODE_LABEL_NOT_MATCH``); a node whose domain would exceed ``maxSkew`` is rejected
  Unschedulable (``ERR_REASON_CONSTRAINTS_NOT_MATCH``), so preemption may help.
- PreScore / Score / NormalizeScore: for the soft constraints (``ScheduleAnyway``), a node's raw score is
  the sum over constraints of ``count(domain) * log(domains + 2) + (maxSkew - 1)`` (rounded half away
  from zero), and normalization reverses it over the min and max: ``100 * (max + min - s) // max``, so
  the emptiest domain scores highest. Nodes missing a topology key score 0.
- EnqueueExtensions: assigned pod add/delete/label change in the pod's namespace (and the pod's own
  toleration change when a constraint honours taints), node add/delete/label/taint changes.

Default constraints
-------------------
A pod that declares no constraint gets the plugin's default constraints, whose selector is deduced from
the Services selecting the pod and the pod's controller (ReplicaSet, StatefulSet or
ReplicationController), read through ``handle.objects``. A pod with no such owner or Service (or a
handle without ``objects``) gets none. ``defaultingType: System`` (default) uses kube-scheduler's system
defaults (``kubernetes.io/hostname`` maxSkew 3 and ``topology.kubernetes.io/zone`` maxSkew 5, both
ScheduleAnyway); with System defaults, nodes missing the zone label are still scored for hostname
spreading. ``defaultingType: List`` uses ``defaultConstraints``.

Args (``PodTopologySpreadArgs``): ``defaultConstraints`` (list of constraints without labelSelector,
``maxSkew`` > 0, valid ``topologyKey``, ``whenUnsatisfiable`` DoNotSchedule|ScheduleAnyway, no two with
the same key and action; only with ``defaultingType: List``), ``defaultingType`` (System|List).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
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
    sum_by_value,
    table_rows,
)
from pyscheduler.framework.node_table import NodeTable, batch_rows
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.selectors import (
    LabelMatcher,
    LabelSelector,
    NodeSelector,
    Requirement,
    SelectorError,
    compile_selector,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import JSON, Node, NodeInfo, Pod, PodInfo, Taint, Toleration

NAME = "PodTopologySpread"

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"

PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"
SYSTEM_DEFAULTING = "System"
LIST_DEFAULTING = "List"
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"

SYSTEM_DEFAULT_CONSTRAINTS: tuple[JSON, ...] = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 3},
    {"topologyKey": LABEL_TOPOLOGY_ZONE, "whenUnsatisfiable": SCHEDULE_ANYWAY, "maxSkew": 5},
)

_MAX_INT32 = 2**31 - 1
_INVALID_SCORE = -1


# --------------------------------------------------------------------------------------------- args

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def label_name_error(key: str) -> str | None:
    """Why ``key`` is not a valid label name (apimachinery's IsQualifiedName), or None."""
    parts = key.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253:
            return "prefix part must be no more than 253 characters"
        if not _DNS1123_SUBDOMAIN.match(prefix):
            return "prefix part must be a lowercase RFC 1123 subdomain"
    else:
        return (
            "a qualified name must consist of alphanumeric characters, '-', '_' or '.', "
            "with an optional DNS subdomain prefix and '/'"
        )
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return (
            "name part must consist of alphanumeric characters, '-', '_' or '.', "
            "and must start and end with an alphanumeric character"
        )
    return None


@dataclass(frozen=True)
class PodTopologySpreadArgs:
    """``defaultConstraints`` (v1 TopologySpreadConstraint JSON, without labelSelector) and
    ``defaultingType`` ("System": kube's built-in defaults; "List": ``defaultConstraints``)."""

    default_constraints: tuple[JSON, ...] = ()
    defaulting_type: str = SYSTEM_DEFAULTING

    def validate(self, path: str) -> None:
        if self.defaulting_type not in (SYSTEM_DEFAULTING, LIST_DEFAULTING):
            raise ArgsError(
                f"{path}.defaultingType",
                f'Unsupported value: "{self.defaulting_type}": supported values: "System", "List"',
            )
        if self.defaulting_type == SYSTEM_DEFAULTING and self.default_constraints:
            raise ArgsError(
                f"{path}.defaultingType",
                'Invalid value: "System": when .defaultConstraints are not empty',
            )
        seen: set[tuple[str, str]] = set()
        for i, c in enumerate(self.default_constraints):
            p = f"{path}.defaultConstraints[{i}]"
            skew = c.get("maxSkew")
            if isinstance(skew, bool) or not isinstance(skew, int):
                raise ArgsError(f"{p}.maxSkew", f"must be an integer, got {skew!r}")
            if skew <= 0:
                raise ArgsError(f"{p}.maxSkew", f"Invalid value: {skew}: not in valid range (0, inf)")
            key = c.get("topologyKey")
            if not key:
                raise ArgsError(f"{p}.topologyKey", "Required value: can not be empty")
            if not isinstance(key, str):
                raise ArgsError(f"{p}.topologyKey", f"must be a string, got {key!r}")
            err = label_name_error(key)
            if err:
                raise ArgsError(f"{p}.topologyKey", f'Invalid value: "{key}": {err}')
            when = c.get("whenUnsatisfiable")
            if not when:
                raise ArgsError(f"{p}.whenUnsatisfiable", "Required value: can not be empty")
            if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
                raise ArgsError(
                    f"{p}.whenUnsatisfiable",
                    f'Unsupported value: "{when}": supported values: "DoNotSchedule", "ScheduleAnyway"',
                )
            if c.get("labelSelector") is not None:
                raise ArgsError(
                    f"{p}.labelSelector",
                    "Forbidden: constraint must not define a selector, as they deduced for each pod",
                )
            md = c.get("minDomains")
            if md is not None and (isinstance(md, bool) or not isinstance(md, int) or md <= 0):
                raise ArgsError(f"{p}.minDomains", f"Invalid value: {md!r}: must be greater than zero")
            for field_name in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
                v = c.get(field_name)
                if v is not None and v not in (HONOR, IGNORE):
                    raise ArgsError(
                        f"{p}.{field_name}", f'Unsupported value: "{v}": supported values: "Honor", "Ignore"'
                    )
            mlk = c.get("matchLabelKeys")
            if mlk is not None and (
                not isinstance(mlk, list | tuple) or not all(isinstance(k, str) for k in mlk)
            ):
                raise ArgsError(f"{p}.matchLabelKeys", "must be a list of strings")
            if (key, when) in seen:
                raise ArgsError(p, f"Duplicate value: {{{key}, {when}}}")
            seen.add((key, when))


# --------------------------------------------------------------------------------------------- constraints


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


class RequiredNodeAffinity:
    """The pod's nodeSelector AND its required node affinity (kube's nodeaffinity.RequiredNodeAffinity).
    A selector that does not parse matches no node."""

    __slots__ = ("_bad", "_node_selector", "_terms", "trivial")

    def __init__(self, pod: Pod) -> None:
        self._node_selector = dict(pod.node_selector)
        self._terms: NodeSelector | None = None
        self._bad = False
        na = (pod.affinity or {}).get("nodeAffinity") or {}
        req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            try:
                self._terms = NodeSelector.parse(req)
            except SelectorError:
                self._bad = True
        # matches every node: no nodeSelector, no required node affinity
        self.trivial = not self._node_selector and self._terms is None and not self._bad

    def matches(self, node: Node) -> bool:
        labels = node.labels
        for k, v in self._node_selector.items():
            if labels.get(k) != v:
                return False
        if self._bad:
            return False
        if self._terms is not None:
            return self._terms.matches(labels, node.name)
        return True


def tolerates_all_hard_taints(taints: Sequence[Taint], tolerations: Sequence[Toleration]) -> bool:
    """No NoSchedule/NoExecute taint is left untolerated."""
    for t in taints:
        if t.effect not in ("NoSchedule", "NoExecute"):
            continue
        if not any(tol.tolerates(t) for tol in tolerations):
            return False
    return True


class _NodeChecks:
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


def go_round(x: float) -> int:
    """Go's math.Round: half away from zero."""
    if x < 0:
        return -go_round(-x)
    r = math.floor(x)
    if x - r >= 0.5:
        r += 1
    return int(r)


def go_round_array(x: npt.NDArray[np.float64]) -> npt.NDArray[np.int64]:
    """``go_round`` of every element: the same floor and comparison on the magnitude, then the sign."""
    a = np.abs(x)
    r = np.floor(a)
    r += (a - r) >= 0.5
    return (np.copysign(r, x)).astype(np.int64)


# --------------------------------------------------------------------------------------------- state


class PreFilterState:
    """Per hard constraint: matching pods per domain value, the minimum over domains, and how many
    domains hold each count (to keep the minimum exact under add/remove)."""

    __slots__ = (
        "_per_code",
        "constraints",
        "counts",
        "domains_at_count",
        "min_match",
        "node_checks",
        "self_match",
    )

    def __init__(
        self, constraints: list[Constraint], self_match: list[int], node_checks: _NodeChecks
    ) -> None:
        self.constraints = constraints
        self.self_match = self_match
        self.node_checks = node_checks
        self.counts: list[dict[str, int]] = [{} for _ in constraints]
        self.min_match: list[int] = [_MAX_INT32] * len(constraints)
        self.domains_at_count: list[dict[int, int]] = [{} for _ in constraints]
        # per constraint: (label column, counts as an array over its codes), for filter_nodes
        self._per_code: dict[int, tuple[LabelColumn, I64]] = {}

    def per_code(self, i: int, col: LabelColumn) -> I64:
        """``counts[i]`` over ``col``'s codes (trailing 0 for a missing label); cached until update()."""
        hit = self._per_code.get(i)
        if hit is not None and hit[0] is col:
            return hit[1]
        arr = col.per_code(self.counts[i])
        self._per_code[i] = (col, arr)
        return arr

    def finish(self) -> None:
        for i, values in enumerate(self.counts):
            hist: dict[int, int] = {}
            m = _MAX_INT32
            for n in values.values():
                hist[n] = hist.get(n, 0) + 1
                if n < m:
                    m = n
            self.domains_at_count[i] = hist
            self.min_match[i] = m

    def min_match_num(self, i: int) -> int:
        if len(self.counts[i]) < self.constraints[i].min_domains:
            return 0
        return self.min_match[i]

    def update(self, i: int, value: str, delta: int) -> None:
        self._per_code = {}
        values = self.counts[i]
        old = values.get(value, 0)
        cur = old + delta
        values[value] = cur
        hist = self.domains_at_count[i]
        hist[old] = hist.get(old, 0) - 1
        if hist[old] <= 0:
            del hist[old]
        hist[cur] = hist.get(cur, 0) + 1
        if cur < self.min_match[i] or (old == self.min_match[i] and hist.get(old, 0) == 0):
            self.min_match[i] = cur

    def clone(self) -> PreFilterState:
        c = PreFilterState.__new__(PreFilterState)
        c.constraints = self.constraints
        c.self_match = self.self_match
        c.node_checks = self.node_checks
        c.counts = [dict(m) for m in self.counts]
        c.min_match = list(self.min_match)
        c.domains_at_count = [dict(h) for h in self.domains_at_count]
        c._per_code = {}
        return c


class PreScoreState:
    __slots__ = ("constraints", "ignored_nodes", "namespace", "topology_counts", "weights")

    def __init__(self, constraints: list[Constraint], namespace: str) -> None:
        self.constraints = constraints
        self.namespace = namespace
        self.ignored_nodes: set[str] = set()
        self.topology_counts: list[dict[str, int]] = [{} for _ in constraints]
        self.weights: list[float] = [0.0] * len(constraints)

    def clone(self) -> PreScoreState:
        return self  # read-only after PreScore


# --------------------------------------------------------------------------------------------- plugin


class PodTopologySpread:
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

    # -- helpers ------------------------------------------------------------------------------------

    def _objects(self) -> ClusterObjects | None:
        objs: ClusterObjects | None = getattr(self._handle, "objects", None)
        return objs

    def _all_nodes(self, fallback: Sequence[NodeInfo]) -> Sequence[NodeInfo]:
        snap = getattr(self._handle, "snapshot", None)
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
        ri = self._rows.ints(("match", selector, namespace), table.size)

        def count(ni: NodeInfo) -> int:
            return count_pods_matching(ni.pods, selector, namespace, matcher)

        out: I64 = ri.get(rows, table.generation[rows], nodes, count)
        return out

    @staticmethod
    def _eligibility(
        checks: _NodeChecks, nodes: Sequence[NodeInfo], candidates: Mask
    ) -> tuple[Mask | None, Mask | None]:
        """_NodeChecks.eligible for the candidate nodes, as masks (None: every node passes)."""
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

    def _fast_pre_filter_counts(self, s: PreFilterState, pod: Pod, nodes: Sequence[NodeInfo]) -> bool:
        """Fill ``s.counts`` from the NodeTable; False (nothing done) when ``nodes`` are not its rows."""
        table = snapshot_table(getattr(self._handle, "snapshot", None))
        if table is None:
            return False
        rows = rows_of(table, nodes)
        if rows is None:
            return False
        constraints = s.constraints
        cols = [self._labels.column(table, c.topology_key) for c in constraints]
        codes = [col.codes[rows] for col in cols]
        has_all = np.ones(len(rows), dtype=np.bool_)
        for cd in codes:
            has_all &= cd >= 0
        aff, taints = self._eligibility(s.node_checks, nodes, has_all)
        ns = pod.namespace
        for i, c in enumerate(constraints):
            incl = has_all
            if aff is not None and c.node_affinity_policy == HONOR:
                incl = incl & aff
            if taints is not None and c.node_taints_policy == HONOR:
                incl = incl & taints
            cnt = self._pod_counts(table, rows, nodes, c.selector, c.matcher, ns)
            s.counts[i] = sum_by_value(cols[i].values, codes[i], cnt, incl)
        return True

    def get_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        """The pod's own constraints for ``action``, or the default ones if it declares none."""
        if pod.topology_spread_constraints:
            return parse_constraints(pod.topology_spread_constraints, pod.labels, action)
        return self._build_default_constraints(pod, action)

    def _build_default_constraints(self, pod: Pod, action: str) -> list[Constraint]:
        constraints = self._parsed_defaults.get(action)
        if constraints is None:
            constraints = self._parsed_defaults[action] = parse_constraints(self.default_constraints, {}, action)
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

    # -- PreFilter -----------------------------------------------------------------------------------

    def calc_pre_filter_state(self, pod: Pod, nodes: Sequence[NodeInfo]) -> PreFilterState:
        constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        req = RequiredNodeAffinity(pod)
        checks = _NodeChecks(pod, constraints, req)
        s = PreFilterState(constraints, [1 if c.matches(pod.labels) else 0 for c in constraints], checks)
        if not constraints:
            return s
        if self._fast_pre_filter_counts(s, pod, nodes):
            s.finish()
            return s
        ns = pod.namespace
        indexed = list(enumerate(constraints))
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            if not node_has_all_keys(labels, constraints):
                continue
            aff, taints = checks.eligible(node)
            for i, c in indexed:
                if not _NodeChecks.included(c, aff, taints):
                    continue
                value = labels[c.topology_key]
                counts = s.counts[i]
                counts[value] = counts.get(value, 0) + count_pods_matching(ni.pods, c.selector, ns, c.matcher)
        s.finish()
        return s

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        try:
            s = self.calc_pre_filter_state(pod, nodes)
        except (SelectorError, ValueError, TypeError) as e:
            return None, Status.as_error(f"get constraints from pod: {e}", plugin=NAME)
        if not s.constraints:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, s)
        return None, None

    def pre_filter_extensions(self) -> PodTopologySpread:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            self._update_with_pod(s, pod_to_add.pod, pod_to_schedule, node_info.node, 1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if isinstance(s, PreFilterState):
            self._update_with_pod(s, pod_to_remove.pod, pod_to_schedule, node_info.node, -1)
        return None

    @staticmethod
    def _update_with_pod(
        s: PreFilterState, updated: Pod, preemptor: Pod, node: Node | None, delta: int
    ) -> None:
        if node is None or updated.namespace != preemptor.namespace:
            return
        if not node_has_all_keys(node.labels, s.constraints):
            return
        aff, taints = s.node_checks.eligible(node)
        for i, c in enumerate(s.constraints):
            if not c.matches(updated.labels):
                continue
            if not _NodeChecks.included(c, aff, taints):
                continue
            s.update(i, node.labels[c.topology_key], delta)

    # -- Filter --------------------------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.as_error("node not found", plugin=NAME)
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PreFilterState):
            try:
                s = self.calc_pre_filter_state(pod, self._all_nodes([node_info]))
            except (SelectorError, ValueError, TypeError) as e:
                return Status.as_error(f"get constraints from pod: {e}", plugin=NAME)
            state.write(PRE_FILTER_STATE_KEY, s)
        if not s.constraints:
            return None
        labels = node.labels
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                return Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME)
            skew = s.counts[i].get(value, 0) + s.self_match[i] - s.min_match_num(i)
            if skew > c.max_skew:
                return Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for every node, from the PreFilter counts as arrays over label codes."""
        s = state.get(PRE_FILTER_STATE_KEY)
        br = batch_rows(nodes)
        if br is None or not isinstance(s, PreFilterState):
            return [self.filter(state, pod, ni) for ni in nodes]
        table, rows = br
        if self._labels.no_node(table)[rows].any():
            return [self.filter(state, pod, ni) for ni in nodes]
        if not s.constraints:
            return [None] * len(nodes)
        verdict = np.zeros(len(rows), dtype=np.int8)  # 0 pass, 1 missing label, 2 skew too large
        for i, c in enumerate(s.constraints):
            col = self._labels.column(table, c.topology_key)
            codes = col.codes[rows]
            skew = s.per_code(i, col)[codes] + (s.self_match[i] - s.min_match_num(i))
            open_ = verdict == 0
            missing = codes < 0
            verdict[open_ & missing] = 1
            verdict[open_ & ~missing & (skew > c.max_skew)] = 2
        if not verdict.any():
            return [None] * len(nodes)
        answers = (
            None,
            Status.unresolvable(ERR_REASON_NODE_LABEL_NOT_MATCH, plugin=NAME),
            Status.unschedulable(ERR_REASON_CONSTRAINTS_NOT_MATCH, plugin=NAME),
        )
        return list(map(answers.__getitem__, verdict.tolist()))

    # -- Score ---------------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        all_nodes = self._all_nodes(nodes)
        if not all_nodes:
            return Status.skip(plugin=NAME)
        # Only require every topology label with non-system-default rules, so that nodes without a
        # zone label still get hostname spreading.
        require_all = bool(pod.topology_spread_constraints) or not self.system_defaulted
        try:
            constraints = self.get_constraints(pod, SCHEDULE_ANYWAY)
        except (SelectorError, ValueError, TypeError) as e:
            return Status.as_error(f"calculating preScoreState: {e}", plugin=NAME)
        if not constraints:
            return Status.skip(plugin=NAME)

        s = PreScoreState(constraints, pod.namespace)
        if self._fast_pre_score(s, pod, nodes, all_nodes, require_all):
            state.write(PRE_SCORE_STATE_KEY, s)
            return None
        indexed = list(enumerate(constraints))
        topo_size = [0] * len(constraints)
        for ni in nodes:
            node = ni.node
            if node is None:
                continue
            labels = node.labels
            if require_all and not node_has_all_keys(labels, constraints):
                s.ignored_nodes.add(node.name)
                continue
            for i, c in indexed:
                if c.topology_key == LABEL_HOSTNAME:
                    continue  # counted per node in Score
                value = labels.get(c.topology_key, "")
                counts = s.topology_counts[i]
                if value not in counts:
                    counts[value] = 0
                    topo_size[i] += 1
        for i, c in indexed:
            size = topo_size[i]
            if c.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(s.ignored_nodes)
            s.weights[i] = math.log(size + 2)

        non_host = [(i, c) for i, c in indexed if c.topology_key != LABEL_HOSTNAME]
        if non_host:
            checks = _NodeChecks(pod, constraints, RequiredNodeAffinity(pod))
            ns = pod.namespace
            for ni in all_nodes:
                node = ni.node
                if node is None:
                    continue
                labels = node.labels
                if require_all and not node_has_all_keys(labels, constraints):
                    continue
                aff, taints = checks.eligible(node)
                for i, c in non_host:
                    if not _NodeChecks.included(c, aff, taints):
                        continue
                    counts = s.topology_counts[i]
                    value = labels.get(c.topology_key, "")
                    if value not in counts:
                        continue
                    counts[value] += count_pods_matching(ni.pods, c.selector, ns, c.matcher)
        state.write(PRE_SCORE_STATE_KEY, s)
        return None

    def _fast_pre_score(
        self,
        s: PreScoreState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        all_nodes: Sequence[NodeInfo],
        require_all: bool,
    ) -> bool:
        """pre_score's two passes over the NodeTable; False (``s`` untouched) when the nodes are not
        its rows."""
        table = snapshot_table(getattr(self._handle, "snapshot", None))
        if table is None:
            return False
        rows = rows_of(table, nodes)
        if rows is None:
            return False
        all_rows = rows if all_nodes is nodes else rows_of(table, all_nodes)
        if all_rows is None:
            return False
        constraints = s.constraints
        labels = self._labels
        no_node = labels.no_node(table)
        cols = [labels.column(table, c.topology_key) for c in constraints]
        # a missing label reads as "" (the code of a real "" value, or one past the last)
        ext_values: list[list[str]] = []
        empty_code: list[int] = []
        for col in cols:
            e = col.index.get("")
            ext_values.append(col.values if e is not None else [*col.values, ""])
            empty_code.append(len(col.values) if e is None else e)

        def live_rows(r: I64) -> tuple[Mask, list[I64]]:
            codes = [col.codes[r] for col in cols]
            live = ~no_node[r]
            if require_all:
                for cd in codes:
                    live &= cd >= 0
            return live, codes

        # pass 1, over the candidate nodes: ignored nodes, domains per soft constraint
        live, codes = live_rows(rows)
        if require_all:
            for k in np.flatnonzero(~no_node[rows] & ~live).tolist():
                s.ignored_nodes.add(nodes[k].name)
        non_host: list[int] = []
        for i, c in enumerate(constraints):
            if c.topology_key == LABEL_HOSTNAME:
                s.weights[i] = math.log(len(nodes) - len(s.ignored_nodes) + 2)
                continue
            non_host.append(i)
            ecodes = np.where(codes[i] >= 0, codes[i], empty_code[i])
            vals = ext_values[i]
            present = np.unique(ecodes[live])
            s.topology_counts[i] = {vals[k]: 0 for k in present.tolist()}
            s.weights[i] = math.log(len(present) + 2)
        if not non_host:
            return True

        # pass 2, over all nodes: matching pods per domain
        live, codes = live_rows(all_rows)
        checks = _NodeChecks(pod, constraints, RequiredNodeAffinity(pod))
        aff, taints = self._eligibility(checks, all_nodes, live)
        ns = pod.namespace
        for i in non_host:
            c = constraints[i]
            incl = live
            if aff is not None and c.node_affinity_policy == HONOR:
                incl = incl & aff
            if taints is not None and c.node_taints_policy == HONOR:
                incl = incl & taints
            ecodes = np.where(codes[i] >= 0, codes[i], empty_code[i])
            cnt = self._pod_counts(table, all_rows, all_nodes, c.selector, c.matcher, ns)
            counts = s.topology_counts[i]
            for value, n in sum_by_value(ext_values[i], ecodes, cnt, incl).items():
                if value in counts:
                    counts[value] += n
        return True

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        node = node_info.node
        if not isinstance(s, PreScoreState) or node is None:
            return 0, None
        if node.name in s.ignored_nodes:
            return 0, None
        labels = node.labels
        total = 0.0
        for i, c in enumerate(s.constraints):
            value = labels.get(c.topology_key)
            if value is None:
                continue
            if c.topology_key == LABEL_HOSTNAME:
                cnt = count_pods_matching(node_info.pods, c.selector, s.namespace, c.matcher)
            else:
                cnt = s.topology_counts[i].get(value, 0)
            total += cnt * s.weights[i] + float(c.max_skew - 1)
        return go_round(total), None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        """``score`` for every node: the float sum built column-wise in the same order, rounded per node."""
        s = state.get(PRE_SCORE_STATE_KEY)
        br = table_rows(nodes, getattr(self._handle, "snapshot", None))
        if br is None or not isinstance(s, PreScoreState):
            return [self.score(state, pod, ni)[0] for ni in nodes], None
        table, rows = br
        total = np.zeros(len(rows), dtype=np.float64)
        for i, c in enumerate(s.constraints):
            col = self._labels.column(table, c.topology_key)
            codes = col.codes[rows]
            if c.topology_key == LABEL_HOSTNAME:
                cnt = self._pod_counts(table, rows, nodes, c.selector, c.matcher, s.namespace)
            else:
                cnt = col.per_code(s.topology_counts[i])[codes]
            total = total + np.where(codes >= 0, cnt * s.weights[i] + float(c.max_skew - 1), 0.0)
        out = go_round_array(total)
        ignored = s.ignored_nodes
        if ignored:
            for k, ni in enumerate(nodes):
                if ni.node is not None and ni.node.name in ignored:
                    out[k] = 0
        return out, None

    def score_extensions(self) -> PodTopologySpread:
        return self

    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, PreScoreState):
            return None
        min_score = 2**63 - 1
        max_score = 0
        for ns in scores:
            if ns.name in s.ignored_nodes:
                ns.score = _INVALID_SCORE
                continue
            if ns.score < min_score:
                min_score = ns.score
            if ns.score > max_score:
                max_score = ns.score
        for ns in scores:
            if ns.score == _INVALID_SCORE:
                ns.score = 0
                continue
            if max_score == 0:
                ns.score = MAX_NODE_SCORE
                continue
            ns.score = MAX_NODE_SCORE * (max_score + min_score - ns.score) // max_score
        return None

    # -- queueing hints ------------------------------------------------------------------------------

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        pod_actions = Action.ADD | Action.UPDATE_POD_LABEL | Action.UPDATE_POD_TOLERATIONS | Action.DELETE
        node_actions = Action.ADD | Action.DELETE | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_TAINT
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, pod_actions), self.is_schedulable_after_pod_change
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, node_actions), self.is_schedulable_after_node_change
            ),
        ]

    def is_schedulable_after_pod_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        try:
            old_pod = as_pod(old)
            new_pod = as_pod(new)
        except (TypeError, ValueError):
            return QueueingHint.QUEUE

        def involved(other: Pod) -> bool:
            return other.uid == pod.uid or (bool(other.node_name) and other.namespace == pod.namespace)

        if (new_pod is not None and not involved(new_pod)) or (old_pod is not None and not involved(old_pod)):
            return QueueingHint.SKIP
        try:
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except (SelectorError, ValueError, TypeError):
            return QueueingHint.QUEUE

        if new_pod is not None and old_pod is not None:
            if (
                pod.uid == new_pod.uid
                and new_pod.tolerations != old_pod.tolerations
                and any(c.node_taints_policy == HONOR for c in constraints)
            ):
                return QueueingHint.QUEUE
            if dict(new_pod.labels) == dict(old_pod.labels):
                return QueueingHint.SKIP
            for c in constraints:
                if c.matches(old_pod.labels) != c.matches(new_pod.labels):
                    return QueueingHint.QUEUE
            return QueueingHint.SKIP
        changed = new_pod if new_pod is not None else old_pod
        if changed is not None and any(c.matches(changed.labels) for c in constraints):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        try:
            old_node = as_node(old)
            new_node = as_node(new)
            constraints = self.get_constraints(pod, DO_NOT_SCHEDULE)
        except (SelectorError, TypeError, ValueError):
            return QueueingHint.QUEUE
        old_match = old_node is not None and node_has_all_keys(old_node.labels, constraints)
        new_match = new_node is not None and node_has_all_keys(new_node.labels, constraints)
        if old_node is not None and new_node is not None:
            if old_match != new_match:
                return QueueingHint.QUEUE
            if new_match and (
                any(
                    old_node.labels.get(c.topology_key) != new_node.labels.get(c.topology_key)
                    for c in constraints
                )
                or old_node.taints != new_node.taints
            ):
                return QueueingHint.QUEUE
            return QueueingHint.SKIP
        if new_node is not None:
            return QueueingHint.QUEUE if new_match else QueueingHint.SKIP
        return QueueingHint.QUEUE if old_match else QueueingHint.SKIP


def _set_requirements(label_set: Mapping[str, str]) -> tuple[Requirement, ...]:
    return tuple(Requirement(k, "In", frozenset((str(v),))) for k, v in sorted(label_set.items()))


def new(args: PodTopologySpreadArgs | None, handle: Handle) -> PodTopologySpread:
    return PodTopologySpread(args, handle)


PLUGIN = PluginSpec(
    NAME, new, PodTopologySpreadArgs, "spread matching pods evenly over topology domains (hard and soft)"
)
