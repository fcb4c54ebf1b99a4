"""Differential scenarios for the Dynamic Resource Allocation features that are beta and on by default in
1.36: device taints, binding conditions, partitionable devices, consumable capacity, extended resources
backed by DRA, the filter timeout; and pools not tied to one node, exhaustion and deallocation.
Imported by bench/scenarios_dra.py (after its scenarios, so the registry's order is unchanged).
"""

from __future__ import annotations

from bench.dra_builders import (
    API,
    CLASS,
    EXTENDED,
    JSON,
    add,
    attr,
    claim,
    claims,
    device,
    device_class,
    dra_scenario,
    exactly,
    gpus,
    resource_slice,
    template,
)
from bench.scenarios import node, pod, tol
from pyscheduler.testing.builders import PodBuilder

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

# A failed attachment: the stand-in driver reports "attach-failed" the first time the claim gets
# attach-0. kube's PreBind sees it at its 5 s poll and fails (the SchedulerError "device binding failed:
# ..."), Unreserve takes the pod out of reservedFor; the retry's Filter finds the claim allocated but
# failed on every node ("not available"), PostFilter deallocates it; the claim's update brings the pod
# back, the allocator picks attach-0 again (still the only one), "attached" is reported and the pod is
# bound. The pod's events (both FailedScheduling messages on the way) are judged as well as the end.
add(
    dra_scenario(
        "dra-binding-failure",
        "a binding failure condition on the first attachment: PreBind fails, PostFilter deallocates, "
        "the retry gets the device again and is bound",
        [node("n1", "8"), node("n2", "4")],
        [
            CLASS,
            resource_slice(
                "n1-gpus",
                device("attach-0", binding=["attached"], binding_failure=["attach-failed"]),
                node_name="n1",
            ),
            claim("c1"),
        ],
        pods=[claims(pod("p1", cpu="1"), "gpu=c1")],
        device_conditions={"attach-0": ["attached"]},
        device_failures={"attach-0": ["attach-failed"]},
        settle=30.0,
        history=True,
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

# DynamicResources disabled in the profile: kube-scheduler's shared DRA manager is there all the same, so
# NodeResourcesFit leaves example.com/gpu to DRA wherever a DeviceClass backs it and no node advertises
# it (the pods fit everywhere, none gets a device: nobody allocates) and scores it by the nodes' devices
# of the class. An extended resource no class backs is still "Insufficient"; the message has no
# DynamicResources PostFilter part.
add(
    dra_scenario(
        "dra-extended-resource-no-plugin",
        "DynamicResources disabled: Fit leaves a DRA-backed extended resource alone and scores the devices",
        [node("n1", "8"), node("n2", "8"), node("n3", "8")],
        [
            device_class("gpu", f'{attr("model")} == "a"', extended=EXTENDED),
            gpus("n1", 4, model="a"),
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
            wants_extended(pod("p2", cpu="2"), 2),
            wants_extended(pod("p3", cpu="1"), 3),
            wants_extended(pod("p4", cpu="1"), 8),
            pod("p5", cpu="1").res({"example.com/other": "1"}).res({"example.com/other": "1"}, limits=True),
        ],
        plugins=("NodeResourcesFit",),
        plugin_config=[FIT_MOST_ALLOCATED_GPU, {"disabled": ["DynamicResources"]}],
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

BALANCED_GPU = {
    "name": "NodeResourcesBalancedAllocation",
    "args": {"resources": [{"name": "cpu", "weight": 1}, {"name": EXTENDED, "weight": 1}]},
}

# The same without DynamicResources in the profile: nothing is allocated, BalancedAllocation still
# counts the devices (kube's shared DRA manager), the CPU requests alone move the balance.
add(
    dra_scenario(
        "dra-extended-resource-balanced-no-plugin",
        "DynamicResources disabled: BalancedAllocation still counts the class's devices",
        [node("n1", "8"), node("n2", "8")],
        [BARE_CLASS, gpus("n1", 4), gpus("n2", 2)],
        pods=[
            wants_extended(pod("p1", cpu="2"), 1),
            wants_extended(pod("p2", cpu="1"), 1),
            wants_extended(pod("p3", cpu="3"), 2),
        ],
        plugins=("NodeResourcesBalancedAllocation",),
        plugin_config=[BALANCED_GPU, {"disabled": ["DynamicResources"]}],
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
