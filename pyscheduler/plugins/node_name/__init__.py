"""NodeName: a pod that names its node (``spec.nodeName`` set before scheduling) fits only there.

Extension points: Filter. Args: none. Kube-scheduler's reason: "node(s) didn't match the requested
node name" (UnschedulableAndUnresolvable: preemption cannot move a pod to another name).

Batch: ``filter_nodes`` compares names in one pass (no table needed; nothing to cache).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"
_REJECT = Status.unresolvable(ERR_REASON, plugin=NAME)  # immutable: shared by batch answers


class NodeName:
    # Filter never reads the node's pods (framework/pods_adjusted.py)
    filter_ignores_node_pods = True
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.NODE_NAME, pod.node_name)], None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if pod.node_name and node_info.name != pod.node_name:
            return Status.unresolvable(ERR_REASON, plugin=NAME)
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Sequence[Status | None]:
        want = pod.node_name
        if not want:
            return [None] * len(nodes)
        return [None if ni.name == want else _REJECT for ni in nodes]

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD))]


def new(args: None, handle: Handle) -> NodeName:
    return NodeName()


PLUGIN = PluginSpec(NAME, new, None, "pods with spec.nodeName fit only on that node")
