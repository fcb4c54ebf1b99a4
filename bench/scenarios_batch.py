"""Differential scenarios of opportunistic batching (kube-scheduler 1.36's OpportunisticBatching gate, beta,
on by default; pyscheduler's framework/batch.py). Registered by bench/scenarios.py.

Batching only happens for pods scheduled one right after the other, so the pods here are ``batch`` pods
(created before the scheduler starts), and only in a profile where PodTopologySpread signs pods: its
``defaultingType: List`` without default constraints (under the default ``System`` defaulting no pod is
signed). Identical pods with a host port go one per node, which is when a hint is used.

``batch-hint-next-node`` is built so that batching changes the decision. NodeAffinity's preferred score is
normalised by the best node's: while node a (gold) is feasible, b (silver) gets a third of the affinity
score and c, the big node, wins second place on resources; once a holds a pod, a fresh scoring of b and c
gives b the whole affinity score and b wins. kube-scheduler with batching hands the second pod the second
node of the first pod's scores (c), where a scheduler without batching would pick b; the third pod takes
what is left. ``batch-default-profile`` is the same with the default profile: no pod is signed, every pod
is scored afresh (a, b, c). ``batch-one-per-node`` runs a longer batch on nodes of distinct sizes (no ties),
each pod going to the next node of the first pod's scores.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from bench.scenario_builders import JSON, PodBuilder, Scenario, node, pod, priority_class, scenario

SCENARIOS: list[Scenario] = []
add = SCENARIOS.append

#: the batch pods' order: the API server does not list pods in creation order, so each pod gets its own
#: priority (p1 first); priority is not part of a signature
ORDER = 6
PRIORITY_CLASSES = [priority_class(f"diff-batch-{i}", 1000 - 100 * i) for i in range(1, ORDER + 1)]


def in_order(b: PodBuilder, i: int) -> PodBuilder:
    """Pod ``i`` (from 1) of a batch: popped i-th."""
    return b.priority_class(f"diff-batch-{i}")


#: PodTopologySpread without default constraints: pods without constraints of their own are signed
LIST_DEFAULTING: tuple[JSON, ...] = ({"name": "PodTopologySpread", "args": {"defaultingType": "List"}},)


@dataclass(frozen=True)
class ConfiguredScenario(Scenario):
    """A scenario whose profile has ``plugin_config`` (the profile's pluginConfig, for both schedulers and
    the in-memory scores; see bench.differential.schedulers.configuration)."""

    plugin_config: tuple[JSON, ...] = ()


def configured(sc: Scenario, plugin_config: tuple[JSON, ...]) -> ConfiguredScenario:
    fields: dict[str, Any] = {f: getattr(sc, f) for f in sc.__dataclass_fields__}
    return ConfiguredScenario(**fields, plugin_config=plugin_config)


def _tiered_pod(name: str) -> JSON:
    """1 CPU, 1Gi, host port 8080 (one per node), preferring tier gold (weight 2) and gold-or-silver
    (weight 1); the same labels on every pod (InterPodAffinity signs them)."""
    b = in_order(pod(name, cpu="1", memory="1Gi", app="batch").host_port(8080), int(name[1:]))
    b.affinity(
        {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {
                        "weight": 2,
                        "preference": {
                            "matchExpressions": [{"key": "tier", "operator": "In", "values": ["gold"]}]
                        },
                    },
                    {
                        "weight": 1,
                        "preference": {
                            "matchExpressions": [
                                {"key": "tier", "operator": "In", "values": ["gold", "silver"]}
                            ]
                        },
                    },
                ]
            }
        }
    )
    return b.json()


def _tiered(name: str, description: str) -> Scenario:
    return scenario(
        name,
        description,
        ["NodeAffinity", "NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodePorts"],
        [
            node("a", "64", "128Gi", labels={"tier": "gold"}),
            node("b", "1250m", "1280Mi", labels={"tier": "silver"}),
            node("c", "64", "128Gi"),
        ],
        objects=PRIORITY_CLASSES,
        batch=[_tiered_pod(f"p{i}") for i in range(1, 5)],
    )


add(
    configured(
        _tiered(
            "batch-hint-next-node",
            "PodTopologySpread List defaulting: the 2nd pod takes the 1st pod's 2nd-best node (c), which a "
            "fresh scoring would not (b); the 4th fits nowhere",
        ),
        LIST_DEFAULTING,
    )
)

add(
    _tiered(
        "batch-default-profile",
        "default profile (PodTopologySpread System defaulting): no pod is signed, each is scored afresh",
    )
)

add(
    configured(
        scenario(
            "batch-one-per-node",
            "PodTopologySpread List defaulting: 6 identical host-port pods on 8 nodes of distinct sizes "
            "(no score ties), each to the next node of the first pod's scores",
            ["NodeResourcesFit", "NodeResourcesBalancedAllocation", "NodePorts"],
            [node(f"n{i}", str(c), f"{2 * c}Gi") for i, c in enumerate((2, 3, 4, 5, 6, 8, 12, 16), 1)],
            objects=PRIORITY_CLASSES,
            batch=[
                in_order(pod(f"p{i}", cpu="1", memory="1Gi", app="web").host_port(9090), i)
                for i in range(1, 7)
            ],
        ),
        LIST_DEFAULTING,
    )
)
