"""Scoring extended resources backed by DRA (DRAExtendedResource): device counts per node and class.

kube's NodeResourcesFit and NodeResourcesBalancedAllocation score a configured extended resource that the
node's allocatable lacks but a DeviceClass backs as "devices of that class on the node" (capacity) and
"those of them allocated" (kube's calculateDRAResourceTotals). Those plugins may not import this package;
DynamicResources' factory offers ``ExtendedScores`` through ``handle.extra`` (framework.dra's
``EXTENDED_SCORES_KEY`` and protocols), as kube's framework hands them its SharedDRAManager.

As kube counts:

- every ResourceSlice is looked at (no pool generations): a slice for all nodes, for this node, or whose
  node selector matches the node; a slice naming no node and no selector counts everywhere; under
  ``perDeviceNodeSelection`` each device's own node selection decides;
- a device counts when every selector of the class matches it (CEL); a selector failing makes the
  resource count as absent on that node (kube logs the error and scores it 0, 0);
- a device is allocated when a claim holds it, a share of it, or an in-flight allocation does (admin
  access does not count).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import structlog

from pyscheduler.framework.dra import (
    IMPLICIT_EXTENDED_RESOURCE_PREFIX,
    ClaimCache,
    DeviceClass,
    ExtendedResourceTotals,
    ResourceSlice,
    extended_resource_class,
)
from pyscheduler.framework.dra import Device as SliceDevice
from pyscheduler.framework.helpers.names import is_extended_resource_name
from pyscheduler.framework.interfaces import ClusterObjects, Handle
from pyscheduler.framework.selectors import NodeSelector, SelectorError
from pyscheduler.plugins.dynamic_resources.cel import CELRuntimeError, Device, SelectorCache
from pyscheduler.plugins.dynamic_resources.common import DEVICE_CLASS, Resources

log = structlog.get_logger("pyscheduler.plugins.dynamic_resources")

DeviceID = tuple[str, str, str]


def is_dra_extended_resource_name(name: str) -> bool:
    """kube's IsDRAExtendedResourceName: an extended resource name, or a class's implicit name."""
    return is_extended_resource_name(name) or name.startswith(IMPLICIT_EXTENDED_RESOURCE_PREFIX)


class ExtendedScores:
    """framework.dra.ExtendedResourceScores over the plugin's object store, claim cache and CEL cache."""

    def __init__(self, handle: Handle, claims: ClaimCache, resources: Resources, cel: SelectorCache) -> None:
        self.handle = handle
        self.claims = claims
        self.resources = resources
        self.cel = cel

    def _objects(self) -> ClusterObjects | None:
        try:
            return self.handle.objects
        except AssertionError:  # a handle without a cluster object store (plugin tests)
            return None

    def prepare(self, resources: Iterable[str]) -> ExtendedResourceTotals | None:
        objects = self._objects()
        if objects is None:
            return None
        raw_classes = list(objects.list(DEVICE_CLASS))
        classes: dict[str, DeviceClass] = {}
        for name in resources:
            if not is_dra_extended_resource_name(name):
                continue
            class_name = extended_resource_class(raw_classes, name)
            cls = self.resources.device_class(objects, class_name) if class_name is not None else None
            if cls is not None:
                classes[name] = cls
        if not classes:
            return None
        allocated = set(self.claims.allocated_devices()) | set(self.claims.allocated_capacity())
        return _Totals(classes, self.resources.slices(objects), allocated, self.cel)


class _Totals:
    """One cycle's counts, cached per (node, resource)."""

    def __init__(
        self,
        classes: Mapping[str, DeviceClass],
        slices: list[ResourceSlice],
        allocated: set[DeviceID],
        cel: SelectorCache,
    ) -> None:
        self.classes = classes
        self.slices = slices
        self.allocated = allocated
        self.cel = cel
        self._cache: dict[tuple[str, str], tuple[int, int]] = {}
        self._matches: dict[tuple[str, DeviceID], bool] = {}

    def totals(self, node_name: str, labels: Mapping[str, str], resource: str) -> tuple[int, int]:
        key = (node_name, resource)
        hit = self._cache.get(key)
        if hit is None:
            cls = self.classes.get(resource)
            try:
                hit = self._count(cls, node_name, labels) if cls is not None else (0, 0)
            except (CELRuntimeError, SelectorError) as e:
                log.warning(
                    "counting DRA-backed extended resource failed",
                    node=node_name,
                    resource=resource,
                    error=str(e),
                )
                hit = (0, 0)
            self._cache[key] = hit
        return hit

    def _count(self, cls: DeviceClass, node_name: str, labels: Mapping[str, str]) -> tuple[int, int]:
        capacity = allocated = 0
        for s in self.slices:
            for dev in _devices_for(s, node_name, labels):
                did = (s.driver, s.pool, dev.name)
                if not self._matches_class(cls, did, dev):
                    continue
                capacity += 1
                allocated += did in self.allocated
        return capacity, allocated

    def _matches_class(self, cls: DeviceClass, did: DeviceID, dev: SliceDevice) -> bool:
        if not cls.selectors:
            return True
        key = (cls.name, did)
        hit = self._matches.get(key)
        if hit is None:
            cdev = Device(did[0], dev.attributes, dev.capacity, dev.allow_multiple_allocations)
            hit = all(self.cel.get(expr).matches(cdev) for expr in cls.selectors)
            self._matches[key] = hit
        return hit


def _selector_matches(selector: Mapping[str, object], node_name: str, labels: Mapping[str, str]) -> bool:
    return NodeSelector.parse(selector, "nodeSelector").matches(labels, node_name)


def _devices_for(s: ResourceSlice, node_name: str, labels: Mapping[str, str]) -> Iterable[SliceDevice]:
    """The slice's devices counted for the node, with kube's node matching (see the module docstring)."""
    if s.per_device_node_selection:
        return [
            d
            for d in s.devices
            if d.all_nodes
            or (d.node_name != "" and d.node_name == node_name)
            or (d.node_selector is not None and _selector_matches(d.node_selector, node_name, labels))
        ]
    if not s.all_nodes and s.node_name != node_name and s.node_selector is not None:
        return s.devices if _selector_matches(s.node_selector, node_name, labels) else ()
    if not s.all_nodes and s.node_name and s.node_name != node_name:
        return ()
    return s.devices
