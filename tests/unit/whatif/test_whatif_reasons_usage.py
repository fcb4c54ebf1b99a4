"""FailedScheduling text read back into reasons; utilisation and fragmentation arithmetic."""

from __future__ import annotations

import pytest

from pyscheduler.testing import make_node, make_pod
from pyscheduler.whatif.reasons import filter_part, filter_reasons
from pyscheduler.whatif.usage import Usage, average_pod


@pytest.mark.parametrize(
    ("message", "reasons"),
    [
        pytest.param(
            "0/5 nodes are available: 2 Insufficient cpu, 3 node(s) had untolerated taint(s). "
            "preemption: 0/5 nodes are available: 5 Preemption is not helpful for scheduling.",
            {"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 3},
            id="filter-and-preemption",
        ),
        pytest.param(
            "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 node(s) were unschedulable.",
            {"Insufficient cpu": 1, "Insufficient memory": 1, "node(s) were unschedulable": 1},
            id="no-preemption",
        ),
        pytest.param(
            "no nodes available to schedule pods", {"no nodes available to schedule pods": 0}, id="other"
        ),
    ],
)
def test_filter_reasons(message: str, reasons: dict[str, int]) -> None:
    assert filter_reasons(message) == reasons


def test_filter_part_drops_the_preemption_tail() -> None:
    assert filter_part("0/1 nodes are available: 1 Insufficient cpu. preemption: x.") == (
        "0/1 nodes are available: 1 Insufficient cpu."
    )


def test_utilisation_per_node_zone_and_cluster() -> None:
    nodes = [
        make_node("a")
        .capacity(cpu="4", memory="8Gi", pods=10)
        .label("topology.kubernetes.io/zone", "z1")
        .obj(),
        make_node("b")
        .capacity(cpu="4", memory="8Gi", pods=10)
        .label("topology.kubernetes.io/zone", "z2")
        .obj(),
    ]
    pods = [
        make_pod("p1").req(cpu="3", memory="2Gi").node("a").obj(),
        make_pod("p2").req(cpu="1").node("b").obj(),
    ]
    u = Usage.of(nodes, pods)
    assert u.nodes["a"].cpu_fraction == 0.75 and u.nodes["a"].memory_fraction == 0.25
    assert {z: n.cpu_fraction for z, n in u.zones().items()} == {"z1": 0.75, "z2": 0.25}
    assert u.total().cpu_fraction == 0.5 and u.nodes_in_use() == 2


def test_fragmentation_counts_free_capacity_the_average_pod_cannot_use() -> None:
    nodes = [make_node(n).capacity(cpu="4", memory="8Gi", pods=110).obj() for n in ("a", "b")]
    nodes.append(make_node("off").capacity(cpu="4", memory="8Gi", pods=110).unschedulable().obj())
    # a: 3.5 CPUs used, 0.5 free (too little for a 1-CPU pod); b: 1 used, 3 free (3 pods)
    pods = [
        make_pod("p1").req(cpu="3500m", memory="1Gi").node("a").obj(),
        make_pod("p2").req(cpu="1", memory="1Gi").node("b").obj(),
    ]
    u = Usage.of(nodes, pods)
    f = u.fragmentation({"cpu": 1000, "memory": 1 << 30})
    assert f["average_pod_slots"] == 3
    assert f["free"]["cpu_m"] == 3500  # the cordoned node is left out
    assert f["fragmentation"]["cpu"] == pytest.approx(1 - 3000 / 3500, abs=1e-4)
    assert f["fragmentation"]["memory"] == pytest.approx(1 - 3 / 14, abs=1e-4)


def test_average_pod() -> None:
    pods = [make_pod("a").req(cpu="1", memory="1Gi").obj(), make_pod("b").req(cpu="3", memory="3Gi").obj()]
    assert average_pod(pods) == {"cpu": 2000, "memory": 2 * (1 << 30)}
    assert average_pod([]) == {"cpu": 0.0, "memory": 0.0}
