"""NodeResourcesFit events and queueing hints: which pod and node changes make a rejected pod worth retrying."""

import pytest

from pyscheduler.framework.events import Action, QueueingHint
from pyscheduler.framework.events import Resource as EventResource
from pyscheduler.plugins.node_resources_fit import (
    Fit,
    NodeResourcesFitArgs,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    node,
)
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_pod,
)

# ----------------------------------------------------------------------------------------- Events


def test_events_to_register() -> None:
    events = {e.event.resource: e for e in Fit().events_to_register()}
    assert events[EventResource.POD].event.action == Action.DELETE | Action.UPDATE_POD_SCALE_DOWN
    assert events[EventResource.NODE].event.action == Action.ADD | Action.UPDATE_NODE_ALLOCATABLE
    assert all(e.hint is not None for e in events.values())


Q, S = QueueingHint.QUEUE, QueueingHint.SKIP
TARGET = make_pod("target").req(cpu="1")


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (make_pod("x").req(cpu="1").node("n1"), None, Q),  # scheduled pod deleted
        (make_pod("x").req(cpu="1"), None, S),  # pending pod deleted
        (make_pod("x").req(cpu="1").nominated("n1"), None, Q),  # nominated pod deleted
        (make_pod("x").req(cpu="2").node("n1"), make_pod("x").req(cpu="1").node("n1"), Q),  # cpu shrank
        # memory shrank, but the target pod does not request memory
        (make_pod("x").req(memory="2Gi").node("n1"), make_pod("x").req(memory="1Gi").node("n1"), S),
        (make_pod("x").req(cpu="2"), make_pod("x").req(cpu="1"), S),  # unscheduled pod shrank
        (make_pod("target").req(cpu="2"), make_pod("target").req(cpu="1"), Q),  # the pod itself
        (make_pod("x").res({FOO: 2}).node("n1"), make_pod("x").res({FOO: 1}).node("n1"), S),
    ],
)
def test_hint_pod_event(old: PodBuilder, new: PodBuilder | None, hint: QueueingHint) -> None:
    plugin = Fit()
    old_p = old.obj() if old is not None else None
    new_p = new.obj() if new is not None else None
    assert plugin.is_schedulable_after_pod_event(TARGET.obj(), old_p, new_p) == hint


def test_hint_pod_event_scalar_shrink() -> None:
    target = make_pod("target").res({FOO: 1}).obj()
    old = make_pod("x").res({FOO: 2}).node("n1").obj()
    new = make_pod("x").res({FOO: 1}).node("n1").obj()
    assert Fit().is_schedulable_after_pod_event(target, old, new) == Q


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        (None, node(cpu="2"), Q),  # added and big enough
        (None, node(cpu="500m"), S),  # added but too small
        (None, node(pods=0), S),  # added but takes no pods
        (node(cpu="500m"), node(cpu="2"), Q),  # grew and now fits
        (node(cpu="2"), node(cpu="2").label("x", "y"), S),  # nothing grew
        (node(cpu="2", memory="1Gi"), node(cpu="2", memory="2Gi"), S),  # grew in what the pod does not ask
        (node(cpu="2", pods=10), node(cpu="2", pods=20), Q),  # more pods allowed
    ],
)
def test_hint_node_change(old: NodeBuilder | None, new: NodeBuilder, hint: QueueingHint) -> None:
    plugin = Fit()
    old_n = old.obj() if old is not None else None
    assert plugin.is_schedulable_after_node_change(TARGET.obj(), old_n, new.obj()) == hint


def test_hint_node_change_accepts_json_and_ignored_resources() -> None:
    target = make_pod("target").req(cpu="1").res({FOO: 1}).obj()
    assert Fit().is_schedulable_after_node_change(target, None, node(cpu="2").json()) == S
    ignoring = Fit(NodeResourcesFitArgs(ignored_resources=(FOO,)))
    assert ignoring.is_schedulable_after_node_change(target, None, node(cpu="2").json()) == Q
