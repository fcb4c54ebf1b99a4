"""PodTopologySpread queueing hints: which cluster events make a rejected pod worth retrying."""

from __future__ import annotations

import pytest

from pyscheduler.framework.events import QueueingHint
from pyscheduler.framework.types import Node, Pod, Taint
from pyscheduler.plugins.pod_topology_spread import (
    PodTopologySpread,
)
from pyscheduler.plugins.pod_topology_spread._fixtures import (
    BAR,
    DNS,
    FOO,
    ZONE,
    node,
    pod_on,
)
from pyscheduler.testing.builders import make_pod

# ------------------------------------------------------------------------------------------- queueing hints


def test_events_registered() -> None:
    events = PodTopologySpread().events_to_register()
    assert {str(e.event.resource) for e in events} == {"Pod", "Node"}
    assert all(e.hint is not None for e in events)


HARD = make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO)


@pytest.mark.parametrize(
    ("name", "target", "old", "new", "want"),
    [
        ("assigned matching pod added", HARD.obj(), None, pod_on("e", "n1", FOO), QueueingHint.QUEUE),
        ("assigned non-matching pod added", HARD.obj(), None, pod_on("e", "n1", BAR), QueueingHint.SKIP),
        ("unscheduled pod added", HARD.obj(), None, make_pod("e").labels(FOO).obj(), QueueingHint.SKIP),
        ("pod in another namespace", HARD.obj(), None, pod_on("e", "n1", FOO, ns="x"), QueueingHint.SKIP),
        ("matching pod deleted", HARD.obj(), pod_on("e", "n1", FOO), None, QueueingHint.QUEUE),
        ("non-matching pod deleted", HARD.obj(), pod_on("e", "n1", BAR), None, QueueingHint.SKIP),
        (
            "label change flips the match",
            HARD.obj(),
            pod_on("e", "n1", BAR),
            pod_on("e", "n1", FOO),
            QueueingHint.QUEUE,
        ),
        ("labels unchanged", HARD.obj(), pod_on("e", "n1", FOO), pod_on("e", "n1", FOO), QueueingHint.SKIP),
        (
            "label change unrelated to the selector",
            HARD.obj(),
            pod_on("e", "n1", {"foo": "", "a": "1"}),
            pod_on("e", "n1", {"foo": "", "a": "2"}),
            QueueingHint.SKIP,
        ),
        (
            "target pod gets a toleration with nodeTaintsPolicy Honor",
            make_pod("p").labels(FOO).spread(1, ZONE, DNS, FOO, nodeTaintsPolicy="Honor").obj(),
            make_pod("p").labels(FOO).obj(),
            make_pod("p").labels(FOO).toleration("t").obj(),
            QueueingHint.QUEUE,
        ),
        (
            "target pod gets a toleration, taints ignored",
            HARD.obj(),
            make_pod("p").labels(FOO).obj(),
            make_pod("p").labels(FOO).toleration("t").obj(),
            QueueingHint.SKIP,
        ),
    ],
)
def test_pod_change_hint(
    name: str, target: Pod, old: Pod | None, new: Pod | None, want: QueueingHint
) -> None:
    assert PodTopologySpread().is_schedulable_after_pod_change(target, old, new) == want


@pytest.mark.parametrize(
    ("name", "old", "new", "want"),
    [
        ("node with the key added", None, node("n", zone="z1"), QueueingHint.QUEUE),
        ("node without the key added", None, node("n"), QueueingHint.SKIP),
        ("node with the key deleted", node("n", zone="z1"), None, QueueingHint.QUEUE),
        ("node without the key deleted", node("n"), None, QueueingHint.SKIP),
        ("key added by an update", node("n"), node("n", zone="z1"), QueueingHint.QUEUE),
        ("key value changed", node("n", zone="z1"), node("n", zone="z2"), QueueingHint.QUEUE),
        ("unrelated label changed", node("n", zone="z1"), node("n", zone="z1", x="y"), QueueingHint.SKIP),
        (
            "taint changed",
            node("n", zone="z1"),
            node("n", taints=(Taint("t"),), zone="z1"),
            QueueingHint.QUEUE,
        ),
        (
            "taint changed on node without the key",
            node("n"),
            node("n", taints=(Taint("t"),)),
            QueueingHint.SKIP,
        ),
    ],
)
def test_node_change_hint(name: str, old: Node | None, new: Node | None, want: QueueingHint) -> None:
    assert PodTopologySpread().is_schedulable_after_node_change(HARD.obj(), old, new) == want


def test_hints_accept_api_json() -> None:
    pl = PodTopologySpread()
    assert (
        pl.is_schedulable_after_pod_change(HARD.obj(), None, make_pod("e").labels(FOO).node("n").json())
        == QueueingHint.QUEUE
    )
