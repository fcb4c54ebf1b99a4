"""The extension points: one Protocol each, with kube-scheduler's semantics.

A plugin is any object with a ``name`` that implements one or more of these Protocols; the runtime
checks which by ``isinstance`` (they are ``runtime_checkable``). Every method may return ``None`` for
success. A plugin that raises is reported as an Error status, never a crash.

Order of a scheduling cycle (the runtime in ``framework.runtime`` drives it):

    PreEnqueue (before the pod enters activeQ)
    QueueSort.less (orders activeQ)
    PreFilter -> Filter (per node) -> [PostFilter if no node fits]
    PreScore -> Score (per node) -> NormalizeScore -> weights
    Reserve (in order; Unreserve in reverse on any later failure)
    Permit (approve / reject / wait with a timeout)
    --- binding cycle, off the scheduling thread ---
    WaitOnPermit -> PreBind -> Bind (first non-Skip) -> PostBind

A pod group (workload-aware scheduling, ``TopologyAwareWorkloadScheduling``) is first split into
placements (PlacementGenerate), tried on each, and the feasible placements ranked (PlacementScore).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, runtime_checkable

import numpy as np
import numpy.typing as npt

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.podgroup import Placement, PlacementScore, PodGroupAssignments, PodGroupInfo
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, PodInfo

if TYPE_CHECKING:
    from pyscheduler.framework.events import ClusterEventWithHint

MAX_NODE_SCORE = 100
MIN_NODE_SCORE = 0
MAX_TOTAL_SCORE = 2**63 - 1


@dataclass(slots=True)
class NodeScore:
    name: str
    score: int


NodeScoreList = list[NodeScore]

ScoreValues: TypeAlias = "Sequence[int] | npt.NDArray[np.int64]"
"""Scores of many nodes, one per node: a list of ints or an int64 NumPy array (``score_nodes``,
``normalize_scores``)."""


@dataclass(frozen=True, slots=True)
class PreFilterResult:
    """``node_names`` None means all nodes; a set narrows Filter to those nodes."""

    node_names: frozenset[str] | None = None

    def all_nodes(self) -> bool:
        return self.node_names is None

    def merge(self, other: PreFilterResult | None) -> PreFilterResult:
        if other is None or other.node_names is None:
            return self
        if self.node_names is None:
            return other
        return PreFilterResult(self.node_names & other.node_names)


@dataclass(frozen=True, slots=True)
class PostFilterResult:
    nominated_node_name: str = ""
    # "clear" the nomination (preemption found nothing) vs "set" it
    mode: str = "set"


class Diagnosis:
    """Why a pod fits nowhere: per node, the first rejecting status; plus the plugins that rejected.

    The node search records rejections a chunk at a time with ``defer`` (the nodes, the positions
    rejected, their statuses); ``node_to_status`` names them on first read. A pod that fits somewhere
    only needs how many nodes were rejected (``rejected_count``), so where most nodes fail (a node
    selector to a small pool) it never builds a name -> status map of thousands of nodes.
    """

    __slots__ = (
        "_deferred",
        "_statuses",
        "absent_nodes_status",
        "pending_plugins",
        "post_filter_msg",
        "pre_filter_msg",
        "unschedulable_plugins",
    )

    def __init__(
        self,
        node_to_status: dict[str, Status] | None = None,
        unschedulable_plugins: set[str] | None = None,
        pending_plugins: set[str] | None = None,
        pre_filter_msg: str = "",
        post_filter_msg: str = "",
        absent_nodes_status: Status | None = None,
    ) -> None:
        self._statuses: dict[str, Status] = node_to_status if node_to_status is not None else {}
        self._deferred: list[tuple[Sequence[NodeInfo], list[int], list[Status]]] = []
        self.unschedulable_plugins: set[str] = (
            unschedulable_plugins if unschedulable_plugins is not None else set()
        )
        self.pending_plugins: set[str] = pending_plugins if pending_plugins is not None else set()
        self.pre_filter_msg = pre_filter_msg
        self.post_filter_msg = post_filter_msg
        # status for nodes PreFilter excluded (all share it): kube reports them as "absent" nodes
        self.absent_nodes_status = absent_nodes_status

    @property
    def node_to_status(self) -> dict[str, Status]:
        self.settle()
        return self._statuses

    @node_to_status.setter
    def node_to_status(self, value: dict[str, Status]) -> None:
        self._statuses = value
        self._deferred = []

    def settle(self) -> None:
        """Name the deferred rejections now (while the nodes are the cycle's snapshot)."""
        if self._deferred:
            statuses = self._statuses
            for nodes, rejected, rejections in self._deferred:
                statuses.update(zip([nodes[i].name for i in rejected], rejections, strict=True))
            self._deferred = []

    def defer(self, nodes: Sequence[NodeInfo], rejected: list[int], rejections: list[Status]) -> None:
        """``nodes[rejected[k]]`` was rejected with ``rejections[k]``; named when first read."""
        if rejected:
            self._deferred.append((nodes, rejected, rejections))

    def rejected_count(self) -> int:
        """len(node_to_status), without naming deferred rejections."""
        return len(self._statuses) + sum(len(r) for _, r, _ in self._deferred)


# ---------------------------------------------------------------------------------------- plugins


@runtime_checkable
class Plugin(Protocol):
    name: str


@runtime_checkable
class QueueSortPlugin(Plugin, Protocol):
    def less(self, a: QueuedPodInfoView, b: QueuedPodInfoView) -> bool: ...

    # Optional: a key with ``sort_key(a) < sort_key(b)`` exactly when ``less(a, b)``, and equal keys
    # exactly when neither is less; the queue then compares keys (in C) instead of calling ``less``.
    # The key may only read what ``less`` reads of the pod and its queue timestamp.
    # def sort_key(self, a: QueuedPodInfoView) -> Any


@runtime_checkable
class PreEnqueuePlugin(Plugin, Protocol):
    def pre_enqueue(self, pod: Pod) -> Status | None: ...


@runtime_checkable
class EnqueueExtensions(Plugin, Protocol):
    """Which cluster events may make a pod this plugin rejected schedulable (queueing hints)."""

    def events_to_register(self) -> Sequence[ClusterEventWithHint]: ...


class PreFilterExtensions(Protocol):
    """Incremental updates of PreFilter state, used by preemption and nominated pods."""

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...


@runtime_checkable
class PreFilterPlugin(Plugin, Protocol):
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]: ...

    def pre_filter_extensions(self) -> PreFilterExtensions | None: ...


