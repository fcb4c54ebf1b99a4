"""NodeResourcesFit batch hooks (filter_nodes/score_nodes over the NodeTable) checked against the
node-by-node path on random clusters."""

import dataclasses
import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.cache import Cache
from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.status import Code
from pyscheduler.framework.types import NodeInfo, PodInfo
from pyscheduler.plugins.node_resources_fit import (
    PRE_FILTER_STATE_KEY,
    Fit,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    GI,
    HUGE,
)
from pyscheduler.testing import score_list
from pyscheduler.testing.builders import (
    PodBuilder,
    make_cycle_state,
    make_node,
    make_pod,
)

# ------------------------------------------------------------------ batch: filter_nodes / score_nodes

BATCH_CPU = [None, "0", "10m", "100m", "250m", "1", "3"]
BATCH_MEM = [None, "0", "64Mi", "200Mi", "1Gi", "3Gi"]


def random_pod(rng: random.Random, name: str, huge: bool = False) -> PodBuilder:
    b = make_pod(name)
    for c in range(rng.choice([1, 1, 1, 2])):
        req: dict[str, str | int] = {}
        cpu, mem = rng.choice(BATCH_CPU), rng.choice(BATCH_MEM)
        if rng.random() < 0.3:
            cpu, mem = f"{rng.randint(0, 3000)}m", str(rng.randint(0, 3 * GI))
        if cpu is not None:
            req["cpu"] = cpu
        if mem is not None:
            req["memory"] = mem
        if rng.random() < 0.2:
            req["ephemeral-storage"] = rng.choice(["0", "1Gi", "20Gi"])
        if rng.random() < 0.1:
            req[FOO] = rng.choice([0, 1, 3])
        if rng.random() < 0.05:
            req[HUGE] = "2Mi"
        if huge and rng.random() < 0.3:
            req["memory"] = rng.choice(["1E", "5000Ti"])
        if req:
            b.res(req, container=c)
    if rng.random() < 0.15:  # pod-level requests (spec.resources), replacing the containers' cpu/memory
        pod_level = {"cpu": f"{rng.randint(1, 3000)}m", "memory": str(rng.randint(1, 3 * GI))}
        b.pod_requests(**dict(rng.sample(sorted(pod_level.items()), rng.randint(1, 2))))
    return b


def random_cluster(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(0, 30)):
        res: dict[str, str | int] = {}
        if rng.random() < 0.95:
            res["cpu"] = rng.choice(["0", "500m", "1", "2", "4", "64"])
        if rng.random() < 0.95:
            res["memory"] = rng.choice(["0", "512Mi", "1Gi", "4Gi", "8Gi"])
        if rng.random() < 0.3:
            res["cpu"], res["memory"] = f"{rng.randint(0, 9000)}m", str(rng.randint(0, 9 * GI))
        if rng.random() < 0.03:
            res["memory"] = "8E"  # beyond the vectorised range: node by node
        if rng.random() < 0.5:
            res["ephemeral-storage"] = rng.choice(["0", "1Gi", "100Gi"])
        if rng.random() < 0.9:
            res["pods"] = rng.choice([0, 1, 2, 3, 110])
        if rng.random() < 0.2:
            res[FOO] = rng.choice([0, 1, 4])
        if rng.random() < 0.1:
            res[HUGE] = "1Gi"
        nodes.append(make_node(f"n{i}").res(res).obj())
    pods = [
        random_pod(rng, f"e{j}").node(f"n{rng.randrange(len(nodes))}").obj()
        for j in range(rng.randint(0, 3 * len(nodes)))
    ]
    return Snapshot.from_nodes(nodes, pods)


