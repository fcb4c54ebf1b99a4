from typing import Any, cast

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.helpers import default_normalize_score
from pyscheduler.framework.interfaces import Handle, NodeScore
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Taint, Toleration
from pyscheduler.plugins.taint_toleration import (
    ERR_REASON_UNTOLERATED,
    NAME,
    PLUGIN,
    PRE_SCORE_STATE_KEY,
    TaintToleration,
    untolerated_taint,
)
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_cycle_state,
    make_node,
    make_node_info,
    make_pod,
)

UNRESOLVABLE = Code.UNSCHEDULABLE_AND_UNRESOLVABLE

# taint: (key, value, effect); toleration: builder kwargs
TaintSpec = tuple[str, str, str]


def node_with(taints: list[TaintSpec], name: str = "n1") -> NodeBuilder:
    b = make_node(name)
    for key, value, effect in taints:
        b.taint(key, value, effect)
    return b


def pod_with(tolerations: list[dict[str, str]], name: str = "p") -> PodBuilder:
    b = make_pod(name)
    for t in tolerations:
        b.toleration(**t)
    return b


def code_of(status: Status | None) -> Code:
    return status.code if status else Code.SUCCESS


@pytest.mark.parametrize(
    ("taints", "tolerations", "code"),
    [
        pytest.param([], [], Code.SUCCESS, id="untainted node"),
        pytest.param([("dedicated", "gpu", "NoSchedule")], [], UNRESOLVABLE, id="NoSchedule untolerated"),
        pytest.param([("dedicated", "gpu", "NoExecute")], [], UNRESOLVABLE, id="NoExecute untolerated"),
        pytest.param([("dedicated", "gpu", "PreferNoSchedule")], [], Code.SUCCESS, id="soft taint ignored"),
        pytest.param(
            [("dedicated", "gpu", "NoSchedule")],
            [dict(key="dedicated", value="gpu", effect="NoSchedule")],
            Code.SUCCESS,
            id="Equal toleration",
        ),
        pytest.param(
            [("dedicated", "gpu", "NoSchedule")],
            [dict(key="dedicated", value="cpu", effect="NoSchedule")],
            UNRESOLVABLE,
            id="Equal with another value",
        ),
        pytest.param(
            [("dedicated", "gpu", "NoSchedule")],
            [dict(key="dedicated", operator="Exists")],
            Code.SUCCESS,
            id="Exists on key, any effect",
        ),
        pytest.param(
            [("dedicated", "gpu", "NoSchedule")],
            [dict(key="dedicated", operator="Exists", effect="NoExecute")],
            UNRESOLVABLE,
            id="Exists with the wrong effect",
        ),
        pytest.param(
            [("dedicated", "gpu", "NoSchedule")], [dict(operator="Exists")], Code.SUCCESS, id="tolerate all"
        ),
        pytest.param(
            [("a", "", "NoSchedule"), ("b", "", "NoExecute")],
            [dict(key="a", operator="Exists")],
            UNRESOLVABLE,
            id="one of two taints untolerated",
        ),
        pytest.param(
            [("a", "", "NoSchedule"), ("b", "", "NoExecute")],
            [dict(key="a", operator="Exists"), dict(key="b", operator="Exists", effect="NoExecute")],
            Code.SUCCESS,
            id="both tolerated",
        ),
        pytest.param(
            [("node-role.kubernetes.io/control-plane", "", "NoSchedule")],
            [dict(key="node-role.kubernetes.io/control-plane", operator="Equal", effect="NoSchedule")],
            Code.SUCCESS,
            id="Equal with empty value matches empty taint value",
        ),
    ],
)
def test_filter(taints: list[TaintSpec], tolerations: list[dict[str, str]], code: Code) -> None:
    status = TaintToleration().filter(
        make_cycle_state(), pod_with(tolerations).obj(), make_node_info(node_with(taints))
    )
    assert code_of(status) == code
    if status:
        assert status.reasons == (ERR_REASON_UNTOLERATED,)
        assert status.plugin == NAME


