"""What the queue holds and says: a pending pod's bookkeeping (``QueuedPodInfo``), the names of the
queues (the ``queue`` label of scheduler_pending_pods), kube's event labels for moves, and whether a pod
update changed anything scheduling reads (``is_pod_updated``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from pyscheduler.framework.events import FORCE_ACTIVATE, Action, ClusterEvent, Resource
from pyscheduler.framework.types import Pod, PodInfo

# Where a pod is (``SchedulingQueue.where``) and the ``queue`` label of the pending-pods metric.
ACTIVE = "active"
BACKOFF = "backoff"
UNSCHEDULABLE = "unschedulable"
GATED = "gated"
IN_FLIGHT = "in_flight"

# kube's event labels for moves that are not cluster events.
SCHEDULE_ATTEMPT_FAILURE = "ScheduleAttemptFailure"
BACKOFF_COMPLETE = "BackoffComplete"
POP_FROM_BACKOFF = "PopFromBackoffQ"  # an idle activeQ took a pod still backing off
EVENT_UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD)
EVENT_UNSCHEDULED_POD_UPDATE = ClusterEvent(Resource.UNSCHEDULED_POD, Action.UPDATE)


def event_label(event: ClusterEvent) -> str:
    """kube's ClusterEvent.Label(): the explicit label, else resource + action (``NodeAdd``,
    ``UnschedulablePodUpdate``, ``NodeUpdateNodeLabel``)."""
    if event.label:
        return event.label
    name = event.action.name or str(int(event.action))
    action = "|".join("".join(w.capitalize() for w in part.split("_")) for part in name.split("|"))
    return f"{event.resource.value}{action}"


POD_ADD_LABEL = event_label(EVENT_UNSCHEDULED_POD_ADD)  # "UnschedulablePodAdd"
POD_UPDATE_LABEL = event_label(EVENT_UNSCHEDULED_POD_UPDATE)  # "UnschedulablePodUpdate"
FORCE_ACTIVATE_LABEL = event_label(FORCE_ACTIVATE)

# Pod fields that are status or bookkeeping: a change there does not make a pod schedulable
# (kube's isPodUpdated strips status, resourceVersion and managed fields).
_NOT_SPEC = frozenset(
    {"resource_version", "phase", "nominated_node_name", "scheduled_condition"}
    | {"container_status_requests", "pod_level_status_requests", "resize_pending_reason"}
    | {"requests", "non_zero_requests", "fit_score_requests"}  # derived, compared below
)
_SPEC_FIELDS: tuple[str, ...] = tuple(f.name for f in dataclasses.fields(Pod) if f.name not in _NOT_SPEC)


def is_pod_updated(old: Pod, new: Pod) -> bool:
    """True if ``new`` differs from ``old`` in metadata or spec (status and resourceVersion ignored)."""
    if old is new:
        return False
    for name in _SPEC_FIELDS:
        if getattr(old, name) != getattr(new, name):
            return True
    # Container equality ignores requests; compare them explicitly.
    old_req = [c.requests for c in (*old.init_containers, *old.containers)]
    new_req = [c.requests for c in (*new.init_containers, *new.containers)]
    return old_req != new_req


class QueuedPodInfo:
    """A pending pod and its queue bookkeeping (satisfies ``framework.interfaces.QueuedPodInfoView``).

    ``timestamp`` is when the pod was added or last requeued after a failure (QueueSort's tie-break
    and the start of its backoff); ``initial_attempt_timestamp`` when it first became ready to be
    scheduled (kube sets it when the pod first enters activeQ). ``unschedulable_plugins`` and
    ``pending_plugins`` are filled by the scheduler after a failed attempt (cleared by ``pop``);
    ``gated``/``gating_plugin`` by PreEnqueue.
    """

    __slots__ = (
        "attempts",
        "flushed",
        "gated",
        "gating_plugin",
        "initial_attempt_timestamp",
        "pending_plugins",
        "pod_info",
        "timestamp",
        "unschedulable_plugins",
    )

    def __init__(
        self,
        pod_info: PodInfo | Pod,
        timestamp: float,
        *,
        initial_attempt_timestamp: float | None = None,
        attempts: int = 0,
        unschedulable_plugins: Iterable[str] = (),
        pending_plugins: Iterable[str] = (),
        gated: bool = False,
        gating_plugin: str = "",
    ) -> None:
        self.pod_info = pod_info if isinstance(pod_info, PodInfo) else PodInfo(pod_info)
        self.timestamp = timestamp
        self.initial_attempt_timestamp = initial_attempt_timestamp
        self.attempts = attempts
        self.unschedulable_plugins: set[str] = set(unschedulable_plugins)
        self.pending_plugins: set[str] = set(pending_plugins)
        self.gated = gated
        self.gating_plugin = gating_plugin
        # moved out of the unschedulable pool by the leftover flush (scheduler_pod_scheduled_after_flush_total)
        self.flushed = False

    @property
    def pod(self) -> Pod:
        return self.pod_info.pod

    @property
    def uid(self) -> str:
        return self.pod_info.pod.uid

    def rejector_plugins(self) -> set[str]:
        return self.unschedulable_plugins | self.pending_plugins

    def __repr__(self) -> str:
        extra = f", gated by {self.gating_plugin or '?'}" if self.gated else ""
        plugins = sorted(self.rejector_plugins())
        return f"QueuedPodInfo({self.pod.key}, attempts={self.attempts}, rejected_by={plugins}{extra})"
