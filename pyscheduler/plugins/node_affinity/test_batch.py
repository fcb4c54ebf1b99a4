"""NodeAffinity batch hooks (filter_nodes/score_nodes over the NodeTable) checked against the node-by-node
path on random clusters."""

import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.node_table import NodeBatch, NodeTable
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.node_affinity import (
    ERR_REASON_ENFORCED,
    ERR_REASON_POD,
    NAME,
    NodeAffinity,
    NodeAffinityArgs,
)
from pyscheduler.plugins.node_affinity import batch as batch_mod
from pyscheduler.plugins.node_affinity._fixtures import (
    PREF,
    REQ,
    expr,
    pod_required,
)
from pyscheduler.testing import score_list
from pyscheduler.testing.builders import make_cycle_state, make_node, make_pod

# ------------------------------------------------------------------------------------ batch hooks


LABEL_VALUES = {
    "group": ["a", "b", "c"],
    "disk": ["ssd", "hdd"],
    "num": ["1", "5", "12", "x"],
    "tier": ["gold"],
}


def random_expr(rng: random.Random) -> dict[str, Any]:
    key = rng.choice([*LABEL_VALUES, "missing"])
    values = LABEL_VALUES.get(key, ["v"])
    op = rng.choice(["In", "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"])
    if op in ("Gt", "Lt"):
        return expr(key if rng.random() < 0.7 else "num", op, rng.choice(["0", "4", "10"]))
    if op in ("Exists", "DoesNotExist"):
        return expr(key, op)
    return expr(key, op, *rng.sample(values, rng.randint(1, len(values))))


def random_term(rng: random.Random, n_nodes: int) -> dict[str, Any]:
    r = rng.random()
    if r < 0.05:
        return {}  # dropped: selects nothing
    if r < 0.1:
        return {"matchExpressions": [{"key": "group", "operator": "Bogus", "values": ["a"]}]}  # parse error
    term: dict[str, Any] = {"matchExpressions": [random_expr(rng) for _ in range(rng.randint(1, 2))]}
    if rng.random() < 0.1:
        op = rng.choice(["In", "NotIn"])
        term["matchFields"] = [
            {"key": "metadata.name", "operator": op, "values": [f"n{rng.randrange(n_nodes)}"]}
        ]
    return term


def random_affinity_pod(rng: random.Random, n_nodes: int) -> Pod:
    b = make_pod("p")
    if rng.random() < 0.4:
        b.node_selector(
            {k: rng.choice(LABEL_VALUES[k]) for k in rng.sample(sorted(LABEL_VALUES), rng.randint(1, 2))}
        )
    na: dict[str, Any] = {}
    if rng.random() < 0.7:
        na[REQ] = {"nodeSelectorTerms": [random_term(rng, n_nodes) for _ in range(rng.randint(0, 3))]}
    if rng.random() < 0.6:
        na[PREF] = [
            {"weight": rng.choice([0, 1, 5, 100]), "preference": random_term(rng, n_nodes)}
            for _ in range(rng.randint(0, 3))
        ]
    if na:
        b.affinity({"nodeAffinity": na})
    return b.obj()


def random_added_args(rng: random.Random, n_nodes: int) -> NodeAffinityArgs | None:
    if rng.random() < 0.5:
        return None
    added: dict[str, Any] = {}
    if rng.random() < 0.6:
        terms = [random_term(rng, n_nodes) for _ in range(rng.randint(1, 2))]
        terms = [t for t in terms if t and t["matchExpressions"][0]["operator"] != "Bogus"] or [
            {"matchExpressions": [expr("disk", "Exists")]}
        ]
        added[REQ] = {"nodeSelectorTerms": terms}
    if rng.random() < 0.6:
        added[PREF] = [{"weight": rng.randint(1, 50), "preference": {"matchExpressions": [random_expr(rng)]}}]
    return NodeAffinityArgs(added)


def random_nodes_snapshot(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(1, 30)):
        b = make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=10)
        for k, vs in LABEL_VALUES.items():
            if rng.random() < 0.8:
                b.label(k, rng.choice(vs))
        if rng.random() < 0.1:
            b.res({"example.com/foo": "2"})
        nodes.append(b.obj())
    pods = [
        make_pod(f"e{j}").req(cpu="100m").node(f"n{rng.randrange(len(nodes))}").obj()
        for j in range(rng.randint(0, 2 * len(nodes)))
    ]
    return Snapshot.from_nodes(nodes, pods)