def test_filter_without_node() -> None:
    assert TaintToleration().filter(make_cycle_state(), make_pod("p").obj(), NodeInfo()) is None


def test_untolerated_taint_is_the_first_hard_one() -> None:
    taints = (
        Taint("soft", "x", "PreferNoSchedule"),
        Taint("a", "1", "NoSchedule"),
        Taint("b", "2", "NoExecute"),
    )
    found = untolerated_taint(taints, ())
    assert found == Taint("a", "1", "NoSchedule")
    assert str(found) == "{a: 1}"
    assert untolerated_taint(taints, (Toleration(key="a", operator="Exists"),)) == Taint(
        "b", "2", "NoExecute"
    )
    assert untolerated_taint(taints, (Toleration(operator="Exists"),)) is None


@pytest.mark.parametrize(
    ("nodes", "tolerations", "expected"),
    [
        pytest.param(
            {"n1": [], "n2": []}, [], {"n1": 100, "n2": 100}, id="no soft taints anywhere: all score max"
        ),
        pytest.param(
            {"n1": [], "n2": [("a", "", "PreferNoSchedule")]},
            [],
            {"n1": 100, "n2": 0},
            id="the tainted node scores 0",
        ),
        pytest.param(
            {
                "n1": [("a", "", "PreferNoSchedule")],
                "n2": [("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")],
                "n3": [],
            },
            [],
            {"n1": 50, "n2": 0, "n3": 100},
            id="count of intolerable soft taints, reversed",
        ),
        pytest.param(
            {
                "n1": [("a", "", "PreferNoSchedule")],
                "n2": [
                    ("a", "", "PreferNoSchedule"),
                    ("b", "", "PreferNoSchedule"),
                    ("c", "", "PreferNoSchedule"),
                ],
            },
            [],
            {"n1": 67, "n2": 0},
            id="integer division: 100 - 100*1//3",
        ),
        pytest.param(
            {"n1": [("a", "x", "PreferNoSchedule")], "n2": []},
            [dict(key="a", value="x", effect="PreferNoSchedule")],
            {"n1": 100, "n2": 100},
            id="tolerated soft taint does not count",
        ),
        pytest.param(
            {"n1": [("a", "x", "PreferNoSchedule")], "n2": []},
            [dict(key="a", operator="Exists")],
            {"n1": 100, "n2": 100},
            id="empty-effect toleration tolerates soft taints",
        ),
        pytest.param(
            {"n1": [("a", "x", "PreferNoSchedule")], "n2": []},
            [dict(key="a", operator="Exists", effect="NoSchedule")],
            {"n1": 0, "n2": 100},
            id="NoSchedule toleration does not tolerate a soft taint",
        ),
        pytest.param(
            {"n1": [("a", "", "NoSchedule")], "n2": []},
            [dict(key="a", operator="Exists")],
            {"n1": 100, "n2": 100},
            id="hard taints are not scored",
        ),
    ],
)
def test_score_and_normalize(
    nodes: dict[str, list[TaintSpec]], tolerations: list[dict[str, str]], expected: dict[str, int]
) -> None:
    pl = TaintToleration()
    pod = pod_with(tolerations).obj()
    infos = [make_node_info(node_with(t, name)) for name, t in nodes.items()]
    state = make_cycle_state()
    assert pl.pre_score(state, pod, infos) is None
    scores = []
    for info in infos:
        s, st = pl.score(state, pod, info)
        assert st is None
        scores.append(NodeScore(info.name, s))
    ext = pl.score_extensions()
    assert ext is not None
    assert ext.normalize_score(state, pod, scores) is None
    assert {s.name: s.score for s in scores} == expected


