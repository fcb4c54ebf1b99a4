from typing import Any, cast

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo
from pyscheduler.plugins.node_unschedulable import (
    ERR_REASON_UNKNOWN_CONDITION,
    ERR_REASON_UNSCHEDULABLE,
    NAME,
    PLUGIN,
    NodeUnschedulable,
)
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

KEY = "node.kubernetes.io/unschedulable"
UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE


def code_of(status: Status | None) -> Code:
    return status.code if status else Code.SUCCESS


@pytest.mark.parametrize(
    ("tolerations", "unschedulable", "code"),
    [
        pytest.param([], False, Code.SUCCESS, id="schedulable node, no tolerations"),
        pytest.param([], True, UNRESOLVABLE, id="cordoned node rejects"),
        pytest.param([dict(key=KEY, effect="NoSchedule")], True, Code.SUCCESS, id="exact toleration"),
        pytest.param([dict(key=KEY)], True, Code.SUCCESS, id="key with any effect"),
        pytest.param([dict(operator="Exists")], True, Code.SUCCESS, id="tolerate everything"),
        pytest.param(
            [dict(operator="Exists", effect="NoSchedule")], True, Code.SUCCESS, id="all keys, NoSchedule"
        ),
        pytest.param([dict(key=KEY, effect="NoExecute")], True, UNRESOLVABLE, id="wrong effect"),
        pytest.param([dict(key=KEY, effect="PreferNoSchedule")], True, UNRESOLVABLE, id="PreferNoSchedule"),
        pytest.param(
            [dict(key=KEY, value="x", effect="NoSchedule")], True, UNRESOLVABLE, id="Equal with a value"
        ),
        pytest.param([dict(key="other", effect="NoSchedule")], True, UNRESOLVABLE, id="other key"),
        pytest.param([dict(key="other")], False, Code.SUCCESS, id="tolerations irrelevant when schedulable"),
    ],
)
def test_filter(tolerations: list[dict[str, str]], unschedulable: bool, code: Code) -> None:
    b = make_pod("p")
    for t in tolerations:
        b.toleration(**t)
    node = make_node("n1").unschedulable(unschedulable)
    status = NodeUnschedulable().filter(make_cycle_state(), b.obj(), make_node_info(node))
    assert code_of(status) == code
    if status:
        assert status.reasons == (ERR_REASON_UNSCHEDULABLE,)
        assert status.plugin == NAME


def test_filter_without_node() -> None:
    status = NodeUnschedulable().filter(make_cycle_state(), make_pod("p").obj(), NodeInfo())
    assert status is not None
    assert status.code == UNRESOLVABLE
    assert status.reasons == (ERR_REASON_UNKNOWN_CONDITION,)


def test_events_registered() -> None:
    registered = NodeUnschedulable().events_to_register()
    events = [e.event for e in registered]
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(events[0])
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT).matches(events[0])
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(events[0])
    assert ClusterEvent(Resource.POD, Action.UPDATE_POD_TOLERATIONS).matches(events[1])
    assert all(e.hint is not None for e in registered)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, False, QueueingHint.QUEUE, id="schedulable node added"),
        pytest.param(None, True, QueueingHint.SKIP, id="cordoned node added"),
        pytest.param(True, False, QueueingHint.QUEUE, id="node uncordoned"),
        pytest.param(False, False, QueueingHint.SKIP, id="schedulable stays schedulable"),
        pytest.param(True, True, QueueingHint.SKIP, id="still cordoned"),
        pytest.param(False, True, QueueingHint.SKIP, id="node cordoned"),
    ],
)
def test_node_change_hint(old: bool | None, new: bool, hint: QueueingHint) -> None:
    old_node = make_node("n").unschedulable(old).obj() if old is not None else None
    new_node = make_node("n").unschedulable(new).obj()
    pod = make_pod("p").obj()
    assert NodeUnschedulable.is_schedulable_after_node_change(pod, old_node, new_node) == hint


def test_node_change_hint_accepts_json() -> None:
    pod = make_pod("p").obj()
    hint = NodeUnschedulable.is_schedulable_after_node_change(pod, None, make_node("n").json())
    assert hint == QueueingHint.QUEUE


@pytest.mark.parametrize(
    ("same_pod", "toleration", "hint"),
    [
        pytest.param(True, dict(key=KEY, effect="NoSchedule"), QueueingHint.QUEUE, id="pod now tolerates"),
        pytest.param(True, dict(key="other"), QueueingHint.SKIP, id="unrelated toleration"),
        pytest.param(False, dict(key=KEY, effect="NoSchedule"), QueueingHint.SKIP, id="another pod"),
    ],
)
def test_pod_toleration_hint(same_pod: bool, toleration: dict[str, str], hint: QueueingHint) -> None:
    pod = make_pod("p").obj()
    old = make_pod("p" if same_pod else "q").obj()
    new = make_pod("p" if same_pod else "q").toleration(**toleration).obj()
    assert NodeUnschedulable.is_schedulable_after_pod_toleration_change(pod, old, new) == hint


def test_spec_takes_no_args() -> None:
    assert PLUGIN.name == "NodeUnschedulable"
    assert PLUGIN.decode(None, "args") is None
    with pytest.raises(ValueError, match=r"args\.foo"):
        PLUGIN.decode({"foo": 1}, "args")
    assert isinstance(PLUGIN.new(None, cast(Handle, cast(Any, None))), NodeUnschedulable)