@runtime_checkable
class FilterPlugin(Plugin, Protocol):
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None: ...


@runtime_checkable
class BatchFilterPlugin(FilterPlugin, Protocol):
    """Optional: Filter many nodes in one call (see framework.node_table). Must return, for each node
    of ``nodes`` in order, exactly what ``filter`` returns for it; ``nodes`` may be a NodeBatch whose
    rows index the snapshot's NodeTable (``framework.node_table.batch_rows``)."""

    def filter_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> Sequence[Status | None]: ...


@runtime_checkable
class PostFilterPlugin(Plugin, Protocol):
    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]: ...


@runtime_checkable
class PreScorePlugin(Plugin, Protocol):
    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None: ...


class ScoreExtensions(Protocol):
    def normalize_score(self, state: CycleState, pod: Pod, scores: NodeScoreList) -> Status | None: ...

    # Optional, used instead when present: the same on plain values, returning the new ones
    # def normalize_scores(self, state, pod, values: ScoreValues) -> tuple[ScoreValues, Status | None]
    # (``values`` is a 1-D int64 NumPy array; return an array or a list of ints, one per value)


@runtime_checkable
class ScorePlugin(Plugin, Protocol):
    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]: ...

    def score_extensions(self) -> ScoreExtensions | None: ...


@runtime_checkable
class BatchScorePlugin(ScorePlugin, Protocol):
    """Optional: Score many nodes in one call. Returns the score of each node of ``nodes`` in order
    (before NormalizeScore), exactly what ``score`` gives for it, or a non-success Status. An int64
    NumPy array is taken as it is; a list is converted (the runtime adds scores up as int64 arrays)."""

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]: ...


@runtime_checkable
class SignPlugin(Plugin, Protocol):
    """Opportunistic batching (kube's SignPlugin, KEP-5598): the parts of ``pod`` this plugin's
    PreFilter, Filter, PreScore and Score answers depend on, as ``(key, hashable value)`` fragments
    (``framework.helpers.signers`` has kube's keys and shared signers); two pods with equal fragments from
    every plugin must get the same answers on the same nodes. A non-success Status refuses the pod (it
    gets no signature). A profile with a PreFilter/Filter/PreScore/Score plugin that is not a SignPlugin
    signs no pod."""

    def sign_pod(self, pod: Pod) -> tuple[Sequence[tuple[str, Any]], Status | None]: ...


