"""Assembly: configuration + registry + client → informers, cache, queue, profiles, scheduler.

Design
------
``build_scheduler`` turns a validated ``SchedulerConfig`` into a running system without doing any I/O
itself (the ``Api`` is passed in). ``App.start()`` starts the watches (one for pods — all of them whose
phase is neither Succeeded nor Failed —, one for nodes, one per other kind plugins read), waits for their
first sync, then the scheduling thread. Watch events are routed like this:

    pod, assigned (spec.nodeName set)            → cache (add/update/remove); wakes unschedulable pods
    pod, unassigned, schedulerName is ours       → queue (add/update/delete)
    pod, unassigned, another scheduler's         → ignored
    node                                          → cache; wakes unschedulable pods (queueing hints)
    PVC/PV/StorageClass/CSINode/PDB/Namespace/... → object store; wakes unschedulable pods

A pod the watch cannot parse (a malformed quantity, say) gets a FailedScheduling event and stays pending;
the loop goes on.
"""

from __future__ import annotations

import dataclasses
import gc
import random
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import structlog

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.claims import ClaimTracker
from pyscheduler.backend.objects import ObjectStore, slim
from pyscheduler.backend.queue import SchedulingQueue
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.config import feature_gates
from pyscheduler.framework.clock import Clock, RealClock
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import (
    DEFAULT_SLOW_PLUGIN_THRESHOLD,
    Framework,
    FrameworkHandle,
    PluginObserver,
    ProfilePlugins,
)
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import JSON, Node, Pod, identify
from pyscheduler.framework.waiting_pods import WaitingPods
from pyscheduler.metrics import SchedulerMetrics
from pyscheduler.plugin_log import PluginProblemLog
from pyscheduler.scheduler import Scheduler

log = structlog.get_logger("pyscheduler.app")

TERMINAL_PHASES = ("Succeeded", "Failed")
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
# gc thresholds once the caches are synced (and frozen): the cycle allocates many short-lived objects
DAEMON_GC_THRESHOLD = (50_000, 20, 100)

# Other kinds plugins read: kind -> (list path, event resource)
OBJECT_KINDS: dict[str, tuple[str, Resource | None]] = {
    "PersistentVolumeClaim": ("/api/v1/persistentvolumeclaims", Resource.PVC),
    "PersistentVolume": ("/api/v1/persistentvolumes", Resource.PV),
    "StorageClass": ("/apis/storage.k8s.io/v1/storageclasses", Resource.STORAGE_CLASS),
    "CSINode": ("/apis/storage.k8s.io/v1/csinodes", Resource.CSI_NODE),
    "CSIDriver": ("/apis/storage.k8s.io/v1/csidrivers", None),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1/csistoragecapacities", None),
    "VolumeAttachment": ("/apis/storage.k8s.io/v1/volumeattachments", None),
    "PodDisruptionBudget": ("/apis/policy/v1/poddisruptionbudgets", Resource.PDB),
    "Namespace": ("/api/v1/namespaces", Resource.NAMESPACE),
    "Service": ("/api/v1/services", None),
    "ReplicaSet": ("/apis/apps/v1/replicasets", None),
    "StatefulSet": ("/apis/apps/v1/statefulsets", None),
    "ReplicationController": ("/api/v1/replicationcontrollers", None),
}

# DynamicResources: watched only when a profile enables the plugin (a cluster without resource.k8s.io/v1
# then needs nothing). Claims go to the ClaimTracker (an assume cache), these kinds to the object store.
DRA_PLUGIN = "DynamicResources"
DRA_CLAIMS_PATH = "/apis/resource.k8s.io/v1/resourceclaims"
DRA_OBJECT_KINDS: dict[str, tuple[str, Resource | None]] = {
    "DeviceClass": ("/apis/resource.k8s.io/v1/deviceclasses", Resource.DEVICE_CLASS),
    "ResourceSlice": ("/apis/resource.k8s.io/v1/resourceslices", Resource.RESOURCE_SLICE),
}
DRA_KINDS = frozenset({"ResourceClaim", *DRA_OBJECT_KINDS})
DRA_SYNC_HINT = (
    " (DynamicResources, in the default profile as in kube 1.36, needs resource.k8s.io/v1, served from "
    "Kubernetes 1.34 on; on an older cluster disable the plugin in the profile: "
    "plugins.multiPoint.disabled: [{name: DynamicResources}])"
)


