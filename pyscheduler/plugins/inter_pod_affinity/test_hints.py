"""InterPodAffinity queueing hints: which cluster events make a rejected pod worth retrying."""

from __future__ import annotations

import dataclasses

import pytest

from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.types import Node, Pod
from pyscheduler.plugins.inter_pod_affinity import (
    InterPodAffinity,
)
from pyscheduler.plugins.inter_pod_affinity._fixtures import (
    S1,
    S2,
    mk_node,
    pod,
    required,
    sel_in,
    term,
)

# ------------------------------------------------------------------------------------------- hints


def test_events_registered() -> None:
    events = InterPodAffinity().events_to_register()
    assert {str(e.event.resource) for e in events} == {"Pod", "Node"}
    assert all(e.hint is not None for e in events)


TARGET = pod(
    labels=S2,
    affinity={
        **required(term("region", sel_in("security", "S1"))),
        **required(term("zone", sel_in("app", "db")), anti=True),
    },
)
Q = QueueingHint.QUEUE
SKIP = QueueingHint.SKIP


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("assigned pod matching affinity added", None, pod("e", S1, node="n"), Q),
        ("assigned pod not matching affinity added", None, pod("e", S2, node="n"), SKIP),
        ("unscheduled pod added", None, pod("e", S1), SKIP),
        ("pod matching anti-affinity deleted", pod("e", {"app": "db"}, node="n"), None, Q),
        ("pod not matching anti-affinity deleted", pod("e", {"app": "web"}, node="n"), None, SKIP),
        ("label update starts matching affinity", pod("e", S2, node="n"), pod("e", S1, node="n"), Q),
        (
            "label update stops matching anti-affinity",
            pod("e", {"app": "db"}, node="n"),
            pod("e", {"app": "x"}, node="n"),
            Q,
        ),
        ("unrelated label update", pod("e", {"x": "1"}, node="n"), pod("e", {"x": "2"}, node="n"), SKIP),
    ],
)
def test_pod_change_hint(name: str, old: Pod | None, new: Pod | None, want: QueueingHint) -> None:
    assert InterPodAffinity().is_schedulable_after_pod_change(TARGET, old, new) == want


@pytest.mark.parametrize(
    ("new", "want"),
    [
        (mk_node("n", region="r"), Q),  # affinity topology key
        (mk_node("n", zone="z"), Q),  # anti-affinity topology key
        (mk_node("n", other="x"), SKIP),
    ],
)
def test_node_change_hint(new: Node, want: QueueingHint) -> None:
    assert InterPodAffinity().is_schedulable_after_node_change(TARGET, None, new) == want


def test_hints_follow_a_new_version_of_the_waiting_pod() -> None:
    """The hints keep the waiting pod's parsed terms between events; a new version of the pod (its
    affinity changed) is read afresh, and a pod that is not asked about again is not needed."""
    plugin = InterPodAffinity()
    added = pod("e", S1, node="n")
    assert plugin.is_schedulable_after_pod_change(TARGET, None, added) == Q
    assert plugin.is_schedulable_after_pod_change(TARGET, None, added) == Q  # from the kept terms
    retargeted = pod(TARGET.name, labels=S2, affinity=required(term("region", sel_in("security", "S3"))))
    assert plugin.is_schedulable_after_pod_change(retargeted, None, added) == SKIP
    assert plugin.is_schedulable_after_node_change(retargeted, None, mk_node("n", zone="z")) == SKIP
    assert plugin.is_schedulable_after_pod_change(TARGET, None, added) == Q
    # the same affinity object in another namespace: its terms select pods of that namespace only
    elsewhere = dataclasses.replace(TARGET, namespace="other")
    assert elsewhere.affinity is TARGET.affinity
    assert plugin.is_schedulable_after_pod_change(elsewhere, None, added) == SKIP
    assert plugin.is_schedulable_after_pod_change(TARGET, None, added) == Q
    # many waiting pods: the kept terms are bounded, answers stay right past the bound
    waiting = [
        pod(f"w{i}", S2, affinity=required(term("region", sel_in("security", "S1")))) for i in range(9000)
    ]
    assert all(plugin.is_schedulable_after_pod_change(w, None, added) == Q for w in waiting)
    assert plugin.is_schedulable_after_pod_change(retargeted, None, added) == SKIP
