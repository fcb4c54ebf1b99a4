"""The benchmark's workloads, after kube-scheduler's scheduler_perf (test/integration/scheduler_perf).

Design
------
A ``Workload`` is data: how many init pods to place before measuring (and from which template), how
many pods that fit nowhere to create first (Unschedulable), and the measured pods' template. Templates
are functions ``(name) -> pod dict``; the runner encodes them once with orjson and posts them with 30
creators. Every pod is scheduler_perf's default pod: one pause container requesting (and limited to)
100m CPU and 500Mi memory, ``terminationGracePeriodSeconds: 0`` so that deleting a bound pod is
immediate without a kubelet (preemption victims, cleanup between runs).

Nodes are shared by all workloads and both schedulers: 4 CPU, 32Gi, 110 pods, Ready, zone label
round-robin over three zones, hostname label, and ``bench.pyscheduler.io/group`` a/b alternating (half
the nodes are "a": the NodeAffinity target).

Sizes scale with the node count N and measured-pod count P (quick: N=500, P=1000; --large: 5,000 /
10,000), as in scheduler_perf's performance-config.yaml:

=====================  ==========================  =====================================================
workload               init pods                   measured pods
=====================  ==========================  =====================================================
SchedulingBasic        min(N, 1000) plain          P plain
NodeAffinity           min(N, 1000) plain          P, required node affinity to group a (half the nodes)
PodTopologySpread      min(N, 1000) plain          P, hard zone spread (maxSkew 1, DoNotSchedule)
PodAntiAffinity        N/5, anti-affinity          4N/5, required anti-affinity on hostname
                                                   (same label as the init pods: one per node in all)
PreferredPodAffinity   min(N, 1000) labelled       P, preferred affinity (hostname) to that label
Preemption             4N low priority, 900m CPU   N high priority, 3 CPU: each preempts 3 victims
Unschedulable          N/2.5 pods needing 8 CPU    P plain
                       (fit nowhere; not waited
                       for, except PodScheduled=False)
=====================  ==========================  =====================================================

The DRA workloads (after scheduler_perf's dra/performance-config.yaml; set up by bench/dra_run.py): every
node publishes 10 devices in a ResourceSlice, M = min(P, 5N) measured pods each ask for one device.

=======================================  ======================  ============================================
workload                                 init pods               measured pods
=======================================  ======================  ============================================
SchedulingWithResourceClaimTemplate      min(M, 10N - M)         M, a ResourceClaimTemplate each (claims made
                                         (templates)             by the resourceclaim controller)
SchedulingWithResourceClaim              min(M, 10N - M)         M, ResourceClaims made before the pods, five
                                         (shared claims)         pods sharing each
SteadyStateClusterResourceClaimTemplate  0; 5N claims hold a     M with templates, each deleted once bound
                                         device, no pod          (its claim released): utilisation stays level
=======================================  ======================  ============================================
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

SCHEDULER_NAME = "py-scheduler"
ZONES = ("zone-a", "zone-b", "zone-c")
GROUP_LABEL = "bench.pyscheduler.io/group"
WORKLOAD_LABEL = "bench.pyscheduler.io/workload"
LOW_PRIORITY = "bench-low-priority"
HIGH_PRIORITY = "bench-high-priority"
PAUSE_IMAGE = "registry.k8s.io/pause:3.10"

PodTemplate = Callable[[str], dict[str, Any]]


def node(name: str, index: int, cpu: str = "4", memory: str = "32Gi", pods: int = 110) -> dict[str, Any]:
    """A Ready node with status set at creation (what LocalCluster.create_nodes posts), plus our labels."""
    alloc = {"cpu": cpu, "memory": memory, "pods": str(pods)}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "type": "kwok",
                "topology.kubernetes.io/zone": ZONES[index % len(ZONES)],
                GROUP_LABEL: "a" if index % 2 == 0 else "b",
            },
            "annotations": {"kwok.x-k8s.io/node": "fake"},
        },
        "spec": {},
        "status": {
            "allocatable": alloc,
            "capacity": alloc,
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench"}],
            "phase": "Running",
        },
    }


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    cpu: str = "100m",
    memory: str = "500Mi",
    priority_class: str | None = None,
    affinity: dict[str, Any] | None = None,
    spread: list[dict[str, Any]] | None = None,
    scheduler: str = SCHEDULER_NAME,
) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory}
    spec: dict[str, Any] = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [
            {"name": "pause", "image": PAUSE_IMAGE, "resources": {"requests": res, "limits": res}}
        ],
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    if affinity:
        spec["affinity"] = affinity
    if spread:
        spec["topologySpreadConstraints"] = spread
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def _plain(name: str) -> dict[str, Any]:
    return pod(name, labels={WORKLOAD_LABEL: "plain"})


def _node_affinity(name: str) -> dict[str, Any]:
    term = {"matchExpressions": [{"key": GROUP_LABEL, "operator": "In", "values": ["a"]}]}
    return pod(
        name,
        labels={WORKLOAD_LABEL: "node-affinity"},
        affinity={
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}
        },
    )


def _spread(name: str) -> dict[str, Any]:
    sel = {"matchLabels": {WORKLOAD_LABEL: "spread"}}
    return pod(
        name,
        labels={WORKLOAD_LABEL: "spread"},
        spread=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": sel,
            }
        ],
    )


def _anti(name: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {WORKLOAD_LABEL: "anti"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return pod(
        name,
        labels={WORKLOAD_LABEL: "anti"},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )


ANTI_GROUPS = 50


def _anti_group(name: str) -> dict[str, Any]:
    """One of ANTI_GROUPS Deployments' worth of pods, each group with required anti-affinity to itself on
    hostname (as real clusters run many such Deployments); the group follows the pod's trailing number."""
    group = _group_of(name)
    term = {"labelSelector": {"matchLabels": {GROUP_LABEL: group}}, "topologyKey": "kubernetes.io/hostname"}
    return pod(
        name,
        labels={WORKLOAD_LABEL: "anti-groups", GROUP_LABEL: group},
        affinity={"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}},
    )


def _group_of(name: str) -> str:
    m = re.search(r"(\d+)$", name)
    return f"g{int(m.group(1)) % ANTI_GROUPS if m else 0}"


def _spread_group(name: str) -> dict[str, Any]:
    """Hard zone spreading per group: ANTI_GROUPS Deployments, each spreading its own pods."""
    group = _group_of(name)
    sel = {"matchLabels": {GROUP_LABEL: group}}
    return pod(
        name,
        labels={WORKLOAD_LABEL: "spread-groups", GROUP_LABEL: group},
        spread=[
            {
                "maxSkew": 1,
                "topologyKey": "topology.kubernetes.io/zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": sel,
            }
        ],
    )


def _preferred_group(name: str) -> dict[str, Any]:
    """Preferred pod affinity (hostname) to the pod's own group, ANTI_GROUPS groups."""
    group = _group_of(name)
    term = {"labelSelector": {"matchLabels": {GROUP_LABEL: group}}, "topologyKey": "kubernetes.io/hostname"}
    return pod(
        name,
        labels={WORKLOAD_LABEL: "preferred-groups", GROUP_LABEL: group},
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
            }
        },
    )


