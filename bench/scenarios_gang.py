"""Differential scenarios for workload-aware scheduling (kube 1.36 alpha): PodGroups scheduled as gangs.

Both schedulers run with the gates ``GenericWorkload``, ``GangScheduling`` and
``TopologyAwareWorkloadScheduling`` on (the runner turns them on for a scenario that creates a
``PodGroup``; see ``bench.differential.feature_gates_for``), against an API server serving
scheduling.k8s.io/v1alpha2. The group's pods are ``batch`` pods: created, with their PodGroup, before
the scheduler starts, so the whole group is pending at once.

Every decision is unique (batch pods get no score-tie judging, and kube orders a group's pods partly by
Go map iteration): pods are pinned to their node by ``kubernetes.io/hostname``, or the group has one
possible node, or (the preemption scenarios) the members' priorities fix their order and the victims'
priorities the node each member preempts on. Registered by ``bench/scenarios.py``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bench.scenario_builders import HOST, ZONE, Scenario, bound, node, pod, priority_class, scenario
from pyscheduler.testing.builders import PodBuilder, make_pod_group

GANG_PLUGINS = ("GangScheduling",)
PREEMPT_PLUGINS = ("GangScheduling", "DefaultPreemption")
# the preemption scenarios' PriorityClasses (bench/scenarios_preempt.py's names and values)
PRIORITY_CLASSES = [priority_class(f"diff-p{v}", v) for v in (100, 200, 1000, 2000)]


def prio(b: PodBuilder, cls: str) -> PodBuilder:
    return b.priority_class(cls)


TOPOLOGY_PLUGINS = ("GangScheduling", "TopologyPlacementGenerator", "PodGroupPodsCount")


def member(name: str, cpu: str, group: str = "pg", host: str = "") -> PodBuilder:
    """A pod of PodGroup ``group`` (in the scenario's namespace), pinned to ``host`` if given."""
    b = pod(name, cpu=cpu).group(group)
    return b.node_selector({HOST: host}) if host else b


def prefers(b: PodBuilder, host: str) -> PodBuilder:
    """Prefer ``host`` (weight 100). The preemption scenarios need it: a member whose victims are still
    terminating when the group is retried makes the group infeasible, its nominations are cleared, and
    the next try meets two empty nodes; the preference, not a random tie-break, must then decide."""
    return b.preferred_node_affinity(100, HOST, [host])


def pod_group(name: str = "pg", min_count: int | None = None, topology_key: str = "") -> dict[str, object]:
    """A PodGroup in the scenario's namespace (the runner fills in namespace "")."""
    return make_pod_group(name, "", min_count=min_count, topology_key=topology_key)


def gang_preempt(
    name: str, description: str, victims: Mapping[str, int], members: Sequence[PodBuilder]
) -> Scenario:
    """Two 2-CPU nodes, each full with a victim of the given priority (``{node: priority}``; a node not
    named is empty), and a gang of ``members`` (minCount: all of them) that fits only by preempting."""
    return scenario(
        name,
        description,
        PREEMPT_PLUGINS,
        [node("n1", "2"), node("n2", "2")],
        existing=[bound(prio(pod(f"v{p}", cpu="2"), f"diff-p{p}"), host) for host, p in victims.items()],
        objects=[*PRIORITY_CLASSES, pod_group(min_count=len(members))],
        batch=members,
    )


GANG_SCENARIOS: list[Scenario] = [
    scenario(
        "gang-all-fit",
        "a gang of 3 (minCount 3) that fits: all three bound, together",
        GANG_PLUGINS,
        [node("n1", "2"), node("n2", "2"), node("n3", "2")],
        objects=[pod_group(min_count=3)],
        batch=[member("g1", "1", host="n1"), member("g2", "1", host="n2"), member("g3", "1", host="n3")],
    ),
    scenario(
        "gang-none-fit",
        "a gang of 3 (minCount 3) whose third pod fits nowhere: nothing bound, kube's messages",
        GANG_PLUGINS,
        [node("n1", "2"), node("n2", "2"), node("n3", "1")],
        objects=[pod_group(min_count=3)],
        batch=[member("g1", "1", host="n1"), member("g2", "1", host="n2"), member("g3", "2", host="n3")],
    ),
    scenario(
        "gang-min-count",
        "minCount 2 of 3 pods: the two that fit are bound, the third reports its own FitError",
        GANG_PLUGINS,
        [node("n1", "2"), node("n2", "2"), node("n3", "1")],
        objects=[pod_group(min_count=2)],
        batch=[member("g1", "1", host="n1"), member("g2", "1", host="n2"), member("g3", "2", host="n3")],
    ),
    scenario(
        "gang-topology-pack",
        "a gang with a zone constraint lands whole in the one zone that holds it, not the zone its pods prefer",
        TOPOLOGY_PLUGINS,
        [node("a1", "1", zone="a"), node("a2", "1", zone="a"), node("b1", "3", zone="b")],
        objects=[pod_group(min_count=3, topology_key=ZONE)],
        batch=[member(f"g{i}", "1").preferred_node_affinity(100, ZONE, ["a"]) for i in (1, 2, 3)],
    ),
    scenario(
        "gang-topology-fuller-zone",
        "both zones hold the gang: PlacementScore (NodeResourcesFit, MostAllocated) packs it into the fuller",
        TOPOLOGY_PLUGINS,
        [node("a1", "4", zone="a"), node("b1", "4", zone="b")],
        existing=[bound(pod("e1", cpu="2"), "a1")],
        objects=[pod_group(min_count=2, topology_key=ZONE)],
        batch=[member("g1", "1"), member("g2", "1")],
    ),
    gang_preempt(
        "gang-preempt",
        "a gang that fits only by preempting: the second member sees the first assumed where it preempts "
        "(the cheaper victim's node), so it preempts on the other; the group waits for the victims, then "
        "binds whole",
        {"n1": 100, "n2": 200},
        # g1 pinned: kube retries the group at once, while the victims are still going; had v200 gone
        # first, an unpinned g1 would take n2 and g2 preempt on n1 (seen in kube-scheduler's runs)
        [
            prio(member("g1", "2", host="n1"), "diff-p2000"),
            prio(prefers(member("g2", "2"), "n2"), "diff-p1000"),
        ],
    ),
    gang_preempt(
        "gang-preempt-one",
        "one member fits, the other must preempt: both wait for the preemption, each nominated where it "
        "was tried, then bind there",
        {"n2": 100},
        [
            prio(prefers(member("g1", "2"), "n1"), "diff-p2000"),
            prio(prefers(member("g2", "2"), "n2"), "diff-p1000"),
        ],
    ),
    gang_preempt(
        "gang-preempt-not-enough",
        "two members could preempt, the third fits nowhere: nothing bound (the victims go all the same: "
        "kube 1.36 preempts pod by pod)",
        {"n1": 100, "n2": 200},
        [
            prio(prefers(member("g1", "2"), "n1"), "diff-p2000"),
            prio(prefers(member("g2", "2"), "n2"), "diff-p1000"),
            prio(member("g3", "3"), "diff-p1000"),
        ],
    ),
]
