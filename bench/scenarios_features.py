"""Differential scenarios of pod-level resources and in-place resize, plugins in combination, and
NodeDeclaredFeatures. Registered, in this order, by bench/scenarios.py."""

from __future__ import annotations

from collections.abc import Mapping

from bench.scenario_builders import (
    HOST,
    JSON,
    ZONE,
    Scenario,
    affinity,
    bound,
    node,
    pod,
    pod_term,
    scenario,
    sel,
    spread,
    three,
    tol,
    tolerating,
)
from pyscheduler.testing.builders import PodBuilder

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

# ---------------------------------------------------------------- pod-level resources and in-place resize
# (PodLevelResources, beta and on by default since 1.34; InPlacePodVerticalScaling, GA). Existing pods
# with a "status" get it written through the status subresource once KWOK has started them (see
# bench/differential/runner.py ScenarioRunner.setup), as a kubelet resizing them would.


def pod_level(b: PodBuilder, **requests: str) -> PodBuilder:
    """Pod-level requests (spec.resources.requests) on a builder."""
    return b.pod_requests(**requests)


def resizing(
    b: PodBuilder, reason: str = "", allocated: Mapping[str, str] | None = None, **actuated: str
) -> PodBuilder:
    """Container 0 of ``b`` reported by its kubelet at ``actuated`` requests (and ``allocated``), with a
    PodResizePending condition of ``reason`` when given."""
    b.resized(0, allocated, **actuated)
    if reason:
        b.resize_pending(reason)
    return b


add(
    scenario(
        "podlevel-no-fit",
        "pod-level cpu above every node's allocatable, though its containers ask 100m",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "2")],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="5"),
            pod_level(pod("p2", memory="1Gi"), memory="9Gi"),
            pod_level(pod("p3", cpu="100m"), cpu="3"),
        ],
    )
)

add(
    scenario(
        "podlevel-fit",
        "pod-level requests fill nodes; the last pods no longer fit",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "4")],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="3"),
            pod_level(pod("p2"), cpu="3", memory="1Gi"),
            pod_level(pod("p3", cpu="100m"), cpu="1500m"),
            pod("p4", cpu="1"),
            pod("p5", cpu="500m"),
        ],
    )
)

add(
    scenario(
        "podlevel-mixed",
        "pod-level cpu with container memory, pod-level memory with container cpu",
        ["NodeResourcesFit"],
        [node("n1", "4", "4Gi"), node("n2", "4", "4Gi")],
        pods=[
            pod_level(pod("p1", cpu="200m", memory="3Gi").container(cpu="200m", memory="512Mi"), cpu="3"),
            pod_level(pod("p2", cpu="3"), memory="3Gi"),
            pod_level(pod("p3", cpu="100m", memory="1Gi").container(memory="1Gi"), cpu="1"),
            pod("p4", cpu="1", memory="1Gi"),
        ],
    )
)

add(
    scenario(
        "podlevel-existing",
        "next to existing pod-level pods: a 1-CPU pod must not overcommit the node",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "2")],
        existing=[
            bound(pod("e1", cpu="500m"), "n1"),
            bound(pod_level(pod("e2", cpu="100m"), cpu="3"), "n1"),
            bound(pod_level(pod("e3"), cpu="1500m"), "n2"),
        ],
        pods=[pod("p1", cpu="1"), pod("p2", cpu="400m"), pod("p3", cpu="200m")],
    )
)

add(
    scenario(
        "podlevel-score",
        "scoring with pod-level requests (LeastAllocated and BalancedAllocation)",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation"],
        three("8", "16Gi"),
        existing=[
            bound(pod_level(pod("e1", memory="1Gi"), cpu="4"), "n1"),
            bound(pod_level(pod("e2", cpu="100m").container(memory="2Gi"), cpu="1"), "n2"),
        ],
        pods=[
            pod_level(pod("p1", cpu="100m"), cpu="2", memory="4Gi"),
            pod_level(pod("p2"), cpu="3"),
            pod_level(pod("p3", memory="512Mi"), memory="6Gi"),
            pod("p4", cpu="1", memory="1Gi"),
        ],
    )
)

add(
    scenario(
        "podlevel-resized",
        "existing pods being resized in place count at max(desired, allocated)",
        ["NodeResourcesFit"],
        [node("n1", "4"), node("n2", "4"), node("n3", "4")],
        existing=[
            bound(resizing(pod("e1", cpu="1"), allocated={"cpu": "3"}, cpu="3"), "n1"),
            bound(resizing(pod("e2", cpu="3"), "Deferred", allocated={"cpu": "1"}, cpu="1"), "n2"),
            bound(resizing(pod("e3", cpu="3"), "Infeasible", allocated={"cpu": "1"}, cpu="1"), "n3"),
        ],
        pods=[pod("p1", cpu="2500m"), pod("p2", cpu="1500m"), pod("p3", cpu="1500m")],
    )
)

