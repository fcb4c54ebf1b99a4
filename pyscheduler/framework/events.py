"""Cluster events and queueing hints: which changes may make an unschedulable pod schedulable.

When a pod fails, the queue remembers which plugins rejected it. A later cluster event moves it back
to activeQ/backoffQ only if one of those plugins registered that event, and the plugin's hint (if it
gave one) says QUEUE for this particular change. Everything else stays in the unschedulable pool
until the periodic flush.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.types import Node, NodeInfo, Pod, PodInfo


class Resource(enum.StrEnum):
    POD = "Pod"
    ASSIGNED_POD = "AssignedPod"
    UNSCHEDULED_POD = "UnschedulablePod"
    NODE = "Node"
    PVC = "PersistentVolumeClaim"
    PV = "PersistentVolume"
    STORAGE_CLASS = "StorageClass"
    CSI_NODE = "CSINode"
    NAMESPACE = "Namespace"
    PDB = "PodDisruptionBudget"
    # resource.k8s.io (DynamicResources)
    RESOURCE_CLAIM = "ResourceClaim"
    RESOURCE_SLICE = "ResourceSlice"
    DEVICE_CLASS = "DeviceClass"
    # scheduling.k8s.io (workload-aware scheduling)
    POD_GROUP = "PodGroup"
    WILDCARD = "*"


class Action(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATIONS = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_OTHER = 2048
    UPDATE_NODE_DECLARED_FEATURE = 4096  # status.declaredFeatures changed
    UPDATE = (
        UPDATE_NODE_ALLOCATABLE
        | UPDATE_NODE_LABEL
        | UPDATE_NODE_TAINT
        | UPDATE_NODE_CONDITION
        | UPDATE_NODE_ANNOTATION
        | UPDATE_POD_LABEL
        | UPDATE_POD_SCALE_DOWN
        | UPDATE_POD_TOLERATIONS
        | UPDATE_POD_SCHEDULING_GATES_ELIMINATED
        | UPDATE_OTHER
        | UPDATE_NODE_DECLARED_FEATURE
    )
    ALL = ADD | DELETE | UPDATE


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: Resource
    action: Action
    label: str = ""

    def matches(self, registered: ClusterEvent) -> bool:
        """True if this (concrete) event is covered by a registered event."""
        pod_alias = registered.resource == Resource.POD and self.resource in (
            Resource.ASSIGNED_POD,
            Resource.UNSCHEDULED_POD,
        )  # assigned-pod and unscheduled-pod events are also pod events
        if registered.resource not in (Resource.WILDCARD, self.resource) and not pod_alias:
            return False
        return bool(registered.action & self.action)

    def __str__(self) -> str:
        return self.label or f"{self.resource}{self.action.name}"


class QueueingHint(enum.Enum):
    SKIP = 0
    QUEUE = 1


# hint(pod, old_obj, new_obj) -> QueueingHint. For pod and node events old/new are Pod / Node records
# (use as_pod / as_node to accept tests' JSON too); for other kinds they are the API's JSON.
QueueingHintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class HintIndex:
    """Which waiting pods an event can concern, so that the queue asks only those pods' hint.

    The queue files every waiting pod under ``pod_keys(pod)``; for an event it asks the hint only of
    the pods filed under one of ``event_keys(old, new)``. ``event_keys`` returns None when the event may
    concern any pod (then every pod is asked, as without an index). The plugin promises: when
    ``event_keys`` gives keys and the pod has none of them, the hint answers SKIP for that pod (so
    leaving it out changes no decision; only the hint-duration metric sees fewer calls). Both functions
    must be cheap and must not raise (a raise means: ask every pod).
    """

    pod_keys: Callable[[Pod], Iterable[Hashable]]
    event_keys: Callable[[Any, Any], Iterable[Hashable] | None]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: QueueingHintFn | None = None
    index: HintIndex | None = None  # optional: which pods an event can concern (see HintIndex)


# Events that every pod may be helped by, whatever rejected it.
WILDCARD_EVENT = ClusterEvent(Resource.WILDCARD, Action.ALL, "WildCardEvent")
UNSCHEDULABLE_TIMEOUT = ClusterEvent(Resource.WILDCARD, Action.ALL, "UnschedulableTimeout")
FORCE_ACTIVATE = ClusterEvent(Resource.WILDCARD, Action.ALL, "ForceActivate")


def as_pod(obj: Any) -> Pod | None:
    """The pod a queueing hint was given. The scheduler passes ``Pod`` records for pod events (and
    ``None`` for the missing side of an add or delete); tests and plugins may pass a ``PodInfo`` or the
    API's JSON. Anything else is ``None``."""
    if obj is None or isinstance(obj, Pod):
        return obj
    if isinstance(obj, PodInfo):
        return obj.pod
    if isinstance(obj, Mapping):
        return Pod.from_dict(dict(obj))
    return None


def as_node(obj: Any) -> Node | None:
    """The node a queueing hint was given: a ``Node`` record from the scheduler, a ``NodeInfo`` or JSON."""
    if obj is None or isinstance(obj, Node):
        return obj
    if isinstance(obj, NodeInfo):
        return obj.node
    if isinstance(obj, Mapping):
        return Node.from_dict(dict(obj))
    return None