def node_variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
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


def assert_same_scores(pl: NodeAffinity, state: Any, pod: Pod, nodes: Sequence[NodeInfo]) -> None:
    want: list[int] = []
    err: Status | None = None
    for ni in nodes:
        v, s = pl.score(state, pod, ni)
        if s is not None:
            err = s
            break
        want.append(v)
    got, s = pl.score_nodes(state, pod, nodes)
    if err is None:
        assert s is None
        assert list(got) == want
    else:
        assert s is not None
        assert (s.code, s.reasons, s.plugin) == (err.code, err.reasons, err.plugin)


def check_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_nodes_snapshot(rng)
    n = len(snap.list())
    pl = NodeAffinity(random_added_args(rng, n))
    for _ in range(3):  # several pods against one plugin: cached answers must be keyed right
        pod = random_affinity_pod(rng, n)
        for variant in node_variants(rng, snap):
            for prepare in (True, False):
                state = make_cycle_state()
                if prepare:
                    pl.pre_filter(state, pod, variant)
                    pl.pre_score(state, pod, variant)
                assert list(pl.filter_nodes(state, pod, variant)) == [
                    pl.filter(state, pod, ni) for ni in variant
                ]
                assert_same_scores(pl, state, pod, variant)
                if isinstance(variant, NodeBatch):  # the same pod's next chunk: answered from ``last``
                    part = variant.subset(list(range(0, len(variant), 2)))
                    assert list(pl.filter_nodes(state, pod, part)) == [
                        pl.filter(state, pod, ni) for ni in part
                    ]
                    assert_same_scores(pl, state, pod, part)


@pytest.mark.parametrize("seed", range(300))
def test_batch_equals_node_by_node(seed: int) -> None:
    check_batch_equals_node_by_node(seed)


