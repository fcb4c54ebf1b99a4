"""The records the scheduler reasons about: Pod, Node, Resource, PodInfo, NodeInfo.

Pod and Node are defined here, Resource in ``resource.py``, PodInfo and NodeInfo in ``node_info.py``.
Plugins import all of them from here (the path docs/plugins.md gives), so this module re-exports what
it no longer defines.

Design
------
The API server speaks JSON; the scheduler only needs a small part of each object. ``Pod.from_dict`` and
``Node.from_dict`` turn the API's JSON (as parsed by orjson) into slotted, read-only records that keep
exactly what scheduling reads, and precompute what every cycle would otherwise recompute (the pod's
effective requests, its host ports, its PVC names). Fields whose shape plugins interpret themselves
(``affinity``, ``topology_spread_constraints``, ``volumes``) are kept as the API's own JSON.

Nothing here does I/O or reads a clock.
"""

from __future__ import annotations

import operator
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from typing import Any

from pyscheduler.framework.node_info import (
    WILDCARD_IP,
    HostPortInfo,
    ImageStateSummary,
    NodeInfo,
    PodInfo,
    next_generation,
)
from pyscheduler.framework.resource import (
    CPU,
    DEFAULT_MEMORY_REQUEST,
    DEFAULT_MILLI_CPU_REQUEST,
    EPHEMERAL_STORAGE,
    HUGEPAGES_PREFIX,
    MEMORY,
    PODS,
    MalformedObject,
    Resource,
)

# What plugins import from here, the names defined in the modules split from this one included: the path
# docs/plugins.md gives plugin authors keeps working.
__all__ = [
    "CPU",
    "DEFAULT_MEMORY_REQUEST",
    "DEFAULT_MILLI_CPU_REQUEST",
    "EPHEMERAL_STORAGE",
    "HUGEPAGES_PREFIX",
    "JSON",
    "MEMORY",
    "PODS",
    "WILDCARD_IP",
    "Container",
    "ContainerImage",
    "ContainerPort",
    "HostPortInfo",
    "ImageStateSummary",
    "MalformedObject",
    "Node",
    "NodeInfo",
    "OwnerReference",
    "Pod",
    "PodInfo",
    "Resource",
    "Taint",
    "Toleration",
    "identify",
    "is_pod_level_resource",
    "next_generation",
    "parse_time",
]

JSON = dict[str, Any]

_INT32_MIN, _INT32_MAX = -(2**31), 2**31 - 1


def _check_meta(meta: Any, kind: str) -> None:
    """Raise MalformedObject naming the first metadata field that is not what the API defines."""
    if not isinstance(meta, dict):
        raise MalformedObject(f"{kind} metadata: expected a map, got {type(meta).__name__}")
    for key in ("uid", "name", "namespace", "resourceVersion"):
        value = meta.get(key)
        if value is not None and not isinstance(value, str):
            raise MalformedObject(f"{kind} metadata.{key}: expected a string, got {type(value).__name__}")
    for key in ("labels", "annotations"):
        value = meta.get(key)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise MalformedObject(f"{kind} metadata.{key}: expected a map, got {type(value).__name__}")
        for k, v in value.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise MalformedObject(f"{kind} metadata.{key}[{k!r}]: expected string keys and values")


def _check_strings(obj: Any, where: str, keys: tuple[str, ...]) -> None:
    """Raise MalformedObject for the first of these fields of ``obj`` that is set and not a string."""
    if not isinstance(obj, dict):
        raise MalformedObject(f"{where}: expected a map, got {type(obj).__name__}")
    for key in keys:
        value = obj.get(key)
        if value is not None and not isinstance(value, str):
            raise MalformedObject(f"{where}.{key}: expected a string, got {type(value).__name__}")


def _check_priority(value: Any) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int):
        raise MalformedObject(f"pod spec.priority: expected an integer, got {type(value).__name__}")
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise MalformedObject(f"pod spec.priority: {value} is outside int32")


# --------------------------------------------------------------------------------------------- Pod


@dataclass(frozen=True, slots=True)
class ContainerPort:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"
    host_ip: str = ""


