"""Pod-level resources (spec.resources, PodLevelResources) and pods being resized in place
(InPlacePodVerticalScaling): what the scheduler counts for them, at kube 1.36 semantics
(component-helpers resource.PodRequests as PodInfo.CalculateResource and the scorers call it)."""

import pytest

from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import DEFAULT_MEMORY_REQUEST, NodeInfo, Pod
from pyscheduler.plugins.node_resources_fit import (
    NAME,
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_MEMORY,
    Fit,
)
from pyscheduler.testing.builders import PodBuilder, make_cycle_state, make_node, make_node_info, make_pod

GI = 1024**3
MI = 1024**2
NZ_MEM = DEFAULT_MEMORY_REQUEST


def run_filter(pod: Pod, info: NodeInfo) -> Status | None:
    plugin = Fit()
    state = make_cycle_state()
    plugin.pre_filter(state, pod, [info])
    return plugin.filter(state, pod, info)


# ------------------------------------------------------------------------------ effective requests

REQUEST_CASES = [
    # (id, pod, requests (milli cpu, memory), hugepages-2Mi)
    (
        "pod level replaces the containers' cpu",
        make_pod("p").req(cpu="100m").pod_requests(cpu="5"),
        (5000, 0),
    ),
    (
        "pod level cpu only: memory stays the containers' sum",
        make_pod("p").req(cpu="1", memory="1Gi").container(cpu="1", memory="2Gi").pod_requests(cpu="1500m"),
        (1500, 3 * GI),
    ),
    (
        "pod level below the containers' sum still wins",
        make_pod("p").req(cpu="2").container(cpu="2").pod_requests(cpu="1", memory="512Mi"),
        (1000, 512 * MI),
    ),
    (
        "overhead is added on top of pod level",
        make_pod("p").pod_requests(cpu="1").overhead(cpu="250m"),
        (1250, 0),
    ),
    (
        "pod-level limits default the requests the containers do not name",
        make_pod("p").req(cpu="200m").pod_limits(cpu="2", memory="1Gi"),
        (200, GI),
    ),
    (
        "init containers are replaced too",
        make_pod("p").req(cpu="1").init_req(cpu="3").pod_requests(cpu="2"),
        (2000, 0),
    ),
    (
        "ephemeral-storage at pod level is not a pod-level resource",
        make_pod("p").req(cpu="1").res({"ephemeral-storage": "1Gi"}).pod_requests(ephemeral_storage="5Gi"),
        (1000, 0),
    ),
    # in-place resize: max(spec, actuated, allocated) per container
    (
        "resize up: allocated above spec",
        make_pod("p").req(cpu="1").resized(cpu="1", allocated={"cpu": "3"}),
        (3000, 0),
    ),
    (
        "resize down not yet actuated: actuated above spec",
        make_pod("p").req(cpu="1", memory="1Gi").resized(cpu="2", memory="2Gi", allocated={"cpu": "1"}),
        (2000, 2 * GI),
    ),
    (
        "resize Deferred: still the max",
        make_pod("p").req(cpu="3").resized(cpu="1", allocated={"cpu": "1"}).resize_pending("Deferred"),
        (3000, 0),
    ),
    (
        "resize Infeasible: the spec is ignored",
        make_pod("p").req(cpu="3").resized(cpu="1", allocated={"cpu": "1"}).resize_pending("Infeasible"),
        (1000, 0),
    ),
    (
        "status without resources: the spec alone",
        make_pod("p").req(cpu="1"),
        (1000, 0),
    ),
    (
        "pod-level resize: max(spec, status.resources, status.allocatedResources)",
        make_pod("p")
        .req(cpu="100m")
        .pod_requests(cpu="1")
        .pod_level_resized(cpu="2", allocated={"cpu": "1500m"}),
        (2000, 0),
    ),
    (
        "pod-level resize Infeasible",
        make_pod("p").pod_requests(cpu="4").pod_level_resized(cpu="2").resize_pending("Infeasible"),
        (2000, 0),
    ),
]