def test_batch_paths_are_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random test must reach the cached per-row code, not only the node-by-node fallback."""
    calls = [0]
    real = batch_mod.per_row

    def counting(*args: Any, **kwargs: Any) -> Any:
        calls[0] += 1
        return real(*args, **kwargs)

    import pyscheduler.plugins.node_affinity as mod

    monkeypatch.setattr(mod, "per_row", counting)
    for seed in range(40):
        check_batch_equals_node_by_node(seed)
    assert calls[0] > 40


def group_cluster(n: int = 40) -> tuple[Snapshot, list[NodeInfo]]:
    nodes = [make_node(f"n{i}").label("group", "ab"[i % 2]).obj() for i in range(n)]
    snap = Snapshot.from_nodes(nodes)
    return snap, list(snap.list())


def test_batch_filter_known_answers_and_cache_hit(monkeypatch: pytest.MonkeyPatch) -> None:
    snap, infos = group_cluster()
    pl = NodeAffinity()
    pod = pod_required({"matchExpressions": [expr("group", "In", "a")]}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    got = pl.filter_nodes(state, pod, NodeBatch(infos, snap.node_table()))
    assert [s is None for s in got] == [int(ni.name[1:]) % 2 == 0 for ni in infos]
    assert all(s is None or s.reasons == (ERR_REASON_POD,) for s in got)
    # a second pod with the same requirement is answered from the cache
    monkeypatch.setattr(pl, "_filter_node", lambda *a: pytest.fail("not cached"))
    other = pod_required({"matchExpressions": [expr("group", "In", "a")]}).obj()
    state2 = make_cycle_state()
    pl.pre_filter(state2, other, infos)
    assert pl.filter_nodes(state2, other, NodeBatch(infos[:5], snap.node_table())) == got[:5]


def test_batch_cache_keyed_on_selector_and_affinity() -> None:
    snap, infos = group_cluster()
    table = snap.node_table()
    pl = NodeAffinity()
    want_a = [int(ni.name[1:]) % 2 == 0 for ni in infos]
    for pod, want in [
        (make_pod("p1").node_selector({"group": "a"}).obj(), want_a),
        (make_pod("p2").node_selector({"group": "b"}).obj(), [not w for w in want_a]),
        (pod_required({"matchExpressions": [expr("group", "In", "b")]}).obj(), [not w for w in want_a]),
        (
            pod_required({"matchExpressions": [expr("group", "In", "b")]})
            .node_selector({"group": "a"})
            .obj(),
            [False] * len(infos),
        ),
        (make_pod("p3").node_selector({"group": "a"}).obj(), want_a),
    ]:
        state = make_cycle_state()
        pl.pre_filter(state, pod, infos)
        assert [s is None for s in pl.filter_nodes(state, pod, NodeBatch(infos, table))] == want


def test_batch_cache_follows_node_changes() -> None:
    """A node relabelled in place bumps the table's node epoch: cached answers are recomputed."""
    snap, infos = group_cluster(6)
    table = snap.node_table()
    pl = NodeAffinity()
    pod = make_pod("p").node_selector({"group": "a"}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    before = pl.filter_nodes(state, pod, NodeBatch(infos, table))
    ni = infos[1]
    assert before[1] is not None
    ni.set_node(make_node(ni.name).label("group", "a").obj())
    table.update([ni])
    after = pl.filter_nodes(state, pod, NodeBatch(infos, table))
    assert after[1] is None
    assert after == [pl.filter(state, pod, x) for x in infos]


def test_batch_cache_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(batch_mod, "MAX_ENTRIES", 4)
    snap, infos = group_cluster(8)
    table = snap.node_table()
    pl = NodeAffinity()
    for i in range(10):
        pod = make_pod("p").node_selector({"group": "a", "k": str(i)}).obj()
        state = make_cycle_state()
        pl.pre_filter(state, pod, infos)
        assert pl.filter_nodes(state, pod, NodeBatch(infos, table)) == [
            pl.filter(state, pod, x) for x in infos
        ]
    assert len(pl._filter_cache.entries) == 4


def test_batch_rows_without_node() -> None:
    """Rows whose NodeInfo has no Node: Filter rejects them, Score gives 0, as node by node."""
    table = NodeTable()
    infos = [NodeInfo(), NodeInfo(make_node("n1").label("group", "a").obj()), NodeInfo()]
    table.rebuild(infos)
    pl = NodeAffinity(
        NodeAffinityArgs(
            {PREF: [{"weight": 3, "preference": {"matchExpressions": [expr("group", "Exists")]}}]}
        )
    )
    pod = make_pod("p").node_selector({"group": "a"}).preferred_node_affinity(7, "group", ["a"]).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    pl.pre_score(state, pod, infos)
    batch = NodeBatch(infos, table)
    assert pl.filter_nodes(state, pod, batch) == [ERR_POD_STATUS, None, ERR_POD_STATUS]
    assert score_list(pl.score_nodes(state, pod, batch)) == ([0, 10, 0], None)
    # a preferred term that does not parse, PreScore skipped: an error only if some node is there
    bad = (
        make_pod("q")
        .affinity(
            {
                "nodeAffinity": {
                    PREF: [
                        {"weight": 1, "preference": {"matchExpressions": [{"key": "a", "operator": "Bogus"}]}}
                    ]
                }
            }
        )
        .obj()
    )
    assert score_list(pl.score_nodes(make_cycle_state(), bad, NodeBatch([infos[0]], table))) == ([0], None)
    _, s = pl.score_nodes(make_cycle_state(), bad, batch)
    assert s is not None and s.code == Code.ERROR


ERR_POD_STATUS = Status.unresolvable(ERR_REASON_POD, plugin=NAME)


def test_batch_plain_list_and_match_fields() -> None:
    snap, infos = group_cluster(10)
    pl = NodeAffinity(
        NodeAffinityArgs(
            {
                REQ: {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n3"]}]}
                    ]
                }
            }
        )
    )
    pod = make_pod("p").node_selector({"group": "b"}).obj()
    state = make_cycle_state()
    pl.pre_filter(state, pod, infos)
    for nodes in (infos, infos[:3], [], NodeBatch(infos, snap.node_table())):
        assert list(pl.filter_nodes(state, pod, nodes)) == [pl.filter(state, pod, ni) for ni in nodes]
    got = pl.filter_nodes(state, pod, NodeBatch(infos, snap.node_table()))
    by_name = {ni.name: s for ni, s in zip(infos, got, strict=True)}
    assert by_name["n3"] is not None and by_name["n3"].reasons == (ERR_REASON_ENFORCED,)
    assert by_name["n5"] is None and by_name["n4"] is not None
