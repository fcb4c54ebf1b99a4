"""Differential scenarios for Dynamic Resource Allocation (the DynamicResources plugin, resource.k8s.io/v1).

Design
------
The same ``Scenario`` data as bench/scenarios.py (this module appends to its ``SCENARIOS``), with
DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates in ``objects``. The runner
(bench/differential.py) starts kube-controller-manager's resourceclaim controller for these scenarios:
it makes a pod's claims from its templates and deallocates a claim once its last pod is gone. A claim's
``status`` (a preset allocation) is written through the status subresource after creation.

``DraScenario`` adds two things the runner reads:

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
    _check,
    _json,
    node,
    pod,
    tol,
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
    )


def add(s: DraScenario) -> None:
    SCENARIOS.append(s)


CLASS = device_class()

# ---------------------------------------------------------------- claims and templates

add(
    dra_scenario(
        "dra-claim",
        "a ResourceClaim for one device: only the node publishing it fits, a second claim finds none",
        [node("n1", "8"), node("n2", "4"), node("n3", "6")],
        [CLASS, gpus("n2", 1), claim("c1"), claim("c2")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=c1"),
            pod("p2", cpu="1"),
            claims(pod("p3", cpu="1"), "gpu=c2"),
        ],
    )
)

add(
    dra_scenario(
        "dra-template",
        "ResourceClaimTemplates: a claim made per pod, devices on two nodes until none is left",
        [node("n1", "8"), node("n2", "6"), node("n3", "4")],
        [CLASS, gpus("n2", 2), gpus("n3", 1), template("one-gpu")],
        pods=[claims(pod(f"p{i}", cpu="1"), "gpu@one-gpu") for i in range(1, 5)],
    )
)

add(
    dra_scenario(
        "dra-shared-claim",
        "pods sharing one claim go where it is allocated; one too big for that node stays pending",
        [node("n1", "8"), node("n2", "4"), node("n3", "6")],
        [CLASS, gpus("n2", 1), gpus("n3", 1), claim("shared")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=shared"),
            claims(pod("p2", cpu="1"), "gpu=shared"),
            claims(pod("p3", cpu="5"), "gpu=shared"),
        ],
    )
)

add(
    dra_scenario(
        "dra-batch",
        "a burst of pods pending together, each for its own device of one node; one asks for none there",
        [node("n1", "4"), node("n2", "8")],
        # Each pod's device is its own: among pods of equal priority pending before it starts,
        # kube-scheduler's order is its informer's initial-list order, which is not the names' order
        # (its log: b4, b1, b2, b3; with interchangeable devices it left b1 pending once, b4 another
        # time). The devices a contended burst gets cannot be compared; this checks that a burst
        # allocates the right ones (the 200-pods-for-50-devices burst is tests/integration).
        [
            CLASS,
            resource_slice("n1-gpus", *[device(f"gpu-{i}", {"slot": i}) for i in range(3)], node_name="n1"),
            *[claim(f"c{i}", exactly("gpu", "gpu", f"{attr('slot')} == {i - 1}")) for i in range(1, 5)],
        ],
        batch=[claims(pod(f"b{i}", cpu="100m"), f"gpu=c{i}") for i in range(1, 5)],
    )
)

# ---------------------------------------------------------------- selectors (CEL on attributes and capacity)

MODELS = [
    resource_slice(
        "n1-gpus",
        *[
            device(f"a100-{i}", {"model": "a100", "driverVersion": ("version", "1.2.0")}, {"memory": "40Gi"})
            for i in range(2)
        ],
        node_name="n1",
    ),
    resource_slice(
        "n2-gpus",
        device("h100-0", {"model": "h100", "driverVersion": ("version", "1.4.1")}, {"memory": "80Gi"}),
        node_name="n2",
    ),
]

add(
    dra_scenario(
        "dra-selectors",
        "request selectors on a string attribute, a version attribute and a capacity (CEL)",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            *MODELS,
            claim("h100", exactly("gpu", "gpu", f'{attr("model")} == "h100"')),
            claim("big", exactly("gpu", "gpu", f'{cap("memory")}.compareTo(quantity("64Gi")) >= 0')),
            claim("mid", exactly("gpu", "gpu", f'{cap("memory")}.compareTo(quantity("32Gi")) >= 0')),
            claim("newer", exactly("gpu", "gpu", f'{attr("driverVersion")}.isGreaterThan(semver("1.1.0"))')),
            claim("newest", exactly("gpu", "gpu", f'{attr("driverVersion")}.isGreaterThan(semver("1.3.0"))')),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=h100"),
            claims(pod("p2", cpu="1"), "gpu=big"),
            claims(pod("p3", cpu="1"), "gpu=mid"),
            claims(pod("p4", cpu="1"), "gpu=newest"),
            claims(pod("p5", cpu="1"), "gpu=newer"),
        ],
    )
)

add(
    dra_scenario(
        "dra-class-selector",
        "DeviceClass selectors narrow the devices; a class nothing matches",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            device_class("a100", f'{attr("model")} == "a100"'),
            device_class("tpu", f'{attr("model")} == "tpu"'),
            *MODELS,
            claim("a", exactly("gpu", "a100")),
            claim("t", exactly("gpu", "tpu")),
            claim("any", exactly("gpu", "gpu")),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=a"),
            claims(pod("p2", cpu="1"), "gpu=t"),
            claims(pod("p3", cpu="1"), "gpu=any"),
        ],
    )
)

# ---------------------------------------------------------------- counts and All

add(
    dra_scenario(
        "dra-count-all",
        "ExactCount 3, then All (every device of a node, none allocated yet), then a count nothing has",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            CLASS,
            gpus("n1", 4),
            gpus("n2", 2),
            claim("three", exactly("gpu", count=3)),
            claim("all", exactly("gpu", all_devices=True)),
            claim("two", exactly("gpu", count=2)),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=three"),
            claims(pod("p2", cpu="1"), "gpu=all"),
            claims(pod("p3", cpu="1"), "gpu=two"),
        ],
    )
)

# ---------------------------------------------------------------- firstAvailable (prioritized list)

FIRST = [
    CLASS,
    resource_slice("n1-gpus", *[device(f"small-{i}", {"model": "small"}) for i in range(2)], node_name="n1"),
    resource_slice("n2-gpus", device("big-0", {"model": "big"}), node_name="n2"),
    template(
        "big-or-two-small",
        first_available(
            "gpu",
            sub("big", "gpu", f'{attr("model")} == "big"'),
            sub("small", "gpu", f'{attr("model")} == "small"', count=2),
        ),
    ),
]

add(
    dra_scenario(
        "dra-first-available",
        "firstAvailable: the big device first (scored higher), then the two-small fallback, then none",
        [node("n1", "6"), node("n2", "4"), node("n3", "8")],
        FIRST,
        pods=[claims(pod(f"p{i}", cpu="1"), "gpu@big-or-two-small") for i in range(1, 4)],
    )
)

# ---------------------------------------------------------------- constraints

NUMA = [
    CLASS,
    resource_slice("n1-gpus", device("a", {"numa": 0}), device("b", {"numa": 1}), node_name="n1"),
    resource_slice("n2-gpus", device("c", {"numa": 0}), device("d", {"numa": 0}), node_name="n2"),
]

add(
    dra_scenario(
        "dra-match-attribute",
        "matchAttribute: two requests on devices of one NUMA node; distinctAttribute: two different",
        [node("n1", "6"), node("n2", "4"), node("n3", "8")],
        [
            *NUMA,
            claim("same1", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa")]),
            claim("apart", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
            claim("same2", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa", "g1", "g2")]),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=same1"),
            claims(pod("p2", cpu="1"), "gpu=apart"),
            claims(pod("p3", cpu="1"), "gpu=same2"),
        ],
    )
)

add(
    dra_scenario(
        "dra-distinct-first",
        "distinctAttribute first: only the node with two NUMA nodes fits, then matchAttribute",
        [node("n1", "4"), node("n2", "6"), node("n3", "8")],
        [
            *NUMA,
            claim("apart", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
            claim("same", exactly("g1"), exactly("g2"), constraints=[match_attribute("numa")]),
            claim("apart2", exactly("gpu", count=2), constraints=[distinct_attribute("numa")]),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=apart"),
            claims(pod("p2", cpu="1"), "gpu=same"),
            claims(pod("p3", cpu="1"), "gpu=apart2"),
        ],
    )
)

# ---------------------------------------------------------------- admin access

add(
    dra_scenario(
        "dra-admin-access",
        "adminAccess (in a namespace allowing it) gets a device already in use; a plain claim does not",
        [node("n1", "4"), node("n2", "8")],
        [
            CLASS,
            gpus("n1", 1),
            claim("user"),
            claim("admin", exactly("gpu", admin=True)),
            claim("user2"),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=user"),
            claims(pod("p2", cpu="1"), "gpu=admin"),
            claims(pod("p3", cpu="1"), "gpu=user2"),
        ],
        namespace_labels={ADMIN_ACCESS_LABEL: "true"},
    )
)

# ---------------------------------------------------------------- device taints (beta, on in 1.36)

add(
    dra_scenario(
        "dra-device-taints",
        "a NoSchedule device taint keeps claims off the device unless the request tolerates it",
        [node("n1", "8"), node("n2", "4"), node("n3", "6")],
        [
            CLASS,
            resource_slice(
                "n1-gpus", device("gpu-0", taints=[("maintenance", "true", "NoSchedule")]), node_name="n1"
            ),
            gpus("n2", 1),
            claim("plain1"),
            claim("tolerant", exactly("gpu", tolerations=[tol("maintenance", effect="NoSchedule")])),
            claim("plain2"),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=plain1"),
            claims(pod("p2", cpu="1"), "gpu=tolerant"),
            claims(pod("p3", cpu="1"), "gpu=plain2"),
        ],
    )
)

add(
    dra_scenario(
        "dra-device-taints-noexecute",
        "NoExecute and NoSchedule device taints: tolerations by key, value, effect and operator Exists",
        [node("n1", "8"), node("n2", "6"), node("n3", "4")],
        [
            CLASS,
            resource_slice(
                "n1-gpus", device("gpu-0", taints=[("broken", "yes", "NoExecute")]), node_name="n1"
            ),
            resource_slice(
                "n2-gpus", device("gpu-0", taints=[("maintenance", "true", "NoSchedule")]), node_name="n2"
            ),
            # a NoSchedule toleration does not cover a NoExecute taint; a wrong value tolerates nothing
            claim(
                "no-schedule-only",
                exactly(
                    "gpu",
                    tolerations=[
                        tol("broken", "yes", effect="NoSchedule"),
                        tol("maintenance", "false", effect="NoSchedule"),
                    ],
                ),
            ),
            # Exists on the key, any effect (tolerationSeconds is for eviction, not allocation)
            claim("broken-ok", exactly("gpu", tolerations=[tol("broken", seconds=60)])),
            claim(
                "maintenance-ok",
                exactly("gpu", tolerations=[tol("maintenance", "true", effect="NoSchedule")]),
            ),
            # tolerates every taint: but both devices are taken
            claim("anything", exactly("gpu", tolerations=[tol(operator="Exists")])),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=no-schedule-only"),
            claims(pod("p2", cpu="1"), "gpu=broken-ok"),
            claims(pod("p3", cpu="1"), "gpu=maintenance-ok"),
            claims(pod("p4", cpu="1"), "gpu=anything"),
        ],
    )
)

# ---------------------------------------------------------------- binding conditions (beta, on in 1.36)

# n1 has two pools: "n1-a" (its device waits for "attached"; by pool name it would come first) and
# "n1-b" (a plain device). Pools with binding conditions are tried last.
ATTACH = [
    CLASS,
    resource_slice(
        "n1-a",
        device("attach-0", binding=["attached"], binding_failure=["attach-failed"]),
        node_name="n1",
        pool="n1-a",
    ),
    resource_slice("n1-b", device("plain-0"), node_name="n1", pool="n1-b"),
]

add(
    dra_scenario(
        "dra-binding-conditions",
        "the plain device before the one with binding conditions; then PreBind waits for 'attached'",
        [node("n1", "8"), node("n2", "4")],
        [*ATTACH, claim("c1"), claim("c2"), claim("c3")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=c1"),
            claims(pod("p2", cpu="1"), "gpu=c2"),
            claims(pod("p3", cpu="1"), "gpu=c3"),
        ],
        device_conditions={"attach-0": ["attached"]},
    )
)

add(
    dra_scenario(
        "dra-binding-conditions-unmet",
        "a device whose binding condition is never reported: the pod waits in PreBind, never bound",
        [node("n1", "8"), node("n2", "4")],
        [
            CLASS,
            resource_slice(
                "n1-gpus",
                device("attach-0", binding=["attached"], binding_failure=["attach-failed"]),
                node_name="n1",
            ),
            template("one-gpu"),
        ],
        pods=[claims(pod("p1", cpu="1"), "gpu@one-gpu")],
    )
)

# ---------------------------------------------------------------- partitionable devices (beta, on in 1.36)

PARTS = [
    CLASS,
    resource_slice("n1-counters", node_name="n1", pool="n1", count=2, counters={"gpu-0": {"memory": "40Gi"}}),
    resource_slice(
        "n1-gpus",
        device("whole", {"size": "whole"}, {"memory": "40Gi"}, consumes={"gpu-0": {"memory": "40Gi"}}),
        device("half-0", {"size": "half"}, {"memory": "20Gi"}, consumes={"gpu-0": {"memory": "20Gi"}}),
        device("half-1", {"size": "half"}, {"memory": "20Gi"}, consumes={"gpu-0": {"memory": "20Gi"}}),
        node_name="n1",
        pool="n1",
        count=2,
    ),
]


def sized(name: str, size: str) -> JSON:
    return claim(name, exactly("gpu", "gpu", f'{attr("size")} == "{size}"'))


add(
    dra_scenario(
        "dra-partitionable",
        "partitions of one GPU share its memory counter: a half, then no whole, a half, no third half",
        [node("n1", "4"), node("n2", "8")],
        [*PARTS, sized("h1", "half"), sized("w1", "whole"), sized("h2", "half"), sized("h3", "half")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=h1"),
            claims(pod("p2", cpu="1"), "gpu=w1"),
            claims(pod("p3", cpu="1"), "gpu=h2"),
            claims(pod("p4", cpu="1"), "gpu=h3"),
        ],
    )
)

add(
    dra_scenario(
        "dra-partitionable-whole",
        "the whole GPU first: its partitions are then out of counters",
        [node("n1", "4"), node("n2", "8")],
        [*PARTS, sized("w1", "whole"), sized("h1", "half")],
        pods=[claims(pod("p1", cpu="1"), "gpu=w1"), claims(pod("p2", cpu="1"), "gpu=h1")],
    )
)

# ---------------------------------------------------------------- consumable capacity (beta, on in 1.36)

SHARED = resource_slice(
    "n1-gpus",
    device(
        "shared-0",
        capacity={
            "memory": {
                "value": "40Gi",
                "requestPolicy": {"default": "10Gi", "validRange": {"min": "1Gi"}},
            }
        },
        multiple=True,
    ),
    node_name="n1",
)

add(
    dra_scenario(
        "dra-consumable-capacity",
        "a device shared by several claims, each consuming part of its memory (default 10Gi)",
        [node("n1", "4"), node("n2", "8")],
        [
            CLASS,
            SHARED,
            claim("m30", exactly("gpu", capacity={"memory": "30Gi"})),
            claim("m20", exactly("gpu", capacity={"memory": "20Gi"})),
            claim("dflt"),
            claim("dflt2"),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=m30"),
            claims(pod("p2", cpu="1"), "gpu=m20"),
            claims(pod("p3", cpu="1"), "gpu=dflt"),
            claims(pod("p4", cpu="1"), "gpu=dflt2"),
        ],
    )
)

# ---------------------------------------------------------------- extended resources backed by DRA (beta)


def wants_extended(b: PodBuilder, count: int) -> PodBuilder:
    """Container 0 asks for ``count`` of EXTENDED (requests = limits, as extended resources must)."""
    b.res({EXTENDED: str(count)})
    return b.res({EXTENDED: str(count)}, limits=True)


add(
    dra_scenario(
        "dra-extended-resource",
        "a pod asking for example.com/gpu gets devices of the class that names it (no node advertises it)",
        [node("n1", "4"), node("n2", "8")],
        [device_class("gpu", extended=EXTENDED), gpus("n1", 3)],
        pods=[
            wants_extended(pod("p1", cpu="1"), 2),
            wants_extended(pod("p2", cpu="1"), 2),
            wants_extended(pod("p3", cpu="1"), 1),
        ],
    )
)

# Scoring them: a strategy that lists the resource counts, on a node whose allocatable lacks it, the
# node's devices of the class and the allocated ones (kube's calculateDRAResourceTotals).
FIT_MOST_ALLOCATED_GPU = {
    "name": "NodeResourcesFit",
    "args": {
        "scoringStrategy": {
            "type": "MostAllocated",
            "resources": [{"name": "cpu", "weight": 1}, {"name": EXTENDED, "weight": 3}],
        }
    },
}

add(
    dra_scenario(
        "dra-extended-resource-scoring",
        "MostAllocated over cpu and example.com/gpu: the node with fewer free devices first, then the other",
        [node("n1", "8"), node("n2", "8"), node("n3", "8")],
        [
            device_class("gpu", f'{attr("model")} == "a"', extended=EXTENDED),
            gpus("n1", 4, model="a"),
            # the model "b" device is not of the class: n2 has two
            resource_slice(
                "n2-gpus",
                device("gpu-0", {"model": "a"}),
                device("gpu-1", {"model": "a"}),
                device("other-0", {"model": "b"}),
                node_name="n2",
            ),
        ],
        pods=[
            wants_extended(pod("p1", cpu="1"), 1),
            wants_extended(pod("p2", cpu="1"), 1),
            wants_extended(pod("p3", cpu="2"), 1),
            wants_extended(pod("p4", cpu="1"), 2),
            wants_extended(pod("p5", cpu="1"), 2),
        ],
        plugin_config=[FIT_MOST_ALLOCATED_GPU],
    )
)

# BalancedAllocation over cpu and the resource. Its class has no selectors: kube-scheduler 1.36.3's
# BalancedAllocation has no CEL cache and panics (nil pointer) on a class with selectors.
BARE_CLASS = {
    "apiVersion": API,
    "kind": "DeviceClass",
    "metadata": {"name": "gpu"},
    "spec": {"extendedResourceName": EXTENDED},
}

add(
    dra_scenario(
        "dra-extended-resource-balanced",
        "BalancedAllocation over cpu and example.com/gpu counts the devices of the class (no selectors)",
        [node("n1", "8"), node("n2", "8")],
        [BARE_CLASS, gpus("n1", 4), gpus("n2", 2)],
        pods=[
            wants_extended(pod("p1", cpu="2"), 1),
            wants_extended(pod("p2", cpu="1"), 1),
            wants_extended(pod("p3", cpu="1"), 2),
        ],
        plugin_config=[
            {
                "name": "NodeResourcesBalancedAllocation",
                "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": EXTENDED, "weight": 1}]},
            }
        ],
    )
)

# ---------------------------------------------------------------- the filter timeout (beta, on)

add(
    dra_scenario(
        "dra-filter-timeout",
        "filterTimeout 1ns: the allocator gives up on the node at once (an Error, retried with backoff)",
        [node("n1", "8")],
        [CLASS, gpus("n1", 2), claim("c1")],
        pods=[claims(pod("p1", cpu="1"), "gpu=c1"), pod("p2", cpu="1")],
        plugin_config=[{"name": "DynamicResources", "args": {"filterTimeout": "1ns"}}],
    )
)

# ---------------------------------------------------------------- pools not tied to one node

add(
    dra_scenario(
        "dra-network-pools",
        "slices for all nodes and for a labelled zone: allocations limit where the pod may go",
        [node("n1", "4", zone="a"), node("n2", "8", zone="a"), node("n3", "6", zone="b")],
        [
            CLASS,
            resource_slice("fabric", device("link-0", {"kind": "link"}), all_nodes=True),
            resource_slice(
                "rack-b",
                device("rack-0", {"kind": "rack"}),
                node_selector={"topology.kubernetes.io/zone": "b"},
            ),
            claim("link", exactly("gpu", "gpu", f'{attr("kind")} == "link"')),
            claim("rack", exactly("gpu", "gpu", f'{attr("kind")} == "rack"')),
            claim("link2", exactly("gpu", "gpu", f'{attr("kind")} == "link"')),
        ],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=link"),
            claims(pod("p2", cpu="1"), "gpu=rack"),
            claims(pod("p3", cpu="1"), "gpu=link2"),
        ],
    )
)

# ---------------------------------------------------------------- exhaustion and deallocation

add(
    dra_scenario(
        "dra-exhaustion",
        "two devices, three pods: the third pending with kube's message (and with CPU too short elsewhere)",
        [node("n1", "4"), node("n2", "2"), node("n3", "8")],
        [CLASS, gpus("n1", 2), gpus("n2", 1), claim("c1"), claim("c2"), claim("c3"), claim("c4")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=c1"),
            claims(pod("p2", cpu="1"), "gpu=c2"),
            claims(pod("p3", cpu="3"), "gpu=c3"),
            claims(pod("p4", cpu="1"), "gpu=c4"),
        ],
    )
)

add(
    dra_scenario(
        "dra-deallocation",
        "a claim is freed when its pod goes: the device serves the next pod (claims and templates)",
        [node("n1", "4"), node("n2", "8")],
        [CLASS, gpus("n1", 1), claim("c1"), claim("c2"), template("one-gpu")],
        pods=[
            claims(pod("p1", cpu="1"), "gpu=c1"),
            claims(pod("p2", cpu="1"), "gpu=c2"),
            claims(pod("p3", cpu="1"), "gpu=c2"),
            claims(pod("p4", cpu="1"), "gpu@one-gpu"),
            claims(pod("p5", cpu="1"), "gpu@one-gpu"),
        ],
        delete_before={"p3": ["p1"], "p5": ["p3"]},
    )
)

add(
    dra_scenario(
        "dra-postfilter-deallocate",
        "a claim allocated on a node the pod no longer fits, reserved by nobody: PostFilter deallocates it",
        [node("n1", "2"), node("n2", "4")],
        [
            CLASS,
            gpus("n1", 1),
            gpus("n2", 1),
            claim("stale", allocated=[("gpu", "n1", "gpu-0")], on_node="n1"),
        ],
        pods=[claims(pod("p1", cpu="3"), "gpu=stale")],
        settle=6.0,
    )
)

_check()