# Workload-aware scheduling (GenericWorkload gate): PodGroups are watched, into the object store, only
# with the gate on (their API is alpha and off in most clusters). kube-scheduler reads no Workloads.
POD_GROUP_KINDS: dict[str, tuple[str, Resource | None]] = {
    "PodGroup": ("/apis/scheduling.k8s.io/v1alpha2/podgroups", Resource.POD_GROUP),
}
UNSCHEDULED_POD_ADD = ClusterEvent(Resource.UNSCHEDULED_POD, Action.ADD, "UnscheduledPodAdd")


# ------------------------------------------------------------------------------------------ writers


class ApiStatusWriter:
    """Pod status updates (PodScheduled condition, nominatedNodeName) through the async writer."""

    def __init__(self, api: Any, writer: Any, clock: Clock, objects: ObjectStore | None = None) -> None:
        self.api = api
        self.writer = writer
        self.clock = clock
        self.objects = objects

    def pod_scheduled_condition(self, pod: Pod, status: str, reason: str, message: str) -> None:
        if pod.scheduled_condition == (status, reason, message):
            return  # unchanged: spare the API server a write
        cond = {
            "type": "PodScheduled",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": rfc3339(self.clock.wall()),
        }
        self.writer.submit(self.api.patch_pod_status, pod.namespace, pod.name, condition=cond)

    def nominated_node(self, pod: Pod, node_name: str) -> None:
        self.writer.submit(self.api.patch_pod_status, pod.namespace, pod.name, nominated_node_name=node_name)

    def pod_group_condition(
        self, namespace: str, name: str, type_: str, status: str, reason: str, message: str
    ) -> None:
        """Set a PodGroup status condition as kube does after a pod group cycle: never from True back
        to False, unchanged conditions not written, lastTransitionTime kept while the status stays."""
        pg = self.objects.get("PodGroup", namespace, name) if self.objects is not None else None
        if pg is None:
            log.warning("PodGroup not found for its status update", pod_group=f"{namespace}/{name}")
            return
        generation = int((pg.get("metadata") or {}).get("generation") or 0)
        conds = (pg.get("status") or {}).get("conditions") or []
        existing = next((c for c in conds if c.get("type") == type_), None)
        if existing is not None and existing.get("status") == "True" and status != "True":
            return
        now = rfc3339(self.clock.wall())
        cond = {
            "type": type_,
            "status": status,
            "observedGeneration": generation,
            "lastTransitionTime": now,
            "reason": reason,
            "message": message,
        }
        if existing is not None:
            if existing.get("status") == status:
                cond["lastTransitionTime"] = existing.get("lastTransitionTime") or now
            same = ("status", "reason", "message", "observedGeneration")
            if all(existing.get(k) == cond[k] for k in same):
                return
        self.writer.submit(self.api.patch_pod_group_status, namespace, name, cond)


# ------------------------------------------------------------------------------------------ assembly


