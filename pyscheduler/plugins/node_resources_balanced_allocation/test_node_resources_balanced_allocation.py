import math
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.plugin_args import ArgsError, decode_args
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import NodeInfo
from pyscheduler.plugins.node_resources_balanced_allocation import (
    NAME,
    PLUGIN,
    PRE_SCORE_STATE_KEY,
    BalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    ResourceSpec,
    balanced_score,
)
from pyscheduler.plugins.node_resources_balanced_allocation.batch import _balance, improvement_scores
from pyscheduler.testing import score_list
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_cycle_state,
    make_node,
    make_node_info,
    make_pod,
)

FOO = "example.com/foo"
HUGE = "hugepages-2Mi"


def node(
    cpu: str | int = "4", memory: str | int = "8Gi", pods: str | int = 110, **extra: str | int
) -> NodeBuilder:
    b = make_node("n1").capacity(cpu=cpu, memory=memory, pods=pods)
    if extra:
        b.res({k.replace("_", "-"): v for k, v in extra.items()})
    return b


def resources(*names: str) -> dict[str, Any]:
    return {"resources": [{"name": n} for n in names]}


def run(
    raw_args: dict[str, Any] | None,
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder] | tuple[()] = (),
    prescore: bool = True,
) -> int | Status:
    plugin = BalancedAllocation(decode_args(NodeResourcesBalancedAllocationArgs, raw_args))
    info = make_node_info(node_b, *existing)
    state = make_cycle_state()
    p = pod.obj()
    if prescore:
        status = plugin.pre_score(state, p, [info])
        if status is not None:
            return status
    score, status = plugin.score(state, p, info)
    assert status is None
    return score


STD3 = math.sqrt(((0.25 - 0.5) ** 2 * 2 + 0.5**2) / 3)  # fractions .25, .25, 1


def improvement(with_pod: int, without_pod: int) -> int:
    """kube 1.36's score from the balance (0-100) of the node with and without the pod."""
    return 50 + (50 + with_pod - without_pod) // 2


# Each case states the node's balance with the pod and without it (100 = perfectly balanced).
CASES = [
    (
        "balanced pod on an empty node: no change",
        None,
        make_pod("p").req(cpu="1", memory="2Gi"),
        node(),
        [],
        improvement(100, 100),
    ),
    (
        "cpu .5 memory .25 unbalances an empty node",
        None,
        make_pod("p").req(cpu="2", memory="2Gi"),
        node(),
        [],
        improvement(87, 100),
    ),
    (
        "existing requests counted on both sides",
        None,
        make_pod("p").req(cpu="1", memory="2Gi"),
        node(),
        [make_pod("e").req(cpu="1")],
        improvement(87, 87),
    ),
    (
        "a pod that rebalances a cpu-heavy node scores above 75",
        None,
        make_pod("p").req(memory="4Gi"),
        node(),
        [make_pod("e").req(cpu="2")],
        improvement(100, 75),
    ),
    (
        "best-effort existing pods count nothing",
        None,
        make_pod("p").req(cpu="1", memory="2Gi"),
        node(),
        [make_pod("e"), make_pod("f")],
        improvement(100, 100),
    ),
    (
        "only memory requested: cpu fraction 0",
        None,
        make_pod("p").req(memory="2Gi"),
        node(),
        [],
        improvement(87, 100),
    ),
    (
        "fraction capped at 1",
        None,
        make_pod("p").req(cpu="8", memory="2Gi"),
        node(),
        [],
        improvement(62, 100),
    ),
    (
        "overhead counted",
        None,
        make_pod("p").req(cpu="1", memory="2Gi").overhead(cpu="1"),
        node(),
        [],
        improvement(87, 100),
    ),
    (
        "three resources use the standard deviation",
        resources("cpu", "memory", FOO),
        make_pod("p").req(cpu="1", memory="2Gi").res({FOO: 4}),
        node(**{FOO: 4}),
        [],
        improvement(int((1 - STD3) * 100), 100),
    ),
    (
        "extended resource the node lacks is left out",
        resources("cpu", "memory", FOO),
        make_pod("p").req(cpu="2", memory="2Gi").res({FOO: 4}),
        node(),
        [],
        improvement(87, 100),
    ),
    (
        "extended resource the pod does not request is left out",
        resources("cpu", "memory", FOO),
        make_pod("p").req(cpu="2", memory="2Gi"),
        node(**{FOO: 4}),
        [make_pod("e").res({FOO: 4})],
        improvement(87, 100),
    ),
    (
        "single resource has no deviation",
        resources("cpu"),
        make_pod("p").req(cpu="3"),
        node(),
        [],
        improvement(100, 100),
    ),
    (
        "ephemeral-storage",
        resources("cpu", "ephemeral-storage"),
        make_pod("p").req(cpu="1", ephemeral_storage="3Gi"),
        node(ephemeral_storage="4Gi"),
        [],
        improvement(75, 100),
    ),
    (
        "hugepages",
        resources("memory", HUGE),
        make_pod("p").req(memory="2Gi").res({HUGE: "4Mi"}),
        node(**{HUGE: "8Mi"}),
        [],
        improvement(87, 100),
    ),
    (
        "node with zero allocatable cpu skips cpu",
        None,
        make_pod("p").req(cpu="1", memory="2Gi"),
        node(cpu="0"),
        [],
        improvement(100, 100),
    ),
]


