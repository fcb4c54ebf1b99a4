"""Informer event handlers: what each watch event does to the cache, the queue and the object store.

Upstream's ``pkg/scheduler/eventhandlers.go``. A reflector (``client/reflector.py``) parses each event
into a record and calls its handler; the handler routes it:

    pod, assigned (spec.nodeName set)            → cache (add/update/remove); wakes unschedulable pods
    pod, unassigned, schedulerName is ours       → queue (add/update/delete)
    pod, unassigned, another scheduler's         → ignored
    node                                          → cache; wakes unschedulable pods (queueing hints)
    ResourceClaim (DynamicResources)              → claim tracker; wakes unschedulable pods
    PVC/PV/StorageClass/CSINode/PDB/Namespace/... → object store; wakes unschedulable pods

``Timed`` wraps a handler to time its calls into scheduler_event_handling_duration_seconds, labelled as
kube-scheduler labels the event. The handlers do no I/O: the engine (``engine.py``) feeds its in-memory
objects through the same ones. They reach the app through ``Routes``, which ``app.App`` implements.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.claims import ClaimTracker
from pyscheduler.backend.objects import ObjectStore
from pyscheduler.backend.queue import SchedulingQueue
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import Action, ClusterEvent, Resource
from pyscheduler.framework.types import JSON, Node, Pod
from pyscheduler.framework.waiting_pods import WaitingPods
from pyscheduler.metrics import SchedulerMetrics

log = structlog.get_logger("pyscheduler.app")

TERMINAL_PHASES = ("Succeeded", "Failed")
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD, "UnscheduledPodAdd")


class Routes(Protocol):
    """What the handlers reach (``app.App``): the stores they update and the queue moves they make."""

    cache: Cache
    queue: SchedulingQueue
    objects: ObjectStore
    claims: ClaimTracker
    waiting_pods: WaitingPods
    malformed: dict[str, str]
    gang_scheduling: bool

    def is_ours(self, pod: Pod) -> bool: ...

    def move(
        self, event: ClusterEvent, old: Any, new: Any, pre_check: Callable[[Pod], bool] | None = None
    ) -> None: ...

    def nomination_released(self, pod: Pod) -> None: ...


class Timed:
    """An informer handler whose calls are timed into scheduler_event_handling_duration_seconds{event},
    labelled as kube-scheduler labels the event (``label`` returns None for events kube does not handle,
    such as another scheduler's pending pods)."""

    def __init__(
        self, inner: Any, metrics: SchedulerMetrics, label: Callable[[str, Any, Any], str | None]
    ) -> None:
        self.inner = inner
        self.metrics = metrics
        self.label = label

    def on_add(self, obj: Any) -> None:
        t = time.perf_counter()
        self.inner.on_add(obj)
        self._done("Add", None, obj, t)

    def on_update(self, old: Any, new: Any) -> None:
        t = time.perf_counter()
        self.inner.on_update(old, new)
        self._done("Update", old, new, t)

    def on_delete(self, obj: Any) -> None:
        t = time.perf_counter()
        self.inner.on_delete(obj)
        self._done("Delete", obj, None, t)

    def _done(self, action: str, old: Any, new: Any, t: float) -> None:
        try:
            label = self.label(action, old, new)
            if label is not None:
                self.metrics.event_handled(label, time.perf_counter() - t)
        except Exception:  # a metric must never break an informer
            log.debug("event metric failed", exc_info=True)


def kind_event_label(kind: str) -> Callable[[str, Any, Any], str | None]:
    return lambda action, old, new: f"{kind}{action}"


def pod_event_label(app: Routes) -> Callable[[str, Any, Any], str | None]:
    """kube's pod event labels: AssignedPod* for bound pods, UnschedulablePod* for our pending ones."""

    def label(action: str, old: Pod | None, new: Pod | None) -> str | None:
        if action == "Add":
            assert new is not None
            if new.node_name:
                return "AssignedPodAdd"
            return "UnschedulablePodAdd" if app.is_ours(new) else None
        if action == "Delete":
            assert old is not None
            if old.node_name:
                return "AssignedPodDelete"
            return "UnschedulablePodDelete" if app.is_ours(old) else None
        assert old is not None and new is not None
        if new.node_name:
            return "AssignedPodUpdate" if old.node_name else "AssignedPodAdd"
        if app.is_ours(new):
            return "UnschedulablePodUpdate"
        return "UnschedulablePodDelete" if app.is_ours(old) else None

    return label


def uid_key(p: Pod) -> str:
    return p.uid


def name_key(n: Node) -> str:
    return n.name


def object_key(o: JSON) -> str:
    meta = o.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class PodHandler:
    def __init__(self, app: Routes) -> None:
        self.app = app

    def on_add(self, pod: Pod) -> None:
        a = self.app
        a.malformed.pop(pod.uid, None)
        if pod.node_name:
            a.cache.add_pod(pod)
            a.move(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD, "AssignedPodAdd"), None, pod)
        elif a.is_ours(pod) and pod.phase not in TERMINAL_PHASES:
            a.cache.add_pod_group_member(pod)
            a.queue.add(pod)
            if a.gang_scheduling:
                # a new pod may complete a gang waiting in PreEnqueue (kube: any unscheduled pod's add is
                # an event with the GangScheduling gate on)
                a.move(UNSCHEDULED_POD_ADD, None, pod)

    def on_update(self, old: Pod, new: Pod) -> None:
        a = self.app
        a.malformed.pop(new.uid, None)
        if old.node_name and new.node_name:
            a.cache.update_pod(old, new)
            action = Action.UPDATE_OTHER
            if old.labels != new.labels:
                action = Action.UPDATE_POD_LABEL
            elif new.requests.milli_cpu < old.requests.milli_cpu or new.requests.memory < old.requests.memory:
                action = Action.UPDATE_POD_SCALE_DOWN
            a.move(ClusterEvent(Resource.ASSIGNED_POD, action, "AssignedPodUpdate"), old, new)
        elif new.node_name:
            # bound (by us or anyone): out of the queue, into the cache
            if a.is_ours(old):
                a.queue.delete(old)
            a.cache.add_pod(new)
            a.move(ClusterEvent(Resource.ASSIGNED_POD, Action.ADD, "AssignedPodAdd"), None, new)
        elif a.is_ours(new):
            a.cache.update_pod_group_member(old, new)
            a.queue.update(old, new)
            if old.nominated_node_name and old.nominated_node_name != new.nominated_node_name:
                a.nomination_released(old)
        elif a.is_ours(old):
            a.cache.remove_pod_group_member(old)
            a.queue.delete(old)

    def on_delete(self, pod: Pod) -> None:
        a = self.app
        a.malformed.pop(pod.uid, None)
        wp = a.waiting_pods.get(pod.uid)
        if wp is not None:
            wp.reject("", "pod deleted")
        if pod.node_name:
            a.cache.remove_pod(pod)
            a.move(ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete"), pod, None)
        elif a.is_ours(pod):
            a.cache.remove_pod_group_member(pod)
            a.queue.delete(pod)
            if pod.nominated_node_name:
                a.nomination_released(pod)


def node_action(old: Node, new: Node) -> Action:
    action = Action(0)
    if old.allocatable != new.allocatable:
        action |= Action.UPDATE_NODE_ALLOCATABLE
    if old.labels != new.labels:
        action |= Action.UPDATE_NODE_LABEL
    if old.taints != new.taints or old.unschedulable != new.unschedulable:
        action |= Action.UPDATE_NODE_TAINT
    if old.annotations != new.annotations:
        action |= Action.UPDATE_NODE_ANNOTATION
    if old.images != new.images:
        action |= Action.UPDATE_OTHER
    if old.declared_features != new.declared_features:
        action |= Action.UPDATE_NODE_DECLARED_FEATURE
    return action


class NodeHandler:
    def __init__(self, app: Routes) -> None:
        self.app = app

    def on_add(self, node: Node) -> None:
        self.app.cache.add_node(node)
        self.app.move(ClusterEvent(Resource.NODE, Action.ADD, "NodeAdd"), None, node)

    def on_update(self, old: Node, new: Node) -> None:
        action = node_action(old, new)
        if not action and old.uid == new.uid:
            # A heartbeat (conditions' times, resourceVersion): nothing a plugin reads changed. Keeping
            # the cached Node spares re-cloning its NodeInfo into the snapshot and keeps per-node caches
            # (NodeTable.node_epoch) valid; KWOK sends one per node every ~20 s.
            return
        self.app.cache.update_node(old, new)
        if action:
            self.app.move(ClusterEvent(Resource.NODE, action, "NodeUpdate"), old, new)

    def on_delete(self, node: Node) -> None:
        self.app.cache.remove_node(node)


def claim_key(c: ResourceClaim) -> str:
    return c.key


class ClaimHandler:
    def __init__(self, app: Routes) -> None:
        self.app = app

    def on_add(self, claim: ResourceClaim) -> None:
        self.app.claims.on_add(claim)
        self.app.move(ClusterEvent(Resource.RESOURCE_CLAIM, Action.ADD, "ResourceClaimAdd"), None, claim)

    def on_update(self, old: ResourceClaim, new: ResourceClaim) -> None:
        self.app.claims.on_update(old, new)
        self.app.move(
            ClusterEvent(Resource.RESOURCE_CLAIM, Action.UPDATE_OTHER, "ResourceClaimUpdate"), old, new
        )

    def on_delete(self, claim: ResourceClaim) -> None:
        self.app.claims.on_delete(claim)
        self.app.move(
            ClusterEvent(Resource.RESOURCE_CLAIM, Action.DELETE, "ResourceClaimDelete"), claim, None
        )


class ObjectHandler:
    def __init__(self, app: Routes, kind: str, resource: Resource | None) -> None:
        self.app = app
        self.kind = kind
        self.resource = resource

    def on_add(self, obj: JSON) -> None:
        self.app.objects.put(self.kind, obj)
        if self.resource is not None:
            self.app.move(ClusterEvent(self.resource, Action.ADD, f"{self.kind}Add"), None, obj)

    def on_update(self, old: JSON, new: JSON) -> None:
        self.app.objects.put(self.kind, new)
        if self.resource is not None:
            self.app.move(ClusterEvent(self.resource, Action.UPDATE_OTHER, f"{self.kind}Update"), old, new)

    def on_delete(self, obj: JSON) -> None:
        self.app.objects.remove(self.kind, obj)
        if self.resource is not None:
            self.app.move(ClusterEvent(self.resource, Action.DELETE, f"{self.kind}Delete"), obj, None)
