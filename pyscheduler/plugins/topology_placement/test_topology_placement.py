"""TopologyPlacementGenerator: one placement per topology domain (kube's topology_placement_test)."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.podgroup import Placement, PodGroupInfo, PodGroupState
from pyscheduler.framework.status import Code
from pyscheduler.plugins.topology_placement import new
from pyscheduler.testing import make_cycle_state, make_handle, make_node, make_pod, make_pod_group

ZONE = "topology.kubernetes.io/zone"
NODES = {"a1": "a", "a2": "a", "b1": "b", "x": ""}  # "x" has no zone label


class _States:
    def __init__(self, state: PodGroupState) -> None:
        self.state = state

    def get(self, namespace: str, name: str) -> PodGroupState:
        return self.state


def _run(pod_group: dict[str, Any], scheduled_on: tuple[str, ...] = ()) -> tuple[Any, Any]:
    nodes = [make_node(n).label(ZONE, z).obj() if z else make_node(n).obj() for n, z in NODES.items()]
    state = PodGroupState()
    pods = []
    for i, node in enumerate(scheduled_on):
        p = make_pod(f"s{i}").uid(f"s{i}").group("pg").node(node).obj()
        state.add_pod(p)
        pods.append(p)
    snap = Snapshot.from_nodes(nodes, pods)
    handle = make_handle(snap, objects=[pod_group])
    handle.extra["pod_group_states"] = _States(state)
    parent = Placement("", list(snap.list()))
    return new(None, handle).generate_placements(make_cycle_state(), PodGroupInfo("default", "pg"), parent)


def _names(placements: list[Placement] | None) -> dict[str, list[str]]:
    return {p.name: sorted(n.name for n in p.nodes) for p in placements or ()}


@pytest.mark.parametrize(
    ("pod_group", "scheduled_on", "want"),
    [
        pytest.param(
            make_pod_group("pg", min_count=2), (), {"": ["a1", "a2", "b1", "x"]}, id="no-constraint"
        ),
        pytest.param(
            make_pod_group("pg", min_count=2, topology_key=ZONE),
            (),
            {"a": ["a1", "a2"], "b": ["b1"]},
            id="one-placement-per-zone-unlabelled-left-out",
        ),
        pytest.param(
            make_pod_group("pg", min_count=2, topology_key=ZONE),
            ("a2",),
            {"a": ["a1", "a2"]},
            id="scheduled-pods-pin-their-zone",
        ),
        pytest.param(
            make_pod_group("pg", min_count=2, topology_key="rack"),
            (),
            {},
            id="no-node-has-the-key",
        ),
    ],
)
def test_generate_placements(pod_group: dict[str, Any], scheduled_on: tuple[str, ...], want: Any) -> None:
    placements, st = _run(pod_group, scheduled_on)
    assert st is None
    assert _names(placements) == want


@pytest.mark.parametrize(
    ("scheduled_on", "message"),
    [
        pytest.param(
            ("a1", "b1"),
            "cannot determine domain for already scheduled pods: more than 1 domain found for pod group: {}",
            id="scheduled-in-two-zones",
        ),
        pytest.param(
            ("x",),
            "cannot determine domain for already scheduled pods: no topology domain found for pod default/s0",
            id="scheduled-on-unlabelled-node",
        ),
    ],
)
def test_scheduled_pods_in_no_single_domain_are_an_error(scheduled_on: tuple[str, ...], message: str) -> None:
    _, st = _run(make_pod_group("pg", min_count=2, topology_key=ZONE), scheduled_on)
    assert st is not None and st.code == Code.ERROR
    # the scheduled pods are a set (a Go map in kube): the two domains come in either order
    assert st.message() in (message.format("a, b"), message.format("b, a"))
