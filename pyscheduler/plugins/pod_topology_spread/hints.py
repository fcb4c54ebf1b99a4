"""Queueing hints: which pod and node changes may let a pod rejected by PodTopologySpread fit."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_node,
    as_pod,
)
from pyscheduler.framework.selectors import (
    SelectorError,
)
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.pod_topology_spread.args import (
    DO_NOT_SCHEDULE,
    HONOR,
)
from pyscheduler.plugins.pod_topology_spread.common import (
    PluginBase,
    node_has_all_keys,
)


class Hints(PluginBase):
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