@dataclass
class App:
    scheduler: Scheduler
    queue: SchedulingQueue
    cache: Cache
    objects: ObjectStore
    profiles: dict[str, Framework]
    metrics: SchedulerMetrics
    api: Any
    recorder: Any
    writer: Any
    clock: Clock
    waiting_pods: WaitingPods = field(default_factory=WaitingPods)
    reflectors: list[Any] = field(default_factory=list)
    threads: list[threading.Thread] = field(default_factory=list)
    stop_event: threading.Event = field(default_factory=threading.Event)
    synced: threading.Event = field(default_factory=threading.Event)
    scheduling: threading.Event = field(default_factory=threading.Event)
    malformed: dict[str, str] = field(default_factory=dict)
    claims: ClaimTracker = field(default_factory=ClaimTracker)
    gang_scheduling: bool = False  # the GangScheduling gate: an unscheduled pod's arrival is an event

    @property
    def pod_groups_enabled(self) -> bool:
        return self.cache.pod_groups_enabled

    @property
    def dra_enabled(self) -> bool:
        return any(DRA_PLUGIN in fwk.plugins for fwk in self.profiles.values())

    # ---------------------------------------------------------------------------------- informers
    def start_informers(self, sync_timeout: float = 120.0) -> None:
        from pyscheduler.client.reflector import Reflector

        pods = Reflector(
            self.api,
            "/api/v1/pods",
            Pod.from_dict,
            _uid_key,
            _Timed(_PodHandler(self), self.metrics, _pod_event_label(self)),
            field_selector=POD_FIELD_SELECTOR,
            name="pods",
            on_malformed=self._on_malformed_pod,
        )
        nodes = Reflector(
            self.api,
            "/api/v1/nodes",
            Node.from_dict,
            _name_key,
            _Timed(_NodeHandler(self), self.metrics, _kind_event_label("Node")),
            name="nodes",
        )
        self.reflectors = [nodes, pods]
        kinds = dict(OBJECT_KINDS)
        if self.pod_groups_enabled:
            kinds.update(POD_GROUP_KINDS)
        if self.dra_enabled:
            kinds.update(DRA_OBJECT_KINDS)
            self.reflectors.append(
                Reflector(
                    self.api,
                    DRA_CLAIMS_PATH,
                    ResourceClaim.from_dict,
                    _claim_key,
                    _Timed(_ClaimHandler(self), self.metrics, _kind_event_label("ResourceClaim")),
                    name="ResourceClaim",
                )
            )
        for kind, (path, resource) in kinds.items():
            self.reflectors.append(
                Reflector(
                    self.api,
                    path,
                    slim,
                    _obj_key,
                    _Timed(_ObjectHandler(self, kind, resource), self.metrics, _kind_event_label(kind)),
                    name=kind,
                )
            )
        for r in self.reflectors:
            r.start()
        deadline = time.monotonic() + sync_timeout
        for r in self.reflectors:
            if not r.wait_synced(max(0.1, deadline - time.monotonic())):
                hint = DRA_SYNC_HINT if r.name in DRA_KINDS else ""
                if r.name in POD_GROUP_KINDS:
                    hint = (
                        " (the GenericWorkload gate needs the API server to serve scheduling.k8s.io/v1alpha2: "
                        "--runtime-config=scheduling.k8s.io/v1alpha2=true and the same feature gates)"
                    )
                raise TimeoutError(f"watch for {r.name} did not sync within {sync_timeout:.0f}s{hint}")
        # The cache now holds the cluster's long-lived records: move them out of the collector's sight
        # and collect less often (the scheduling cycle allocates many short-lived objects).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*DAEMON_GC_THRESHOLD)
        self.synced.set()
        log.info(
            "caches synced",
            nodes=self.cache.node_count(),
            pods=self.cache.pod_count(),
            pending=self.queue.pending_pods(),
        )

    def start_scheduling(self) -> None:
        if self.scheduling.is_set():
            return
        self.scheduling.set()
        t = threading.Thread(target=self.scheduler.run, args=(self.stop_event,), name="schedule", daemon=True)
        t.start()
        self.threads.append(t)
        f = threading.Thread(target=self._flusher, name="queue-flush", daemon=True)
        f.start()
        self.threads.append(f)

    def _flusher(self) -> None:
        while not self.stop_event.wait(self.queue.next_flush_in()):
            try:
                self.queue.flush()
                self.metrics.set_pending(self.queue.pending_pods())
                self.metrics.set_state(
                    cache={
                        "nodes": self.cache.node_count(),
                        "pods": self.cache.pod_count(),
                        "assumed_pods": self.cache.assumed_pod_count(),
                    },
                    unschedulable=self.queue.unschedulable_plugin_counts(),
                    inflight_events=self.queue.in_flight_events(),
                    goroutines={"binding": self.scheduler.binding_cycles_in_flight()},
                )
            except Exception:
                log.exception("queue flush failed")

    def stop(self, drain_seconds: float = 10.0) -> None:
        self.stop_event.set()
        self.queue.close()
        self.scheduler.drain_binds(drain_seconds)
        for r in self.reflectors:
            r.stop()
        self.scheduler.shutdown()
        for closer in (self.recorder, self.writer):
            if closer is not None:
                try:
                    closer.flush(5.0)
                    closer.stop()
                except Exception:
                    log.exception("stopping writer failed")

    # ---------------------------------------------------------------------------------- routing
    def is_ours(self, pod: Pod) -> bool:
        return pod.scheduler_name in self.profiles

    def _on_malformed_pod(self, obj: JSON, err: Exception) -> None:
        raw_spec = obj.get("spec")
        spec: dict[str, Any] = raw_spec if isinstance(raw_spec, dict) else {}
        scheduler_name = spec.get("schedulerName") or "default-scheduler"
        if spec.get("nodeName") or not isinstance(scheduler_name, str) or scheduler_name not in self.profiles:
            return  # a schedulerName that is not even a string names none of our profiles
        ns, name, uid = identify(obj)
        msg = f"pod spec cannot be interpreted: {err}"
        if self.malformed.get(uid) == msg:
            return
        self.malformed[uid] = msg
        log.warning("malformed pod stays pending", pod=f"{ns}/{name}", error=str(err))
        stub = Pod(uid=uid, namespace=ns, name=name)
        self.recorder.event(stub, "Warning", "FailedScheduling", "Scheduling", msg)
        self.scheduler.status_writer.pod_scheduled_condition(stub, "False", "SchedulerError", msg)

    def move(
        self, event: ClusterEvent, old: Any, new: Any, pre_check: Callable[[Pod], bool] | None = None
    ) -> None:
        try:
            self.queue.move_all_to_active_or_backoff(event, old, new, pre_check)
        except Exception:
            log.exception("requeue on event failed", event=str(event))

    def nomination_released(self, pod: Pod) -> None:
        """A pending pod nominated to a node lost its nomination (cleared, moved or the pod deleted).
        Lower- and equal-priority pods counted it there as if it ran: kube-scheduler requeues them as
        for an AssignedPodDelete of that pod, and so do we (else a pod parked while others' nominations
        filled a node waits for the 5-minute flush)."""
        priority = pod.priority
        self.move(
            ClusterEvent(Resource.ASSIGNED_POD, Action.DELETE, "AssignedPodDelete"),
            pod,
            None,
            lambda p: p.priority <= priority,
        )


