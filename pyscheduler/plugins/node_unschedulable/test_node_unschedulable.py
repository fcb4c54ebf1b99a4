import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.node_table import NodeBatch, NodeTable
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo
from pyscheduler.plugins.node_unschedulable import (
    ERR_REASON_UNKNOWN_CONDITION,
    ERR_REASON_UNSCHEDULABLE,
    NAME,
    PLUGIN,
    NodeUnschedulable,
)
from pyscheduler.testing import make_handle
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
    assert isinstance(PLUGIN.new(None, make_handle()), NodeUnschedulable)


# ------------------------------------------------------------------------------------ batch hooks

TOLERATIONS: list[dict[str, str]] = [
    dict(key=KEY, effect="NoSchedule"),
    dict(key=KEY, effect="NoExecute"),
    dict(operator="Exists"),
    dict(key="other"),
]


def random_unschedulable_snapshot(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(1, 30)):
        b = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10).unschedulable(rng.random() < 0.3)
        if rng.random() < 0.1:
            b.res({"example.com/foo": "2"})
        nodes.append(b.obj())
    pods = [
        make_pod(f"e{j}").req(cpu="100m").node(f"n{rng.randrange(len(nodes))}").obj()
        for j in range(rng.randint(0, 2 * len(nodes)))
    ]
    return Snapshot.from_nodes(nodes, pods)


def variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
    """A NodeBatch of all nodes, a shuffled sub-batch, a plain list, and a batch with stale clones."""
    table = snap.node_table()
    infos = list(snap.list())
    sub = rng.sample(infos, rng.randint(0, len(infos)))
    stale = []
    for ni in infos:
        if ni.pods and rng.random() < 0.3:
            c = ni.clone()
            c.remove_pod(c.pods[0].pod)
            stale.append(c)
        else:
            stale.append(ni)
    return [NodeBatch(infos, table), NodeBatch(sub, table), list(infos), NodeBatch(stale, table)]


@pytest.mark.parametrize("seed", range(300))
def test_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_unschedulable_snapshot(rng)
    pl = NodeUnschedulable()
    for _ in range(3):
        b = make_pod("p")
        for t in rng.sample(TOLERATIONS, rng.randint(0, 2)):
            b.toleration(**t)
        pod = b.obj()
        for variant in variants(rng, snap):
            state = make_cycle_state()
            assert list(pl.filter_nodes(state, pod, variant)) == [pl.filter(state, pod, ni) for ni in variant]


def test_batch_reads_the_column_and_checks_only_flagged_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    nodes = [make_node(f"n{i}").unschedulable(i % 4 == 1).obj() for i in range(12)]
    snap = Snapshot.from_nodes(nodes)
    infos = list(snap.list())
    pl = NodeUnschedulable()
    checked: list[str] = []
    real = pl.filter

    def spy(state: Any, pod: Any, ni: NodeInfo) -> Status | None:
        checked.append(ni.name)
        return real(state, pod, ni)

    monkeypatch.setattr(pl, "filter", spy)
    got = pl.filter_nodes(make_cycle_state(), make_pod("p").obj(), NodeBatch(infos, snap.node_table()))
    cordoned = {f"n{i}" for i in range(12) if i % 4 == 1}
    assert sorted(checked) == sorted(cordoned)
    for ni, s in zip(infos, got, strict=True):
        if ni.name in cordoned:
            assert s is not None and s.reasons == (ERR_REASON_UNSCHEDULABLE,) and s.plugin == NAME
        else:
            assert s is None
    # a node cordoned in place: the column follows it
    ni = next(x for x in infos if x.name == "n0")
    ni.set_node(make_node("n0").unschedulable().obj())
    snap.node_table().update([ni])
    again = pl.filter_nodes(make_cycle_state(), make_pod("p").obj(), NodeBatch(infos, snap.node_table()))
    assert again[infos.index(ni)] is not None


def test_batch_rows_without_node_and_plain_lists() -> None:
    table = NodeTable()
    infos = [NodeInfo(), make_node_info(make_node("n1").unschedulable()), make_node_info(make_node("n2"))]
    table.rebuild(infos)
    pl = NodeUnschedulable()
    state = make_cycle_state()
    tolerant = make_pod("t").toleration(key=KEY).obj()
    for pod in (make_pod("p").obj(), tolerant):
        for nodes in (NodeBatch(infos, table), infos, infos[1:], [], NodeBatch(infos[2:], table)):
            assert list(pl.filter_nodes(state, pod, nodes)) == [pl.filter(state, pod, ni) for ni in nodes]
    got = pl.filter_nodes(state, tolerant, NodeBatch(infos, table))
    assert got[0] is not None and got[0].reasons == (ERR_REASON_UNKNOWN_CONDITION,)
    assert got[1:] == [None, None]
