"""GangScheduling's events and queueing hints (kube's EventsToRegister).

A pod GangScheduling kept out (its group too small, or its PodGroup missing) is retried when:

- a pod is added that belongs to the same group (same namespace and PodGroup name) — it may complete
  the gang (``spec.schedulingGroup`` is immutable, so updates are not registered);
- the PodGroup it names is added (PodGroups are immutable: no update event).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_pod,
)
from pyscheduler.framework.types import Pod


def is_schedulable_after_pod_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    added = as_pod(new)
    if added is None:
        return QueueingHint.QUEUE
    if not pod.scheduling_group or (pod.namespace, pod.scheduling_group) != (
        added.namespace,
        added.scheduling_group,
    ):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def is_schedulable_after_pod_group_added(pod: Pod, old: Any, new: Any) -> QueueingHint:
    if not isinstance(new, Mapping):
        return QueueingHint.QUEUE
    meta = new.get("metadata") or {}
    if not pod.scheduling_group or (pod.namespace, pod.scheduling_group) != (
        meta.get("namespace", ""),
        meta.get("name", ""),
    ):
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def events_to_register() -> Sequence[ClusterEventWithHint]:
    return [
        ClusterEventWithHint(ClusterEvent(Resource.POD, Action.ADD), is_schedulable_after_pod_added),
        ClusterEventWithHint(
            ClusterEvent(Resource.POD_GROUP, Action.ADD), is_schedulable_after_pod_group_added
        ),
    ]