@dataclass(frozen=True, slots=True)
class Container:
    name: str
    image: str = ""
    requests: Resource = field(default_factory=Resource, compare=False)
    ports: tuple[ContainerPort, ...] = ()
    restart_policy: str = ""  # "Always" marks a sidecar (restartable init container)
    restart_rule_actions: tuple[str, ...] = ()  # restartPolicyRules[].action, in order

    @classmethod
    def from_dict(cls, c: JSON) -> Container:
        res = c.get("resources") or {}
        requests = res.get("requests")
        limits = res.get("limits")
        if limits and not requests:
            # The API server defaults requests to limits; do the same for objects not yet defaulted.
            requests = limits
        elif limits and requests:
            requests = {**{k: v for k, v in limits.items() if k not in requests}, **requests}
        ports = tuple(
            ContainerPort(
                container_port=int(p.get("containerPort", 0)),
                host_port=int(p.get("hostPort", 0) or 0),
                protocol=p.get("protocol") or "TCP",
                host_ip=p.get("hostIP") or "",
            )
            for p in (c.get("ports") or ())
        )
        return cls(
            name=c.get("name", ""),
            image=c.get("image", ""),
            requests=Resource.from_list(requests),
            ports=ports,
            restart_policy=c.get("restartPolicy") or "",
            restart_rule_actions=tuple(r.get("action") or "" for r in c.get("restartPolicyRules") or ()),
        )


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = "Equal"
    value: str = ""
    effect: str = ""
    toleration_seconds: int | None = None

    def tolerates(self, taint: Taint) -> bool:
        """kube's ToleratesTaint: empty effect matches all effects, empty key with Exists matches all keys."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator == "Exists":
            return True
        if self.operator in ("Equal", ""):
            return self.value == taint.value
        return False

    @classmethod
    def from_dict(cls, t: JSON) -> Toleration:
        secs = t.get("tolerationSeconds")
        return cls(
            key=t.get("key") or "",
            operator=t.get("operator") or "Equal",
            value=t.get("value") or "",
            effect=t.get("effect") or "",
            toleration_seconds=int(secs) if secs is not None else None,
        )


@dataclass(frozen=True, slots=True)
class OwnerReference:
    kind: str
    name: str
    uid: str
    controller: bool = False


@dataclass(frozen=True, slots=True)
class Pod:
    """What the scheduler keeps of a v1 Pod. Build with ``Pod.from_dict`` (API JSON) or the test builders."""

    uid: str
    namespace: str
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    node_name: str = ""
    scheduler_name: str = "default-scheduler"
    priority: int = 0
    preemption_policy: str = "PreemptLowerPriority"
    creation_timestamp: float = 0.0
    resource_version: str = ""
    phase: str = "Pending"
    deleting: bool = False
    containers: tuple[Container, ...] = ()
    init_containers: tuple[Container, ...] = ()
    overhead: Resource | None = field(default=None, compare=False)
    node_selector: Mapping[str, str] = field(default_factory=dict)
    affinity: JSON | None = field(default=None, compare=False)
    tolerations: tuple[Toleration, ...] = ()
    topology_spread_constraints: tuple[JSON, ...] = field(default=(), compare=False)
    volumes: tuple[JSON, ...] = field(default=(), compare=False)
    # DynamicResources: spec.resourceClaims and status.resourceClaimStatuses, as the API's JSON
    resource_claims: tuple[JSON, ...] = field(default=(), compare=False)
    resource_claim_statuses: tuple[JSON, ...] = field(default=(), compare=False)
    scheduling_gates: tuple[str, ...] = ()
    nominated_node_name: str = ""
    host_network: bool = False
    host_users: bool | None = None  # spec.hostUsers; None when unset (the default: host user namespace)
    owner_references: tuple[OwnerReference, ...] = ()
    # PodScheduled condition as last written (status, reason, message) so status patches can be skipped
    scheduled_condition: tuple[str, str, str] | None = None
    # spec.resources.requests (PodLevelResources), only the pod-level-eligible resources (cpu, memory,
    # hugepages-*), already defaulted from spec.resources.limits as the API server does; None if unset.
    pod_level_requests: Mapping[str, int] | None = None
    # In-place resize (InPlacePodVerticalScaling): per container name (regular and sidecar), the larger
    # of status.containerStatuses[].resources.requests (actuated) and .allocatedResources, for
    # containers whose status reports resources; the same for the pod level (status.resources,
    # status.allocatedResources). Status: not compared.
    container_status_requests: Mapping[str, Resource] = field(default_factory=dict, compare=False)
    pod_level_status_requests: Mapping[str, int] | None = field(default=None, compare=False)
    # reason of the PodResizePending condition ("Infeasible", "Deferred") or ""
    resize_pending_reason: str = field(default="", compare=False)
    # spec.schedulingGroup.podGroupName (workload-aware scheduling, GenericWorkload): the PodGroup, in the
    # pod's namespace, that the pod is scheduled with; "" when the pod is not in a group.
    scheduling_group: str = ""
    # Derived at construction (see __post_init__); not compared.
    requests: Resource = field(default_factory=Resource, compare=False, init=False)
    # the non-zero requests NodeInfo counts (kube's PodInfo.CalculateResource Non0CPU/Non0Mem)
    non_zero_requests: Resource = field(default_factory=Resource, compare=False, init=False)
    # what NodeResourcesFit's scoring strategies count for the pod being scored: kube 1.36 builds that
    # scorer without the PodLevelResources (and in-place resize) feature flags, so it is the containers'
    # aggregate with the non-zero cpu/memory defaults, plus overhead, ignoring pod-level requests.
    # BalancedAllocation does honour them (it uses ``requests``).
    fit_score_requests: Resource = field(default_factory=Resource, compare=False, init=False)

    def __post_init__(self) -> None:
        req, nz, fit_score = _pod_requests(self)
        object.__setattr__(self, "requests", req)
        object.__setattr__(self, "non_zero_requests", nz)
        object.__setattr__(self, "fit_score_requests", fit_score)

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"

    def with_node_name(self, node_name: str) -> Pod:
        """This pod bound to ``node_name`` (the assumed pod): ``dataclasses.replace`` without re-deriving
        the requests, which do not depend on the node."""
        new = object.__new__(Pod)
        for slot, value in zip(_POD_SLOTS, _pod_fields(self), strict=True):
            object.__setattr__(new, slot, value)
        object.__setattr__(new, "node_name", node_name)
        return new

    def __str__(self) -> str:
        return self.key

    @property
    def pvc_names(self) -> tuple[str, ...]:
        return tuple(
            v["persistentVolumeClaim"]["claimName"]
            for v in self.volumes
            if isinstance(v.get("persistentVolumeClaim"), dict)
            and v["persistentVolumeClaim"].get("claimName")
        )

    @property
    def host_ports(self) -> tuple[ContainerPort, ...]:
        """Ports with a hostPort, from sidecars (restartable init containers) and regular containers."""
        sidecars = tuple(c for c in self.init_containers if c.restart_policy == "Always")
        return tuple(p for c in (*sidecars, *self.containers) for p in c.ports if p.host_port > 0)

    @property
    def images(self) -> tuple[str, ...]:
        return tuple(c.image for c in (*self.init_containers, *self.containers) if c.image)

    def controller_ref(self) -> OwnerReference | None:
        for ref in self.owner_references:
            if ref.controller:
                return ref
        return None

    @classmethod
    def from_dict(cls, obj: JSON) -> Pod:
        """Build from v1 Pod JSON. Raises MalformedObject when a field cannot be interpreted; the
        result still identifies the pod (see ``identify``) so the caller can report it."""
        try:
            meta = obj.get("metadata") or {}
            _check_meta(meta, "pod")
            spec = obj.get("spec") or {}
            status = obj.get("status") or {}
            _check_strings(spec, "pod spec", ("schedulerName", "nodeName", "preemptionPolicy"))
            _check_strings(status, "pod status", ("phase", "nominatedNodeName"))
            _check_priority(spec.get("priority"))
            cond = None
            for c in status.get("conditions") or ():
                if c.get("type") == "PodScheduled":
                    cond = (c.get("status", ""), c.get("reason", ""), c.get("message", ""))
            overhead = spec.get("overhead")
            resize_reason = ""
            for c in status.get("conditions") or ():
                if c.get("type") == "PodResizePending":
                    resize_reason = c.get("reason") or ""
                    break
            return cls(
                uid=meta.get("uid", ""),
                namespace=meta.get("namespace", "default"),
                name=meta.get("name", ""),
                labels=meta.get("labels") or {},
                annotations=meta.get("annotations") or {},
                node_name=spec.get("nodeName") or "",
                scheduler_name=spec.get("schedulerName") or "default-scheduler",
                priority=int(spec.get("priority") or 0),
                preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
                creation_timestamp=parse_time(meta.get("creationTimestamp")),
                resource_version=meta.get("resourceVersion", ""),
                phase=status.get("phase") or "Pending",
                deleting=bool(meta.get("deletionTimestamp")),
                containers=tuple(Container.from_dict(c) for c in spec.get("containers") or ()),
                init_containers=tuple(Container.from_dict(c) for c in spec.get("initContainers") or ()),
                overhead=Resource.from_list(overhead) if overhead else None,
                node_selector=spec.get("nodeSelector") or {},
                affinity=spec.get("affinity") or None,
                tolerations=tuple(Toleration.from_dict(t) for t in spec.get("tolerations") or ()),
                topology_spread_constraints=tuple(spec.get("topologySpreadConstraints") or ()),
                volumes=tuple(spec.get("volumes") or ()),
                resource_claims=tuple(spec.get("resourceClaims") or ()),
                resource_claim_statuses=tuple(status.get("resourceClaimStatuses") or ()),
                scheduling_gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
                nominated_node_name=status.get("nominatedNodeName") or "",
                host_network=bool(spec.get("hostNetwork")),
                host_users=_host_users(spec.get("hostUsers")),
                owner_references=tuple(
                    OwnerReference(
                        r.get("kind", ""), r.get("name", ""), r.get("uid", ""), bool(r.get("controller"))
                    )
                    for r in meta.get("ownerReferences") or ()
                ),
                scheduled_condition=cond,
                pod_level_requests=_pod_level_requests(spec),
                container_status_requests=_container_status_requests(status),
                pod_level_status_requests=_pod_level_status_requests(status),
                resize_pending_reason=resize_reason,
                scheduling_group=_scheduling_group(spec.get("schedulingGroup")),
            )
        except MalformedObject:
            raise
        except (TypeError, ValueError, AttributeError, KeyError) as e:
            raise MalformedObject(str(e)) from e


def _scheduling_group(value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, Mapping):
        raise MalformedObject(f"spec.schedulingGroup must be an object, got {value!r}")
    name = value.get("podGroupName") or ""
    if not isinstance(name, str):
        raise MalformedObject(f"spec.schedulingGroup.podGroupName must be a string, got {name!r}")
    return name


_POD_SLOTS: tuple[str, ...] = Pod.__slots__
_pod_fields = operator.attrgetter(*_POD_SLOTS)


def identify(obj: JSON) -> tuple[str, str, str]:
    """(namespace, name, uid) of any object JSON, however malformed its spec."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if not isinstance(meta, dict):
        return ("", "", "")
    return (str(meta.get("namespace", "")), str(meta.get("name", "")), str(meta.get("uid", "")))