@pytest.mark.parametrize(
    ("pod", "expected"), [c[1:] for c in REQUEST_CASES], ids=[c[0] for c in REQUEST_CASES]
)
def test_requests(pod: PodBuilder, expected: tuple[int, int]) -> None:
    req = pod.obj().requests
    assert (req.milli_cpu, req.memory) == expected


def test_hugepages_are_pod_level() -> None:
    pod = make_pod("p").res({"hugepages-2Mi": "2Mi"}).pod_requests(hugepages_2Mi="8Mi", cpu="1").obj()
    assert pod.requests.scalar["hugepages-2Mi"] == 8 * MI


def test_sidecar_resize_counts_but_plain_init_container_status_does_not() -> None:
    d = make_pod("p").req(cpu="1").init_req(sidecar=True, cpu="1").init_req(cpu="1").json()
    d["spec"]["initContainers"][1]["name"] = "plain"
    d["status"]["initContainerStatuses"] = [
        {"name": "init0", "resources": {"requests": {"cpu": "2"}}},
        {"name": "plain", "resources": {"requests": {"cpu": "9"}}},
    ]
    # containers 1 + sidecar 2 = 3; init "plain" while starting: 1 + sidecar 2 = 3 (its status ignored)
    assert Pod.from_dict(d).requests.milli_cpu == 3000


def test_non_zero_defaults_with_pod_level_requests() -> None:
    # NodeInfo (CalculateResource) counts the pod level and defaults memory only if nothing asks for
    # it; NodeResourcesFit's scorer ignores the pod level and defaults each container.
    pod = make_pod("p").req(memory="1Gi").container(cpu="100m").pod_requests(cpu="2").obj()
    assert (pod.non_zero_requests.milli_cpu, pod.non_zero_requests.memory) == (2000, GI)
    assert (pod.fit_score_requests.milli_cpu, pod.fit_score_requests.memory) == (200, GI + NZ_MEM)
    bare = make_pod("q").container().pod_requests(cpu="2").obj()
    assert (bare.non_zero_requests.milli_cpu, bare.non_zero_requests.memory) == (2000, 2 * NZ_MEM)
    assert (bare.fit_score_requests.milli_cpu, bare.fit_score_requests.memory) == (200, 2 * NZ_MEM)


# ------------------------------------------------------------------------------------- accounting


def test_node_info_counts_pod_level_and_resized_pods() -> None:
    node = make_node("n1").capacity(cpu="8", memory="8Gi", pods=110)
    plevel = make_pod("a").req(cpu="100m").pod_requests(cpu="3", memory="1Gi")
    resized = make_pod("b").req(cpu="1").resized(cpu="1", allocated={"cpu": "2"})
    info = make_node_info(node, plevel, resized)
    assert (info.requested.milli_cpu, info.requested.memory) == (5000, GI)
    assert (info.non_zero_requested.milli_cpu, info.non_zero_requested.memory) == (5000, GI + NZ_MEM)
    info.remove_pod(plevel.node("n1").obj())
    assert (info.requested.milli_cpu, info.requested.memory) == (2000, 0)


# ----------------------------------------------------------------------------------------- Filter

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

FILTER_CASES = [
    # (id, pod, existing, code or None, reasons)
    (
        "pod level above allocatable",
        make_pod("p").req(cpu="100m").pod_requests(cpu="5"),
        [],
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "pod level fits",
        make_pod("p").req(cpu="100m").pod_requests(cpu="3"),
        [make_pod("e").req(cpu="500m")],
        None,
        (),
    ),
    (
        "next to a pod-level pod: no overcommit",
        make_pod("p").req(cpu="1"),
        [make_pod("e").req(cpu="500m"), make_pod("f").req(cpu="100m").pod_requests(cpu="3")],
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "pod-level memory",
        make_pod("p").req(cpu="1").pod_requests(memory="6Gi"),
        [make_pod("e").pod_requests(memory="3Gi")],
        U,
        (REASON_INSUFFICIENT_MEMORY,),
    ),
    (
        "next to a pod resized up",
        make_pod("p").req(cpu="2"),
        [make_pod("e").req(cpu="1").resized(cpu="1", allocated={"cpu": "3"})],
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "next to a pod whose resize is Infeasible",
        make_pod("p").req(cpu="2"),
        [make_pod("e").req(cpu="3").resized(cpu="1", allocated={"cpu": "1"}).resize_pending("Infeasible")],
        None,
        (),
    ),
]


