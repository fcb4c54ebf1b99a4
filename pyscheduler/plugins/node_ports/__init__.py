"""NodePorts: a pod asking for host ports fits only on nodes where those ports are free.

Which ports count (kube's ``GetHostPorts``): every ``hostPort > 0`` of the regular containers and of the
sidecars (init containers with ``restartPolicy: Always``); plain init containers have exited before the
pod runs, so their ports are ignored.

Conflict rules (``HostPortInfo.check_conflict``): two ports conflict when protocol and port are equal and
the host IPs overlap. An empty host IP means ``0.0.0.0``, which overlaps every IP; otherwise the IPs must
be equal. ``TCP 8080 on 10.0.0.1`` and ``TCP 8080 on 10.0.0.2`` can coexist; ``UDP 53`` and ``TCP 53``
too.

Extension points: PreFilter (collects the pod's host ports once; Skip when it has none, so Filter does not
run), Filter, EnqueueExtensions. Args: none.

Reason: "node(s) didn't have free ports for the requested pod ports", code Unschedulable (preempting the
pod holding the port can free it).

Queueing hints (kube's, with queueing hints enabled):

- Pod Delete: queue only when the deleted pod was bound or nominated and held a host port that conflicts
  with one this pod wants.
- Node Add: always queue (no hint).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
    as_pod,
)
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.interfaces import Handle, PreFilterExtensions, PreFilterResult
from pyscheduler.framework.node_info import HostPortInfo
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import ContainerPort, NodeInfo, Pod

NAME = "NodePorts"
PRE_FILTER_STATE_KEY = f"PreFilter{NAME}"
ERR_REASON = "node(s) didn't have free ports for the requested pod ports"

# (host_ip, protocol, host_port) of each wanted port
PortKey = tuple[str, str, int]


def host_ports(pod: Pod) -> tuple[ContainerPort, ...]:
    """The host ports a running pod holds: those of its sidecars and regular containers."""
    ports: list[ContainerPort] = []
    for c in pod.init_containers:
        if c.restart_policy == "Always":
            ports.extend(p for p in c.ports if p.host_port > 0)
    for c in pod.containers:
        ports.extend(p for p in c.ports if p.host_port > 0)
    return tuple(ports)


def _wanted(pod: Pod) -> tuple[PortKey, ...]:
    return tuple((p.host_ip, p.protocol, p.host_port) for p in host_ports(pod))


def fits_ports(wanted: Sequence[PortKey], in_use: HostPortInfo) -> bool:
    """True when none of ``wanted`` conflicts with a port in ``in_use``."""
    return not any(in_use.check_conflict(ip, protocol, port) for ip, protocol, port in wanted)


def fits(pod: Pod, node_info: NodeInfo) -> bool:
    """Whether the pod's host ports are free on the node (used by preemption and other callers)."""
    return fits_ports(_wanted(pod), node_info.used_ports)


class NodePorts:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return [(signers.HOST_PORTS, signers.host_ports(pod))], None

    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        wanted = _wanted(pod)
        if not wanted:
            return None, Status.skip(plugin=NAME)
        state.write(PRE_FILTER_STATE_KEY, wanted)
        return None, None

    def pre_filter_extensions(self) -> PreFilterExtensions | None:
        return None

    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        wanted = state.get(PRE_FILTER_STATE_KEY)
        if wanted is None:
            wanted = _wanted(pod)  # PreFilter did not run (kube errors here; we recompute)
        if not wanted:
            return None
        used = node_info.used_ports
        for ip, protocol, port in wanted:
            if used.check_conflict(ip, protocol, port):
                return Status.unschedulable(ERR_REASON, plugin=NAME)
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            # Container ports are immutable, so pod updates never free a port.
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.DELETE), self.is_schedulable_after_pod_deleted
            ),
            ClusterEventWithHint(ClusterEvent(Resource.NODE, Action.ADD)),
        ]

    @staticmethod
    def is_schedulable_after_pod_deleted(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        try:
            deleted = as_pod(old_obj)
        except ValueError:
            return QueueingHint.QUEUE
        if deleted is None:
            return QueueingHint.QUEUE
        if not deleted.node_name and not deleted.nominated_node_name:
            return QueueingHint.SKIP  # it held no node's ports
        ports = host_ports(deleted)
        if not ports:
            return QueueingHint.SKIP
        freed = HostPortInfo()
        for p in ports:
            freed.add(p.host_ip, p.protocol, p.host_port)
        if fits_ports(_wanted(pod), freed):
            return QueueingHint.SKIP  # no port in common
        return QueueingHint.QUEUE


def new(args: None, handle: Handle) -> NodePorts:
    return NodePorts()


PLUGIN = PluginSpec(NAME, new, None, "pods with host ports fit only where those ports are free")
