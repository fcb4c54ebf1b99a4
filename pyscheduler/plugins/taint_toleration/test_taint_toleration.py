import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.events import Action, ClusterEvent, QueueingHint, Resource
from pyscheduler.framework.helpers import default_normalize_score
from pyscheduler.framework.interfaces import NodeScore
from pyscheduler.framework.node_table import NodeBatch, NodeTable
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
from pyscheduler.plugins.taint_toleration import batch as batch_mod
from pyscheduler.testing import make_handle, score_list
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
    assert isinstance(PLUGIN.new(None, make_handle()), TaintToleration)


# ------------------------------------------------------------------------------------ batch hooks

TAINT_CHOICES: list[TaintSpec] = [
    ("dedicated", "gpu", "NoSchedule"),
    ("dedicated", "cpu", "NoSchedule"),
    ("spot", "", "NoExecute"),
    ("soft", "a", "PreferNoSchedule"),
    ("soft", "b", "PreferNoSchedule"),
    ("other", "", "PreferNoSchedule"),
]
TOLERATION_CHOICES: list[dict[str, str]] = [
    dict(key="dedicated", value="gpu", effect="NoSchedule"),
    dict(key="dedicated", operator="Exists"),
    dict(key="spot", operator="Exists", effect="NoExecute"),
    dict(key="soft", value="a"),
    dict(key="soft", operator="Exists", effect="PreferNoSchedule"),
    dict(key="other", operator="Exists", effect="NoSchedule"),
    dict(operator="Exists"),
]


def random_taint_snapshot(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(1, 30)):
        taints = rng.sample(TAINT_CHOICES, rng.randint(1, 3)) if rng.random() < 0.4 else []
        b = node_with(taints, f"n{i}").capacity(cpu="4", memory="8Gi", pods=10)
        if rng.random() < 0.1:
            b.res({"example.com/foo": "2"})
        nodes.append(b.obj())
    pods = [
        make_pod(f"e{j}").req(cpu="100m").node(f"n{rng.randrange(len(nodes))}").obj()
        for j in range(rng.randint(0, 2 * len(nodes)))
    ]
    return Snapshot.from_nodes(nodes, pods)


def taint_variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
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


def check_taint_batch(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_taint_snapshot(rng)
    pl = TaintToleration()
    for _ in range(3):  # several pods against one plugin: cached answers must be keyed right
        pod = pod_with(rng.sample(TOLERATION_CHOICES, rng.randint(0, 3))).obj()
        for variant in taint_variants(rng, snap):
            for prepare in (True, False):
                state = make_cycle_state()
                if prepare:
                    pl.pre_score(state, pod, variant)
                assert list(pl.filter_nodes(state, pod, variant)) == [
                    pl.filter(state, pod, ni) for ni in variant
                ]
                got, st = pl.score_nodes(state, pod, variant)
                assert st is None
                assert list(got) == [pl.score(state, pod, ni)[0] for ni in variant]


@pytest.mark.parametrize("seed", range(300))
def test_batch_equals_node_by_node(seed: int) -> None:
    check_taint_batch(seed)


def test_batch_paths_are_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random test must reach the cached per-row code, not only the node-by-node fallback."""
    hits = {"filter_statuses": 0, "score_counts": 0}
    for name in hits:
        real = getattr(batch_mod.TaintCache, name)

        def counting(self: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            hits[_name] += 1
            return _real(self, *args)

        monkeypatch.setattr(batch_mod.TaintCache, name, counting)
    for seed in range(40):
        check_taint_batch(seed)
    assert all(h > 40 for h in hits.values()), hits


def test_batch_known_answers_and_cache() -> None:
    nodes = [
        node_with([("dedicated", "gpu", "NoSchedule")] if i % 3 == 0 else [], f"n{i}").obj() for i in range(9)
    ]
    nodes[4] = node_with([("soft", "", "PreferNoSchedule")] * 2, "n4").obj()
    snap = Snapshot.from_nodes(nodes)
    infos = list(snap.list())
    batch = NodeBatch(infos, snap.node_table())
    pl = TaintToleration()
    state = make_cycle_state()
    plain = make_pod("p").obj()
    got = pl.filter_nodes(state, plain, batch)
    assert [s is None for s in got] == [int(ni.name[1:]) % 3 != 0 for ni in infos]
    assert all(
        s is None or (s.code, s.reasons, s.plugin) == (UNRESOLVABLE, (ERR_REASON_UNTOLERATED,), NAME)
        for s in got
    )
    tolerant = pod_with([dict(key="dedicated", operator="Exists")]).obj()
    assert pl.filter_nodes(state, tolerant, batch) == [None] * 9
    assert pl.filter_nodes(state, plain, batch) == got  # the first toleration set, cached
    assert len(pl._cache.filters) == 2
    assert score_list(pl.score_nodes(state, plain, batch)) == (
        [2 if ni.name == "n4" else 0 for ni in infos],
        None,
    )
    # a node retainted in place bumps the table's node epoch: the cache is rebuilt
    ni = next(x for x in infos if x.name == "n1")
    ni.set_node(node_with([("spot", "", "NoExecute")], "n1").obj())
    snap.node_table().update([ni])
    again = pl.filter_nodes(state, plain, NodeBatch(infos, snap.node_table()))
    assert again == [pl.filter(state, plain, x) for x in infos]
    assert again[infos.index(ni)] is not None


def test_batch_untainted_and_nodeless_rows() -> None:
    table = NodeTable()
    infos = [NodeInfo(), make_node_info(make_node("n1")), NodeInfo()]
    table.rebuild(infos)
    pl = TaintToleration()
    state = make_cycle_state()
    pod = make_pod("p").obj()
    assert pl.filter_nodes(state, pod, NodeBatch(infos, table)) == [None, None, None]
    assert score_list(pl.score_nodes(state, pod, NodeBatch(infos, table))) == ([0, 0, 0], None)
    assert pl.filter_nodes(state, pod, []) == []


def test_batch_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_mod, "MAX_ENTRIES", 3)
    snap = Snapshot.from_nodes([node_with([("k", "v", "NoSchedule")], f"n{i}").obj() for i in range(4)])
    batch = NodeBatch(list(snap.list()), snap.node_table())
    pl = TaintToleration()
    for i in range(8):
        pod = pod_with([dict(key="k", value=str(i % 5))]).obj()
        state = make_cycle_state()
        assert pl.filter_nodes(state, pod, batch) == [pl.filter(state, pod, ni) for ni in batch]
    assert len(pl._cache.filters) == 3
