"""Queueing hints: which pod and node changes may let a pod rejected by InterPodAffinity fit."""

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
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.inter_pod_affinity.common import (
    PluginBase,
)
from pyscheduler.plugins.inter_pod_affinity.terms import (
    pod_matches_all_terms,
)


class Hints(PluginBase):
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
        parsed = self._hint_terms.get(pod)
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
        parsed = self._hint_terms.get(pod)
        if parsed.errors:
            return QueueingHint.QUEUE
        for t in (*parsed.required_affinity, *parsed.required_anti_affinity):
            if t.topology_key in node.labels:
                return QueueingHint.QUEUE
        return QueueingHint.SKIP
