"""ZoneQuota: at most ``maxPodsPerZone`` pods of a namespace in each zone, and a preference for emptier zones.

- PreFilter counts, once per pod, the pods of its namespace in every zone (bound and assumed pods, on every
  node) and keeps the counts in the CycleState. For a namespace the args leave out it returns Skip, so
  Filter does not run for that pod.
- add_pod / remove_pod (PreFilterExtensions) keep those counts right while preemption tries removing
  victims, or the scheduler adds nominated pods, on a copy of the state.
- Filter: a node in a zone that already has the quota is Unschedulable (preempting a pod of the namespace
  there could make room); a node without the zone label is UnschedulableAndUnresolvable (nothing helps).
- Score: 100 on an empty zone, down to 0 on a full one. PreScore skips namespaces the args leave out.
- Queueing hints: a pod ZoneQuota rejected is retried only when a pod of its namespace leaves a node, or a
  node gains a zone; other cluster events cannot help it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from pyscheduler.framework.interfaces import (
    MAX_NODE_SCORE,
    Handle,
    PreFilterExtensions,
    PreFilterResult,
    ScoreExtensions,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo

from .args import ZoneQuotaArgs

NAME = "ZoneQuota"
STATE_KEY = f"PreFilter{NAME}"
ERR_ZONE_FULL = "node(s) were in a zone that already runs maxPodsPerZone pods of the namespace"
ERR_NO_ZONE = "node(s) had no zone label"


@dataclass
class ZoneCounts:
    """Pods of one namespace per zone. add_pod / remove_pod change it on a cloned CycleState, so it
    must copy itself: CycleState.clone() calls clone() on every value that has one."""

    per_zone: dict[str, int] = field(default_factory=dict)

    def clone(self) -> ZoneCounts:
        return ZoneCounts(dict(self.per_zone))


class ZoneQuota:
    name = NAME

    def __init__(self, args: ZoneQuotaArgs, handle: Handle) -> None:
        self.args = args
        self.handle = handle

    # ------------------------------------------------------------------------------ helpers

    def applies_to(self, pod: Pod) -> bool:
        return not self.args.namespaces or pod.namespace in self.args.namespaces

    def zone_of(self, node_info: NodeInfo) -> str:
        node = node_info.node
        return node.labels.get(self.args.zone_label, "") if node is not None else ""

    @staticmethod
    def uses_quota_of(pod: Pod, other: Pod) -> bool:
        return other.namespace == pod.namespace and other.uid != pod.uid

    def count(self, pod: Pod, nodes: Sequence[NodeInfo]) -> ZoneCounts:
        counts = ZoneCounts()
        for node_info in nodes:
            zone = self.zone_of(node_info)
            if zone:
                n = sum(1 for p in node_info.pods if self.uses_quota_of(pod, p.pod))
                counts.per_zone[zone] = counts.per_zone.get(zone, 0) + n
        return counts

    def counts_in(self, state: CycleState, pod: Pod) -> ZoneCounts:
        """What PreFilter or PreScore wrote; counted now, over the whole cluster, if neither ran
        (a profile may enable ZoneQuota at filter or score alone)."""
        counts: ZoneCounts | None = state.get(STATE_KEY)
        if counts is None:
            counts = self.count(pod, self.handle.snapshot.list())
            state.write(STATE_KEY, counts)
        return counts

    # ------------------------------------------------------------------------------ PreFilter

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        if not self.applies_to(pod):
            return None, Status.skip(plugin=NAME)
        state.write(STATE_KEY, self.count(pod, nodes))
        return None, None  # every node may fit: no narrowing PreFilterResult

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return self

    def add_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_add: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        self._adjust(state, pod_to_schedule, pod_to_add.pod, node_info, +1)
        return None

    def remove_pod(
        self, state: CycleState, pod_to_schedule: Pod, pod_to_remove: PodInfo, node_info: NodeInfo
    ) -> Status | None:
        self._adjust(state, pod_to_schedule, pod_to_remove.pod, node_info, -1)
        return None

    def _adjust(self, state: CycleState, pod: Pod, other: Pod, node_info: NodeInfo, delta: int) -> None:
        zone = self.zone_of(node_info)
        if zone and self.uses_quota_of(pod, other):
            counts = self.counts_in(state, pod)
            counts.per_zone[zone] = counts.per_zone.get(zone, 0) + delta

    # ------------------------------------------------------------------------------ Filter

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if not self.applies_to(pod):
            return None
        zone = self.zone_of(node_info)
        if not zone:
            return Status.unresolvable(ERR_NO_ZONE, plugin=NAME)
        if self.counts_in(state, pod).per_zone.get(zone, 0) >= self.args.max_pods_per_zone:
            return Status.unschedulable(ERR_ZONE_FULL, plugin=NAME)
        return None

    # ------------------------------------------------------------------------------ PreScore, Score

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        if not self.applies_to(pod):
            return Status.skip(plugin=NAME)
        self.counts_in(state, pod)
        return None

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        zone = self.zone_of(node_info)
        if not zone:
            return 0, None
        quota = self.args.max_pods_per_zone
        used = min(self.counts_in(state, pod).per_zone.get(zone, 0), quota)
        return MAX_NODE_SCORE * (quota - used) // quota, None

    def score_extensions(self) -> ScoreExtensions | None:
        return None  # scores are already 0..100: no NormalizeScore

    # ------------------------------------------------------------------------------ queueing hints

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(Resource.POD, Action.DELETE), self.after_pod_deleted),
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL), self.after_node_change
            ),
        ]

    def after_pod_deleted(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A deleted pod frees quota only for pods of its own namespace, and only if it had a node."""
        if isinstance(old, Pod) and (old.namespace != pod.namespace or not old.node_name):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE

    def after_node_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        """A node helps when it brings a zone: a new node with the label, or a label added or changed."""
        before = old.labels.get(self.args.zone_label, "") if isinstance(old, Node) else ""
        after = new.labels.get(self.args.zone_label, "") if isinstance(new, Node) else ""
        return QueueingHint.QUEUE if after and after != before else QueueingHint.SKIP