def parse_time(value: str | None) -> float:
    """RFC 3339 timestamp (as the API writes it) to epoch seconds; 0 when absent."""
    if not value:
        return 0.0
    return _parse_time(value)


@lru_cache(maxsize=1024)
def _parse_time(value: str) -> float:
    # pods created in the same second share a timestamp string
    return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()


def is_pod_level_resource(name: str) -> bool:
    """kube's IsSupportedPodLevelResource: cpu, memory and hugepages-<size>."""
    return name in (CPU, MEMORY) or name.startswith(HUGEPAGES_PREFIX)


def _pod_level_requests(spec: JSON) -> dict[str, int] | None:
    """spec.resources.requests restricted to the pod-level resources, None when none is set. Requests
    absent but limited at pod level default to the limit unless containers request that resource (the
    API server's defaultPodRequests; the scheduler normally sees objects already defaulted)."""
    res = spec.get("resources") or {}
    requests = {k: v for k, v in (res.get("requests") or {}).items() if is_pod_level_resource(k)}
    limits = {k: v for k, v in (res.get("limits") or {}).items() if is_pod_level_resource(k)}
    if limits:
        containers = [
            c.get("resources") or {}
            for c in (*(spec.get("containers") or ()), *(spec.get("initContainers") or ()))
        ]
        for name, value in limits.items():
            in_containers = any(
                name in (r.get("requests") or {}) or name in (r.get("limits") or {}) for r in containers
            )
            if name not in requests and (name.startswith(HUGEPAGES_PREFIX) or not in_containers):
                requests[name] = value
    if not requests:
        return None
    parsed = Resource.from_list(requests)
    return {name: parsed.get(name) for name in requests}


