"""What DynamicResources' extension points share: names, kube's reason strings, the cycle state, the
claim helpers (resourceclaim.IsReservedForPod / CanBeReserved) and the parsed DeviceClasses and
ResourceSlices (parsed once per resourceVersion, not once per cycle)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

import structlog

from pyscheduler.framework.dra import (
    ClaimCache,
    ClaimWrites,
    DeviceClass,
    ResourceClaim,
    ResourceSlice,
)
from pyscheduler.framework.helpers.storage import store_versions
from pyscheduler.framework.interfaces import ClusterObjects
from pyscheduler.framework.selectors import NodeSelector
from pyscheduler.framework.types import MalformedObject, Pod
from pyscheduler.plugins.dynamic_resources.allocator import Allocator
from pyscheduler.plugins.dynamic_resources.extended import ExtendedClaim

log = structlog.get_logger("pyscheduler.plugins.dynamic_resources")

T = TypeVar("T")

NAME = "DynamicResources"
STATE_KEY = NAME

DEVICE_CLASS = "DeviceClass"
RESOURCE_SLICE = "ResourceSlice"

# kube's reasons, word for word (dynamicresources.go)
ERR_CANNOT_ALLOCATE = "cannot allocate all claims"
ERR_CLAIM_IN_USE = "resourceclaim in use"
ERR_NOT_AVAILABLE = "resourceclaim not available on the node"
MSG_NO_CLAIMS_TO_DEALLOCATE = "no new claims to deallocate"
MSG_DEALLOCATED = "deallocation of ResourceClaim completed"
MSG_STILL_NOT_SCHEDULABLE = "still not schedulable"
ERR_STATE_NOT_FOUND = "not found"  # kube's fwk.ErrNotFound: PreFilter did not run for this cycle

RESERVED_FOR_MAX_SIZE = 256  # resourceapi.ResourceClaimReservedForMaxSize
FIRST_AVAILABLE_MAX_SIZE = 8  # resourceapi.FirstAvailableDeviceRequestMaxSize


def reserved_for_pod(pod: Pod, claim: ResourceClaim) -> bool:
    return any(r.uid == pod.uid for r in claim.reserved_for)


def can_be_reserved(claim: ResourceClaim) -> bool:
    return len(claim.reserved_for) < RESERVED_FOR_MAX_SIZE


def with_allocation(claim: ResourceClaim, allocation: Mapping[str, Any]) -> ResourceClaim:
    """The claim as it will be once ``allocation`` is written (what Reserve signals as in flight)."""
    raw = dict(claim.raw)
    status = dict(raw.get("status") or {})
    status["allocation"] = dict(allocation)
    raw["status"] = status
    return ResourceClaim.from_dict(raw)


def node_names(selector: NodeSelector) -> frozenset[str] | None:
    """The nodes ``selector`` matches when it matches by node name only (each term: matchFields
    ``metadata.name In``, no label expressions), else None. A term without requirements matches no
    node (NodeSelectorTerm.matches), so it adds no name."""
    names: set[str] = set()
    for term in selector.terms:
        if term.expressions or any(r.operator != "In" for r in term.fields):
            return None
        if not term.fields:
            continue
        allowed = frozenset.intersection(*(r.values for r in term.fields))
        names.update(allowed)
    return frozenset(names)


def has_binding_conditions(claim: ResourceClaim) -> bool:
    """Whether a device of the claim's allocation has binding conditions (DRADeviceBindingConditions)."""
    allocation = claim.allocation or {}
    return any(r.get("bindingConditions") for r in (allocation.get("devices") or {}).get("results") or ())


def kobj(claim: ResourceClaim) -> str:
    """klog.KObj's form: namespace/name."""
    return claim.key


@dataclass(slots=True)
class ClaimInfo:
    """Per claim of the pod: where an allocated claim is usable, and the allocation Reserve made.

    For an allocated claim PreFilter also works out what Filter asks of every node: ``available_names``
    when the allocation's node selector only names nodes (what the allocator writes for a node's own
    devices: matchFields metadata.name In [node]), so the check is a set lookup; ``binding_checks`` when
    a device of the allocation has binding conditions (only then can the claim's binding have failed)."""

    available_on: NodeSelector | None = None
    allocation: dict[str, Any] | None = None
    available_names: frozenset[str] | None = None
    binding_checks: bool = False


