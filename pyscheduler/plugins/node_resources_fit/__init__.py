"""NodeResourcesFit: a pod fits a node only if the node's allocatable covers what is already requested
there plus the pod's requests; among fitting nodes, prefer them by a resource scoring strategy.

Extension points
----------------
- PreFilter: takes the pod's effective requests (``Pod.requests``: containers, sidecars, init containers,
  pod-level requests (``spec.resources``, which replace the containers' cpu, memory and hugepages) and
  overhead, as kube's ``resourcehelper.PodRequests``) and stores what Filter checks in the CycleState.
  Pods already on the node count the same way, a pod being resized in place at the larger of its desired
  and allocated requests.
- Filter: rejects the node with one reason per short resource, all listed:
  "Too many pods" (the node's ``pods`` allocatable), "Insufficient cpu", "Insufficient memory",
  "Insufficient ephemeral-storage", "Insufficient <name>" for extended resources, hugepages-* and other
  scalar resources. Only resources the pod requests (non-zero) are checked; an extended resource the node
  does not have at all is "Insufficient <name>". The code is Unschedulable (preemption may free room),
  or UnschedulableAndUnresolvable when some request exceeds the node's whole allocatable (as kube 1.36's
  ``InsufficientResource.Unresolvable``: evicting every pod would not help). "Too many pods" alone is
  always Unschedulable.
- PreScore / Score: per configured resource, the node's requested-after-placing-the-pod against its
  allocatable, scored by the strategy and averaged by weight (0-100). For cpu and memory the node's and
  the pod's *non-zero* requests are used (pods requesting nothing count as 100m / 200Mi per container);
  ephemeral-storage and scalar resources use real requests; a scalar resource is scored only if the pod
  requests it and the node has it. As in kube 1.36 (its scorer is built without the PodLevelResources
  flag) the pod being scored counts at its containers' requests, not its pod-level ones
  (``Pod.fit_score_requests``); the pods already on the node count at their pod-level requests.
- Batch hooks (``filter_nodes``, ``score_nodes``, see ``batch``): the same answers for many nodes at
  once, on NumPy columns (cpu, memory, ephemeral-storage, pods, and for Filter the scalar resources the
  pod requests); nodes failing Filter the same way share one Status; out-of-range quantities, Score
  over a scalar resource and small batches go node by node.
- EnqueueExtensions: a scheduled (or nominated) pod deleted, a pod scaled down (in-place resize), a node
  added or its allocatable changed, each with kube's queueing hint; with DRAExtendedResource, a DeviceClass
  added or updated whose (explicit or implicit) extended resource name the pod requests.

Args (``NodeResourcesFitArgs``, see ``args``)
---------------------------------------------
- ``ignoredResources``: extended resources Filter does not check (e.g. handled by an extender).
- ``ignoredResourceGroups``: the same by domain: "example.com" ignores "example.com/*".
- ``scoringStrategy``: ``type`` LeastAllocated (default: prefer emptier nodes), MostAllocated (bin-pack),
  or RequestedToCapacityRatio (a piecewise-linear ``shape`` of utilization 0-100 -> score 0-10, scaled to
  0-100); ``resources`` (default cpu and memory, weight 1).

Extended resources backed by DRA (DRAExtendedResource, on by default): a requested resource that a
DeviceClass maps (``spec.extendedResourceName``, or ``deviceclass.resource.kubernetes.io/<class>``) is not
checked on a node whose allocatable lacks it; DynamicResources allocates devices for it there. When the
scoring strategy lists such a resource, Score counts, on a node whose allocatable lacks it, the node's
devices of the backing class as allocatable and the allocated ones as requested (kube's
calculateDRAResourceTotals; DynamicResources provides the counts, see framework.dra.EXTENDED_SCORES_KEY).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework import events as ev
from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import (
    IMPLICIT_EXTENDED_RESOURCE_PREFIX,
    ExtendedResourceTotals,
    dra_extended_totals,
    extended_resource_class,
)
from pyscheduler.framework.events import as_node, as_pod
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.names import is_extended_resource_name, is_scalar_resource_name
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    PlacementScoreExtensions,
    PreFilterResult,
    ScoreValues,
)
from pyscheduler.framework.podgroup import PodGroupAssignments, PodGroupInfo
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.resource import MalformedObject, Resource
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

from .args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from .batch import (
    FILTER_MIN_BATCH,
    SCORE_MIN_BATCH,
    ScalarAllocations,
    filter_failures,
    least_cpu_memory,
    strategy_scores,
)
from .scoring import (
    KIND_SCALAR,
    allocatable_requested,
    build_broken_linear_function,
    build_scorer,
    placement_score,
    pod_request,
    resource_kind,
)

__all__ = [
    "LEAST_ALLOCATED",
    "MOST_ALLOCATED",
    "NAME",
    "PLUGIN",
    "PRE_FILTER_STATE_KEY",
    "PRE_SCORE_STATE_KEY",
    "REASON_INSUFFICIENT_CPU",
    "REASON_INSUFFICIENT_EPHEMERAL_STORAGE",
    "REASON_INSUFFICIENT_MEMORY",
    "REASON_TOO_MANY_PODS",
    "REQUESTED_TO_CAPACITY_RATIO",
    "Fit",
    "NodeResourcesFitArgs",
    "PodResourceRequest",
    "RequestedToCapacityRatioParam",
    "ResourceSpec",
    "ScoringStrategy",
    "UtilizationShapePoint",
    "insufficient_reason",
    "new",
]

NAME = "NodeResourcesFit"
PRE_FILTER_STATE_KEY = "PreFilter" + NAME
PRE_SCORE_STATE_KEY = "PreScore" + NAME

REASON_TOO_MANY_PODS = "Too many pods"
REASON_INSUFFICIENT_CPU = "Insufficient cpu"
REASON_INSUFFICIENT_MEMORY = "Insufficient memory"
REASON_INSUFFICIENT_EPHEMERAL_STORAGE = "Insufficient ephemeral-storage"


DEVICE_CLASS = "DeviceClass"


def insufficient_reason(resource: str) -> str:
    """The reason for an extended / scalar resource: "Insufficient example.com/gpu"."""
    return f"Insufficient {resource}"


_EMPTY = Resource()


@dataclass(frozen=True, slots=True)
class PodResourceRequest:
    """What Filter checks for one pod (PreFilter state). ``scalar`` holds the non-zero scalar requests
    not ignored by the args, with their reason strings."""

    milli_cpu: int
    memory: int
    ephemeral_storage: int
    scalar: tuple[tuple[str, int, str], ...]
    # extended resources a DeviceClass backs (DRAExtendedResource): left to DynamicResources on a node
    # whose allocatable does not list them
    dra: frozenset[str] = frozenset()

    def clone(self) -> PodResourceRequest:
        return self


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    # DRAExtendedResource: device counts for configured resources a DeviceClass backs (None: none does)
    dra: ExtendedResourceTotals | None = None

    def clone(self) -> _PreScoreState:
        return self


class Fit:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return signers.sign_resources(pod, self.handle)

    def __init__(self, args: NodeResourcesFitArgs | None = None, handle: Handle | None = None) -> None:
        self.args = args if args is not None else NodeResourcesFitArgs()
        self.handle = handle
        self._ignored = frozenset(self.args.ignored_resources)
        # Filter's per-epoch index of which nodes allocate each scalar resource (batch.ScalarAllocations)
        self._scalar_allocs = ScalarAllocations()
        self._ignored_groups = frozenset(self.args.ignored_resource_groups)
        strategy = self.args.scoring_strategy
        # (kind, name, weight) per configured resource, in config order
        self._resources = tuple((resource_kind(r.name), r.name) for r in strategy.resources)
        self._scalar_resources = tuple(n for k, n in self._resources if k == KIND_SCALAR)
        self._scorer = build_scorer(strategy)
        # The default strategy (LeastAllocated over cpu and memory, weight 1 each) gets a direct path:
        # it is what almost every cluster runs, and Score runs per node per pod.
        self._least_cpu_memory = strategy.type == "LeastAllocated" and [
            (r.name, r.weight) for r in strategy.resources
        ] == [("cpu", 1), ("memory", 1)]
        # score_nodes: the strategy as batch.strategy_scores names it (None: node by node)
        self._weights = tuple(r.weight for r in strategy.resources)
        self._batch_strategy = {LEAST_ALLOCATED: "least", MOST_ALLOCATED: "most"}.get(strategy.type)
        self._shape: list[int] | None = None
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO and strategy.requested_to_capacity_ratio:
            factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
            points = [(p.utilization, p.score * factor) for p in strategy.requested_to_capacity_ratio.shape]
            if points:
                raw = build_broken_linear_function(points)
                self._shape = [raw(u) for u in range(MAX_UTILIZATION + 1)]
                self._batch_strategy = "ratio"

    # ------------------------------------------------------------------------------ PlacementScore

    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> tuple[int, Status | None]:
        """How full the placement would be with the group's proposed pods (MostAllocated over the
        configured resources); used only in a pod group cycle (TopologyAwareWorkloadScheduling)."""
        pods = [p for p, _ in assignments.proposed]
        return placement_score(self.args.scoring_strategy.resources, pods, assignments.placement.nodes), None

    def placement_score_extensions(self) -> PlacementScoreExtensions | None:
        return None  # kube's Fit does not normalize placement scores

    # ------------------------------------------------------------------------------ PreFilter

    def compute_request(self, pod: Pod) -> PodResourceRequest:
        """The pod's requests as Filter checks them (ignored extended resources left out)."""
        req = pod.requests
        scalar: list[tuple[str, int, str]] = []
        for rname, qty in req.scalar.items():
            if qty == 0 or not is_scalar_resource_name(rname):
                continue
            if is_extended_resource_name(rname) and self._is_ignored(rname):
                continue
            scalar.append((rname, qty, insufficient_reason(rname)))
        return PodResourceRequest(
            req.milli_cpu, req.memory, req.ephemeral_storage, tuple(scalar), self._dra_backed(scalar)
        )

    def _dra_backed(self, scalar: Sequence[tuple[str, int, str]]) -> frozenset[str]:
        """The requested resources a DeviceClass maps (kube's shouldDelegateResourceToDRA, less the
        node's allocatable, which ``fits`` checks)."""
        if self.handle is None or not scalar:
            return frozenset()
        try:
            objects = self.handle.objects
        except AssertionError:  # a handle without a cluster object store (plugin tests): no DeviceClasses
            return frozenset()
        classes = list(objects.list(DEVICE_CLASS))
        if not classes:
            return frozenset()
        return frozenset(r for r, _, _ in scalar if extended_resource_class(classes, r) is not None)

    def _is_ignored(self, rname: str) -> bool:
        if rname in self._ignored:
            return True
        return bool(self._ignored_groups) and rname.split("/", 1)[0] in self._ignored_groups

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        state.write(PRE_FILTER_STATE_KEY, self.compute_request(pod))
        return None, None

    def pre_filter_extensions(self) -> None:
        return None

    # --------------------------------------------------------------------------------- Filter

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PodResourceRequest):
            s = self.compute_request(pod)
        return fits(s, node_info.allocatable, node_info.requested, len(node_info.pods))

    def filter_adjusted(
        self,
        state: CycleState,
        pod: Pod,
        node_info: NodeInfo,
        added: Sequence[PodInfo],
        removed: Sequence[PodInfo],
    ) -> Status | None:
        """``filter`` on ``node_info`` with ``added`` put on and ``removed`` taken off (both are pods'
        requests and count only: what ``filter`` reads), without a copy of the node
        (framework/pods_adjusted.py)."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PodResourceRequest):
            s = self.compute_request(pod)
        used = node_info.requested
        cpu, mem, eph, scalar = used.milli_cpu, used.memory, used.ephemeral_storage, used.scalar
        copied = False
        for pi in added:
            r = pi.pod.requests
            cpu += r.milli_cpu
            mem += r.memory
            eph += r.ephemeral_storage
            if r.scalar:
                if not copied:
                    scalar, copied = dict(scalar), True
                for k, v in r.scalar.items():
                    scalar[k] = scalar.get(k, 0) + v
        for pi in removed:
            r = pi.pod.requests
            cpu -= r.milli_cpu
            mem -= r.memory
            eph -= r.ephemeral_storage
            if r.scalar:
                if not copied:
                    scalar, copied = dict(scalar), True
                for k, v in r.scalar.items():
                    scalar[k] = scalar.get(k, 0) - v
        n = len(node_info.pods) + len(added) - len(removed)
        return _fits(s, node_info.allocatable, cpu, mem, eph, scalar, n)

    def filter_adjusted_many(
        self,
        state: CycleState,
        pod: Pod,
        nodes: Sequence[NodeInfo],
        added: Sequence[Sequence[PodInfo]],
    ) -> list[Status | None]:
        """``filter_adjusted`` on each node with its pods of ``added`` put on (the nominated pods'
        pass over a chunk, framework/pods_adjusted.py), in one call: the totals summed inline, and the
        nodes that fail the same checks the same way share one Status from ``_fits`` (as in
        ``filter_nodes``). A pod or node with extended resources goes through ``filter_adjusted``."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PodResourceRequest):
            s = self.compute_request(pod)
        out: list[Status | None] = []
        if s.scalar:
            return [
                self.filter_adjusted(state, pod, ni, pis, ()) for ni, pis in zip(nodes, added, strict=True)
            ]
        q_cpu, q_mem, q_eph = s.milli_cpu, s.memory, s.ephemeral_storage
        shared: dict[int, Status | None] = {}
        for ni, pis in zip(nodes, added, strict=True):
            used = ni.requested
            cpu, mem, eph = used.milli_cpu, used.memory, used.ephemeral_storage
            for pi in pis:
                r = pi.pod.requests
                cpu += r.milli_cpu
                mem += r.memory
                eph += r.ephemeral_storage
            alloc = ni.allocatable
            # _fits' checks as bits: too many pods; each of cpu, memory, ephemeral-storage short, and
            # asking more than the whole allocatable (scalar use cannot matter: the pod asks for none)
            key = int(len(ni.pods) + len(pis) + 1 > alloc.allowed_pod_number)
            if q_cpu > 0 and q_cpu > alloc.milli_cpu - cpu:
                key |= 2 | (4 if q_cpu > alloc.milli_cpu else 0)
            if q_mem > 0 and q_mem > alloc.memory - mem:
                key |= 8 | (16 if q_mem > alloc.memory else 0)
            if q_eph > 0 and q_eph > alloc.ephemeral_storage - eph:
                key |= 32 | (64 if q_eph > alloc.ephemeral_storage else 0)
            if not key:
                out.append(None)
                continue
            st = shared.get(key, _UNSET)
            if st is _UNSET:
                st = shared[key] = _fits(s, alloc, cpu, mem, eph, used.scalar, len(ni.pods) + len(pis))
            out.append(st)
        return out

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for every node: the fit checked on NumPy columns; the nodes that fail the same
        checks the same way share one Status, from ``fits`` itself."""
        s = state.get(PRE_FILTER_STATE_KEY)
        if not isinstance(s, PodResourceRequest):
            s = self.compute_request(pod)
        failed = None
        if len(nodes) >= FILTER_MIN_BATCH:
            failed = filter_failures(
                nodes, s.milli_cpu, s.memory, s.ephemeral_storage, s.scalar, s.dra, self._scalar_allocs
            )
        if failed is None:
            return [fits(s, ni.allocatable, ni.requested, len(ni.pods)) for ni in nodes]
        out: list[Status | None] = [None] * len(nodes)
        shared: dict[int, Status | None] = {}  # failure key -> the Status its nodes share
        for i, k in zip(*failed, strict=True):
            st = shared.get(k)
            if st is None:
                ni = nodes[i]
                st = shared[k] = fits(s, ni.allocatable, ni.requested, len(ni.pods))
            out[i] = st
        return out

    # ------------------------------------------------------------------------- PreScore/Score

    def _pod_requests(self, pod: Pod) -> tuple[int, ...]:
        return tuple(pod_request(pod, kind, rname, False) for kind, rname in self._resources)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        state.write(PRE_SCORE_STATE_KEY, self._pre_score_state(pod))
        return None

    def _pre_score_state(self, pod: Pod) -> _PreScoreState:
        return _PreScoreState(self._pod_requests(pod), self._dra_totals())

    def _dra_totals(self) -> ExtendedResourceTotals | None:
        """kube's getDRAPreScoredParams: device counts when a configured scalar resource is DRA-backed."""
        if not self._scalar_resources or not self._dra_extended_resource():
            return None
        return dra_extended_totals(self.handle, self._scalar_resources)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            s = self._pre_score_state(pod)
        return self._score(s.pod_requests, node_info, s.dra), None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        """``score`` for every node, on NumPy columns when the strategy and requests allow."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if not isinstance(s, _PreScoreState):
            s = self._pre_score_state(pod)
        pod_reqs, dra = s.pod_requests, s.dra
        out: ScoreValues | None = None
        if len(nodes) >= SCORE_MIN_BATCH and dra is None:
            if self._least_cpu_memory:
                out = least_cpu_memory(nodes, pod_reqs[0], pod_reqs[1])
            elif self._batch_strategy is not None:
                out = strategy_scores(
                    nodes, self._resources, self._weights, pod_reqs, self._batch_strategy, self._shape
                )
        if out is None:
            out = [self._score(pod_reqs, ni, dra) for ni in nodes]
        return out, None

    def _score(
        self, pod_reqs: tuple[int, ...], node_info: NodeInfo, dra: ExtendedResourceTotals | None = None
    ) -> int:
        if self._least_cpu_memory:
            na, nu = node_info.allocatable, node_info.non_zero_requested
            cap, want = na.milli_cpu, nu.milli_cpu + pod_reqs[0]
            cpu = (cap - want) * MAX_NODE_SCORE // cap if cap and want <= cap else 0
            cap, want = na.memory, nu.memory + pod_reqs[1]
            mem = (cap - want) * MAX_NODE_SCORE // cap if cap and want <= cap else 0
            if not na.milli_cpu or not na.memory:  # a resource the node lacks is left out
                return cpu + mem
            return (cpu + mem) // 2
        n = len(self._resources)
        requested = [0] * n
        allocatable = [0] * n
        for i, (kind, rname) in enumerate(self._resources):
            alloc, req = allocatable_requested(node_info, kind, rname, pod_reqs[i], False, dra)
            if alloc == 0:
                continue
            allocatable[i] = alloc
            requested[i] = req
        return self._scorer(requested, allocatable)

    def score_extensions(self) -> None:
        return None

    # ------------------------------------------------------------------------ queueing hints

    def events_to_register(self) -> Sequence[ev.ClusterEventWithHint]:
        events = [
            ev.ClusterEventWithHint(
                ev.ClusterEvent(ev.Resource.POD, ev.Action.DELETE | ev.Action.UPDATE_POD_SCALE_DOWN),
                self.is_schedulable_after_pod_event,
            ),
            ev.ClusterEventWithHint(
                ev.ClusterEvent(ev.Resource.NODE, ev.Action.ADD | ev.Action.UPDATE_NODE_ALLOCATABLE),
                self.is_schedulable_after_node_change,
            ),
        ]
        if self._dra_extended_resource():
            # a pod may wait for a DeviceClass that backs one of its extended resources
            events.append(
                ev.ClusterEventWithHint(
                    ev.ClusterEvent(ev.Resource.DEVICE_CLASS, ev.Action.ADD | ev.Action.UPDATE),
                    self.is_schedulable_after_device_class_event,
                )
            )
        return events

    def _dra_extended_resource(self) -> bool:
        """The DRAExtendedResource gate (``handle.extra["feature_gates"]``; on, 1.36's default, if absent)."""
        extra = getattr(self.handle, "extra", None)
        gates = extra.get("feature_gates") if isinstance(extra, Mapping) else None
        return bool(gates.get("DRAExtendedResource", True)) if isinstance(gates, Mapping) else True

    def is_schedulable_after_pod_event(self, pod: Pod, old_obj: Any, new_obj: Any) -> ev.QueueingHint:
        """A deleted pod that was scheduled or nominated frees room; so may a scaled-down scheduled pod
        whose requests shrank in a resource this pod requests, or this pod itself scaling down."""
        try:
            original = as_pod(old_obj)
            modified = as_pod(new_obj)
        except MalformedObject:
            return ev.QueueingHint.QUEUE
        if modified is None:
            if original is None:
                return ev.QueueingHint.QUEUE
            if not original.node_name and not original.nominated_node_name:
                return ev.QueueingHint.SKIP
            return ev.QueueingHint.QUEUE
        if original is None:
            return ev.QueueingHint.QUEUE
        if modified.uid == pod.uid:
            return ev.QueueingHint.QUEUE
        if not modified.node_name:
            return ev.QueueingHint.SKIP
        want, before, after = pod.requests, original.requests, modified.requests
        if want.milli_cpu and before.milli_cpu > after.milli_cpu:
            return ev.QueueingHint.QUEUE
        if want.memory and before.memory > after.memory:
            return ev.QueueingHint.QUEUE
        if want.ephemeral_storage and before.ephemeral_storage > after.ephemeral_storage:
            return ev.QueueingHint.QUEUE
        for rname, qty in want.scalar.items():
            if not qty or not is_scalar_resource_name(rname):
                continue
            if before.scalar.get(rname, 0) > after.scalar.get(rname, 0):
                return ev.QueueingHint.QUEUE
        return ev.QueueingHint.SKIP

    def is_schedulable_after_node_change(self, pod: Pod, old_obj: Any, new_obj: Any) -> ev.QueueingHint:
        """A new node where the pod fits (when empty), or a node whose allocatable grew in a resource
        the pod requests (or in pods) and where it now fits."""
        try:
            original = as_node(old_obj)
            modified = as_node(new_obj)
        except MalformedObject:
            return ev.QueueingHint.QUEUE
        if modified is None:
            return ev.QueueingHint.SKIP
        # kube checks the fit without the ignored resources; honouring them only queues more often.
        if fits(self.compute_request(pod), modified.allocatable, _EMPTY, 0) is not None:
            return ev.QueueingHint.SKIP
        if original is None:
            return ev.QueueingHint.QUEUE
        if _requested_resources_increased(pod, original.allocatable, modified.allocatable):
            return ev.QueueingHint.QUEUE
        return ev.QueueingHint.SKIP

    def is_schedulable_after_device_class_event(
        self, pod: Pod, old_obj: Any, new_obj: Any
    ) -> ev.QueueingHint:
        """kube's isSchedulableAfterDeviceClassEvent: a class added under the implicit name of a resource
        the pod requests (``deviceclass.resource.kubernetes.io/<class>``), or added or updated with an
        ``extendedResourceName`` the pod requests; an update that keeps the extended resource name is
        skipped."""
        if not isinstance(new_obj, Mapping) or (old_obj is not None and not isinstance(old_obj, Mapping)):
            return ev.QueueingHint.QUEUE
        name = _extended_resource_name(new_obj)
        wants = pod.requests.scalar
        if old_obj is not None:
            if _extended_resource_name(old_obj) == name:
                return ev.QueueingHint.SKIP
        elif (
            IMPLICIT_EXTENDED_RESOURCE_PREFIX + str((new_obj.get("metadata") or {}).get("name", "")) in wants
        ):
            return ev.QueueingHint.QUEUE
        if name and name in wants:
            return ev.QueueingHint.QUEUE
        return ev.QueueingHint.SKIP


def _extended_resource_name(device_class: Mapping[str, Any]) -> str:
    spec = device_class.get("spec")
    return str((spec.get("extendedResourceName") if isinstance(spec, Mapping) else None) or "")


_UNSET: Any = object()


def fits(s: PodResourceRequest, alloc: Resource, used: Resource, num_pods: int) -> Status | None:
    """kube's fitsRequest: every short resource is a reason; UnschedulableAndUnresolvable if some
    request is larger than the node's whole allocatable."""
    return _fits(s, alloc, used.milli_cpu, used.memory, used.ephemeral_storage, used.scalar, num_pods)


def _fits(
    s: PodResourceRequest,
    alloc: Resource,
    used_cpu: int,
    used_memory: int,
    used_ephemeral: int,
    used_scalar: Mapping[str, int],
    num_pods: int,
) -> Status | None:
    """``fits`` on the node's requested totals given one by one."""
    reasons: list[str] = []
    unresolvable = False
    if num_pods + 1 > alloc.allowed_pod_number:
        reasons.append(REASON_TOO_MANY_PODS)
    q = s.milli_cpu
    if q > 0 and q > alloc.milli_cpu - used_cpu:
        reasons.append(REASON_INSUFFICIENT_CPU)
        unresolvable = unresolvable or q > alloc.milli_cpu
    q = s.memory
    if q > 0 and q > alloc.memory - used_memory:
        reasons.append(REASON_INSUFFICIENT_MEMORY)
        unresolvable = unresolvable or q > alloc.memory
    q = s.ephemeral_storage
    if q > 0 and q > alloc.ephemeral_storage - used_ephemeral:
        reasons.append(REASON_INSUFFICIENT_EPHEMERAL_STORAGE)
        unresolvable = unresolvable or q > alloc.ephemeral_storage
    if s.scalar:
        a_scalar, u_scalar = alloc.scalar, used_scalar
        for rname, q, reason in s.scalar:
            a = a_scalar.get(rname, 0)
            if a <= 0 and rname in s.dra:
                continue  # DynamicResources allocates devices for it on this node
            if q > a - u_scalar.get(rname, 0):
                reasons.append(reason)
                unresolvable = unresolvable or q > a
    if not reasons:
        return None
    code = Code.UNSCHEDULABLE_AND_UNRESOLVABLE if unresolvable else Code.UNSCHEDULABLE
    return Status(code, tuple(reasons), NAME)


def _requested_resources_increased(pod: Pod, before: Resource, after: Resource) -> bool:
    """kube's haveAnyRequestedResourcesIncreased."""
    if after.allowed_pod_number > before.allowed_pod_number:
        return True
    req = pod.requests
    if (
        (req.milli_cpu > 0 and after.milli_cpu > before.milli_cpu)
        or (req.memory > 0 and after.memory > before.memory)
        or (req.ephemeral_storage > 0 and after.ephemeral_storage > before.ephemeral_storage)
    ):
        return True
    for rname, qty in req.scalar.items():
        if not qty or not is_scalar_resource_name(rname):
            continue
        if after.scalar.get(rname, 0) > before.scalar.get(rname, 0):
            return True
    return False


def new(args: NodeResourcesFitArgs | None, handle: Handle) -> Fit:
    return Fit(args, handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    NodeResourcesFitArgs,
    "nodes must have room for the pod's requests; scored by LeastAllocated, MostAllocated or "
    "RequestedToCapacityRatio",
)
