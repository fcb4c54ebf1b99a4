from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.status import Code, code_of
from pyscheduler.plugins.examples.label_match import (
    DEFAULT_LABEL,
    NAME,
    PLUGIN,
    LabelMatch,
    LabelMatchArgs,
    label_key_error,
)
from pyscheduler.testing import make_handle, snapshot_of
from pyscheduler.testing.builders import make_cycle_state, make_node, make_node_info, make_pod

L = DEFAULT_LABEL


def plugin(label: str = L, nodes: list[dict[str, str]] | None = None) -> LabelMatch:
    infos = [make_node_info(make_node(f"n{i}").labels(lbl)) for i, lbl in enumerate(nodes or [])]
    return LabelMatch(LabelMatchArgs(label), make_handle(snapshot_of(*infos)))


@pytest.mark.parametrize(
    ("pod_labels", "node_labels", "code", "reason"),
    [
        pytest.param({}, {}, Code.SUCCESS, None, id="unlabelled pod, plain node"),
        pytest.param({}, {L: "gpu"}, Code.SUCCESS, None, id="unlabelled pod, labelled node"),
        pytest.param({L: "gpu"}, {L: "gpu"}, Code.SUCCESS, None, id="same value"),
        pytest.param(
            {L: "gpu"},
            {L: "cpu"},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't have label {L}=gpu",
            id="other value",
        ),
        pytest.param(
            {L: "gpu"},
            {},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't have label {L}=gpu",
            id="node without the label",
        ),
        pytest.param(
            {L: ""},
            {L: ""},
            Code.SUCCESS,
            None,
            id="empty value matches empty value",
        ),
        pytest.param(
            {L: ""},
            {},
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            f"node(s) didn't have label {L}=",
            id="empty value needs the label",
        ),
        pytest.param({"other": "gpu"}, {"other": "cpu"}, Code.SUCCESS, None, id="other labels ignored"),
    ],
)
def test_filter(
    pod_labels: dict[str, str], node_labels: dict[str, str], code: Code, reason: str | None
) -> None:
    pod = make_pod("p").labels(pod_labels).obj()
    status = plugin().filter(make_cycle_state(), pod, make_node_info(make_node("n1").labels(node_labels)))
    assert code_of(status) == code
    if reason is not None:
        assert status is not None
        assert status.reasons == (reason,)
        assert status.plugin == NAME


def test_filter_with_a_custom_label() -> None:
    pl = plugin(label="example.com/pool")
    pod = make_pod("p").label("example.com/pool", "batch").obj()
    assert (
        pl.filter(make_cycle_state(), pod, make_node_info(make_node("a").label("example.com/pool", "batch")))
        is None
    )
    st = pl.filter(make_cycle_state(), pod, make_node_info(make_node("b").label(L, "batch")))
    assert st is not None and st.reasons == ("node(s) didn't have label example.com/pool=batch",)


@pytest.mark.parametrize(
    ("pod_labels", "nodes", "reasons"),
    [
        pytest.param(
            {L: "gpu"},
            [{L: "cpu"}, {}],
            (f"no node has label {L}=gpu; label a node or remove the label from the pod",),
            id="no node has the value",
        ),
        pytest.param(
            {L: "gpu"},
            [],
            (f"no node has label {L}=gpu; label a node or remove the label from the pod",),
            id="no node at all",
        ),
        pytest.param({L: "gpu"}, [{L: "gpu"}, {}], (), id="a node has it but failed for other reasons"),
        pytest.param({}, [{}], (), id="unlabelled pod: nothing to say"),
    ],
)
def test_post_filter(
    pod_labels: dict[str, str], nodes: list[dict[str, str]], reasons: tuple[str, ...]
) -> None:
    result, status = plugin(nodes=nodes).post_filter(
        make_cycle_state(), make_pod("p").labels(pod_labels).obj(), {}
    )
    assert result is None
    assert status is not None and status.code == Code.UNSCHEDULABLE
    assert status.reasons == reasons


def test_events_registered() -> None:
    (reg,) = plugin().events_to_register()
    assert ClusterEvent(Resource.NODE, Action.ADD).matches(reg.event)
    assert ClusterEvent(Resource.NODE, Action.UPDATE_NODE_LABEL).matches(reg.event)
    assert not ClusterEvent(Resource.NODE, Action.UPDATE_NODE_TAINT).matches(reg.event)


def _node(labels: dict[str, str] | None, as_json: bool) -> Any:
    if labels is None:
        return None
    b = make_node("n1").labels(labels)
    return b.json() if as_json else b.obj()


@pytest.mark.parametrize("as_json", [False, True])
@pytest.mark.parametrize(
    ("old", "new", "hint"),
    [
        pytest.param(None, {L: "gpu"}, QueueingHint.QUEUE, id="node added with the value"),
        pytest.param(None, {L: "cpu"}, QueueingHint.SKIP, id="node added with another value"),
        pytest.param({}, {L: "gpu"}, QueueingHint.QUEUE, id="label added"),
        pytest.param({L: "cpu"}, {L: "gpu"}, QueueingHint.QUEUE, id="label changed to the value"),
        pytest.param({L: "gpu"}, {L: "gpu", "x": "y"}, QueueingHint.SKIP, id="matched before too"),
        pytest.param({L: "gpu"}, {}, QueueingHint.SKIP, id="label removed"),
    ],
)
def test_node_change_hint(
    old: dict[str, str] | None, new: dict[str, str], hint: QueueingHint, as_json: bool
) -> None:
    pod = make_pod("p").label(L, "gpu").obj()
    assert plugin().is_schedulable_after_node_change(pod, _node(old, as_json), _node(new, as_json)) == hint


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param({"label": ""}, "args.label: '' is not a valid label key", id="empty label"),
        pytest.param(
            {"label": "a/b/c"}, "args.label: 'a/b/c' is not a valid label key", id="label with two slashes"
        ),
        pytest.param({"label": 3}, "args.label: must be a string", id="label not a string"),
        pytest.param({"lable": "x"}, "args.lable: unknown field", id="unknown field"),
    ],
)
def test_bad_args(raw: dict[str, Any], error: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert str(e.value).startswith(error)


@pytest.mark.parametrize(
    ("key", "ok"),
    [
        ("filter", True),
        ("scheduler.pyscheduler.io/filter", True),
        ("example.com/a_b.c-d", True),
        ("x" * 63, True),
        ("x" * 64, False),
        ("/filter", False),
        ("Example.com/filter", False),
        ("example.com/", False),
        ("example.com/-x", False),
        ("a/b/c", False),
        ("has space", False),
    ],
)
def test_label_key_error(key: str, ok: bool) -> None:
    assert (label_key_error(key) is None) is ok


def test_default_args_and_factory() -> None:
    args = PLUGIN.decode(None, "args")
    assert args == LabelMatchArgs(DEFAULT_LABEL)
    pl = PLUGIN.new(args, make_handle())
    assert isinstance(pl, LabelMatch) and pl.name == NAME and pl.label == DEFAULT_LABEL
    assert PLUGIN.decode({"label": "example.com/pool"}, "args").label == "example.com/pool"
