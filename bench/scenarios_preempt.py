"""Differential scenarios of SchedulingGates, PrioritySort and DefaultPreemption. Registered, in this
order, by bench/scenarios.py."""

from __future__ import annotations

from bench.scenario_builders import (
    Scenario,
    bound,
    node,
    pdb,
    pod,
    priority_class,
    scenario,
    three,
)
from pyscheduler.testing.builders import PodBuilder

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

# ---------------------------------------------------------------- SchedulingGates

add(
    scenario(
        "scheduling-gates",
        "a gated pod stays pending; ungated pods are placed",
        ["SchedulingGates"],
        three(),
        pods=[
            pod("p1", cpu="100m").gate("example.com/wait"),
            pod("p2", cpu="100m"),
            pod("p3", cpu="100m").gate("a").gate("b"),
        ],
    )
)

# ---------------------------------------------------------------- DefaultPreemption / PrioritySort

PCS = [
    priority_class("diff-p100", 100),
    priority_class("diff-p200", 200),
    priority_class("diff-p1000", 1000),
    priority_class("diff-p2000", 2000),
    priority_class("diff-never", 1000, never=True),
]


def prio(b: PodBuilder, cls: str) -> PodBuilder:
    return b.priority_class(cls)


add(
    scenario(
        "preempt-basic",
        "a high-priority pod evicts a low-priority pod; too big a pod finds no victims",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("low", cpu="1500m"), "diff-p100"), "n1"),
            bound(prio(pod("high", cpu="1500m"), "diff-p2000"), "n2"),
        ],
        pods=[
            prio(pod("p1", cpu="1"), "diff-p1000"),
            prio(pod("p2", cpu="3"), "diff-p1000"),
            pod("p3", cpu="1"),
        ],
    )
)

add(
    scenario(
        "preempt-lowest-priority",
        "among candidate nodes, the one whose highest victim priority is lowest wins",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("v100", cpu="1500m"), "diff-p100"), "n2"),
            bound(prio(pod("v200", cpu="1500m"), "diff-p200"), "n1"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-pdb",
        "victims whose PodDisruptionBudget allows no disruption are avoided",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=[*PCS, pdb("guarded", {"app": "guarded"}, 0, 1)],
        existing=[
            bound(prio(pod("g1", cpu="1500m", app="guarded"), "diff-p100"), "n1"),
            bound(prio(pod("f1", cpu="1500m", app="free"), "diff-p100"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-fewest-victims",
        "equal victim priorities: the smaller priority sum (fewer victims) wins",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("a1", cpu="900m"), "diff-p100"), "n1"),
            bound(prio(pod("a2", cpu="900m"), "diff-p100"), "n1"),
            bound(prio(pod("b1", cpu="1800m"), "diff-p100"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1500m"), "diff-p1000")],
    )
)

add(
    scenario(
        "preempt-reprieve",
        "victims are reprieved highest priority first: only what must go is evicted",
        ["DefaultPreemption"],
        [node("n1", "2"), node("n2", "2")],
        objects=PCS,
        existing=[
            bound(prio(pod("a", cpu="1"), "diff-p100"), "n1"),
            bound(prio(pod("b", cpu="1"), "diff-p200"), "n1"),
            bound(prio(pod("top", cpu="1800m"), "diff-p2000"), "n2"),
        ],
        pods=[prio(pod("p1", cpu="1"), "diff-p1000"), prio(pod("p2", cpu="500m"), "diff-p200")],
    )
)

add(
    scenario(
        "preempt-never",
        "preemptionPolicy Never: the pod waits instead of evicting",
        ["DefaultPreemption"],
        [node("n1", "2")],
        objects=PCS,
        existing=[bound(prio(pod("low", cpu="1500m"), "diff-p100"), "n1")],
        pods=[prio(pod("p1", cpu="1"), "diff-never"), prio(pod("p2", cpu="1"), "diff-p1000")],
    )
)

add(
    scenario(
        "priority-sort",
        "pods pending together are tried highest priority first",
        ["PrioritySort"],
        [node("n1", "1")],
        objects=PCS,
        batch=[
            prio(pod("b-low", cpu="800m"), "diff-p100"),
            prio(pod("b-top", cpu="800m"), "diff-p2000"),
            prio(pod("b-mid", cpu="800m"), "diff-p200"),
        ],
    )
)