def _pref_target(name: str) -> dict[str, Any]:
    return pod(name, labels={WORKLOAD_LABEL: "preferred"})


def _preferred(name: str) -> dict[str, Any]:
    term = {
        "labelSelector": {"matchLabels": {WORKLOAD_LABEL: "preferred"}},
        "topologyKey": "kubernetes.io/hostname",
    }
    return pod(
        name,
        labels={WORKLOAD_LABEL: "preferred"},
        affinity={
            "podAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 1, "podAffinityTerm": term}]
            }
        },
    )


def _low(name: str) -> dict[str, Any]:
    return pod(name, labels={WORKLOAD_LABEL: "low"}, cpu="900m", priority_class=LOW_PRIORITY)


def _high(name: str) -> dict[str, Any]:
    return pod(name, labels={WORKLOAD_LABEL: "high"}, cpu="3", priority_class=HIGH_PRIORITY)


def _too_big(name: str) -> dict[str, Any]:
    return pod(name, labels={WORKLOAD_LABEL: "unschedulable"}, cpu="8")


@dataclass(frozen=True)
class DraLoad:
    """What a DRA workload needs besides pods (created by bench/dra_run.py): every node publishes
    ``devices_per_node`` devices in a ResourceSlice of DRA_DRIVER, one DeviceClass selects them, and
    each pod asks for one device through the ResourceClaimTemplate DRA_TEMPLATE (``pods_per_claim``
    0) or through a ResourceClaim it shares with ``pods_per_claim - 1`` others (created before the pods).
    ``preallocated`` claims hold a device each before the run, reserved by no pod (a cluster already
    partly in use); ``delete_bound`` deletes each measured pod once bound, so its claim is released
    and the cluster stays at the same utilisation (steady state)."""

    devices_per_node: int = 10
    pods_per_claim: int = 0
    preallocated: int = 0
    delete_bound: bool = False