class _Timed:
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


def _kind_event_label(kind: str) -> Callable[[str, Any, Any], str | None]:
    return lambda action, old, new: f"{kind}{action}"


def _pod_event_label(app: App) -> Callable[[str, Any, Any], str | None]:
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


def _uid_key(p: Pod) -> str:
    return p.uid


def _name_key(n: Node) -> str:
    return n.name


def _obj_key(o: JSON) -> str:
    meta = o.get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


class _PodHandler:
    def __init__(self, app: App) -> None:
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


def _node_action(old: Node, new: Node) -> Action:
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


class _NodeHandler:
    def __init__(self, app: App) -> None:
        self.app = app

    def on_add(self, node: Node) -> None:
        self.app.cache.add_node(node)
        self.app.move(ClusterEvent(Resource.NODE, Action.ADD, "NodeAdd"), None, node)

    def on_update(self, old: Node, new: Node) -> None:
        action = _node_action(old, new)
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


def _claim_key(c: ResourceClaim) -> str:
    return c.key


class _ClaimHandler:
    def __init__(self, app: App) -> None:
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


class _ObjectHandler:
    def __init__(self, app: App, kind: str, resource: Resource | None) -> None:
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


def _plugin_args(profile: Any, name: str, extender_ignored: tuple[str, ...]) -> Any:
    """The plugin's args; NodeResourcesFit also ignores the extended resources extenders manage with
    ``ignoredByScheduler`` (as kube-scheduler does in every profile)."""
    args = profile.plugin_args.get(name)
    if extender_ignored and name == "NodeResourcesFit" and args is not None:
        merged = tuple(dict.fromkeys((*args.ignored_resources, *extender_ignored)))
        args = dataclasses.replace(args, ignored_resources=merged)
    return args