def _status_max(entry: JSON) -> Resource | None:
    """max(resources.requests, allocatedResources) of a container status, None when the status does not
    report resources (kube then uses the spec alone)."""
    resources = entry.get("resources")
    if resources is None:
        return None
    out = Resource.from_list(resources.get("requests"))
    out.set_max(Resource.from_list(entry.get("allocatedResources")))
    return out


def _container_status_requests(status: JSON) -> dict[str, Resource]:
    out: dict[str, Resource] = {}
    for cs in (*(status.get("containerStatuses") or ()), *(status.get("initContainerStatuses") or ())):
        r = _status_max(cs)
        if r is not None:
            out[cs.get("name", "")] = r
    return out


def _pod_level_status_requests(status: JSON) -> dict[str, int] | None:
    r = _status_max(status)
    if r is None:
        return None
    names = {*(status["resources"].get("requests") or {}), *(status.get("allocatedResources") or {})}
    return {name: r.get(name) for name in names}


def _pod_requests(pod: Pod) -> tuple[Resource, Resource, Resource]:
    """The pod's effective requests, as kube's resourcehelper.PodRequests computes them for the
    scheduler: max(sum(containers) + sum(sidecars), max over init containers of (init + sidecars
    started before it)); pod-level requests (spec.resources) then replace the cpu, memory and hugepages
    they name; plus overhead. A container (or pod) being resized in place counts at the larger of its
    desired (spec) and its actuated/allocated requests (status), or at the latter alone when the resize
    is Infeasible. Also returns the non-zero requests NodeInfo counts and what NodeResourcesFit's
    scoring counts (the default cpu and memory for containers that request none; see the fields)."""
    if (
        len(pod.containers) == 1
        and not pod.init_containers
        and pod.overhead is None
        and pod.pod_level_requests is None
        and not pod.container_status_requests
    ):
        only = pod.containers[0].requests  # the common case, without the init-container bookkeeping
        nz = _non_zero(only)
        fit_score = only.clone()
        fit_score.milli_cpu, fit_score.memory = nz.milli_cpu, nz.memory
        return only.clone(), nz, fit_score
    infeasible = pod.resize_pending_reason == "Infeasible"
    statuses = pod.container_status_requests

    def effective(c: Container) -> Resource:
        actual = statuses.get(c.name)
        if actual is None:
            return c.requests
        if infeasible:
            return actual
        out = c.requests.clone()
        out.set_max(actual)
        return out

    req = Resource()
    nz = Resource()
    for c in pod.containers:
        r = effective(c)
        req.add(r)
        nz.add(_non_zero(r))
    sidecars = Resource()
    sidecars_nz = Resource()
    init_max = Resource()
    init_max_nz = Resource()
    for c in pod.init_containers:
        if c.restart_policy == "Always":
            r = effective(c)
            req.add(r)
            nz.add(_non_zero(r))
            sidecars.add(r)
            sidecars_nz.add(_non_zero(r))
            eff, eff_nz = sidecars.clone(), sidecars_nz.clone()
        else:
            eff = c.requests.clone()
            eff.add(sidecars)
            eff_nz = _non_zero(c.requests)
            eff_nz.add(sidecars_nz)
        init_max.set_max(eff)
        init_max_nz.set_max(eff_nz)
    req.set_max(init_max)
    nz.set_max(init_max_nz)
    pod_level = pod.pod_level_requests
    if pod_level is None:
        if pod.overhead is not None:
            req.add(pod.overhead)
            nz.add(pod.overhead)
        fit_score = req.clone()
        fit_score.milli_cpu, fit_score.memory = nz.milli_cpu, nz.memory
        return req, nz, fit_score
    fit_score = req.clone()
    fit_score.milli_cpu, fit_score.memory = nz.milli_cpu, nz.memory
    status = pod.pod_level_status_requests
    for name, value in pod_level.items():
        if status is not None:
            value = status.get(name, 0) if infeasible else max(value, status.get(name, 0))
        req.set(name, value)
    if pod.overhead is not None:
        req.add(pod.overhead)
        fit_score.add(pod.overhead)
    # NodeInfo's non-zero requests for a pod with pod-level requests default cpu (memory) only when
    # neither the pod level nor any container nor the overhead asks for it; the default is then the
    # containers' non-zero sum.
    node_nz = Resource(req.milli_cpu or fit_score.milli_cpu, req.memory or fit_score.memory)
    return req, node_nz, fit_score