def random_fit_args(rng: random.Random) -> NodeResourcesFitArgs | None:
    r = rng.random()
    if r < 0.3:
        return None
    names = ["cpu", "memory", "ephemeral-storage", FOO, HUGE, "pods"]
    resources = tuple(
        ResourceSpec(n, rng.choice([0, 1, 1, 2, 5, 100])) for n in rng.sample(names, rng.randint(1, 4))
    )
    ignored = (FOO,) if rng.random() < 0.2 else ()
    if r < 0.5:
        return NodeResourcesFitArgs(ignored, (), ScoringStrategy("LeastAllocated", resources))
    if r < 0.7:
        return NodeResourcesFitArgs(ignored, (), ScoringStrategy("MostAllocated", resources))
    utils = sorted(rng.sample(range(101), rng.randint(1, 4)))
    shape = tuple(UtilizationShapePoint(u, rng.randint(0, 10)) for u in utils)
    return NodeResourcesFitArgs(
        ignored,
        (),
        ScoringStrategy("RequestedToCapacityRatio", resources, RequestedToCapacityRatioParam(shape)),
    )


def batch_variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
    """The snapshot's nodes as a NodeBatch, a shuffled sub-batch, a plain list, and a batch where
    some nodes are clones with a pod removed or NodeInfos changed since the table was written."""
    table = snap.node_table()
    infos = list(snap.list())
    sub = rng.sample(infos, rng.randint(0, len(infos)))
    stale = []
    for ni in infos:
        if ni.pods and rng.random() < 0.3:
            c = ni.clone()
            c.remove_pod(rng.choice(c.pods).pod)
            stale.append(c)
        else:
            stale.append(ni)
    out: list[Sequence[NodeInfo]] = [NodeBatch(infos, table), NodeBatch(sub, table), list(infos)]
    out.append(NodeBatch(stale, table))
    return out


