"""Assembly: configuration + registry + client → informers, cache, queue, profiles, scheduler.

Design
------
``build_scheduler`` turns a validated ``SchedulerConfig`` into a running system without doing any I/O
itself (the ``Api`` is passed in). ``App.start()`` starts the watches (one for pods — all of them whose
phase is neither Succeeded nor Failed —, one for nodes, one per other kind plugins read), waits for their
first sync, then the scheduling thread. Watch events are routed to the cache, the queue and the object
store by the handlers of ``event_handlers.py`` (pods, nodes, claims, other kinds), through ``App``.

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
from pyscheduler.event_handlers import (
    ClaimHandler,
    NodeHandler,
    ObjectHandler,
    PodHandler,
    Timed,
    claim_key,
    kind_event_label,
    name_key,
    object_key,
    pod_event_label,
    uid_key,
)
from pyscheduler.framework.clock import Clock, RealClock
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import Action, ClusterEvent, ClusterEventWithHint, Resource
from pyscheduler.framework.handle import FrameworkHandle
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.observers import DEFAULT_SLOW_PLUGIN_THRESHOLD, PluginObserver
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import Framework, ProfilePlugins
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import JSON, Node, Pod, identify
from pyscheduler.framework.waiting_pods import WaitingPods
from pyscheduler.metrics import SchedulerMetrics
from pyscheduler.plugin_log import PluginProblemLog
from pyscheduler.scheduler import Scheduler

log = structlog.get_logger("pyscheduler.app")

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

# DynamicResources: watched when a profile enables the plugin, or else when the cluster serves
# resource.k8s.io/v1 (NodeResourcesFit's DRA-backed extended resources; a cluster without that API then
# needs nothing). Claims go to the ClaimTracker (an assume cache), these kinds to the object store.
DRA_PLUGIN = "DynamicResources"
DRA_API_PATH = "/apis/resource.k8s.io/v1"
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


# ------------------------------------------------------------------------------------------ writers


class ApiStatusWriter:
    """Pod status updates (PodScheduled condition, nominatedNodeName) through the async writer.

    A failed attempt's ``PodScheduled=False`` must never land on a pod that is bound by then: the
    writer's queue can lag seconds behind under load, while the pod's next attempt binds it (the Binding
    sets ``PodScheduled=True``), and a late ``False`` on a running pod is what kube's own e2e specs reject
    (``PodStatus isn't 'true'``). kube-scheduler serializes a pod's status patch and its Binding; here the
    patch carries the newest ``resourceVersion`` the daemon has seen as a precondition: a 409 means the pod
    changed since, and ``latest(uid)`` (the daemon's own view) says whether to drop the write (the watch
    shows it bound, or it is gone) or to retry on the newer version. A pod only *assumed* again (its next
    attempt waiting in Permit, say) still gets the write, as kube-scheduler writes it: its binding may yet
    fail, and if it succeeds the Binding sets the condition True after the write."""

    #: how many times a condition write is retried on a newer resourceVersion after a 409
    CONFLICT_RETRIES = 3

    def __init__(
        self,
        api: Any,
        writer: Any,
        clock: Clock,
        objects: ObjectStore | None = None,
        latest: Callable[[str], tuple[bool, str] | None] | None = None,
    ) -> None:
        self.api = api
        self.writer = writer
        self.clock = clock
        self.objects = objects
        #: uid -> (bound, resourceVersion) as the daemon's watch last showed the pod; None: gone
        self.latest = latest

    def pod_scheduled_condition(
        self, pod: Pod, status: str, reason: str, message: str, nominated_node_name: str | None = None
    ) -> None:
        """Write the pod's PodScheduled condition, and with ``nominated_node_name`` its nomination in the
        same patch (kube's updatePod after a failed attempt: one write, not two; a second write right
        after the first met the first's new resourceVersion as a conflict every time)."""
        if pod.scheduled_condition == (status, reason, message):
            if nominated_node_name is not None:
                self.nominated_node(pod, nominated_node_name)
            return  # the condition is unchanged: spare the API server its write
        cond = {
            "type": "PodScheduled",
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": rfc3339(self.clock.wall()),
        }
        if status == "False" and pod.resource_version and self.latest is not None:
            self.writer.submit(self._unscheduled_condition, pod, cond, nominated_node_name, key=pod.key)
            return
        self.writer.submit(
            self.api.patch_pod_status,
            pod.namespace,
            pod.name,
            condition=cond,
            nominated_node_name=nominated_node_name,
            key=pod.key,
        )

    def _unscheduled_condition(
        self, pod: Pod, cond: Mapping[str, Any], nominated_node_name: str | None = None
    ) -> None:
        """On a writer thread: PATCH the condition (and the nomination, if given) unless the pod is bound
        (see the class docstring)."""
        from pyscheduler.client.errors import ApiError

        assert self.latest is not None
        rv = pod.resource_version
        for _ in range(1 + self.CONFLICT_RETRIES):
            seen = self.latest(pod.uid)
            if seen is None or seen[0]:
                log.debug("PodScheduled=False not written: the pod is bound or gone", pod=pod.key)
                return
            rv = max(rv, seen[1], key=_rv_order)
            try:
                self.api.patch_pod_status(
                    pod.namespace,
                    pod.name,
                    condition=cond,
                    nominated_node_name=nominated_node_name,
                    resource_version=rv,
                )
                return
            except ApiError as e:
                if e.status != 409:
                    raise
            time.sleep(0.05)  # let the watch deliver the newer version
        log.info("PodScheduled=False not written: the pod kept changing", pod=pod.key, resource_version=rv)
        if nominated_node_name is not None:  # the nomination needs no precondition: it goes alone
            self.api.patch_pod_status(pod.namespace, pod.name, nominated_node_name=nominated_node_name)

    _unscheduled_condition.api_call_type = "pod_status_patch"  # type: ignore[attr-defined]  # writer.py

    def nominated_node(self, pod: Pod, node_name: str) -> None:
        # keyed: a pod's writes go to one worker, in order (setting then clearing a nomination)
        if self.latest is not None:
            self.writer.submit(self._nomination, pod, node_name, key=pod.key)
            return
        self.writer.submit(
            self.api.patch_pod_status, pod.namespace, pod.name, nominated_node_name=node_name, key=pod.key
        )

    def _nomination(self, pod: Pod, node_name: str) -> None:
        """On a writer thread: set (or clear) ``status.nominatedNodeName`` unless the daemon's watch
        shows the pod bound or gone by now. A preemptor's nomination waits in the writer's queue while
        its victims go and its next attempt binds it; sent then, the API server refuses it (422: may not
        be set on a bound pod; the Binding clears it) -- on the Preemption benchmark, 623 of 1,184 such
        writes were refused, each a request and a warning for nothing."""
        assert self.latest is not None
        seen = self.latest(pod.uid)
        if seen is None or seen[0]:
            log.debug("nominatedNodeName not written: the pod is bound or gone", pod=pod.key)
            return
        self.api.patch_pod_status(pod.namespace, pod.name, nominated_node_name=node_name)

    _nomination.api_call_type = "pod_status_patch"  # type: ignore[attr-defined]

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


def _rv_order(rv: str) -> tuple[int, str]:
    """resourceVersions are opaque, but etcd's are integers: the larger is the newer."""
    return (int(rv), "") if rv.isdigit() else (-1, rv)


def _latest_view(queue: SchedulingQueue, cache: Cache) -> Callable[[str], tuple[bool, str] | None]:
    """uid -> (bound, resourceVersion): bound when the cache holds the pod as the watch showed it (not
    merely assumed); else the queue's copy (pending or in flight), or the assumed copy; None: neither."""

    def latest(uid: str) -> tuple[bool, str] | None:
        cached = cache.get_pod(uid)
        if cached is not None and not cache.is_assumed(uid):
            return True, cached.resource_version
        qpi = queue.get(uid)
        if qpi is not None:
            return False, qpi.pod.resource_version
        return None if cached is None else (False, cached.resource_version)

    return latest


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

    def dra_watched(self) -> bool:
        """Watch the resource.k8s.io kinds: a profile has DynamicResources, or none has but the cluster
        serves resource.k8s.io/v1. kube-scheduler watches them whatever its profiles (its shared DRA
        manager: NodeResourcesFit leaves an extended resource a DeviceClass backs to DRA and scores it by
        the device counts); a cluster without that API needs nothing when the plugin is disabled."""
        if self.dra_enabled:
            return True
        if not self.api.serves(DRA_API_PATH):  # DeviceClasses then back nothing
            log.info("resource.k8s.io/v1 not watched", reason="not served, DynamicResources not in a profile")
            return False
        return True

    # ---------------------------------------------------------------------------------- informers
    def start_informers(self, sync_timeout: float = 120.0) -> None:
        from pyscheduler.client.reflector import Reflector

        pods = Reflector(
            self.api,
            "/api/v1/pods",
            Pod.from_dict,
            uid_key,
            Timed(PodHandler(self), self.metrics, pod_event_label(self)),
            field_selector=POD_FIELD_SELECTOR,
            name="pods",
            on_malformed=self._on_malformed_pod,
        )
        nodes = Reflector(
            self.api,
            "/api/v1/nodes",
            Node.from_dict,
            name_key,
            Timed(NodeHandler(self), self.metrics, kind_event_label("Node")),
            name="nodes",
        )
        self.reflectors = [nodes, pods]
        kinds = dict(OBJECT_KINDS)
        if self.pod_groups_enabled:
            kinds.update(POD_GROUP_KINDS)
        if self.dra_watched():
            kinds.update(DRA_OBJECT_KINDS)
            self.reflectors.append(
                Reflector(
                    self.api,
                    DRA_CLAIMS_PATH,
                    ResourceClaim.from_dict,
                    claim_key,
                    Timed(ClaimHandler(self), self.metrics, kind_event_label("ResourceClaim")),
                    name="ResourceClaim",
                )
            )
        for kind, (path, resource) in kinds.items():
            self.reflectors.append(
                Reflector(
                    self.api,
                    path,
                    slim,
                    object_key,
                    Timed(ObjectHandler(self, kind, resource), self.metrics, kind_event_label(kind)),
                    name=kind,
                )
            )
        # The initial lists fill the cache with long-lived records (11,000 pods and 5,000 nodes at the
        # benchmark's scale): at the default thresholds every growth of the heap by a quarter set off a
        # full collection over all of it, half the CPU of taking in the pods (in-process, 1.2 s -> 0.6 s).
        # Their parsing makes no cycles; the collection after the sync below finds any there are.
        gc.set_threshold(*DAEMON_GC_THRESHOLD)
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
        # and keep collecting less often (the scheduling cycle allocates many short-lived objects).
        gc.collect()
        gc.freeze()
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
    from pyscheduler.plugins.dynamic_resources import offer_extended_scores

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
        # Fit/BalancedAllocation score DRA-backed extended resources with or without DynamicResources
        offer_extended_scores(ph)
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

        # events get a rate limiter of their own, as kube-scheduler gives them their own client: a flood
        # of events must not delay binds and status writes, nor wait behind them (client/events.py)
        own = getattr(api, "with_own_rate_limiter", None)
        recorder = EventRecorder(own() if own else api, reporting_controller="py-scheduler")
    if writer is None:
        from pyscheduler.client.writer import AsyncWriter

        writer = AsyncWriter(api, observer=metrics)  # pod_status_patch figures (docs/metrics.md)
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
        # kube's SchedulerPopFromBackoffQ (beta, on), with gangs too: GangScheduling's Permit does not
        # re-activate the members of the pod group cycle it runs in (see that plugin)
        pop_from_backoff=gates.enabled("SchedulerPopFromBackoffQ"),
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
    status_writer.latest = _latest_view(queue, cache)
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
        opportunistic_batching=gates.enabled("OpportunisticBatching"),
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
