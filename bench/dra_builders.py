"""Builders of the Dynamic Resource Allocation differential scenarios (bench/scenarios_dra.py,
bench/scenarios_dra_beta.py): DeviceClasses, ResourceSlices, claims and templates as API JSON, and
``DraScenario``.

Design
------
The same ``Scenario`` data as bench/scenarios.py (this module appends to its ``SCENARIOS``), with
DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates in ``objects``. The runner
(bench/differential.py) starts kube-controller-manager's resourceclaim controller for these scenarios:
it makes a pod's claims from its templates and deallocates a claim once its last pod is gone. A claim's
``status`` (a preset allocation) is written through the status subresource after creation.

``DraScenario`` adds what the runner reads:

    delete_before  pod name -> bound pods to delete before that pod is created; the runner waits until
                   the controller has released their claims (deallocation)
    settle         how long a pod must stay unschedulable before it counts as pending (a pod whose
                   claim PostFilter deallocates is first unschedulable, then retried)
    device_conditions
                   device name -> condition types a stand-in driver (bench/differential/devicestatus.py)
                   reports True on a claim once the device is allocated to it: what a device's binding
                   conditions wait for in PreBind
    plugin_config  the profile's ``pluginConfig`` for both schedulers (and the in-memory scores), e.g.
                   a NodeResourcesFit scoring strategy that lists an extended resource
    device_failures
                   device name -> binding failure condition types the stand-in driver reports True
                   the first time a claim is allocated the device (its next allocation gets
                   ``device_conditions``): a failed attachment, then a retry
    history        record a bound pod's events (reasons and messages, in order) and judge them too:
                   the failed attempts on the way to the binding, not only where it ended

Every device lives in the driver ``gpu.diff.example.com``; slices are named after their node. Nodes
differ in CPU wherever two of them could take a pod, so that placements are not score ties and the
devices each claim gets can be compared (on one node the allocator's choice is determined).

Beta features of 1.36 that are on by default (device taints, partitionable devices, consumable
capacity, extended resources backed by DRA, binding conditions) have a scenario each. DeviceTaintRule
objects (DRADeviceTaintRules) are beta but off by default in 1.36, and so have none. The filter timeout
(DynamicResourcesArgs.filterTimeout) is set to 1ns by ``plugin_config`` in one scenario.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bench.scenarios import (
    SCENARIOS,
    Scenario,
    _json,
)
from pyscheduler.testing.builders import PodBuilder

JSON = dict[str, Any]

DRIVER = "gpu.diff.example.com"
API = "resource.k8s.io/v1"
ADMIN_ACCESS_LABEL = "resource.kubernetes.io/admin-access"
EXTENDED = "example.com/gpu"


@dataclass(frozen=True)
class DraScenario(Scenario):
    delete_before: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    settle: float = 0.0
    device_conditions: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    plugin_config: tuple[JSON, ...] = ()
    device_failures: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    history: bool = False


# ------------------------------------------------------------------------------------------- builders


def _attr(v: str | bool | int | tuple[str, str]) -> JSON:
    if isinstance(v, tuple):  # ("version", "1.2.3")
        return {v[0]: v[1]}
    if isinstance(v, bool):
        return {"bool": v}
    if isinstance(v, int):
        return {"int": v}
    return {"string": v}


def device(
    name: str,
    attrs: Mapping[str, str | bool | int | tuple[str, str]] | None = None,
    capacity: Mapping[str, str | JSON] | None = None,
    taints: Sequence[tuple[str, str, str]] = (),
    consumes: Mapping[str, Mapping[str, str]] | None = None,
    multiple: bool = False,
    binding: Sequence[str] = (),
    binding_failure: Sequence[str] = (),
) -> JSON:
    """A device of a ResourceSlice; ``capacity`` values are quantities or full DeviceCapacity objects
    (with a requestPolicy); ``taints`` are (key, value, effect); ``consumes`` is counter set -> counters;
    ``binding``/``binding_failure`` are its bindingConditions and bindingFailureConditions."""
    d: JSON = {"name": name}
    if attrs:
        d["attributes"] = {k: _attr(v) for k, v in attrs.items()}
    if capacity:
        d["capacity"] = {k: v if isinstance(v, dict) else {"value": v} for k, v in capacity.items()}
    if taints:
        d["taints"] = [{"key": k, "value": v, "effect": e} for k, v, e in taints]
    if consumes:
        d["consumesCounters"] = [
            {"counterSet": cs, "counters": {k: {"value": v} for k, v in counters.items()}}
            for cs, counters in consumes.items()
        ]
    if multiple:
        d["allowMultipleAllocations"] = True
    if binding:
        d["bindingConditions"] = list(binding)
    if binding_failure:
        d["bindingFailureConditions"] = list(binding_failure)
    return d


def resource_slice(
    name: str,
    *devices: JSON,
    node_name: str = "",
    pool: str = "",
    count: int = 1,
    all_nodes: bool = False,
    node_selector: Mapping[str, str] | None = None,
    counters: Mapping[str, Mapping[str, str]] | None = None,
) -> JSON:
    """A ResourceSlice of DRIVER: for one node (``node_name``), all nodes, or the nodes a label selector
    picks; ``counters`` (counter set -> counters) makes it a slice of shared counters instead of devices."""
    spec: JSON = {
        "driver": DRIVER,
        "pool": {"name": pool or node_name or name, "generation": 1, "resourceSliceCount": count},
    }
    if node_name:
        spec["nodeName"] = node_name
    elif all_nodes:
        spec["allNodes"] = True
    elif node_selector:
        spec["nodeSelector"] = {
            "nodeSelectorTerms": [
                {
                    "matchExpressions": [
                        {"key": k, "operator": "In", "values": [v]} for k, v in node_selector.items()
                    ]
                }
            ]
        }
    if counters:
        spec["sharedCounters"] = [
            {"name": cs, "counters": {k: {"value": v} for k, v in c.items()}} for cs, c in counters.items()
        ]
    else:
        spec["devices"] = list(devices)
    return {"apiVersion": API, "kind": "ResourceSlice", "metadata": {"name": name}, "spec": spec}


def gpus(node_name: str, n: int, **attrs: str | bool | int | tuple[str, str]) -> JSON:
    """A slice with ``n`` plain devices gpu-0.. on ``node_name`` (all with ``attrs``)."""
    return resource_slice(
        f"{node_name}-gpus", *[device(f"gpu-{i}", attrs) for i in range(n)], node_name=node_name
    )


def device_class(name: str = "gpu", *cel: str, extended: str = "") -> JSON:
    """A DeviceClass selecting DRIVER's devices, narrowed by the CEL expressions ``cel``."""
    spec: JSON = {"selectors": [{"cel": {"expression": e}} for e in (f'device.driver == "{DRIVER}"', *cel)]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": API, "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def _selectors(cel: Sequence[str]) -> list[JSON]:
    return [{"cel": {"expression": e}} for e in cel]


def exactly(
    name: str = "gpu",
    cls: str = "gpu",
    *cel: str,
    count: int = 0,
    all_devices: bool = False,
    admin: bool = False,
    tolerations: Sequence[JSON] = (),
    capacity: Mapping[str, str] | None = None,
) -> JSON:
    """A DeviceRequest with ``exactly``: ExactCount ``count`` (1 when 0) or All, CEL selectors, admin
    access, device taint tolerations, consumable capacity requests."""
    e: JSON = {"deviceClassName": cls}
    if cel:
        e["selectors"] = _selectors(cel)
    if all_devices:
        e["allocationMode"] = "All"
    elif count:
        e["allocationMode"] = "ExactCount"
        e["count"] = count
    if admin:
        e["adminAccess"] = True
    if tolerations:
        e["tolerations"] = list(tolerations)
    if capacity:
        e["capacity"] = {"requests": dict(capacity)}
    return {"name": name, "exactly": e}


def sub(name: str, cls: str = "gpu", *cel: str, count: int = 0) -> JSON:
    """A subrequest of ``firstAvailable``."""
    s: JSON = {"name": name, "deviceClassName": cls}
    if cel:
        s["selectors"] = _selectors(cel)
    if count:
        s["allocationMode"] = "ExactCount"
        s["count"] = count
    return s


def first_available(name: str, *subs: JSON) -> JSON:
    return {"name": name, "firstAvailable": list(subs)}


def match_attribute(attr: str, *requests: str) -> JSON:
    c: JSON = {"matchAttribute": f"{DRIVER}/{attr}"}
    if requests:
        c["requests"] = list(requests)
    return c


def distinct_attribute(attr: str, *requests: str) -> JSON:
    c: JSON = {"distinctAttribute": f"{DRIVER}/{attr}"}
    if requests:
        c["requests"] = list(requests)
    return c


def _claim_spec(requests: Sequence[JSON], constraints: Sequence[JSON]) -> JSON:
    devices: JSON = {"requests": list(requests) or [exactly()]}
    if constraints:
        devices["constraints"] = list(constraints)
    return {"devices": devices}


def claim(
    name: str,
    *requests: JSON,
    constraints: Sequence[JSON] = (),
    allocated: Sequence[tuple[str, str, str]] = (),
    on_node: str = "",
) -> JSON:
    """A ResourceClaim (one plain gpu request by default); ``allocated`` presets status.allocation with
    (request, pool, device) results, limited to ``on_node`` (no pod reserves it)."""
    c: JSON = {
        "apiVersion": API,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": ""},
        "spec": _claim_spec(requests, constraints),
    }
    if allocated:
        alloc: JSON = {
            "devices": {
                "results": [{"request": r, "driver": DRIVER, "pool": p, "device": d} for r, p, d in allocated]
            }
        }
        if on_node:
            alloc["nodeSelector"] = {
                "nodeSelectorTerms": [
                    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [on_node]}]}
                ]
            }
        c["status"] = {"allocation": alloc}
    return c


