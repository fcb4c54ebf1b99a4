"""TopologyPlacementGenerator (kube's ``topologyaware`` package): a pod group with a topology constraint
is tried one topology domain at a time (kube 1.36, alpha, behind ``TopologyAwareWorkloadScheduling``).

Extension point
---------------
- PlacementGenerate: a PodGroup whose ``spec.schedulingConstraints.topology[0].key`` is set gets one
  placement per value of that node label (nodes without the label are left out), so the whole group
  lands in one domain: packed by topology. When some of the group's pods are already scheduled, only
  their domain is offered (an error if they span several: ``more than 1 domain found for pod group``).
  A group without the constraint is tried on all nodes (one placement).

Args: none.
"""

from __future__ import annotations

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.podgroup import (
    POD_GROUP_KIND,
    Placement,
    PodGroup,
    PodGroupInfo,
    PodGroupStateNotFound,
)
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

NAME = "TopologyPlacementGenerator"


class TopologyPlacementGenerator:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def generate_placements(
        self, state: CycleState, group: PodGroupInfo, parent: Placement
    ) -> tuple[list[Placement] | None, Status | None]:
        obj = self._handle.objects.get(POD_GROUP_KIND, group.namespace, group.name)
        if obj is None:
            return None, Status.as_error(f'podgroup.scheduling.k8s.io "{group.name}" not found', plugin=NAME)
        pg = PodGroup.from_dict(obj)
        if not pg.topology_keys:
            return [parent], None
        key = pg.topology_keys[0]
        extra = getattr(self._handle, "extra", None) or {}
        states = extra.get("pod_group_states")
        if states is None:
            return None, Status.as_error("the scheduler keeps no pod group states", plugin=NAME)
        try:
            scheduled = states.get(group.namespace, group.name).scheduled_pods()
        except PodGroupStateNotFound as e:
            return None, Status.as_error(e, plugin=NAME)
        required: str | None = None
        if scheduled:
            domain, err = self._scheduled_domain(key, scheduled)
            if err:
                return None, Status.as_error(
                    f"cannot determine domain for already scheduled pods: {err}", plugin=NAME
                )
            required = domain
        by_domain: dict[str, list[NodeInfo]] = {}
        for ni in parent.nodes:
            node = ni.node
            if node is None or key not in node.labels:
                continue
            domain = node.labels[key]
            if required is None or domain == required:
                by_domain.setdefault(domain, []).append(ni)
        return [Placement(d, nodes) for d, nodes in by_domain.items() if nodes], None

    def _scheduled_domain(self, key: str, pods: list[Pod]) -> tuple[str, str]:
        found = ""
        for p in pods:
            ni = self._handle.snapshot.get(p.node_name)
            if ni is None or ni.node is None:
                return "", f'getting node for pod {p.key}: nodeinfo not found for node name "{p.node_name}"'
            if key not in ni.node.labels:
                return "", f"no topology domain found for pod {p.key}"
            domain = ni.node.labels[key]
            if found and found != domain:
                return "", f"more than 1 domain found for pod group: {found}, {domain}"
            found = domain
        return found, ""


def new(args: None, handle: Handle) -> TopologyPlacementGenerator:
    return TopologyPlacementGenerator(handle)


PLUGIN = PluginSpec(NAME, new, None, "try a pod group one topology domain at a time (alpha)")
