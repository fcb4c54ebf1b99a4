"""VolumeReady: a pod is bound only once every PersistentVolumeClaim it uses exists and is Bound.

Behaviour
---------
- PreBind (in the binding cycle, after Permit): each ``persistentVolumeClaim`` volume of the pod is
  looked up in the scheduler's object store (``handle.objects``, kept current by the PVC watch). A
  missing claim gives ``persistentvolumeclaim "<name>" not found``, a claim whose ``status.phase`` is
  not ``Bound`` gives ``persistentvolumeclaim "<name>" is not bound (phase <phase>)``; both are
  Unschedulable, so the framework unreserves the pod, forgets its placement, records a FailedScheduling
  event with that reason and requeues it. A pod without claims passes.
- Queueing hint: such a pod is retried when one of *its* claims is added or updated (e.g. becomes
  Bound); changes to other claims leave it alone.

It is a small gate, not a volume binder: it never binds claims itself (kube's VolumeBinding does that
with the PV controller). Where VolumeBinding runs, it already rejects pods with unbound Immediate
claims in PreFilter, so VolumeReady matters for claims that something else binds (pre-bound claims
waiting for an external provisioner, say), and as an example of a PreBind plugin.

Extension point: PreBind. Args: none.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

NAME = "VolumeReady"
PVC = "PersistentVolumeClaim"
BOUND = "Bound"

ERR_REASON_NOT_FOUND = 'persistentvolumeclaim "{name}" not found'
ERR_REASON_NOT_BOUND = 'persistentvolumeclaim "{name}" is not bound (phase {phase})'


class VolumeReady:
    name = NAME

    def __init__(self, handle: Handle) -> None:
        self._handle = handle

    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        claims = pod.pvc_names
        if not claims:
            return None
        objects = self._handle.objects
        for claim in claims:
            pvc = objects.get(PVC, pod.namespace, claim)
            if pvc is None:
                return Status.unschedulable(ERR_REASON_NOT_FOUND.format(name=claim), plugin=NAME)
            phase = _phase(pvc)
            if phase != BOUND:
                return Status.unschedulable(
                    ERR_REASON_NOT_BOUND.format(name=claim, phase=phase or "unknown"), plugin=NAME
                )
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(Resource.PVC, Action.ADD | Action.UPDATE), is_schedulable_after_pvc_change
            )
        ]


def _phase(pvc: Mapping[str, Any]) -> str:
    status = pvc.get("status")
    return str(status.get("phase") or "") if isinstance(status, Mapping) else ""


def is_schedulable_after_pvc_change(pod: Pod, old_obj: Any, new_obj: Any) -> QueueingHint:
    """Queue the pod when one of its own claims was added or changed."""
    if not isinstance(new_obj, Mapping):
        return QueueingHint.QUEUE
    meta = new_obj.get("metadata")
    if not isinstance(meta, Mapping):
        return QueueingHint.QUEUE
    if meta.get("namespace", "") != pod.namespace or meta.get("name") not in pod.pvc_names:
        return QueueingHint.SKIP
    return QueueingHint.QUEUE


def new(args: None, handle: Handle) -> VolumeReady:
    return VolumeReady(handle)


PLUGIN = PluginSpec(NAME, new, None, "binds a pod only when all its PersistentVolumeClaims are Bound")