def template(name: str, *requests: JSON, constraints: Sequence[JSON] = ()) -> JSON:
    return {
        "apiVersion": API,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ""},
        "spec": {"spec": _claim_spec(requests, constraints)},
    }


def claims(b: PodBuilder, *refs: str) -> PodBuilder:
    """Pod claims, each "name=claim" (a ResourceClaim) or "name@template" (a ResourceClaimTemplate);
    container 0 uses them all."""
    spec = b._d["spec"]
    for ref in refs:
        if "@" in ref:
            name, tmpl = ref.split("@", 1)
            entry = {"name": name, "resourceClaimTemplateName": tmpl}
        else:
            name, cl = ref.split("=", 1)
            entry = {"name": name, "resourceClaimName": cl}
        spec.setdefault("resourceClaims", []).append(entry)
        spec["containers"][0].setdefault("resources", {}).setdefault("claims", []).append({"name": name})
    return b


def attr(name: str) -> str:
    """CEL: the device attribute ``name`` in DRIVER's domain."""
    return f'device.attributes["{DRIVER}"].{name}'


def cap(name: str) -> str:
    """CEL: the device capacity ``name`` in DRIVER's domain."""
    return f'device.capacity["{DRIVER}"].{name}'


def dra_scenario(
    name: str,
    description: str,
    nodes: Sequence[JSON],
    objects: Sequence[JSON],
    pods: Sequence[JSON | PodBuilder] = (),
    batch: Sequence[JSON | PodBuilder] = (),
    plugins: Sequence[str] = ("DynamicResources",),
    namespace_labels: Mapping[str, str] | None = None,
    delete_before: Mapping[str, Sequence[str]] | None = None,
    settle: float = 0.0,
    device_conditions: Mapping[str, Sequence[str]] | None = None,
    plugin_config: Sequence[JSON] = (),
    device_failures: Mapping[str, Sequence[str]] | None = None,
    history: bool = False,
) -> DraScenario:
    return DraScenario(
        name=name,
        description=description,
        plugins=tuple(plugins),
        nodes=tuple(nodes),
        pods=_json(pods),
        objects=tuple(objects),
        batch=_json(batch),
        namespace_labels=dict(namespace_labels or {}),
        delete_before={k: tuple(v) for k, v in (delete_before or {}).items()},
        settle=settle,
        device_conditions={k: tuple(v) for k, v in (device_conditions or {}).items()},
        plugin_config=tuple(plugin_config),
        device_failures={k: tuple(v) for k, v in (device_failures or {}).items()},
        history=history,
    )


def add(s: DraScenario) -> None:
    SCENARIOS.append(s)


CLASS = device_class()