def build_frameworks(
    config: Any,
    registry: Mapping[str, PluginSpec],
    handle: FrameworkHandle,
    metrics: Any,
    *,
    observer: PluginObserver | None = None,
    slow_plugin_threshold: float = DEFAULT_SLOW_PLUGIN_THRESHOLD,
) -> dict[str, Framework]:
    frameworks: dict[str, Framework] = {}
    extender_ignored = tuple(
        r.name
        for e in getattr(config, "extenders", ())
        for r in e.managed_resources
        if r.ignored_by_scheduler
    )
    for profile in config.profiles:
        names = list(profile.plugins.instantiated)
        ph = handle.for_profile(None)
        instances = {n: registry[n].new(_plugin_args(profile, n, extender_ignored), ph) for n in names}
        pp = ProfilePlugins(
            points={k: tuple(v) for k, v in profile.plugins.as_dict().items() if v},
            weights={**profile.plugins.placement_score_weights, **profile.plugins.score_weights},
        )
        frameworks[profile.scheduler_name] = Framework(
            profile.scheduler_name,
            instances,
            pp,
            ph,
            percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
            metrics=metrics,
            observer=observer,
            slow_plugin_threshold=slow_plugin_threshold,
        )
    return frameworks


def build_app(
    config: Any,
    registry: Mapping[str, PluginSpec],
    api: Any,
    *,
    clock: Clock | None = None,
    recorder: Any = None,
    writer: Any = None,
    can_bind: Callable[[], bool] = lambda: True,
    extenders: list[Any] | None = None,
    slow_plugin_threshold: float = DEFAULT_SLOW_PLUGIN_THRESHOLD,
    rng: random.Random | None = None,
    extra: Mapping[str, Any] | None = None,
) -> App:
    """``rng`` (kube's tie-break and preemption offset) and ``extra`` (more handle extras, e.g. a
    ``preemption_runner``) let the in-process engine (pyscheduler.engine) run deterministically."""
    clock = clock or RealClock()
    metrics = SchedulerMetrics()
    if hasattr(api, "bind_fence"):  # the real Api: re-check leadership before every Binding attempt
        api.bind_fence = can_bind
    if hasattr(api, "metrics_observer"):  # the real Api: client-go's rest_client_* figures
        api.metrics_observer = metrics
    if recorder is None:
        from pyscheduler.client.events import EventRecorder

        recorder = EventRecorder(api, reporting_controller="py-scheduler")
    if writer is None:
        from pyscheduler.client.writer import AsyncWriter

        writer = AsyncWriter(api)
    snapshot = Snapshot()
    objects = ObjectStore()
    status_writer = ApiStatusWriter(api, writer, clock, objects)
    waiting = WaitingPods()
    claims = ClaimTracker()
    gates = feature_gates.current()
    cache = Cache(pod_groups=gates.enabled(feature_gates.GENERIC_WORKLOAD))
    queue_ref: list[SchedulingQueue] = []

    def activate_pods(pods: Any) -> None:
        if queue_ref:
            queue_ref[0].activate([p.uid for p in pods])

    claim_writer = None
    if hasattr(api, "update_status"):  # DynamicResources' claim writes (pyscheduler.client.claims)
        from pyscheduler.client.claims import ClaimWriter

        claim_writer = ClaimWriter(api, clock.wall)
    handle = FrameworkHandle(
        snapshot=snapshot,
        objects=objects,
        client=api,
        waiting_pods=waiting,
        nominator=None,
        clock=clock,
        extra={
            "recorder": recorder,
            "status_writer": status_writer,
            "metrics": metrics,
            "claims": claims,
            "pod_group_states": cache.pod_group_states,
            "feature_gates": gates.as_mapping(),  # plugins read gates as name -> bool
            "activate_pods": activate_pods,
            "claim_writer": claim_writer,
            **({"rng": rng} if rng is not None else {}),
            **(extra or {}),
        },
    )
    problems = PluginProblemLog(clock, slow_threshold=slow_plugin_threshold)
    frameworks = build_frameworks(
        config, registry, handle, metrics, observer=problems, slow_plugin_threshold=slow_plugin_threshold
    )
    first = next(iter(frameworks.values()))

    def pre_enqueue(pod: Pod) -> Status | None:
        fwk = frameworks.get(pod.scheduler_name)
        return fwk.run_pre_enqueue_plugins(pod) if fwk else None

    events_map: dict[str, list[ClusterEventWithHint]] = {}
    for fwk in frameworks.values():
        for name, evs in fwk.events_to_register().items():
            events_map.setdefault(name, []).extend(evs)
    queue = SchedulingQueue(
        first.less,
        clock,
        pre_enqueue=pre_enqueue,
        events_map=events_map,
        initial_backoff=float(config.pod_initial_backoff_seconds),
        max_backoff=float(config.pod_max_backoff_seconds),
        on_incoming=metrics.incoming,
        sort_key=first.queue_sort_key,
        # kube's SchedulerPopFromBackoffQ (beta, on). Not with GangScheduling (alpha) for now: a gang
        # that cannot fit re-activates its members at Permit, and popping them straight back out of
        # backoffQ turns its retries into a busy loop (tests/unit/test_pod_groups.py).
        pop_from_backoff=gates.enabled("SchedulerPopFromBackoffQ")
        and not gates.enabled(feature_gates.GANG_SCHEDULING),
        on_hint=metrics.hint,
    )

    # DefaultPreemption's async preemption: a preemptor is let through PreEnqueue once its last victim
    # is gone or terminating (read from the cache), and is activated again if its preemption failed.
    def activate(pods: Iterable[Pod]) -> None:
        queue.activate([p.uid for p in pods])

    preemption_hooks: dict[str, Any] = {"assigned_pod": cache.get_pod, "activate": activate}
    handle.nominator = queue
    handle.extra.update(preemption_hooks)
    queue_ref.append(queue)
    for fwk in frameworks.values():
        fwk.handle.nominator = queue
        fwk.handle.extra.update(preemption_hooks)
    sched = Scheduler(
        profiles=frameworks,
        queue=queue,
        cache=cache,
        snapshot=snapshot,
        clock=clock,
        recorder=recorder,
        status_writer=status_writer,
        metrics=metrics,
        percentage_of_nodes_to_score=config.percentage_of_nodes_to_score,
        extenders=extenders or [],
        can_bind=can_bind,
        rng=rng,
        parallelism=config.parallelism,
    )
    sched.pod_groups = cache.pod_groups_enabled
    return App(
        scheduler=sched,
        queue=queue,
        cache=cache,
        objects=objects,
        profiles=frameworks,
        metrics=metrics,
        api=api,
        recorder=recorder,
        writer=writer,
        clock=clock,
        waiting_pods=waiting,
        claims=claims,
        gang_scheduling=gates.enabled(feature_gates.GANG_SCHEDULING),
    )