def test_improvement_matches_kube_scheduler_1_36_scores() -> None:
    # Scores kube-scheduler 1.36.3 logged in the differential test (scenario fit-cpu, pod p2: 1500m cpu,
    # no memory): 56 on an empty 2-cpu/16Gi node, 70 on an 8-cpu/16Gi node already at 6 cpu.
    p2 = make_pod("p2").req(cpu="1500m")
    assert run(None, p2, node(cpu="2", memory="16Gi"), []) == 56
    assert run(None, p2, node(cpu="8", memory="16Gi"), [make_pod("e1").req(cpu="6")]) == 70


@pytest.mark.parametrize(
    ("raw_args", "pod", "node_b", "existing", "expected"),
    [c[1:] for c in CASES],
    ids=[c[0] for c in CASES],
)
@pytest.mark.parametrize("prescore", [True, False])
def test_score(
    raw_args: dict[str, Any] | None,
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder],
    expected: int,
    prescore: bool,
) -> None:
    assert run(raw_args, pod, node_b, existing, prescore=prescore) == expected


@pytest.mark.parametrize(
    ("raw_args", "pod"),
    [
        (None, make_pod("p")),
        (None, make_pod("p").res({FOO: 1})),  # requests something, but not cpu or memory
        (resources("cpu", FOO), make_pod("p").req(memory="1Gi")),
    ],
)
def test_best_effort_pods_are_skipped(raw_args: dict[str, Any] | None, pod: PodBuilder) -> None:
    status = run(raw_args, pod, node())
    assert isinstance(status, Status)
    assert status.code == Code.SKIP and status.plugin == NAME
    # without PreScore state, Score gives 0 for them
    assert run(raw_args, pod, node(), prescore=False) == 0


def test_prescore_writes_state() -> None:
    state = make_cycle_state()
    BalancedAllocation().pre_score(state, make_pod("p").req(cpu="1").obj(), [])
    assert state.read(PRE_SCORE_STATE_KEY).pod_requests == (1000, 0)
    assert state.clone().read(PRE_SCORE_STATE_KEY) is state.read(PRE_SCORE_STATE_KEY)


@pytest.mark.parametrize(
    ("fractions", "expected"),
    [
        ([], 100),
        ([0.3], 100),
        ([0.5, 0.25], 87),
        ([0.1, 0.9], 60),
        ([0.0, 1.0, 0.5], int((1 - math.sqrt(1 / 6)) * 100)),
    ],
)
def test_balanced_score(fractions: list[float], expected: int) -> None:
    assert balanced_score(fractions, sum(fractions)) == expected


