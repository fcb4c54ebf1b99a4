import math
from typing import Any

import pytest

from pyscheduler.framework.plugin_args import ArgsError, decode_args
from pyscheduler.framework.status import Code, Status
from pyscheduler.plugins.node_resources_balanced_allocation import (
    NAME,
    PLUGIN,
    PRE_SCORE_STATE_KEY,
    BalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
    ResourceSpec,
    balanced_score,
)
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
