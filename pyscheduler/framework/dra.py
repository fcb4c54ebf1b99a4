"""Records of resource.k8s.io/v1 objects: ResourceClaim, ResourceClaimTemplate, DeviceClass, ResourceSlice.

Parsed from the API's JSON by ``from_dict``; a field of the wrong shape raises ``MalformedObject`` with the
field's path. What scheduling reads is kept as slotted records; the claim keeps its raw status allocation
too, because PreBind writes it back. Read: the GA feature set of 1.36 (exactly/firstAvailable requests,
selectors, counts, allocation modes, constraints, admin access, pools) and the beta features on by default:
device taints and request tolerations, partitionable devices (shared counters, counter consumption,
per-device node selection), binding conditions, consumable capacity (capacity requests, request policies,
shares of devices that allow multiple allocations).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, Protocol

from pyscheduler.framework.quantity import QuantityError, parse_quantity
from pyscheduler.framework.types import JSON, MalformedObject

ALLOCATION_MODE_EXACT_COUNT = "ExactCount"
ALLOCATION_MODE_ALL = "All"


def _map(obj: Any, path: str) -> Mapping[str, Any]:
    if obj is None:
        return {}
    if not isinstance(obj, Mapping):
        raise MalformedObject(f"{path}: expected an object, got {type(obj).__name__}")
    return obj


def _list(obj: Any, path: str) -> list[Any]:
    if obj is None:
        return []
    if not isinstance(obj, list):
        raise MalformedObject(f"{path}: expected a list, got {type(obj).__name__}")
    return obj


def _str(obj: Any, path: str, default: str = "") -> str:
    if obj is None:
        return default
    if not isinstance(obj, str):
        raise MalformedObject(f"{path}: expected a string, got {type(obj).__name__}")
    return obj


def _int(obj: Any, path: str, default: int) -> int:
    if obj is None:
        return default
    if isinstance(obj, bool) or not isinstance(obj, int):
        raise MalformedObject(f"{path}: expected an integer, got {obj!r}")
    return obj


def _bool(obj: Any, path: str) -> bool:
    if obj is None:
        return False
    if not isinstance(obj, bool):
        raise MalformedObject(f"{path}: expected a boolean, got {obj!r}")
    return obj


def resource_version(obj: Mapping[str, Any]) -> int:
    """The object's resourceVersion as a number (etcd revisions are integers); 0 when absent."""
    rv = (obj.get("metadata") or {}).get("resourceVersion") or "0"
    try:
        return int(rv)
    except (TypeError, ValueError):
        raise MalformedObject(f"metadata.resourceVersion: not a number: {rv!r}") from None


@dataclass(frozen=True, slots=True)
class Meta:
    namespace: str
    name: str
    uid: str
    resource_version: int
    deleting: bool = False

    @classmethod
    def from_dict(cls, obj: Mapping[str, Any]) -> Meta:
        m = _map(obj.get("metadata"), "metadata")
        return cls(
            namespace=_str(m.get("namespace"), "metadata.namespace"),
            name=_str(m.get("name"), "metadata.name"),
            uid=_str(m.get("uid"), "metadata.uid"),
            resource_version=resource_version(obj),
            deleting=m.get("deletionTimestamp") is not None,
        )

    @property
    def key(self) -> str:
        return f"{self.namespace}/{self.name}"


def without_managed_fields(obj: JSON) -> JSON:
    """``obj`` less ``metadata.managedFields`` (a shallow copy; ``obj`` itself when it has none).

    A claim record keeps its object for the writes PreBind and Unreserve send back (a PUT of the whole
    claim). The field manager's entries (a nested tree per writer) were a third of the claims' JSON the
    daemon held with 5,000 allocated claims (14 of 42 MiB traced) and nothing reads them; an update that
    omits them keeps the server's. kube-scheduler's informers drop them too. Not ``backend.objects.slim``:
    that also drops the last-applied annotation, which a PUT without it would delete on the server."""
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping) or "managedFields" not in meta:
        return obj
    return {**obj, "metadata": {k: v for k, v in meta.items() if k != "managedFields"}}