def _non_zero(r: Resource) -> Resource:
    out = Resource(
        r.milli_cpu or DEFAULT_MILLI_CPU_REQUEST,
        r.memory or DEFAULT_MEMORY_REQUEST,
    )
    return out


# --------------------------------------------------------------------------------------------- Node


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str = ""
    effect: str = "NoSchedule"

    def __str__(self) -> str:
        # kube-scheduler's message form: {key: value}
        return f"{{{self.key}: {self.value}}}"


@dataclass(frozen=True, slots=True)
class ContainerImage:
    names: tuple[str, ...]
    size_bytes: int = 0


@dataclass(frozen=True, slots=True)
class Node:
    """What the scheduler keeps of a v1 Node."""

    name: str
    uid: str = ""
    labels: Mapping[str, str] = field(default_factory=dict)
    annotations: Mapping[str, str] = field(default_factory=dict)
    taints: tuple[Taint, ...] = ()
    unschedulable: bool = False
    allocatable: Resource = field(default_factory=Resource, compare=False)
    images: tuple[ContainerImage, ...] = ()
    resource_version: str = ""
    # status.declaredFeatures, in the order the kubelet wrote them (empty: an older kubelet declaring none)
    declared_features: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, obj: JSON) -> Node:
        try:
            meta = obj.get("metadata") or {}
            _check_meta(meta, "node")
            spec = obj.get("spec") or {}
            status = obj.get("status") or {}
            return cls(
                name=meta.get("name", ""),
                uid=meta.get("uid", ""),
                labels=meta.get("labels") or {},
                annotations=meta.get("annotations") or {},
                taints=tuple(
                    Taint(t.get("key", ""), t.get("value") or "", t.get("effect") or "")
                    for t in spec.get("taints") or ()
                ),
                unschedulable=bool(spec.get("unschedulable")),
                allocatable=Resource.from_list(status.get("allocatable") or status.get("capacity") or {}),
                images=tuple(
                    ContainerImage(tuple(i.get("names") or ()), int(i.get("sizeBytes") or 0))
                    for i in status.get("images") or ()
                ),
                resource_version=meta.get("resourceVersion", ""),
                declared_features=_declared_features(status.get("declaredFeatures")),
            )
        except MalformedObject:
            raise
        except (TypeError, ValueError, AttributeError) as e:
            raise MalformedObject(str(e)) from e


def _host_users(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise MalformedObject(f"spec.hostUsers must be a boolean, got {value!r}")


def _declared_features(value: Any) -> tuple[str, ...]:
    if not value:
        return ()
    if not isinstance(value, list) or not all(isinstance(f, str) for f in value):
        raise MalformedObject(f"status.declaredFeatures must be a list of strings, got {value!r}")
    return tuple(value)