@pytest.mark.parametrize(
    ("pod", "existing", "code", "reasons"), [c[1:] for c in FILTER_CASES], ids=[c[0] for c in FILTER_CASES]
)
def test_filter(
    pod: PodBuilder, existing: list[PodBuilder], code: Code | None, reasons: tuple[str, ...]
) -> None:
    info = make_node_info(make_node("n1").capacity(cpu="4", memory="8Gi", pods=110), *existing)
    status = run_filter(pod.obj(), info)
    if code is None:
        assert status is None
    else:
        assert status is not None and status.code == code and status.reasons == reasons
        assert status.plugin == NAME


# ------------------------------------------------------------------------------------------ Score


def score(pod: PodBuilder, *existing: PodBuilder, strategy: str = "LeastAllocated") -> int:
    from pyscheduler.framework.plugin_args import decode_args
    from pyscheduler.plugins.node_resources_fit import NodeResourcesFitArgs

    plugin = Fit(decode_args(NodeResourcesFitArgs, {"scoringStrategy": {"type": strategy}}))
    info = make_node_info(make_node("n1").capacity(cpu="4", memory="8Gi", pods=110), *existing)
    state = make_cycle_state()
    p = pod.obj()
    assert plugin.pre_score(state, p, [info]) is None
    value, status = plugin.score(state, p, info)
    assert status is None
    return value


def test_fit_score_ignores_the_incoming_pods_pod_level_requests() -> None:
    # kube 1.36 builds NodeResourcesFit's scorer without the PodLevelResources flag: the pod counts at
    # its container (100m default cpu, 200Mi default memory): cpu (4000-100)*100/4000 = 97, memory
    # (8Gi-200Mi)*100/8Gi = 97 -> 97 (seen from kube-scheduler in the podlevel-fit scenario).
    assert score(make_pod("p").pod_requests(cpu="2")) == 97


def test_balanced_allocation_uses_pod_level_requests() -> None:
    from pyscheduler.plugins.node_resources_balanced_allocation import BalancedAllocation

    # with the pod: cpu 2000/4000 = 0.5, memory 0/8Gi = 0, std |0.5-0|/2 = 0.25 -> 75; without it
    # (empty node) 100; kube 1.36 scores the change: 50 + (50 + 75 - 100)/2 = 62 (ignoring the pod
    # level, the pod would be best-effort and BalancedAllocation would skip it)
    plugin = BalancedAllocation()
    info = make_node_info(make_node("n1").capacity(cpu="4", memory="8Gi", pods=110))
    state = make_cycle_state()
    pod = make_pod("p").pod_requests(cpu="2").obj()
    assert plugin.pre_score(state, pod, [info]) is None
    assert plugin.score(state, pod, info) == (62, None)


def test_score_most_allocated_counts_existing_pod_level_pod() -> None:
    # existing: pod level cpu 1, containers 1Gi memory -> non-zero (1000m, 1Gi); incoming 1 cpu 1Gi:
    # cpu 2000*100/4000 = 50; memory 2Gi*100/8Gi = 25; (50+25)/2 = 37
    existing = make_pod("e").req(memory="1Gi").container(cpu="100m").pod_requests(cpu="1")
    assert score(make_pod("p").req(cpu="1", memory="1Gi"), existing, strategy="MostAllocated") == 37
