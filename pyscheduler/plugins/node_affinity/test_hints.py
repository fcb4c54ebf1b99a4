"""NodeAffinity events and queueing hints: which node changes make a rejected pod worth retrying."""

from collections.abc import Callable
from typing import Any

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.plugins.node_affinity import (
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity._fixtures import (
    ADDED_REQUIRED,
    ZONE_A,
    expr,
    pod_required,
)
from pyscheduler.testing.builders import PodBuilder, make_node, make_pod

# ------------------------------------------------------------------------------------------ events


def test_events_registered() -> None:
    (registered,) = NodeAffinity().events_to_register()
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(registered.event)
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(registered.event)
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT).matches(registered.event)
    assert registered.hint is not None


PodFn = Callable[[], PodBuilder]


@pytest.mark.parametrize(
    ("pod", "added", "old", "new", "hint"),
    [
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            None,
            ZONE_A,
            QueueingHint.QUEUE,
            id="added, matches",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            None,
            {},
            QueueingHint.SKIP,
            id="added, no match",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            {},
            ZONE_A,
            QueueingHint.QUEUE,
            id="label added",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            None,
            ZONE_A,
            {"zone": "a", "x": "y"},
            QueueingHint.SKIP,
            id="matched before too",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            ADDED_REQUIRED,
            None,
            ZONE_A,
            QueueingHint.SKIP,
            id="node outside the enforced affinity",
        ),
        pytest.param(
            lambda: make_pod("p").node_selector(ZONE_A),
            ADDED_REQUIRED,
            None,
            {"zone": "a", "pool": "batch"},
            QueueingHint.QUEUE,
            id="node inside the enforced affinity",
        ),
        pytest.param(
            lambda: pod_required({"matchExpressions": [expr("cores", "Gt", "x")]}),
            None,
            None,
            {},
            QueueingHint.QUEUE,
            id="unparsable pod term: queue",
        ),
    ],
)
def test_node_change_hint(
    pod: PodFn,
    added: dict[str, Any] | None,
    old: dict[str, str] | None,
    new: dict[str, str],
    hint: QueueingHint,
) -> None:
    pl = NodeAffinity(NodeAffinityArgs(added_affinity=added))
    old_node = make_node("n1").labels(old).obj() if old is not None else None
    assert (
        pl.is_schedulable_after_node_change(pod().obj(), old_node, make_node("n1").labels(new).obj()) == hint
    )


def test_node_change_hint_accepts_json() -> None:
    pod = make_pod("p").node_selector(ZONE_A).obj()
    hint = NodeAffinity().is_schedulable_after_node_change(pod, None, make_node("n1").labels(ZONE_A).json())
    assert hint == QueueingHint.QUEUE