def test_score_without_pre_score_state() -> None:
    pod = make_pod("p").obj()
    info = make_node_info(node_with([("a", "", "PreferNoSchedule"), ("b", "", "PreferNoSchedule")]))
    state = make_cycle_state()
    assert state.get(PRE_SCORE_STATE_KEY) is None
    assert TaintToleration().score(state, pod, info) == (2, None)


@pytest.mark.parametrize(
    ("raw", "reverse", "expected"),
    [
        pytest.param([0, 0], False, [0, 0], id="all zero"),
        pytest.param([0, 0], True, [100, 100], id="all zero reversed"),
        pytest.param([1, 2, 3], False, [33, 66, 100], id="scaled"),
        pytest.param([1, 2, 3], True, [67, 34, 0], id="scaled reversed"),
        pytest.param([], True, [], id="no nodes"),
    ],
)
def test_default_normalize_score(raw: list[int], reverse: bool, expected: list[int]) -> None:
    scores = [NodeScore(f"n{i}", v) for i, v in enumerate(raw)]
    default_normalize_score(100, reverse, scores)
    assert [s.score for s in scores] == expected


def test_events_registered() -> None:
    registered = TaintToleration().events_to_register()
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(registered[0].event)
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT).matches(registered[0].event)
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(registered[0].event)
    assert ClusterEvent(Resource.POD, Action.UPDATE_POD_TOLERATIONS).matches(registered[1].event)
    assert all(e.hint is not None for e in registered)


@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, [], QueueingHint.QUEUE, id="untainted node added"),
        pytest.param(None, [("a", "", "NoSchedule")], QueueingHint.SKIP, id="tainted node added"),
        pytest.param(None, [("a", "", "PreferNoSchedule")], QueueingHint.QUEUE, id="soft-tainted node added"),
        pytest.param([("a", "", "NoSchedule")], [], QueueingHint.QUEUE, id="taint removed"),
        pytest.param(
            [("a", "", "NoSchedule")], [("t", "", "NoSchedule")], QueueingHint.QUEUE, id="taint now tolerated"
        ),
        pytest.param([], [], QueueingHint.SKIP, id="was already fine"),
        pytest.param(
            [("a", "", "NoSchedule")], [("b", "", "NoSchedule")], QueueingHint.SKIP, id="still untolerated"
        ),
    ],
)
def test_node_change_hint(old: list[TaintSpec] | None, new: list[TaintSpec], hint: QueueingHint) -> None:
    pod = pod_with([dict(key="t", operator="Exists")]).obj()
    old_node = node_with(old).obj() if old is not None else None
    assert TaintToleration.is_schedulable_after_node_change(pod, old_node, node_with(new).obj()) == hint


def test_node_change_hint_accepts_json() -> None:
    pod = make_pod("p").obj()
    assert (
        TaintToleration.is_schedulable_after_node_change(pod, None, make_node("n").json())
        == QueueingHint.QUEUE
    )


@pytest.mark.parametrize(
    ("same", "hint"),
    [
        pytest.param(True, QueueingHint.QUEUE, id="the rejected pod"),
        pytest.param(False, QueueingHint.SKIP, id="other"),
    ],
)
def test_pod_toleration_hint(same: bool, hint: QueueingHint) -> None:
    pod = make_pod("p").obj()
    name = "p" if same else "q"
    old, new = make_pod(name).obj(), pod_with([dict(key="x", operator="Exists")], name).obj()
    assert TaintToleration.is_schedulable_after_pod_toleration_change(pod, old, new) == hint


def test_spec_takes_no_args() -> None:
    assert PLUGIN.name == "TaintToleration"
    assert PLUGIN.decode({"apiVersion": "kubescheduler.config.k8s.io/v1"}, "args") is None
    with pytest.raises(ValueError, match=r"args\.x"):
        PLUGIN.decode({"x": 1}, "args")
    assert isinstance(PLUGIN.new(None, cast(Handle, cast(Any, None))), TaintToleration)