@pytest.fixture
def every_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectorise batches of any size (even empty), so small random clusters reach the NumPy code."""
    import pyscheduler.plugins.node_resources_fit as mod

    monkeypatch.setattr(mod, "FILTER_MIN_BATCH", 0)
    monkeypatch.setattr(mod, "SCORE_MIN_BATCH", 0)


@pytest.mark.parametrize("seed", range(300))
@pytest.mark.usefixtures("every_batch_size")
def test_batch_equals_node_by_node(seed: int) -> None:
    check_batch_equals_node_by_node(seed)


def check_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_cluster(rng)
    plugin = Fit(random_fit_args(rng))
    pod = random_pod(rng, "p", huge=rng.random() < 0.05).obj()
    dra = rng.random() < 0.2  # FOO backed by a DeviceClass: not checked where a node does not list it
    for variant in batch_variants(rng, snap):
        for prepare in (True, False):
            state = make_cycle_state()
            if prepare or dra:
                plugin.pre_filter(state, pod, variant)
                plugin.pre_score(state, pod, variant)
            if dra:
                req = state.read(PRE_FILTER_STATE_KEY)
                state.write(PRE_FILTER_STATE_KEY, dataclasses.replace(req, dra=frozenset({FOO})))
            assert plugin.filter_nodes(state, pod, variant) == [
                plugin.filter(state, pod, ni) for ni in variant
            ]
            assert score_list(plugin.score_nodes(state, pod, variant)) == (
                [plugin.score(state, pod, ni)[0] for ni in variant],
                None,
            )
    # a node the table does not hold, and one changed in place since its row was written
    infos = list(snap.list())
    late = NodeInfo(make_node("late").capacity(cpu="1", memory="1Gi", pods=1).obj())
    late.add_pod(make_pod("x").req(cpu="1").obj())
    if infos:
        infos[0].add_pod(random_pod(rng, "y").node(infos[0].name).obj())
    nodes = NodeBatch([*infos, late], snap.node_table())
    state = make_cycle_state()
    assert plugin.filter_nodes(state, pod, nodes) == [plugin.filter(state, pod, ni) for ni in nodes]
    assert score_list(plugin.score_nodes(state, pod, nodes)) == (
        [plugin.score(state, pod, ni)[0] for ni in nodes],
        None,
    )


@pytest.mark.parametrize("seed", range(200))
def test_the_nominated_pass_over_many_nodes_equals_node_by_node(seed: int) -> None:
    """filter_adjusted_many (the nominated pods' pass over a chunk) gives filter_adjusted's Status on
    every node, random pods added (extended resources, ephemeral storage, pod counts included)."""
    rng = random.Random(seed)
    snap = random_cluster(rng)
    plugin = Fit(random_fit_args(rng))
    pod = random_pod(rng, "p", huge=rng.random() < 0.05).obj()
    infos = list(snap.list())
    added = [
        [PodInfo(random_pod(rng, f"nom{i}-{j}").obj()) for j in range(rng.choice([0, 1, 1, 2, 4]))]
        for i in range(len(infos))
    ]
    state = make_cycle_state()
    if rng.random() < 0.8:
        plugin.pre_filter(state, pod, infos)
    want = [plugin.filter_adjusted(state, pod, ni, pis, ()) for ni, pis in zip(infos, added, strict=True)]
    assert plugin.filter_adjusted_many(state, pod, infos, added) == want


def _counting(monkeypatch: pytest.MonkeyPatch, name: str) -> list[int]:
    """Count the calls of ``name`` in the plugin module that returned a vectorised answer."""
    import pyscheduler.plugins.node_resources_fit as mod

    real = getattr(mod, name)
    hits = [0]

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        hits[0] += out is not None
        return out

    monkeypatch.setattr(mod, name, wrapped)
    return hits


@pytest.mark.usefixtures("every_batch_size")
def test_batch_paths_are_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random test above must reach the vectorised code, not only the node-by-node fallback."""
    hits = {n: _counting(monkeypatch, n) for n in ("filter_failures", "least_cpu_memory", "strategy_scores")}
    for seed in range(60):
        check_batch_equals_node_by_node(seed)
    assert all(h[0] > 20 for h in hits.values()), {n: h[0] for n, h in hits.items()}


def big_batch(n: int = 40) -> tuple[Snapshot, list[NodeInfo]]:
    nodes = [
        make_node(f"n{i}").capacity(cpu=str(1 + i % 5), memory=f"{1 + i % 7}Gi", pods=3).obj()
        for i in range(n)
    ]
    pods = [make_pod(f"e{j}").req(cpu="300m", memory="300Mi").node(f"n{j % n}").obj() for j in range(2 * n)]
    snap = Snapshot.from_nodes(nodes, pods)
    return snap, list(snap.list())


@pytest.mark.usefixtures("every_batch_size")
def test_batch_filter_known_answers() -> None:
    snap, infos = big_batch()
    plugin = Fit()
    pod = make_pod("p").req(cpu="3500m", memory="1Gi").obj()
    state = make_cycle_state()
    plugin.pre_filter(state, pod, infos)
    got = plugin.filter_nodes(state, pod, NodeBatch(infos, snap.node_table()))
    # nodes n{i} with i % 5 == 3 or 4 have 4 or 5 cpu; each runs 2 pods of 300m
    for ni, s in zip(infos, got, strict=True):
        i = int(ni.name[1:])
        free = (1 + i % 5) * 1000 - 600
        fits_mem = (1 + i % 7) * 1024 - 600 >= 1024
        expect_ok = free >= 3500 and fits_mem
        assert (s is None) == expect_ok, (ni.name, s)


def test_batch_plain_list_and_small_batches() -> None:
    snap, infos = big_batch()
    pod = make_pod("p").req(cpu="1", memory="1Gi").obj()
    for args in (None, NodeResourcesFitArgs(scoring_strategy=ScoringStrategy("MostAllocated"))):
        plugin = Fit(args)
        state = make_cycle_state()
        plugin.pre_score(state, pod, infos)
        for nodes in (infos, infos[:3], [], NodeBatch(infos[:2], snap.node_table())):
            want = [plugin.score(state, pod, ni)[0] for ni in nodes]
            assert score_list(plugin.score_nodes(state, pod, nodes)) == (want, None)
            assert plugin.filter_nodes(state, pod, nodes) == [plugin.filter(state, pod, ni) for ni in nodes]


@pytest.mark.usefixtures("every_batch_size")
def test_extended_resource_only_one_node_has() -> None:
    """scheduler_perf's SchedulingWithExtendedResource: each node offers its own extended resource, each
    pod asks for one of them. In one batch every other node is rejected, unresolvably (it offers none),
    with kube's reason, and the node that has it passes until a pod holds it."""
    nodes = [
        make_node(f"n{i}").res({"cpu": "4", "memory": "8Gi", "pods": 110, f"foo.com/bar-{i}": 1}).obj()
        for i in range(60)
    ]
    holder = make_pod("holder").res({"foo.com/bar-9": 1}).node("n9").obj()
    snap = Snapshot.from_nodes(nodes, [holder])
    infos = NodeBatch(list(snap.list()), snap.node_table())
    plugin = Fit(None)
    for want, fits_on in ((7, {"n7"}), (9, set())):
        pod = make_pod("p").res({f"foo.com/bar-{want}": 1}).obj()
        state = make_cycle_state()
        plugin.pre_filter(state, pod, infos)
        got = plugin.filter_nodes(state, pod, infos)
        assert got == [plugin.filter(state, pod, ni) for ni in infos]
        assert {ni.name for ni, st in zip(infos, got, strict=True) if st is None} == fits_on
        rejected = {(st.code, st.reasons) for st in got if st is not None}
        reason = (f"Insufficient foo.com/bar-{want}",)
        expected = {(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, reason)}
        if not fits_on:  # n9 has it, but the holder uses it: short, not unresolvable there
            expected.add((Code.UNSCHEDULABLE, reason))
        assert rejected == expected
    # The same resource backed by a DeviceClass (DRAExtendedResource): the nodes that do not list it
    # leave it to DynamicResources, so NodeResourcesFit passes them all.
    pod = make_pod("p").res({"foo.com/bar-9": 1}).obj()
    state = make_cycle_state()
    plugin.pre_filter(state, pod, infos)
    req = state.read(PRE_FILTER_STATE_KEY)
    state.write(PRE_FILTER_STATE_KEY, dataclasses.replace(req, dra=frozenset({"foo.com/bar-9"})))
    got = plugin.filter_nodes(state, pod, infos)
    assert got == [plugin.filter(state, pod, ni) for ni in infos]
    assert [ni.name for ni, st in zip(infos, got, strict=True) if st is not None] == ["n9"]


@pytest.mark.usefixtures("every_batch_size")
def test_extended_resource_follows_nodes_and_pods_between_cycles() -> None:
    """The index of which nodes offer each extended resource is kept across cycles: a node that stops
    offering it, one that starts, and a pod taking the last unit are all seen on the next cycle."""

    def offering(i: int, res: str | None) -> Any:
        extra = {res: 1} if res else {}
        return make_node(f"n{i}").res({"cpu": "4", "memory": "8Gi", "pods": 110, **extra}).obj()

    cache = Cache()
    nodes = [offering(i, "foo.com/gpu" if i == 3 else None) for i in range(50)]
    for node in nodes:
        cache.add_node(node)
    snap = Snapshot()
    plugin = Fit(None)
    pod = make_pod("p").res({"foo.com/gpu": 1}).obj()

    def fitting() -> set[str]:
        cache.update_snapshot(snap)
        infos = NodeBatch(list(snap.list()), snap.node_table())
        state = make_cycle_state()
        plugin.pre_filter(state, pod, infos)
        got = plugin.filter_nodes(state, pod, infos)
        assert got == [plugin.filter(state, pod, ni) for ni in infos]
        return {ni.name for ni, st in zip(infos, got, strict=True) if st is None}

    assert fitting() == {"n3"}
    for i, res in ((3, None), (7, "foo.com/gpu")):  # n3 stops offering it, n7 starts
        new = offering(i, res)
        cache.update_node(nodes[i], new)
        nodes[i] = new
    assert fitting() == {"n7"}
    cache.add_pod(make_pod("holder").res({"foo.com/gpu": 1}).node("n7").obj())
    assert fitting() == set()