def _selectors(raw: Any, path: str) -> tuple[str, ...]:
    out = []
    for i, s in enumerate(_list(raw, path)):
        p = f"{path}[{i}]"
        cel = _map(_map(s, p).get("cel"), f"{p}.cel")
        if "expression" not in cel:
            raise MalformedObject(f"{p}.cel.expression: required")
        out.append(_str(cel.get("expression"), f"{p}.cel.expression"))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class DeviceTaint:
    key: str
    value: str = ""
    effect: str = ""  # NoSchedule, NoExecute, None (only the first two keep a device from being allocated)


@dataclass(frozen=True, slots=True)
class DeviceToleration:
    key: str = ""
    operator: str = ""  # "" means Equal
    value: str = ""
    effect: str = ""

    def tolerates(self, taint: DeviceTaint) -> bool:
        """kube's resourceclaim.ToleratesTaint."""
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


def _tolerations(raw: Any, path: str) -> tuple[DeviceToleration, ...]:
    out = []
    for i, t in enumerate(_list(raw, path)):
        p = f"{path}[{i}]"
        t = _map(t, p)
        out.append(
            DeviceToleration(
                key=_str(t.get("key"), f"{p}.key"),
                operator=_str(t.get("operator"), f"{p}.operator"),
                value=_str(t.get("value"), f"{p}.value"),
                effect=_str(t.get("effect"), f"{p}.effect"),
            )
        )
    return tuple(out)