@dataclass(frozen=True)
class Workload:
    name: str
    short: str  # for pod names (DNS-1123)
    init_pods: int
    init_template: PodTemplate
    measured_pods: int
    template: PodTemplate
    unschedulable_pods: int = 0
    unschedulable_template: PodTemplate = _too_big
    notes: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    dra: DraLoad | None = None  # Dynamic Resource Allocation workloads: devices, claims (bench/dra_run.py)


def workloads(nodes: int, pods: int) -> dict[str, Workload]:
    """All workloads for ``nodes`` nodes and ``pods`` measured pods (see the module docstring)."""
    init = min(nodes, 1000)
    wls = [
        Workload("SchedulingBasic", "basic", init, _plain, pods, _plain),
        Workload(
            "NodeAffinity",
            "nodeaff",
            init,
            _plain,
            pods,
            _node_affinity,
            notes="required node affinity to half the nodes",
        ),
        Workload(
            "PodTopologySpread",
            "spread",
            init,
            _plain,
            pods,
            _spread,
            notes="hard zone spread, maxSkew 1, 3 zones",
        ),
        Workload(
            "PodAntiAffinity",
            "anti",
            nodes // 5,
            _anti,
            nodes * 4 // 5,
            _anti,
            notes="required anti-affinity on hostname; init + measured = one pod per node",
        ),
        Workload(
            "PodAntiAffinityGroups",
            "antigroups",
            nodes // 5,
            _anti_group,
            nodes * 4 // 5,
            _anti_group,
            notes=f"{ANTI_GROUPS} groups, each with required anti-affinity to itself on hostname",
        ),
        Workload(
            "PodTopologySpreadGroups",
            "spreadgroups",
            init,
            _spread_group,
            pods,
            _spread_group,
            notes=f"hard zone spread, maxSkew 1, one selector per group, {ANTI_GROUPS} groups",
        ),
        Workload(
            "PreferredPodAffinityGroups",
            "prefgroups",
            init,
            _preferred_group,
            pods,
            _preferred_group,
            notes=f"preferred pod affinity (hostname) to the pod's own group, {ANTI_GROUPS} groups",
        ),
        Workload(
            "PreferredPodAffinity",
            "prefaff",
            init,
            _pref_target,
            pods,
            _preferred,
            notes="preferred pod affinity (hostname) to the init pods' label",
        ),
        Workload(
            "Preemption",
            "preempt",
            nodes * 4,
            _low,
            nodes,
            _high,
            notes="init: 4 low-priority 900m pods per node; measured: 3-CPU high-priority pods",
        ),
        Workload(
            "Unschedulable",
            "unsched",
            0,
            _plain,
            pods,
            _plain,
            unschedulable_pods=int(nodes / 2.5),
            notes="pods needing 8 CPU (fit nowhere) created and tried first",
        ),
    ]
    wls += dra_workloads(nodes, pods)
    return {w.name: w for w in wls}


# ------------------------------------------------------------------------------------------ DRA
# After scheduler_perf's dra/performance-config.yaml: a test driver's ResourceSlice per node with 10
# devices ("instance-<i>", attributes model/family/driverVersion/numa, 1Gi memory capacity), the
# DeviceClass "test-class" selecting the driver, claims asking for one device of that class.

DRA_DRIVER = "test-driver.cdi.k8s.io"
DRA_CLASS = "test-class"
DRA_TEMPLATE = "test-claim-template"
DRA_DEVICES_PER_NODE = 10


def dra_device_class() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "DeviceClass",
        "metadata": {"name": DRA_CLASS},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRA_DRIVER}"'}}]},
    }


