"""GangScheduling: all-or-nothing scheduling for the pods of a PodGroup with a Gang policy (kube 1.36,
alpha, behind the ``GenericWorkload`` and ``GangScheduling`` feature gates).

A pod joins a group through ``spec.schedulingGroup.podGroupName``; the PodGroup
(scheduling.k8s.io/v1alpha2) in the pod's namespace says ``spec.schedulingPolicy.gang.minCount``. Pods of
a group with the Basic policy, and pods without a group, are not this plugin's concern.

Extension points
----------------
- PreEnqueue: the pod waits outside the active queue (UnschedulableAndUnresolvable) while its PodGroup
  does not exist — ``waiting for pods's pod group "<name>" to appear in scheduling queue`` — or while the
  scheduler knows fewer than minCount pods of the group — ``waiting for minCount pods from a gang to
  appear in scheduling queue``.
- Permit: while fewer than minCount pods of the group are scheduled (assumed or bound), the pod waits
  (``waiting for minCount pods from a gang to be scheduled``, 5 minutes) and the group's unscheduled
  pods are moved to the active queue; the pod that reaches minCount is allowed and allows every waiting
  pod of its group. In the pod group cycle (see ``pyscheduler/scheduler_podgroup.py``) this is what
  decides whether the group is feasible, and there the members are not activated: the cycle holds them
  all already. (kube activates them, and its queue ignores the event: it requeues a pod group member
  after its backoff whatever happened while it was in flight. Ours keeps event-based requeueing, where
  that activation would send a member no node fits back at once, over and over with
  SchedulerPopFromBackoffQ handing out pods still backing off.)
- EnqueueExtensions: see ``hints.py``.

Args: none.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.podgroup import POD_GROUP_CYCLE_KEY, PodGroupStateNotFound
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.gang_scheduling import hints
from pyscheduler.plugins.gang_scheduling.common import activator, group_states, pod_group_of

NAME = "GangScheduling"
PERMIT_TIMEOUT_SECONDS = 300.0  # kube's permitTimeoutDuration

MSG_NO_POD_GROUP = 'waiting for pods\'s pod group "{name}" to appear in scheduling queue'
MSG_TOO_FEW_IN_QUEUE = "waiting for minCount pods from a gang to appear in scheduling queue"
MSG_WAITING_FOR_QUORUM = "waiting for minCount pods from a gang to be scheduled"


class GangScheduling:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_group:
            return None
        group = pod_group_of(self._handle, pod)
        if group is None:
            return Status.unresolvable(MSG_NO_POD_GROUP.format(name=pod.scheduling_group), plugin=NAME)
        if group.gang_min_count is None:
            return None
        try:
            state = group_states(self._handle).get(pod.namespace, pod.scheduling_group)
        except (PodGroupStateNotFound, RuntimeError) as e:
            return Status.as_error(e, plugin=NAME)
        if state.all_pods_count() < group.gang_min_count:
            return Status.unresolvable(MSG_TOO_FEW_IN_QUEUE, plugin=NAME)
        return None

    def permit(self, state: CycleState, pod: Pod, node_name: str) -> tuple[Status | None, float]:
        if not pod.scheduling_group:
            return None, 0.0
        group = pod_group_of(self._handle, pod)
        if group is None:
            msg = (
                f"failed to get podGroup {pod.namespace}/{pod.scheduling_group}: "
                f'podgroup.scheduling.k8s.io "{pod.scheduling_group}" not found'
            )
            return Status.as_error(msg, plugin=NAME), 0.0
        if group.gang_min_count is None:
            return None, 0.0
        try:
            gs = group_states(self._handle).get(pod.namespace, pod.scheduling_group)
        except (PodGroupStateNotFound, RuntimeError) as e:
            return Status.as_error(e, plugin=NAME), 0.0
        if gs.scheduled_pods_count() < group.gang_min_count:
            activate = activator(self._handle)
            if activate is not None and state.get(POD_GROUP_CYCLE_KEY) is None:
                activate(gs.unscheduled_pods())
            return Status.wait(MSG_WAITING_FOR_QUORUM, plugin=NAME), PERMIT_TIMEOUT_SECONDS
        for uid in gs.assumed_uids():
            wp = self._handle.get_waiting_pod(uid)
            if wp is not None:
                wp.allow(NAME)
        return None, 0.0

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return hints.events_to_register()


def new(args: None, handle: Handle) -> GangScheduling:
    return GangScheduling(handle)


PLUGIN = PluginSpec(NAME, new, None, "all-or-nothing scheduling of a PodGroup's pods (gang, alpha)")
