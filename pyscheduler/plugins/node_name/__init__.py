"""NodeName: a pod that names its node (``spec.nodeName`` set before scheduling) fits only there.

Extension points: Filter. Args: none. Kube-scheduler's reason: "node(s) didn't match the requested
node name" (UnschedulableAndUnresolvable: preemption cannot move a pod to another name).
"""

from __future__ import annotations

from collections.abc import Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

NAME = "NodeName"
ERR_REASON = "node(s) didn't match the requested node name"


class NodeName:
    name = NAME

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        if pod.node_name and node_info.name != pod.node_name:
            return Status.unresolvable(ERR_REASON, plugin=NAME)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD))]


def new(args: None, handle: Handle) -> NodeName:
    return NodeName()


PLUGIN = PluginSpec(NAME, new, None, "pods with spec.nodeName fit only on that node")