def dra_slice(
    node_name: str, devices: int = DRA_DEVICES_PER_NODE, driver: str = DRA_DRIVER, generation: int = 1
) -> dict[str, Any]:
    """The ResourceSlice of one node: ``devices`` A100-like devices, as upstream's test driver publishes
    them (the upstream course publishes them with generation 0, as scheduler_perf does)."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": node_name},
        "spec": {
            "driver": driver,
            "nodeName": node_name,
            "pool": {"name": node_name, "generation": generation, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"instance-{i}",
                    "attributes": {
                        "model": {"string": "A100"},
                        "family": {"string": "GPU"},
                        "driverVersion": {"version": "1.2.3"},
                        "dra.example.com/numa": {"int": i},
                    },
                    "capacity": {"memory": {"value": "1Gi"}},
                }
                for i in range(devices)
            ],
        },
    }


def _dra_request() -> dict[str, Any]:
    return {"devices": {"requests": [{"name": "req-0", "exactly": {"deviceClassName": DRA_CLASS}}]}}


def dra_template() -> dict[str, Any]:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": DRA_TEMPLATE},
        "spec": {"spec": _dra_request()},
    }


def dra_claim(name: str, allocated: tuple[str, str] | None = None) -> dict[str, Any]:
    """A claim for one device; ``allocated`` = (node, device) presets its allocation (written through
    the status subresource by the runner)."""
    c: dict[str, Any] = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name},
        "spec": _dra_request(),
    }
    if allocated is not None:
        node_name, dev = allocated
        c["status"] = {
            "allocation": {
                "devices": {
                    "results": [{"request": "req-0", "driver": DRA_DRIVER, "pool": node_name, "device": dev}]
                },
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                    ]
                },
            }
        }
    return c


_INDEXED = re.compile(r"^(.*-[im])(\d+)$")
PODS_PER_CLAIM = 5  # scheduler_perf's SchedulingWithResourceClaim: five pods share each claim


def dra_claim_name(pod_name: str, pods_per_claim: int = PODS_PER_CLAIM) -> str:
    """The shared claim of an indexed pod ("<tag>-m12" -> "<tag>-m-claim-2")."""
    m = _INDEXED.match(pod_name)
    if m is None:
        raise ValueError(f"not an indexed pod name: {pod_name!r}")
    return f"{m.group(1)}-claim-{int(m.group(2)) // pods_per_claim}"


def _with_claim(p: dict[str, Any], entry: dict[str, str]) -> dict[str, Any]:
    p["spec"]["resourceClaims"] = [{"name": "resource", **entry}]
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "resource"}]
    return p


def _dra_templated(name: str) -> dict[str, Any]:
    return _with_claim(pod(name, labels={WORKLOAD_LABEL: "dra"}), {"resourceClaimTemplateName": DRA_TEMPLATE})


def _dra_shared(name: str) -> dict[str, Any]:
    return _with_claim(pod(name, labels={WORKLOAD_LABEL: "dra"}), {"resourceClaimName": dra_claim_name(name)})


def dra_workloads(nodes: int, pods: int) -> list[Workload]:
    """The DRA workloads. Devices: 10 per node; the init and measured pods of each workload need at
    most all of them (scheduler_perf sizes its runs so that the cluster fills up completely)."""
    devices = nodes * DRA_DEVICES_PER_NODE
    measured = min(pods, devices // 2)
    init = min(measured, devices - measured)
    return [
        Workload(
            "SchedulingWithResourceClaimTemplate",
            "dratmpl",
            init,
            _dra_templated,
            measured,
            _dra_templated,
            notes="a ResourceClaimTemplate per pod (claims made by the resourceclaim controller), 10 devices/node",
            dra=DraLoad(),
        ),
        Workload(
            "SchedulingWithResourceClaim",
            "draclaim",
            init,
            _dra_shared,
            measured,
            _dra_shared,
            notes=f"ResourceClaims made before the pods, each shared by {PODS_PER_CLAIM} pods",
            dra=DraLoad(pods_per_claim=PODS_PER_CLAIM),
        ),
        Workload(
            "SteadyStateClusterResourceClaimTemplate",
            "drasteady",
            0,
            _dra_templated,
            measured,
            _dra_templated,
            notes="half the devices allocated to claims no pod uses; measured pods (templates) deleted "
            "once bound, their claims released",
            dra=DraLoad(preallocated=devices // 2, delete_bound=True),
        ),
    ]


def priority_classes() -> list[dict[str, Any]]:
    return [
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": LOW_PRIORITY},
            "value": 100,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "pyscheduler bench",
        },
        {
            "apiVersion": "scheduling.k8s.io/v1",
            "kind": "PriorityClass",
            "metadata": {"name": HIGH_PRIORITY},
            "value": 1000,
            "preemptionPolicy": "PreemptLowerPriority",
            "description": "pyscheduler bench",
        },
    ]