# ---------------------------------------------------------------- combinations

add(
    scenario(
        "mixed-constraints",
        "resources, taints, node affinity, spreading and pod affinity together",
        ["NodeResourcesFit", "TaintToleration", "NodeAffinity", "PodTopologySpread", "InterPodAffinity"],
        [
            node("n1", "4", zone="z1", labels={"disk": "ssd"}),
            node("n2", "2", zone="z1"),
            node("n3", "4", zone="z2", labels={"disk": "ssd"}, taints=[("spot", "true", "NoSchedule")]),
            node("n4", "8", zone="z3", labels={"disk": "ssd"}),
        ],
        existing=[bound(pod("db", cpu="1", app="db"), "n1"), bound(pod("w1", cpu="500m", app="web"), "n4")],
        pods=[
            spread(
                affinity(pod("p1", cpu="1", app="web"), pod_term(ZONE, {"app": "db"}), weight=50), 1, ZONE
            ),
            tolerating(sel(spread(pod("p2", cpu="1", app="web"), 1, ZONE), disk="ssd"), tol("spot", "true")),
            affinity(pod("p3", cpu="3", app="api"), pod_term(HOST, {"app": "web"}), anti=True),
            sel(pod("p4", cpu="6", app="big"), disk="ssd"),
        ],
    )
)

add(
    scenario(
        "mixed-many-nodes",
        "twelve nodes in three zones, a run of mixed pods",
        ["NodeResourcesFit", "NodeResourcesBalancedAllocation", "PodTopologySpread", "InterPodAffinity"],
        [node(f"n{i}", str(2 + i % 3 * 2), f"{4 + i % 4 * 4}Gi", zone=f"z{i % 3}") for i in range(1, 13)],
        existing=[bound(pod(f"e{i}", cpu="500m", memory="1Gi", app="web"), f"n{i}") for i in (1, 2, 5)],
        pods=[
            spread(pod(f"p{i}", cpu="700m", memory=f"{1 + i % 3}Gi", app="web"), 1, ZONE, "ScheduleAnyway")
            for i in range(1, 7)
        ]
        + [
            affinity(pod(f"q{i}", cpu="300m", app="cache"), pod_term(HOST, {"app": "cache"}), anti=True)
            for i in range(1, 5)
        ],
    )
)


# ---------------------------------------------------------------- NodeDeclaredFeatures
# (kept together: nodes that declare features in status.declaredFeatures and nodes that declare none,
# as an older kubelet's; pods that need a feature by their spec and pods that need none. Of 1.36's
# features only RestartAllContainersOnContainerExits can be asked for through a v1.36.3 API server with
# default gates: UserNamespacesHostNetworkSupport's hostNetwork + hostUsers=false is still rejected.)

RESTART_ALL = "RestartAllContainersOnContainerExits"


def declaring(n: JSON, *features: str) -> JSON:
    """The node with ``status.declaredFeatures`` set, as its kubelet would write it (the API server
    requires the list sorted)."""
    n["status"]["declaredFeatures"] = sorted(features)
    return n


def restarts_all(b: PodBuilder) -> PodBuilder:
    """A pod whose container restarts all containers on exit code 42: it needs RESTART_ALL."""
    return b.restart_rule("RestartAllContainers")


add(
    scenario(
        "ndf-mixed",
        "nodes declaring a feature, another one, or none; pods needing it or nothing",
        ["NodeDeclaredFeatures", "NodeResourcesFit"],
        [
            declaring(node("n1", "4"), RESTART_ALL),
            declaring(node("n2", "8"), "SomeFutureFeature"),
            node("n3", "6"),
            declaring(node("n4", "2"), "SomeFutureFeature", RESTART_ALL),
        ],
        pods=[
            restarts_all(pod("p1", cpu="1")),
            pod("p2", cpu="1"),
            restarts_all(pod("p3", cpu="3")),
            restarts_all(pod("p4", cpu="3")),
            pod("p5", cpu="2"),
            restarts_all(pod("p6", cpu="500m")),
        ],
    )
)

add(
    scenario(
        "ndf-no-node",
        "no node declares the feature the pod needs (old kubelets): exact message",
        ["NodeDeclaredFeatures"],
        [node("n1"), node("n2"), declaring(node("n3"), "SomeFutureFeature")],
        pods=[restarts_all(pod("p1", cpu="100m")), pod("p2", cpu="100m")],
    )
)

add(
    scenario(
        "ndf-declared-later",
        "a parked pod schedules once a node's kubelet declares the feature",
        ["NodeDeclaredFeatures"],
        [
            node("n1", "8"),
            node("n2"),
        ],  # n1 is roomier: b2's placement is no score tie (batch pods get no tie judging)
        batch=[restarts_all(pod("b1", cpu="100m")), pod("b2", cpu="1")],
        node_updates=[{"metadata": {"name": "n2"}, "status": {"declaredFeatures": [RESTART_ALL]}}],
    )
)