@dataclass(frozen=True, slots=True)
class ExactRequest:
    """An ``exactly`` request or one ``firstAvailable`` subrequest."""

    name: str
    device_class_name: str
    selectors: tuple[str, ...] = ()
    allocation_mode: str = ALLOCATION_MODE_EXACT_COUNT
    count: int = 1
    admin_access: bool = False
    tolerations: tuple[DeviceToleration, ...] = ()
    raw_tolerations: tuple[JSON, ...] = field(default=(), compare=False, repr=False)  # copied into results
    # DRAConsumableCapacity: capacity.requests (name -> (value, as written))
    capacity_requests: Mapping[str, tuple[Fraction, str]] = field(default_factory=dict, compare=False)

    @classmethod
    def from_dict(cls, name: str, raw: Mapping[str, Any], path: str) -> ExactRequest:
        mode = _str(raw.get("allocationMode"), f"{path}.allocationMode", ALLOCATION_MODE_EXACT_COUNT)
        if mode not in (ALLOCATION_MODE_EXACT_COUNT, ALLOCATION_MODE_ALL):
            raise MalformedObject(f"{path}.allocationMode: unsupported value {mode!r}")
        count = _int(raw.get("count"), f"{path}.count", 1)
        if mode == ALLOCATION_MODE_EXACT_COUNT and count < 1:
            raise MalformedObject(f"{path}.count: must be greater than zero")
        return cls(
            name=name,
            device_class_name=_str(raw.get("deviceClassName"), f"{path}.deviceClassName"),
            selectors=_selectors(raw.get("selectors"), f"{path}.selectors"),
            allocation_mode=mode,
            count=count,
            admin_access=_bool(raw.get("adminAccess"), f"{path}.adminAccess"),
            tolerations=_tolerations(raw.get("tolerations"), f"{path}.tolerations"),
            raw_tolerations=tuple(dict(t) for t in _list(raw.get("tolerations"), f"{path}.tolerations")),
            capacity_requests={
                str(k): (
                    _quantity(v, f"{path}.capacity.requests[{k}]"),
                    _str(v, f"{path}.capacity.requests[{k}]"),
                )
                for k, v in _map(
                    _map(raw.get("capacity"), f"{path}.capacity").get("requests"), f"{path}.capacity.requests"
                ).items()
            },
        )


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    """One entry of spec.devices.requests: ``exactly`` set, or ``first_available`` (subrequest names are
    ``<request>/<subrequest>`` in allocation results)."""

    name: str
    exactly: ExactRequest | None
    first_available: tuple[ExactRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class DeviceConstraint:
    requests: tuple[str, ...]
    match_attribute: str = ""
    distinct_attribute: str = ""


@dataclass(frozen=True, slots=True)
class AllocationResult:
    request: str
    driver: str
    pool: str
    device: str
    admin_access: bool = False
    # DRAConsumableCapacity: a share of a device that allows multiple allocations, and what it consumes
    share_id: str = ""
    consumed_capacity: Mapping[str, Fraction] = field(default_factory=dict)

    @property
    def device_id(self) -> tuple[str, str, str]:
        return (self.driver, self.pool, self.device)


@dataclass(frozen=True, slots=True)
class ConsumerReference:
    resource: str
    name: str
    uid: str
    api_group: str = ""


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    meta: Meta
    requests: tuple[DeviceRequest, ...]
    constraints: tuple[DeviceConstraint, ...] = ()
    config: tuple[JSON, ...] = ()
    allocated: bool = False
    results: tuple[AllocationResult, ...] = ()
    allocation: JSON | None = None  # raw status.allocation (written back by PreBind)
    reserved_for: tuple[ConsumerReference, ...] = ()
    # the object as read, less metadata.managedFields (see ``without_managed_fields``): what writes send back
    raw: JSON = field(default_factory=dict, compare=False, repr=False)

    @property
    def key(self) -> str:
        return self.meta.key

    @classmethod
    def from_dict(cls, obj: JSON) -> ResourceClaim:
        meta = Meta.from_dict(obj)
        spec = _map(obj.get("spec"), "spec")
        devices = _map(spec.get("devices"), "spec.devices")
        requests = tuple(
            _device_request(r, f"spec.devices.requests[{i}]")
            for i, r in enumerate(_list(devices.get("requests"), "spec.devices.requests"))
        )
        constraints = []
        for i, c in enumerate(_list(devices.get("constraints"), "spec.devices.constraints")):
            p = f"spec.devices.constraints[{i}]"
            c = _map(c, p)
            constraints.append(
                DeviceConstraint(
                    requests=tuple(
                        _str(r, f"{p}.requests") for r in _list(c.get("requests"), f"{p}.requests")
                    ),
                    match_attribute=_str(c.get("matchAttribute"), f"{p}.matchAttribute"),
                    distinct_attribute=_str(c.get("distinctAttribute"), f"{p}.distinctAttribute"),
                )
            )
        config = tuple(
            dict(_map(c, "spec.devices.config")) for c in _list(devices.get("config"), "spec.devices.config")
        )
        status = _map(obj.get("status"), "status")
        allocation = status.get("allocation")
        results: list[AllocationResult] = []
        if allocation is not None:
            alloc = _map(allocation, "status.allocation")
            adevs = _map(alloc.get("devices"), "status.allocation.devices")
            for i, r in enumerate(_list(adevs.get("results"), "status.allocation.devices.results")):
                p = f"status.allocation.devices.results[{i}]"
                r = _map(r, p)
                results.append(
                    AllocationResult(
                        request=_str(r.get("request"), f"{p}.request"),
                        driver=_str(r.get("driver"), f"{p}.driver"),
                        pool=_str(r.get("pool"), f"{p}.pool"),
                        device=_str(r.get("device"), f"{p}.device"),
                        admin_access=_bool(r.get("adminAccess"), f"{p}.adminAccess"),
                        share_id=_str(r.get("shareID"), f"{p}.shareID"),
                        consumed_capacity=_quantities(r.get("consumedCapacity"), f"{p}.consumedCapacity"),
                    )
                )
        reserved = []
        for i, c in enumerate(_list(status.get("reservedFor"), "status.reservedFor")):
            p = f"status.reservedFor[{i}]"
            c = _map(c, p)
            reserved.append(
                ConsumerReference(
                    resource=_str(c.get("resource"), f"{p}.resource"),
                    name=_str(c.get("name"), f"{p}.name"),
                    uid=_str(c.get("uid"), f"{p}.uid"),
                    api_group=_str(c.get("apiGroup"), f"{p}.apiGroup"),
                )
            )
        return cls(
            meta=meta,
            requests=requests,
            constraints=tuple(constraints),
            config=config,
            allocated=allocation is not None,
            results=tuple(results),
            allocation=dict(allocation) if allocation is not None else None,
            reserved_for=tuple(reserved),
            raw=without_managed_fields(obj),
        )


def _device_request(raw: Any, path: str) -> DeviceRequest:
    r = _map(raw, path)
    name = _str(r.get("name"), f"{path}.name")
    if not name:
        raise MalformedObject(f"{path}.name: required")
    exactly = r.get("exactly")
    first = r.get("firstAvailable")
    if (exactly is None) == (first is None):
        raise MalformedObject(f"{path}: exactly one of exactly or firstAvailable must be set")
    if exactly is not None:
        return DeviceRequest(
            name, ExactRequest.from_dict(name, _map(exactly, f"{path}.exactly"), f"{path}.exactly")
        )
    subs = []
    for i, s in enumerate(_list(first, f"{path}.firstAvailable")):
        p = f"{path}.firstAvailable[{i}]"
        s = _map(s, p)
        sub = _str(s.get("name"), f"{p}.name")
        if not sub:
            raise MalformedObject(f"{p}.name: required")
        subs.append(ExactRequest.from_dict(f"{name}/{sub}", s, p))
    if not subs:
        raise MalformedObject(f"{path}.firstAvailable: must not be empty")
    return DeviceRequest(name, None, tuple(subs))


@dataclass(frozen=True, slots=True)
class ResourceClaimTemplate:
    meta: Meta
    spec: JSON  # the claim spec a new claim gets (the resourceclaim controller creates claims)

    @classmethod
    def from_dict(cls, obj: JSON) -> ResourceClaimTemplate:
        spec = _map(_map(obj.get("spec"), "spec").get("spec"), "spec.spec")
        # validate the same way a claim is validated
        ResourceClaim.from_dict({"metadata": obj.get("metadata") or {}, "spec": spec})
        return cls(meta=Meta.from_dict(obj), spec=dict(spec))


@dataclass(frozen=True, slots=True)
class DeviceClass:
    meta: Meta
    selectors: tuple[str, ...] = ()
    config: tuple[JSON, ...] = ()

    @property
    def name(self) -> str:
        return self.meta.name

    @classmethod
    def from_dict(cls, obj: JSON) -> DeviceClass:
        spec = _map(obj.get("spec"), "spec")
        return cls(
            meta=Meta.from_dict(obj),
            selectors=_selectors(spec.get("selectors"), "spec.selectors"),
            config=tuple(dict(_map(c, "spec.config")) for c in _list(spec.get("config"), "spec.config")),
        )


Counters = Mapping[str, Fraction]  # counter name -> value (a quantity)


@dataclass(frozen=True, slots=True)
class Device:
    name: str
    attributes: Mapping[str, Mapping[str, Any]]  # name -> {"int"|"bool"|"string"|"version": value}
    capacity: Mapping[str, str]  # name -> quantity string
    allow_multiple_allocations: bool = False
    taints: tuple[DeviceTaint, ...] = ()
    # DRAPartitionableDevices: counters taken from the pool's counter sets (counter set, counters)
    consumes_counters: tuple[tuple[str, Counters], ...] = ()
    # node selection of this device, when its slice has perDeviceNodeSelection
    node_name: str = ""
    all_nodes: bool = False
    node_selector: JSON | None = None
    # DRADeviceBindingConditions
    binding_conditions: tuple[str, ...] = ()
    binding_failure_conditions: tuple[str, ...] = ()
    binds_to_node: bool = False
    capacity_policies: Mapping[str, CapacityPolicy] = field(default_factory=dict, compare=False, repr=False)


def _quantity(raw: Any, path: str) -> Fraction:
    try:
        return parse_quantity(_str(raw, path, "0"))
    except QuantityError as e:
        raise MalformedObject(f"{path}: {e}") from None


def _quantities(raw: Any, path: str) -> dict[str, Fraction]:
    """A map of quantity strings (consumedCapacity, capacity requests)."""
    return {str(k): _quantity(v, f"{path}[{k}]") for k, v in _map(raw, path).items()}


@dataclass(frozen=True, slots=True)
class CapacityPolicy:
    """One capacity of a device (DRAConsumableCapacity): its value and requestPolicy."""

    value: Fraction
    value_text: str
    default: Fraction | None = None
    default_text: str = ""
    valid_values: tuple[tuple[Fraction, str], ...] = ()
    range_min: Fraction | None = None
    range_min_text: str = ""
    range_max: Fraction | None = None
    range_step: Fraction | None = None
    has_policy: bool = False
    has_range: bool = False


def _capacity_policy(raw: Mapping[str, Any], path: str) -> CapacityPolicy:
    value_text = _str(raw.get("value"), f"{path}.value", "0")
    policy = raw.get("requestPolicy")
    if policy is None:
        return CapacityPolicy(_quantity(value_text, f"{path}.value"), value_text)
    pol = _map(policy, f"{path}.requestPolicy")
    pp = f"{path}.requestPolicy"
    default_text = _str(pol.get("default"), f"{pp}.default")
    rng = pol.get("validRange")
    r = _map(rng, f"{pp}.validRange")
    return CapacityPolicy(
        value=_quantity(value_text, f"{path}.value"),
        value_text=value_text,
        default=_quantity(default_text, f"{pp}.default") if default_text else None,
        default_text=default_text,
        valid_values=tuple(
            (_quantity(v, f"{pp}.validValues[{i}]"), _str(v, f"{pp}.validValues[{i}]"))
            for i, v in enumerate(_list(pol.get("validValues"), f"{pp}.validValues"))
        ),
        range_min=_quantity(r["min"], f"{pp}.validRange.min") if r.get("min") is not None else None,
        range_min_text=_str(r.get("min"), f"{pp}.validRange.min"),
        range_max=_quantity(r["max"], f"{pp}.validRange.max") if r.get("max") is not None else None,
        range_step=_quantity(r["step"], f"{pp}.validRange.step") if r.get("step") is not None else None,
        has_policy=True,
        has_range=rng is not None,
    )


def _counters(raw: Any, path: str) -> dict[str, Fraction]:
    out = {}
    for k, v in _map(raw, path).items():
        text = _str(_map(v, f"{path}[{k}]").get("value"), f"{path}[{k}].value", "0")
        try:
            out[str(k)] = parse_quantity(text)
        except QuantityError as e:
            raise MalformedObject(f"{path}[{k}].value: {e}") from None
    return out


def _strings(raw: Any, path: str) -> tuple[str, ...]:
    return tuple(_str(x, path) for x in _list(raw, path))


def _device(d: Any, p: str, per_device: bool) -> Device:
    d = _map(d, p)
    attrs = {}
    for k, v in _map(d.get("attributes"), f"{p}.attributes").items():
        attrs[k] = dict(_map(v, f"{p}.attributes[{k}]"))
    cap = {}
    policies = {}
    for k, v in _map(d.get("capacity"), f"{p}.capacity").items():
        entry = _map(v, f"{p}.capacity[{k}]")
        cap[k] = _str(entry.get("value"), f"{p}.capacity[{k}].value", "0")
        policies[k] = _capacity_policy(entry, f"{p}.capacity[{k}]")
    taints = []
    for j, t in enumerate(_list(d.get("taints"), f"{p}.taints")):
        tp = f"{p}.taints[{j}]"
        t = _map(t, tp)
        taints.append(
            DeviceTaint(
                key=_str(t.get("key"), f"{tp}.key"),
                value=_str(t.get("value"), f"{tp}.value"),
                effect=_str(t.get("effect"), f"{tp}.effect"),
            )
        )
    consumes = []
    for j, c in enumerate(_list(d.get("consumesCounters"), f"{p}.consumesCounters")):
        cp = f"{p}.consumesCounters[{j}]"
        c = _map(c, cp)
        consumes.append(
            (_str(c.get("counterSet"), f"{cp}.counterSet"), _counters(c.get("counters"), f"{cp}.counters"))
        )
    node_name = _str(d.get("nodeName"), f"{p}.nodeName")
    all_nodes = _bool(d.get("allNodes"), f"{p}.allNodes")
    node_selector = d.get("nodeSelector")
    if per_device and sum((bool(node_name), node_selector is not None, all_nodes)) != 1:
        raise MalformedObject(f"{p}: exactly one of nodeName, nodeSelector, allNodes must be set")
    return Device(
        name=_str(d.get("name"), f"{p}.name"),
        attributes=attrs,
        capacity=cap,
        allow_multiple_allocations=_bool(d.get("allowMultipleAllocations"), f"{p}.allowMultipleAllocations"),
        taints=tuple(taints),
        consumes_counters=tuple(consumes),
        node_name=node_name,
        all_nodes=all_nodes,
        node_selector=dict(_map(node_selector, f"{p}.nodeSelector")) if node_selector is not None else None,
        binding_conditions=_strings(d.get("bindingConditions"), f"{p}.bindingConditions"),
        binding_failure_conditions=_strings(
            d.get("bindingFailureConditions"), f"{p}.bindingFailureConditions"
        ),
        binds_to_node=_bool(d.get("bindsToNode"), f"{p}.bindsToNode"),
        capacity_policies=policies,
    )


@dataclass(frozen=True, slots=True)
class ResourceSlice:
    """A slice of a pool. Node-local when ``node_name`` is set; else ``node_selector`` (raw v1
    NodeSelector), ``all_nodes``, or ``per_device_node_selection`` (each device says where it is).
    ``shared_counters`` (DRAPartitionableDevices) are the pool's counter sets, by name."""

    meta: Meta
    driver: str
    pool: str
    pool_generation: int
    pool_slice_count: int
    node_name: str = ""
    node_selector: JSON | None = None
    all_nodes: bool = False
    devices: tuple[Device, ...] = ()
    per_device_node_selection: bool = False
    shared_counters: tuple[tuple[str, Counters], ...] = ()

    @classmethod
    def from_dict(cls, obj: JSON) -> ResourceSlice:
        spec = _map(obj.get("spec"), "spec")
        pool = _map(spec.get("pool"), "spec.pool")
        node_name = _str(spec.get("nodeName"), "spec.nodeName")
        node_selector = spec.get("nodeSelector")
        all_nodes = _bool(spec.get("allNodes"), "spec.allNodes")
        per_device = _bool(spec.get("perDeviceNodeSelection"), "spec.perDeviceNodeSelection")
        if sum((bool(node_name), node_selector is not None, all_nodes, per_device)) > 1:
            raise MalformedObject(
                "spec: at most one of nodeName, nodeSelector, allNodes, perDeviceNodeSelection may be set"
            )
        devices = [
            _device(d, f"spec.devices[{i}]", per_device)
            for i, d in enumerate(_list(spec.get("devices"), "spec.devices"))
        ]
        shared = []
        for i, c in enumerate(_list(spec.get("sharedCounters"), "spec.sharedCounters")):
            cp = f"spec.sharedCounters[{i}]"
            c = _map(c, cp)
            shared.append((_str(c.get("name"), f"{cp}.name"), _counters(c.get("counters"), f"{cp}.counters")))
        return cls(
            meta=Meta.from_dict(obj),
            driver=_str(spec.get("driver"), "spec.driver"),
            pool=_str(pool.get("name"), "spec.pool.name"),
            pool_generation=_int(pool.get("generation"), "spec.pool.generation", 0),
            pool_slice_count=_int(pool.get("resourceSliceCount"), "spec.pool.resourceSliceCount", 1),
            node_name=node_name,
            node_selector=dict(_map(node_selector, "spec.nodeSelector"))
            if node_selector is not None
            else None,
            all_nodes=all_nodes,
            devices=tuple(devices),
            per_device_node_selection=per_device,
            shared_counters=tuple(shared),
        )


# ------------------------------------------------------------------------------------ what the plugin is given
# DynamicResources may import neither the backend nor the client layer: app.py hands it these two objects
# through ``handle.extra`` ("claims": backend.claims.ClaimTracker, "claim_writer": client.claims.ClaimWriter).


class ClaimCache(Protocol):
    """The claim assume cache with the in-flight allocations (backend.claims.ClaimTracker)."""

    def get(self, namespace: str, name: str) -> ResourceClaim | None: ...

    def owned_by(self, uid: str) -> list[ResourceClaim]:
        """The claims whose controller ownerReference has this uid (a pod's special claim)."""
        ...

    def list(self) -> list[ResourceClaim]: ...

    def allocated_devices(self) -> set[tuple[str, str, str]]: ...

    def allocated_capacity(self) -> dict[tuple[str, str, str], dict[str, Fraction]]: ...

    def signal_pending_allocation(self, claim: ResourceClaim) -> None: ...

    def pending_allocation(self, uid: str) -> ResourceClaim | None: ...

    def remove_pending_allocation(self, uid: str, force: bool = False) -> bool: ...

    def assume(self, claim: ResourceClaim) -> None: ...

    def restore(self, key: str) -> None: ...


class ClaimWrites(Protocol):
    """ResourceClaim status writes (client.claims.ClaimWriter); each returns the claim the API server stored."""

    def reserve(
        self, claim: Mapping[str, Any], allocation: Mapping[str, Any] | None, consumer: JSON
    ) -> JSON: ...

    def create(self, claim: Mapping[str, Any]) -> JSON: ...

    def delete(self, claim: Mapping[str, Any]) -> None: ...

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None: ...

    def deallocate(self, claim: Mapping[str, Any], consumer_uid: str = "") -> JSON: ...

    def unreserve(self, claim: Mapping[str, Any], consumer_uid: str) -> JSON | None: ...


IMPLICIT_EXTENDED_RESOURCE_PREFIX = "deviceclass.resource.kubernetes.io/"  # resourceapi's implicit name


def extended_resource_class(classes: Iterable[Mapping[str, Any]], resource: str) -> str | None:
    """The DeviceClass that backs extended resource ``resource`` (DRAExtendedResource): one whose
    ``spec.extendedResourceName`` is that name, or the class ``C`` for the implicit name
    ``deviceclass.resource.kubernetes.io/C``. Several classes naming it: the newest wins, on a tie the lower
    name (kube's ExtendedResourceCache)."""
    best: tuple[str, str] | None = None
    implicit = (
        resource[len(IMPLICIT_EXTENDED_RESOURCE_PREFIX) :]
        if resource.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX)
        else None
    )
    for obj in classes:
        meta = obj.get("metadata") or {}
        name = str(meta.get("name", ""))
        if name == implicit:
            return name
        spec = obj.get("spec") or {}
        if isinstance(spec, Mapping) and spec.get("extendedResourceName") == resource:
            ts = str(meta.get("creationTimestamp", ""))
            if best is None or ts > best[0] or (ts == best[0] and name < best[1]):
                best = (ts, name)
    return best[1] if best is not None else None


