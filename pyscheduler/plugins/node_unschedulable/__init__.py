"""NodeUnschedulable: a cordoned node (``spec.unschedulable: true``) takes no new pods.

A pod is still allowed on a cordoned node when it tolerates the taint
``node.kubernetes.io/unschedulable:NoSchedule`` (DaemonSet pods do), exactly as kube-scheduler 1.36 does:
the toleration is matched against that taint (key and NoSchedule effect, empty value), so an ``Exists``
toleration with no key, or one for that key with an empty effect, also counts.

Extension points: Filter, EnqueueExtensions. Args: none.

Reason: "node(s) were unschedulable" with code UnschedulableAndUnresolvable (preemption cannot uncordon a
node). A NodeInfo without its node gets "node(s) had unknown conditions" (same code).

Queueing hints (kube's, with queueing hints enabled):

- Node Add / UpdateNodeTaint: queue when a node is added schedulable, or an update turns a cordoned node
  schedulable.
- Pod UpdatePodTolerations: queue when the rejected pod itself now tolerates the unschedulable taint.

Batch: ``filter_nodes`` reads the NodeTable's ``unschedulable`` column (and which rows have no Node, kept
per table epoch); only the rows it flags go through ``filter`` for their Status. Other node lists go
node by node.
"""

from __future__ import annotations

from collections.abc import Sequence
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
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.node_table import NodeTable, batch_rows
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod, Taint, Toleration

NAME = "NodeUnschedulable"
ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
ERR_REASON_UNKNOWN_CONDITION = "node(s) had unknown conditions"

TAINT_NODE_UNSCHEDULABLE = "node.kubernetes.io/unschedulable"
UNSCHEDULABLE_TAINT = Taint(TAINT_NODE_UNSCHEDULABLE, "", "NoSchedule")


def tolerates_unschedulable(tolerations: Sequence[Toleration]) -> bool:
    """Whether these tolerations let a pod onto a cordoned node."""
    return any(t.tolerates(UNSCHEDULABLE_TAINT) for t in tolerations)


class NodeUnschedulable:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.TOLERATIONS, signers.tolerations(pod))], None

    def __init__(self) -> None:
        # per (table, node_epoch): which rows have no Node (None: none of them)
        self._table: NodeTable | None = None
        self._epoch = -1
        self._no_node: npt.NDArray[np.bool_] | None = None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        node = node_info.node
        if node is None:
            return Status.unresolvable(ERR_REASON_UNKNOWN_CONDITION, plugin=NAME)
        if not node.unschedulable:
            return None
        if tolerates_unschedulable(pod.tolerations):
            return None
        return Status.unresolvable(ERR_REASON_UNSCHEDULABLE, plugin=NAME)

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Sequence[Status | None]:
        f = self.filter
        tr = batch_rows(nodes)
        if tr is None:
            return [f(state, pod, ni) for ni in nodes]
        table, rows = tr
        if self._table is not table or self._epoch != table.node_epoch:
            no_node = np.fromiter((n is None for n in table.nodes), np.bool_, table.size)
            self._no_node = no_node if no_node.any() else None
            self._table, self._epoch = table, table.node_epoch
        # only a cordoned row or one without its Node can be rejected
        flagged = table.unschedulable[rows]
        if self._no_node is not None:
            flagged |= self._no_node[rows]
        out: list[Status | None] = [None] * len(nodes)
        if flagged.any():
            for i in np.flatnonzero(flagged).tolist():
                out[i] = f(state, pod, nodes[i])
        return out

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.NODE, Action.ADD | Action.UPDATE_NODE_TAINT),
                self.is_schedulable_after_node_change,
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_TOLERATIONS),
                self.is_schedulable_after_pod_toleration_change,
            ),
        ]

    @staticmethod
    def is_schedulable_after_node_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            old, new = as_node(old_obj), as_node(new_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if new is None:
            return QueueingHint.QUEUE  # not a node: be safe, as kube is on a conversion error
        if not new.unschedulable and (old is None or old.unschedulable):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP

    @staticmethod
    def is_schedulable_after_pod_toleration_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            modified = as_pod(new_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if modified is None:
            return QueueingHint.QUEUE
        if modified.uid == pod.uid and tolerates_unschedulable(modified.tolerations):
            return QueueingHint.QUEUE
        return QueueingHint.SKIP


def new(args: None, handle: Handle) -> NodeUnschedulable:
    return NodeUnschedulable()


PLUGIN = PluginSpec(NAME, new, None, "cordoned nodes take only pods that tolerate the unschedulable taint")
