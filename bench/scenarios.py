"""The differential test's scenario registry: every scenario ``make differential`` runs, in order.

The scenarios are plain API JSON (``bench.scenario_builders.Scenario``, whose docstring says what each
field means), written by family:

    bench/scenarios_basic.py     NodeResourcesFit, the scoring plugins, NodeName/Unschedulable/Ports, taints
    bench/scenarios_affinity.py  NodeAffinity, PodTopologySpread, InterPodAffinity
    bench/scenarios_volume.py    the volume plugins
    bench/scenarios_preempt.py   SchedulingGates, PrioritySort, DefaultPreemption
    bench/scenarios_features.py  pod-level resources and resize, combinations, NodeDeclaredFeatures
    bench/scenarios_gang.py      PodGroups scheduled as gangs
    bench/scenarios_batch.py     opportunistic batching (a profile with PodTopologySpread List defaulting)
    bench/scenarios_dra.py       Dynamic Resource Allocation (appends itself to ``SCENARIOS`` on import)

The builders are re-exported here for the family modules that import them from this registry.
"""

from __future__ import annotations

from bench import (
    scenarios_affinity,
    scenarios_basic,
    scenarios_batch,
    scenarios_features,
    scenarios_preempt,
    scenarios_volume,
)
from bench.scenario_builders import (
    CSI_DRIVER,
    GI,
    HOST,
    JSON,
    MI,
    ZONE,
    Scenario,
    _json,
    bound,
    node,
    pod,
    priority_class,
    scenario,
    tol,
)
from bench.scenarios_gang import GANG_SCENARIOS

__all__ = [
    "CSI_DRIVER",
    "GI",
    "HOST",
    "JSON",
    "MI",
    "SCENARIOS",
    "ZONE",
    "Scenario",
    "_check",
    "_json",
    "bound",
    "by_name",
    "node",
    "pod",
    "priority_class",
    "scenario",
    "tol",
]

SCENARIOS: list[Scenario] = [
    *scenarios_basic.SCENARIOS,
    *scenarios_affinity.SCENARIOS,
    *scenarios_volume.SCENARIOS,
    *scenarios_preempt.SCENARIOS,
    *scenarios_features.SCENARIOS,
    *GANG_SCENARIOS,
    *scenarios_batch.SCENARIOS,
]


def by_name() -> dict[str, Scenario]:
    return {s.name: s for s in SCENARIOS}


def _check() -> None:
    names = [s.name for s in SCENARIOS]
    dup = {n for n in names if names.count(n) > 1}
    assert not dup, f"duplicate scenario names {dup}"
    for s in SCENARIOS:
        assert len(s.namespace) <= 63, s.name


_check()

import bench.scenarios_dra  # noqa: E402, F401  (Dynamic Resource Allocation scenarios, appended to SCENARIOS)