# ------------------------------------------------------------------------------------ scoring extended resources
# kube's NodeResourcesFit and NodeResourcesBalancedAllocation score an extended resource that a DeviceClass
# backs (DRAExtendedResource) on a node whose allocatable lacks it by counting the node's devices of that
# class (capacity) and those allocated. Counting needs the class's CEL selectors, which live with
# DynamicResources: its factory offers this service in ``handle.extra[EXTENDED_SCORES_KEY]``.

EXTENDED_SCORES_KEY = "dra_extended_scores"


class ExtendedResourceTotals(Protocol):
    """One scoring cycle's view: (devices of the resource's class on the node, how many are allocated);
    (0, 0) when no class backs the resource or counting failed (a bad selector)."""

    def totals(self, node_name: str, labels: Mapping[str, str], resource: str) -> tuple[int, int]: ...


class ExtendedResourceScores(Protocol):
    def prepare(self, resources: Iterable[str]) -> ExtendedResourceTotals | None:
        """The totals for this cycle, or None when no DeviceClass backs any of ``resources`` (kube's
        getDRAPreScoredParams: no DRA data is gathered then)."""
        ...


def dra_extended_totals(handle: Any, resources: Iterable[str]) -> ExtendedResourceTotals | None:
    """This cycle's device counts for ``resources`` from the handle's ExtendedResourceScores, or None
    when there is none (DynamicResources not in the profile) or no DeviceClass backs any of them."""
    extra = getattr(handle, "extra", None)
    scores = extra.get(EXTENDED_SCORES_KEY) if isinstance(extra, Mapping) else None
    return scores.prepare(resources) if scores is not None else None
