"""SchedulingGates: a pod with ``spec.schedulingGates`` is not scheduled until every gate is removed.

PreEnqueue keeps a gated pod out of the active queue with code UnschedulableAndUnresolvable and the message
kube-scheduler writes, ``waiting for scheduling gates: [gate-a gate-b]`` (Go's ``%v`` of a string slice:
names in order, space-separated). A pod without gates passes.

Extension points: PreEnqueue, EnqueueExtensions. Args: none.

Queueing hint: Pod UpdatePodSchedulingGatesEliminated (the last gate was removed) always queues the pod.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, QueueingHint, Resource
from pyscheduler.framework.helpers.gofmt import go_string_slice
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

NAME = "SchedulingGates"


def gated_message(gates: Sequence[str]) -> str:
    return f"waiting for scheduling gates: {go_string_slice(gates)}"


class SchedulingGates:
    name = NAME

    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.scheduling_gates:
            return None
        return Status.unresolvable(gated_message(pod.scheduling_gates), plugin=NAME)

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.POD, Action.UPDATE_POD_SCHEDULING_GATES_ELIMINATED),
                self.is_schedulable_after_gates_eliminated,
            )
        ]

    @staticmethod
    def is_schedulable_after_gates_eliminated(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
        return QueueingHint.QUEUE


def new(args: None, handle: Handle) -> SchedulingGates:
    return SchedulingGates()


PLUGIN = PluginSpec(NAME, new, None, "pods with spec.schedulingGates wait outside the active queue")