@runtime_checkable
class ReservePlugin(Plugin, Protocol):
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Must be idempotent: it may run for a pod whose reserve never ran or already unreserved."""
        ...


@runtime_checkable
class PermitPlugin(Plugin, Protocol):
    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        """Return (status, timeout seconds). A WAIT status holds the pod up to the timeout."""
        ...


@runtime_checkable
class PreBindPlugin(Plugin, Protocol):
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class BindPlugin(Plugin, Protocol):
    def bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None: ...


@runtime_checkable
class PostBindPlugin(Plugin, Protocol):
    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None: ...


@runtime_checkable
class PlacementGeneratePlugin(Plugin, Protocol):
    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[list[Placement] | None, Status | None]:
        """The placements (node subsets of ``parent``) the whole group is tried on."""
        ...


class PlacementScoreExtensions(Protocol):
    def normalize_placement_score(
        self, state: CycleState, group: PodGroupInfo, scores: list[PlacementScore]
    ) -> Status | None:
        """Rewrite ``scores[i].score`` in place, to [MIN_NODE_SCORE, MAX_NODE_SCORE]."""
        ...


@runtime_checkable
class PlacementScorePlugin(Plugin, Protocol):
    def score_placement(
        self, state: CycleState, group: PodGroupInfo, assignments: PodGroupAssignments
    ) -> tuple[int, Status | None]: ...

    def placement_score_extensions(self) -> PlacementScoreExtensions | None: ...


# -------------------------------------------------------------------------------- what plugins see


class QueuedPodInfoView(Protocol):
    """What QueueSort compares: the pod and when it (first) entered the queue."""

    @property
    def pod(self) -> Pod: ...

    @property
    def timestamp(self) -> float: ...

    @property
    def attempts(self) -> int: ...


class WaitingPod(Protocol):
    """A pod held in Permit. Other plugins may allow or reject it through the handle."""

    @property
    def pod(self) -> Pod: ...

    @property
    def node_name(self) -> str: ...

    def pending_plugins(self) -> list[str]: ...

    def allow(self, plugin: str) -> None: ...

    def reject(self, plugin: str, message: str) -> None: ...


class SnapshotLister(Protocol):
    """The cycle's view of the cluster: every node with its pods, assumed pods included."""

    def list(self) -> Sequence[NodeInfo]: ...

    def get(self, node_name: str) -> NodeInfo | None: ...

    def have_pods_with_affinity_list(self) -> Sequence[NodeInfo]: ...

    def have_pods_with_required_anti_affinity_list(self) -> Sequence[NodeInfo]: ...

    def num_nodes_with_image(self, image: str) -> int: ...


class ClusterObjects(Protocol):
    """Read access to the other objects plugins consult, kept current by watches.
    Each ``get`` returns the object's API JSON (read-only by convention) or None."""

    def get(self, kind: str, namespace: str, name: str) -> Mapping[str, Any] | None: ...

    def list(self, kind: str, namespace: str | None = None) -> Iterable[Mapping[str, Any]]: ...


class ApiWriter(Protocol):
    """What a plugin may call on ``Handle.client``: the writes kube's in-tree plugins make. The daemon
    passes its ``pyscheduler.client.api.Api``; a unit test passes a fake, or None for a plugin that
    writes nothing."""

    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """POST the pod's Binding; None on success, else an error Status (409/404 are final)."""
        ...

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
        field_manager: str | None = None,
    ) -> Mapping[str, Any]: ...

    def patch_pod_status(
        self,
        namespace: str,
        name: str,
        *,
        condition: Mapping[str, Any] | None = None,
        nominated_node_name: str | None = None,
    ) -> Mapping[str, Any] | None: ...

    def delete_pod(
        self, namespace: str, name: str, *, uid: str | None = None, grace_period_seconds: int | None = None
    ) -> bool: ...


class Handle(Protocol):
    """What the framework gives a plugin factory."""

    @property
    def snapshot(self) -> SnapshotLister: ...

    @property
    def objects(self) -> ClusterObjects: ...

    @property
    def client(self) -> ApiWriter | None:
        """The API boundary (the daemon's ``Api``); only for the rare plugin that writes. None when
        the handle has no client (a unit test of a plugin that writes nothing)."""
        ...

    def iterate_waiting_pods(self) -> Iterable[WaitingPod]: ...

    def get_waiting_pod(self, uid: str) -> WaitingPod | None: ...

    def reject_waiting_pod(self, uid: str) -> bool: ...

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]: ...

    def run_filter_plugins_with_nominated_pods(
        self, state: CycleState, pod: Pod, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def run_pre_filter_extension_remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None: ...

    def now(self) -> float:
        """The framework clock (monotonic seconds); plugins must not read the wall clock."""
        ...