def test_default_args() -> None:
    decoded = (
        NodeResourcesBalancedAllocationArgs(),
        PLUGIN.decode(None, "args"),
        PLUGIN.decode({}, "args"),
        PLUGIN.decode({"resources": []}, "args"),
    )
    for args in decoded:
        assert args.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))


def test_args_weight_defaults_to_one() -> None:
    args = PLUGIN.decode({"resources": [{"name": "cpu"}, {"name": FOO, "weight": 0}]}, "args")
    assert args.resources == (ResourceSpec("cpu", 1), ResourceSpec(FOO, 1))


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        ({"resources": [{"name": "cpu"}, {"name": "cpu"}]}, "args.resources[1].name", "Duplicate value"),
        ({"resources": [{"name": "cpu", "weight": 2}]}, "args.resources[0].weight", "must be 1"),
        (
            {"resources": [{"name": "cpu"}, {"name": "memory", "weight": -1}]},
            "args.resources[1].weight",
            "must be 1",
        ),
        ({"resources": [{"name": "cpu", "wieght": 1}]}, "args.resources[0].wieght", "unknown field"),
        ({"resources": {"name": "cpu"}}, "args.resources", "must be a list"),
        ({"resource": []}, "args.resource", "unknown field"),
    ],
)
def test_args_validation(raw: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path
    assert fragment in e.value.detail


def test_plugin_spec() -> None:
    assert PLUGIN.name == "NodeResourcesBalancedAllocation"
    handle: Any = None
    plugin: Any = PLUGIN.new(PLUGIN.decode(None, "args"), handle)
    assert plugin.score_extensions() is None
    assert plugin.events_to_register() == []
    assert isinstance(plugin, BalancedAllocation)


# ------------------------------------------------------------------------------ batch: score_nodes

GI = 1024**3


def random_pod(rng: random.Random, name: str, huge: bool = False) -> PodBuilder:
    b = make_pod(name)
    for c in range(rng.choice([1, 1, 1, 2])):
        req: dict[str, str | int] = {}
        if rng.random() < 0.7:
            req["cpu"] = rng.choice(["0", "100m", "1", f"{rng.randint(1, 3000)}m"])
        if rng.random() < 0.7:
            req["memory"] = rng.choice(["0", "200Mi", "1Gi", str(rng.randint(1, 3 * GI))])
        if rng.random() < 0.2:
            req["ephemeral-storage"] = rng.choice(["0", "1Gi", str(rng.randint(1, 20 * GI))])
        if rng.random() < 0.15:
            req[FOO] = rng.choice([0, 1, 3])
        if rng.random() < 0.05:
            req[HUGE] = "2Mi"
        if huge and rng.random() < 0.5:
            req["memory"] = rng.choice(["1E", "5000Ti"])
        if req:
            b.res(req, container=c)
    return b


def random_cluster(rng: random.Random) -> Snapshot:
    nodes = []
    for i in range(rng.randint(0, 30)):
        res: dict[str, str | int] = {"pods": 110}
        if rng.random() < 0.95:
            res["cpu"] = rng.choice(["0", "1", "4", f"{rng.randint(1, 64000)}m"])
        if rng.random() < 0.95:
            res["memory"] = rng.choice(["0", "1Gi", "8Gi", str(rng.randint(1, 64 * GI))])
        if rng.random() < 0.03:
            res["memory"] = "8E"  # beyond the exact float range: node by node
        if rng.random() < 0.5:
            res["ephemeral-storage"] = rng.choice(["0", "10Gi", str(rng.randint(1, 200 * GI))])
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


def random_args(rng: random.Random) -> NodeResourcesBalancedAllocationArgs:
    if rng.random() < 0.4:
        return NodeResourcesBalancedAllocationArgs()
    names = ["cpu", "memory", "ephemeral-storage", FOO, HUGE, "pods"]
    return NodeResourcesBalancedAllocationArgs(
        tuple(ResourceSpec(n, 1) for n in rng.sample(names, rng.randint(1, 5)))
    )


def batch_variants(rng: random.Random, snap: Snapshot) -> list[Sequence[NodeInfo]]:
    """The snapshot's nodes as a NodeBatch, a shuffled sub-batch, a plain list, and a batch where
    some nodes are clones with a pod removed (their table rows are stale)."""
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
    return [NodeBatch(infos, table), NodeBatch(sub, table), list(infos), NodeBatch(stale, table)]


def every_batch_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Vectorise batches of any size (even empty), so small random clusters reach the NumPy code."""
    import pyscheduler.plugins.node_resources_balanced_allocation as mod

    monkeypatch.setattr(mod, "MIN_BATCH", 0)


every_batch_size_fixture = pytest.fixture(every_batch_size, name="every_batch_size")


@pytest.mark.parametrize("seed", range(300))
@pytest.mark.usefixtures("every_batch_size")
def test_batch_equals_node_by_node(seed: int) -> None:
    check_batch_equals_node_by_node(seed)


def check_batch_equals_node_by_node(seed: int) -> None:
    rng = random.Random(seed)
    snap = random_cluster(rng)
    plugin = BalancedAllocation(random_args(rng))
    pod = random_pod(rng, "p", huge=rng.random() < 0.05).obj()
    variants = batch_variants(rng, snap)
    # and a batch with a node changed in place since its row was written
    infos = list(snap.list())
    if infos:
        infos[0].add_pod(random_pod(rng, "y").node(infos[0].name).obj())
    variants.append(NodeBatch(infos, snap.node_table()))
    for variant in variants:
        for prescore in (True, False):
            state = make_cycle_state()
            if prescore and plugin.pre_score(state, pod, variant) is not None:
                continue  # Skip: Score is not run for this pod
            want = [plugin.score(state, pod, ni)[0] for ni in variant]
            assert score_list(plugin.score_nodes(state, pod, variant)) == (want, None)


@pytest.mark.usefixtures("every_batch_size")
def test_batch_path_is_exercised(monkeypatch: pytest.MonkeyPatch) -> None:
    """The random test above must reach the vectorised code, not only the node-by-node fallback."""
    import pyscheduler.plugins.node_resources_balanced_allocation as mod

    real = improvement_scores
    hits = [0, 0]  # default resources, others

    def counting(nodes: Sequence[NodeInfo], resources: Sequence[tuple[str, str, int]]) -> Any:
        out = real(nodes, resources)
        if out is not None:
            hits[len(resources) == 2 and resources[0][0] == "alloc_cpu"] += 1
        return out

    monkeypatch.setattr(mod, "improvement_scores", counting)
    for seed in range(80):
        check_batch_equals_node_by_node(seed)
    assert hits[0] > 20 and hits[1] > 20, hits


@pytest.mark.parametrize("vectorise_all", [True, False])
def test_batch_known_answers_and_plain_lists(vectorise_all: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    if vectorise_all:
        every_batch_size(monkeypatch)
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory="8Gi", pods=110).obj() for i in range(12)]
    pods = [make_pod(f"e{i}").req(cpu=f"{i}00m").node(f"n{i}").obj() for i in range(12)]
    snap = Snapshot.from_nodes(nodes, pods)
    infos = list(snap.list())
    plugin = BalancedAllocation()
    pod = make_pod("p").req(cpu="1", memory="2Gi").obj()
    state = make_cycle_state()
    assert plugin.pre_score(state, pod, infos) is None
    want = []
    for ni in infos:
        used = int(ni.name[1:]) * 100
        with_ = int((1 - abs(((used + 1000) / 4000 - 0.25) / 2)) * 100)
        without = int((1 - abs((used / 4000 - 0.0) / 2)) * 100)
        want.append(improvement(with_, without))
    for batch in (NodeBatch(infos, snap.node_table()), infos):
        assert score_list(plugin.score_nodes(state, pod, batch)) == (want, None)
    for small in (infos[:3], [], NodeBatch(infos[:1], snap.node_table())):
        assert score_list(plugin.score_nodes(state, pod, small)) == (
            [plugin.score(state, pod, ni)[0] for ni in small],
            None,
        )
    # best-effort pod without PreScore state: 0 everywhere, as score gives
    assert score_list(plugin.score_nodes(make_cycle_state(), make_pod("b").obj(), infos)) == ([0] * 12, None)


def test_batch_balance_matches_balanced_score() -> None:
    """The lane-wise balance on fractions where truncation is at stake (multiples of 1/20, 1/3, ...)
    and random ones: the same integer as ``balanced_score``, lane by lane."""
    rng = random.Random(7)
    for n in range(0, 5):
        lanes = [
            [
                rng.choice([rng.randint(0, d) / d for d in (3, 7, 10, 20, 40)] + [rng.random()])
                for _ in range(n)
            ]
            for _ in range(3000)
        ]
        got = _balance([np.array([lane[i] for lane in lanes]) for i in range(n)])
        if n == 0:
            assert len(got) == 0
            continue
        assert got.tolist() == [balanced_score(lane, sum(lane)) for lane in lanes]


def test_batch_fractions_are_python_floats() -> None:
    """Node and pod quantities whose fractions sit on truncation boundaries (e.g. 0.3 and 0.1)."""
    rng = random.Random(3)
    for resources_ in (("cpu", "memory"), ("cpu", "memory", "ephemeral-storage")):
        plugin = BalancedAllocation(
            NodeResourcesBalancedAllocationArgs(tuple(ResourceSpec(r) for r in resources_))
        )
        nodes, pods = [], []
        for i in range(400):
            d = rng.choice([1, 3, 7, 10, 20])
            nodes.append(
                make_node(f"n{i}")
                .capacity(cpu=f"{d * 100}m", memory=f"{d * 100}Mi", ephemeral_storage=f"{d}Gi", pods=110)
                .obj()
            )
            pods.append(
                make_pod(f"e{i}")
                .req(
                    cpu=f"{rng.randint(0, d) * 100}m",
                    memory=f"{rng.randint(0, d) * 100}Mi",
                    ephemeral_storage=f"{rng.randint(0, d)}Gi",
                )
                .node(f"n{i}")
                .obj()
            )
        snap = Snapshot.from_nodes(nodes, pods)
        infos = list(snap.list())
        for _ in range(10):
            pod = (
                make_pod("p")
                .req(cpu=f"{rng.randint(1, 5) * 100}m", memory=f"{rng.randint(0, 5) * 100}Mi")
                .obj()
            )
            state = make_cycle_state()
            assert plugin.pre_score(state, pod, infos) is None
            want = [plugin.score(state, pod, ni)[0] for ni in infos]
            assert score_list(plugin.score_nodes(state, pod, NodeBatch(infos, snap.node_table()))) == (
                want,
                None,
            )


@pytest.mark.parametrize(
    ("memory", "pod_memory", "vectorised"), [(2**52 - 1, 1, True), (2**52, 1, False), (8, 2**52, False)]
)
def test_batch_only_for_exact_floats(memory: int, pod_memory: int, vectorised: bool) -> None:
    """Quantities from 2**52 on (node + pod could pass 2**53) are left to the per-node code."""
    nodes = [make_node(f"n{i}").capacity(cpu="4", memory=str(memory), pods=110).obj() for i in range(20)]
    snap = Snapshot.from_nodes(nodes)
    infos = list(snap.list())
    res = [("alloc_cpu", "req_cpu", 1000), ("alloc_mem", "req_mem", pod_memory)]
    for batch in (NodeBatch(infos, snap.node_table()), infos):
        assert (improvement_scores(batch, res) is not None) == vectorised