@dataclass
class State:
    """kube's stateData. Clones share it (Filter fills ``node_allocations`` and ``unavailable``)."""

    claims: list[ResourceClaim] = field(default_factory=list)
    infos: list[ClaimInfo] = field(default_factory=list)
    allocator: Allocator | None = None
    # node name -> one allocation per claim to allocate, in claim order (Filter's result, Reserve's input)
    node_allocations: dict[str, Sequence[dict[str, Any]]] = field(default_factory=dict)
    unavailable: set[int] = field(default_factory=set)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # extended resources backed by DRA: the pod's special claim, and per node its allocation (Filter)
    ext: ExtendedClaim | None = None
    ext_allocations: dict[str, dict[str, Any]] = field(default_factory=dict)
    ext_allocation: dict[str, Any] | None = None  # Reserve's choice
    # every claim allocated and no extended resources: Filter only checks where the claims are usable
    allocated_only: bool = False

    def clone(self) -> State:
        return self

    def to_allocate(self) -> list[int]:
        return [i for i, c in enumerate(self.claims) if not c.allocated]


def _parsed(
    from_dict: Callable[[dict[str, Any]], T], obj: Mapping[str, Any], warning: str, **where: str
) -> T | None:
    """``from_dict`` of a stored object, or None with ``warning`` logged when it is malformed."""
    try:
        return from_dict(dict(obj))
    except MalformedObject as e:
        log.warning(warning, error=str(e), **where)
        return None


class Resources:
    """DeviceClasses and ResourceSlices from the object store, parsed once per (name, resourceVersion).
    A malformed object is logged once and left out (a slice) or treated as missing (a class)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        # name -> (uid/resourceVersion, the parsed slice or None if malformed, the stored object)
        self._slices: dict[str, tuple[str, ResourceSlice | None, Mapping[str, Any]]] = {}
        self._classes: dict[str, tuple[str, DeviceClass | None]] = {}
        # the last slices() answer and the store (and its ResourceSlice change count) it was read from
        self._slice_list: list[ResourceSlice] = []
        self._slice_list_at: tuple[int, int] | None = None

    @staticmethod
    def _version(obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        return f"{meta.get('uid', '')}/{meta.get('resourceVersion', '')}"

    def device_class(self, objects: ClusterObjects, name: str) -> DeviceClass | None:
        obj = objects.get(DEVICE_CLASS, "", name)
        if obj is None:
            return None
        version = self._version(obj)
        with self._lock:
            hit = self._classes.get(name)
        if hit is not None and hit[0] == version:
            return hit[1]
        parsed = _parsed(
            DeviceClass.from_dict, obj, "malformed DeviceClass treated as missing", device_class=name
        )
        with self._lock:
            self._classes[name] = (version, parsed)
        return parsed

    def slices(self, objects: ClusterObjects) -> list[ResourceSlice]:
        """Every slice, parsed; once per cycle (the caller must not change the list). While the store
        says no ResourceSlice changed (``ObjectStore.version``), the last answer is the answer; else a
        stored object that is the very one parsed last time (the store replaces an object on every
        change) is not looked at again."""
        versions = store_versions(objects, (RESOURCE_SLICE,))
        at = (id(objects), versions[0]) if versions is not None else None
        with self._lock:
            if at is not None and at == self._slice_list_at:
                return self._slice_list
        out: list[ResourceSlice] = []
        seen: set[str] = set()
        with self._lock:
            cache = self._slices
            for obj in objects.list(RESOURCE_SLICE):
                name = str((obj.get("metadata") or {}).get("name", ""))
                seen.add(name)
                hit = cache.get(name)
                if hit is None or (hit[2] is not obj and hit[0] != self._version(obj)):
                    parsed = _parsed(
                        ResourceSlice.from_dict, obj, "malformed ResourceSlice left out", resource_slice=name
                    )
                    hit = (self._version(obj), parsed, obj)
                    cache[name] = hit
                elif hit[2] is not obj:
                    hit = cache[name] = (hit[0], hit[1], obj)  # the same version stored anew
                if hit[1] is not None:
                    out.append(hit[1])
            if len(cache) > len(seen):
                for gone in set(cache) - seen:
                    del cache[gone]
            self._slice_list, self._slice_list_at = out, at
        return out


@dataclass(slots=True)
class Deps:
    """What the plugin reaches through its handle."""

    claims: ClaimCache
    writer: ClaimWrites | None
