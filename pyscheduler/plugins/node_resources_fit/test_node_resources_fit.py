import random
from collections.abc import Sequence
from typing import Any

import pytest

from pyscheduler.backend.snapshot import Snapshot
from pyscheduler.framework.events import Action, QueueingHint
from pyscheduler.framework.events import Resource as EventResource
from pyscheduler.framework.helpers.gomath import go_div
from pyscheduler.framework.helpers.names import is_extended_resource_name, is_scalar_resource_name
from pyscheduler.framework.node_table import NodeBatch
from pyscheduler.framework.plugin_args import ArgsError, decode_args
from pyscheduler.framework.status import Code, Status
from pyscheduler.framework.types import DEFAULT_MEMORY_REQUEST, NodeInfo, Pod
from pyscheduler.plugins.node_resources_fit import (
    NAME,
    PLUGIN,
    PRE_FILTER_STATE_KEY,
    REASON_INSUFFICIENT_CPU,
    REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
    REASON_INSUFFICIENT_MEMORY,
    REASON_TOO_MANY_PODS,
    Fit,
    NodeResourcesFitArgs,
    RequestedToCapacityRatioParam,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)
from pyscheduler.plugins.node_resources_fit.scoring import build_broken_linear_function
from pyscheduler.testing import score_list
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_cycle_state,
    make_node,
    make_node_info,
    make_pod,
)

GI = 1024**3
FOO = "example.com/foo"
HUGE = "hugepages-2Mi"


def node(
    cpu: str | int = "4", memory: str | int = "8Gi", pods: str | int = 110, **extra: str | int
) -> NodeBuilder:
    b = make_node("n1").capacity(cpu=cpu, memory=memory, pods=pods)
    if extra:
        b.res({k.replace("_", "-"): v for k, v in extra.items()})
    return b


def run_filter(plugin: Fit, pod: Pod, info: NodeInfo, prefilter: bool = True) -> Status | None:
    state = make_cycle_state()
    if prefilter:
        result, status = plugin.pre_filter(state, pod, [info])
        assert result is None and status is None
    return plugin.filter(state, pod, info)


def code_of(status: Status | None) -> Code:
    return Code.SUCCESS if status is None else status.code


# ----------------------------------------------------------------------------------------- Filter

U = Code.UNSCHEDULABLE
UU = Code.UNSCHEDULABLE_AND_UNRESOLVABLE
OK = Code.SUCCESS

FILTER_CASES = [
    # (id, pod builder, node builder, existing pods, args, code, reasons)
    ("no requests fit", make_pod("p"), node(), [], None, OK, ()),
    (
        "no requests but pods full",
        make_pod("p"),
        node(pods=1),
        [make_pod("e")],
        None,
        U,
        (REASON_TOO_MANY_PODS,),
    ),
    (
        "node without pods allocatable",
        make_pod("p"),
        make_node("n1").capacity(cpu="4"),
        [],
        None,
        U,
        (REASON_TOO_MANY_PODS,),
    ),
    (
        "exact fit",
        make_pod("p").req(cpu="3", memory="6Gi"),
        node(),
        [make_pod("e").req(cpu="1", memory="2Gi")],
        None,
        OK,
        (),
    ),
    (
        "cpu short by existing pods",
        make_pod("p").req(cpu="1"),
        node(cpu="2"),
        [make_pod("e").req(cpu="1500m")],
        None,
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "cpu above whole allocatable",
        make_pod("p").req(cpu="3"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "memory short",
        make_pod("p").req(memory="5Gi"),
        node(),
        [make_pod("e").req(memory="4Gi")],
        None,
        U,
        (REASON_INSUFFICIENT_MEMORY,),
    ),
    (
        "memory above allocatable",
        make_pod("p").req(memory="9Gi"),
        node(),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_MEMORY,),
    ),
    (
        "ephemeral-storage short",
        make_pod("p").req(ephemeral_storage="2Gi"),
        node(ephemeral_storage="3Gi"),
        [make_pod("e").req(ephemeral_storage="2Gi")],
        None,
        U,
        (REASON_INSUFFICIENT_EPHEMERAL_STORAGE,),
    ),
    (
        "ephemeral-storage on node without it",
        make_pod("p").req(ephemeral_storage="1Gi"),
        node(),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_EPHEMERAL_STORAGE,),
    ),
    (
        "all reasons listed in kube's order",
        make_pod("p").req(cpu="2", memory="2Gi", ephemeral_storage="1"),
        node(cpu="2", memory="2Gi", pods=1, ephemeral_storage="1"),
        [make_pod("e").req(cpu="1", memory="1Gi", ephemeral_storage="1")],
        None,
        U,
        (
            REASON_TOO_MANY_PODS,
            REASON_INSUFFICIENT_CPU,
            REASON_INSUFFICIENT_MEMORY,
            REASON_INSUFFICIENT_EPHEMERAL_STORAGE,
        ),
    ),
    (
        "one unresolvable makes all unresolvable",
        make_pod("p").req(cpu="1", memory="20Gi"),
        node(cpu="1"),
        [make_pod("e").req(cpu="500m")],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU, REASON_INSUFFICIENT_MEMORY),
    ),
    (
        "extended resource fits",
        make_pod("p").res({FOO: 1}),
        node(**{FOO: 2}),
        [make_pod("e").res({FOO: 1})],
        None,
        OK,
        (),
    ),
    (
        "extended resource short",
        make_pod("p").res({FOO: 2}),
        node(**{FOO: 2}),
        [make_pod("e").res({FOO: 1})],
        None,
        U,
        ("Insufficient example.com/foo",),
    ),
    (
        "extended resource missing on node",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        None,
        UU,
        ("Insufficient example.com/foo",),
    ),
    (
        "extended resource in ignoredResources",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResources": [FOO]},
        OK,
        (),
    ),
    (
        "extended resource in ignoredResourceGroups",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["example.com"]},
        OK,
        (),
    ),
    (
        "other group not ignored",
        make_pod("p").res({FOO: 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["example.org"]},
        UU,
        ("Insufficient example.com/foo",),
    ),
    (
        "ignored resource still counted for others",
        make_pod("p").req(cpu="5").res({FOO: 1}),
        node(),
        [],
        {"ignoredResources": [FOO]},
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "hugepages short",
        make_pod("p").res({HUGE: "4Mi"}),
        node(**{HUGE: "2Mi"}),
        [],
        None,
        UU,
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "hugepages cannot be ignored (not extended)",
        make_pod("p").res({HUGE: "4Mi"}),
        node(),
        [],
        {"ignoredResources": [HUGE]},
        UU,
        ("Insufficient hugepages-2Mi",),
    ),
    (
        "kubernetes.io resource cannot be ignored by group",
        make_pod("p").res({"kubernetes.io/x": 1}),
        node(),
        [],
        {"ignoredResourceGroups": ["kubernetes.io"]},
        UU,
        ("Insufficient kubernetes.io/x",),
    ),
    ("zero extended request not checked", make_pod("p").res({FOO: 0}), node(), [], None, OK, ()),
    (
        "init container larger than containers",
        make_pod("p").req(cpu="1").init_req(cpu="3"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "init container smaller than containers",
        make_pod("p").req(cpu="2").init_req(cpu="1"),
        node(cpu="2"),
        [],
        None,
        OK,
        (),
    ),
    (
        "sidecar adds to containers",
        make_pod("p").req(cpu="1500m").init_req(sidecar=True, cpu="1"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "overhead adds to requests",
        make_pod("p").req(cpu="1500m").overhead(cpu="1"),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "existing pod's overhead counted",
        make_pod("p").req(cpu="1"),
        node(cpu="2"),
        [make_pod("e").req(cpu="500m").overhead(cpu="600m")],
        None,
        U,
        (REASON_INSUFFICIENT_CPU,),
    ),
    (
        "limits default requests",
        make_pod("p").res({"cpu": "3"}, limits=True),
        node(cpu="2"),
        [],
        None,
        UU,
        (REASON_INSUFFICIENT_CPU,),
    ),
]


@pytest.mark.parametrize(
    ("pod", "node_b", "existing", "raw_args", "code", "reasons"),
    [c[1:] for c in FILTER_CASES],
    ids=[c[0] for c in FILTER_CASES],
)
def test_filter(
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder],
    raw_args: dict[str, Any] | None,
    code: Code,
    reasons: tuple[str, ...],
) -> None:
    plugin = Fit(decode_args(NodeResourcesFitArgs, raw_args))
    info = make_node_info(node_b, *existing)
    status = run_filter(plugin, pod.obj(), info)
    assert code_of(status) == code
    if status is not None:
        assert status.reasons == reasons
        assert status.plugin == NAME


@pytest.mark.parametrize("prefilter", [True, False])
def test_filter_without_prefilter_state_is_computed(prefilter: bool) -> None:
    plugin = Fit()
    pod = make_pod("p").req(cpu="3").obj()
    status = run_filter(plugin, pod, make_node_info(node(cpu="2")), prefilter=prefilter)
    assert status is not None and status.reasons == (REASON_INSUFFICIENT_CPU,)


def test_prefilter_state_is_shared_by_clone() -> None:
    state = make_cycle_state()
    Fit().pre_filter(state, make_pod("p").req(cpu="1").obj(), [])
    assert state.clone().read(PRE_FILTER_STATE_KEY) is state.read(PRE_FILTER_STATE_KEY)


# ------------------------------------------------------------------------------------------ Score

MEM8 = 8 * GI
NZ_MEM = DEFAULT_MEMORY_REQUEST


def score_of(
    raw_args: dict[str, Any] | None,
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder] | tuple[()] = (),
    prescore: bool = True,
) -> int:
    plugin = Fit(decode_args(NodeResourcesFitArgs, raw_args))
    info = make_node_info(node_b, *existing)
    state = make_cycle_state()
    if prescore:
        assert plugin.pre_score(state, pod.obj(), [info]) is None
    score, status = plugin.score(state, pod.obj(), info)
    assert status is None
    return score


def strategy(
    type_: str, resources: list[dict[str, Any]] | None = None, shape: list[tuple[int, int]] | None = None
) -> dict[str, Any]:
    s: dict[str, Any] = {"type": type_}
    if resources is not None:
        s["resources"] = resources
    if shape is not None:
        s["requestedToCapacityRatio"] = {"shape": [{"utilization": u, "score": v} for u, v in shape]}
    return {"scoringStrategy": s}


HALF: tuple[PodBuilder, NodeBuilder, list[PodBuilder]] = (
    make_pod("p").req(cpu="1", memory="2Gi"),
    node(),
    [make_pod("e").req(cpu="1", memory="2Gi")],
)
CPU_ONLY: tuple[PodBuilder, NodeBuilder, list[PodBuilder]] = (make_pod("p").req(cpu="3"), node(), [])
BIN_PACK = [(0, 0), (100, 10)]
SPREAD = [(0, 10), (100, 0)]

SCORE_CASES = [
    ("least: half used", None, *HALF, 50),
    ("least: memory uses non-zero default 200Mi", None, *CPU_ONLY, (25 + (MEM8 - NZ_MEM) * 100 // MEM8) // 2),
    (
        "least: pod without requests counts 100m/200Mi",
        None,
        make_pod("p"),
        node(),
        [],
        ((4000 - 100) * 100 // 4000 + (MEM8 - NZ_MEM) * 100 // MEM8) // 2,
    ),
    (
        "least: existing best-effort pods count non-zero",
        None,
        make_pod("p").req(cpu="1", memory="2Gi"),
        node(),
        [make_pod("e")],
        ((4000 - 1100) * 100 // 4000 + (MEM8 - 2 * GI - NZ_MEM) * 100 // MEM8) // 2,
    ),
    ("least: over capacity scores 0", None, make_pod("p").req(cpu="5", memory="9Gi"), node(), [], 0),
    (
        "least: weights",
        strategy("LeastAllocated", [{"name": "cpu", "weight": 2}, {"name": "memory"}]),
        *CPU_ONLY,
        (25 * 2 + (MEM8 - NZ_MEM) * 100 // MEM8) // 3,
    ),
    (
        "least: overhead counted",
        None,
        make_pod("p").req(cpu="1", memory="2Gi").overhead(cpu="1", memory="2Gi"),
        node(),
        [],
        50,
    ),
    (
        "least: ephemeral-storage uses real requests",
        strategy("LeastAllocated", [{"name": "ephemeral-storage"}]),
        make_pod("p").req(ephemeral_storage="1Gi"),
        node(ephemeral_storage="4Gi"),
        [make_pod("e").req(ephemeral_storage="1Gi")],
        50,
    ),
    (
        "least: extended resource scored when node has it and pod requests it",
        strategy("LeastAllocated", [{"name": "cpu"}, {"name": FOO, "weight": 2}]),
        make_pod("p").req(cpu="2").res({FOO: 3}),
        node(**{FOO: 4}),
        [],
        (50 + 25 * 2) // 3,
    ),
    (
        "least: extended resource skipped when node lacks it",
        strategy("LeastAllocated", [{"name": "cpu"}, {"name": FOO, "weight": 2}]),
        make_pod("p").req(cpu="2").res({FOO: 3}),
        node(),
        [],
        50,
    ),
    (
        "least: extended resource skipped when pod does not request it",
        strategy("LeastAllocated", [{"name": "cpu"}, {"name": FOO, "weight": 2}]),
        make_pod("p").req(cpu="2"),
        node(**{FOO: 4}),
        [],
        50,
    ),
    (
        "least: unknown resource never scored",
        strategy("LeastAllocated", [{"name": "pods"}]),
        make_pod("p").req(cpu="2"),
        node(),
        [],
        0,
    ),
    ("most: half used", strategy("MostAllocated"), *HALF, 50),
    ("most: non-zero memory", strategy("MostAllocated"), *CPU_ONLY, (75 + NZ_MEM * 100 // MEM8) // 2),
    (
        "most: over capacity clamps to 100",
        strategy("MostAllocated"),
        make_pod("p").req(cpu="5", memory="9Gi"),
        node(),
        [],
        100,
    ),
    (
        "most: hugepages",
        strategy("MostAllocated", [{"name": HUGE}]),
        make_pod("p").res({HUGE: "2Mi"}),
        node(**{HUGE: "8Mi"}),
        [make_pod("e").res({HUGE: "2Mi"})],
        50,
    ),
    ("ratio: bin packing half", strategy("RequestedToCapacityRatio", shape=BIN_PACK), *HALF, 50),
    ("ratio: spreading half", strategy("RequestedToCapacityRatio", shape=SPREAD), *HALF, 50),
    (
        "ratio: rounds half away from zero",
        strategy("RequestedToCapacityRatio", shape=BIN_PACK),
        make_pod("p").req(cpu="3", memory="2Gi"),
        node(memory="100Gi"),
        [],
        39,
    ),  # (75 + 2) / 2 = 38.5
    (
        "ratio: zero scores are left out of the average",
        strategy("RequestedToCapacityRatio", shape=BIN_PACK),
        make_pod("p").req(cpu="3", memory="1Ki"),
        node(memory="100Gi"),
        [],
        75,
    ),
    (
        "ratio: over capacity uses the score at 100%",
        strategy("RequestedToCapacityRatio", shape=[(0, 3), (50, 7)]),
        make_pod("p").req(cpu="5", memory="9Gi"),
        node(),
        [],
        70,
    ),
    (
        "ratio: negative slope truncates toward zero",
        strategy("RequestedToCapacityRatio", [{"name": "cpu"}], shape=[(0, 10), (30, 0)]),
        make_pod("p").req(cpu="400m"),
        node(),
        [],
        67,
    ),  # util 10: 100 + trunc(-1000/30) = 67
    (
        "ratio: below first point is first score",
        strategy("RequestedToCapacityRatio", [{"name": "cpu"}], shape=[(50, 4), (100, 10)]),
        make_pod("p").req(cpu="1"),
        node(),
        [],
        40,
    ),
    (
        "ratio: weights",
        strategy(
            "RequestedToCapacityRatio", [{"name": "cpu", "weight": 3}, {"name": "memory"}], shape=BIN_PACK
        ),
        make_pod("p").req(cpu="2", memory="2Gi"),
        node(),
        [],
        44,
    ),  # (50*3 + 25) / 4 = 43.75
]


@pytest.mark.parametrize(
    ("raw_args", "pod", "node_b", "existing", "expected"),
    [c[1:] for c in SCORE_CASES],
    ids=[c[0] for c in SCORE_CASES],
)
def test_score(
    raw_args: dict[str, Any] | None,
    pod: PodBuilder,
    node_b: NodeBuilder,
    existing: list[PodBuilder],
    expected: int,
) -> None:
    assert score_of(raw_args, pod, node_b, existing) == expected


@pytest.mark.parametrize("case", SCORE_CASES[:3], ids=lambda c: c[0])
def test_score_without_prescore_state(case: tuple[Any, ...]) -> None:
    _, raw_args, pod, node_b, existing, expected = case
    assert score_of(raw_args, pod, node_b, existing, prescore=False) == expected


def test_score_extensions_none() -> None:
    plugin: Any = Fit()
    assert plugin.score_extensions() is None
    assert plugin.pre_filter_extensions() is None


@pytest.mark.parametrize(
    ("shape", "p", "expected"),
    [
        ([(0, 0), (100, 100)], 0, 0),
        ([(0, 0), (100, 100)], 37, 37),
        ([(10, 20), (20, 40)], 5, 20),
        ([(10, 20), (20, 40)], 15, 30),
        ([(10, 20), (20, 40)], 25, 40),
        ([(0, 100), (30, 0)], 10, 67),
        ([(0, 100), (50, 50), (100, 80)], 75, 65),
    ],
)
def test_broken_linear_function(shape: list[tuple[int, int]], p: int, expected: int) -> None:
    assert build_broken_linear_function(shape)(p) == expected


@pytest.mark.parametrize(("a", "b", "q"), [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)])
def test_go_div(a: int, b: int, q: int) -> None:
    assert go_div(a, b) == q


@pytest.mark.parametrize(
    ("name", "extended", "scalar"),
    [
        ("cpu", False, False),
        ("pods", False, False),
        ("example.com/foo", True, True),
        ("nvidia.com/gpu", True, True),
        ("kubernetes.io/foo", False, True),
        ("sub.kubernetes.io/foo", False, True),
        ("hugepages-2Mi", False, True),
        ("attachable-volumes-csi-x", False, True),
        ("requests.example.com/foo", False, False),
        ("Example.com/foo", False, False),
    ],
)
def test_resource_name_classes(name: str, extended: bool, scalar: bool) -> None:
    assert is_extended_resource_name(name) is extended
    assert is_scalar_resource_name(name) is scalar


# ------------------------------------------------------------------------------------------- Args


def test_default_args() -> None:
    decoded = (NodeResourcesFitArgs(), decode_args(NodeResourcesFitArgs, None), PLUGIN.decode(None, "args"))
    for args in decoded:
        s = args.scoring_strategy
        assert s.type == "LeastAllocated"
        assert s.resources == (ResourceSpec("cpu", 1), ResourceSpec("memory", 1))
        assert s.requested_to_capacity_ratio is None
        assert args.ignored_resources == () and args.ignored_resource_groups == ()


@pytest.mark.parametrize(
    ("raw", "type_", "resources"),
    [
        (
            {"scoringStrategy": {"type": "MostAllocated"}},
            "MostAllocated",
            (ResourceSpec("cpu", 1), ResourceSpec("memory", 1)),
        ),
        (
            strategy("LeastAllocated", [{"name": "cpu"}, {"name": FOO, "weight": 0}]),
            "LeastAllocated",
            (ResourceSpec("cpu", 1), ResourceSpec(FOO, 1)),
        ),
        (
            {"scoringStrategy": {"type": "MostAllocated", "resources": [{"name": "memory", "weight": 100}]}},
            "MostAllocated",
            (ResourceSpec("memory", 100),),
        ),
    ],
)
def test_args_defaulting(raw: dict[str, Any], type_: str, resources: tuple[ResourceSpec, ...]) -> None:
    args = decode_args(NodeResourcesFitArgs, raw)
    assert args.scoring_strategy == ScoringStrategy(type_, resources)


def test_args_requested_to_capacity_ratio_decodes() -> None:
    raw = strategy("RequestedToCapacityRatio", shape=[(0, 0), (50, 5), (100, 10)])
    args = decode_args(NodeResourcesFitArgs, raw)
    param = args.scoring_strategy.requested_to_capacity_ratio
    assert param is not None
    shape = param.shape
    assert [(p.utilization, p.score) for p in shape] == [(0, 0), (50, 5), (100, 10)]


@pytest.mark.parametrize(
    ("raw", "path", "fragment"),
    [
        ({"ignoredResources": ["example.com/a/b"]}, "args.ignoredResources[0]", "a valid label key"),
        ({"ignoredResources": ["ok.com/x", "-bad"]}, "args.ignoredResources[1]", "name part"),
        ({"ignoredResources": ["Bad_Domain/x"]}, "args.ignoredResources[0]", "prefix part"),
        (
            {"ignoredResourceGroups": ["example.com/foo"]},
            "args.ignoredResourceGroups[0]",
            "can't contain '/'",
        ),
        ({"ignoredResourceGroups": ["bad domain"]}, "args.ignoredResourceGroups[0]", "name part"),
        ({"scoringStrategy": {"type": "Balanced"}}, "args.scoringStrategy.type", "Unsupported value"),
        (
            {"scoringStrategy": {"resources": [{"name": "cpu"}]}},
            "args.scoringStrategy.type",
            "Unsupported value",
        ),
        (
            strategy("LeastAllocated", [{"name": "cpu", "weight": 101}]),
            "args.scoringStrategy.resources[0].weight",
            "(0, 100]",
        ),
        (
            strategy("MostAllocated", [{"name": "cpu"}, {"name": "memory", "weight": -1}]),
            "args.scoringStrategy.resources[1].weight",
            "not in valid range",
        ),
        (
            strategy("RequestedToCapacityRatio"),
            "args.scoringStrategy.requestedToCapacityRatio",
            "must be specified",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[]),
            "args.scoringStrategy.requestedToCapacityRatio.shape",
            "at least one point",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(50, 1), (50, 2)]),
            "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "increasing order",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(0, 1), (101, 2)]),
            "args.scoringStrategy.requestedToCapacityRatio.shape[1].utilization",
            "[0, 100]",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(0, 11)]),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
            "[0, 10]",
        ),
        (
            strategy("RequestedToCapacityRatio", shape=[(0, -1)]),
            "args.scoringStrategy.requestedToCapacityRatio.shape[0].score",
            "[0, 10]",
        ),
        (
            strategy("LeastAllocated", shape=[(0, 1)]),
            "args.scoringStrategy.requestedToCapacityRatio",
            "must be nil",
        ),
        ({"ignoredResource": []}, "args.ignoredResource", "unknown field"),
        (
            {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weigth": 1}]}},
            "args.scoringStrategy.resources[0].weigth",
            "unknown field",
        ),
        ({"ignoredResources": "example.com/foo"}, "args.ignoredResources", "must be a list"),
    ],
)
def test_args_validation(raw: dict[str, Any], path: str, fragment: str) -> None:
    with pytest.raises(ArgsError) as e:
        PLUGIN.decode(raw, "args")
    assert e.value.path == path
    assert fragment in e.value.detail


def test_plugin_spec() -> None:
    assert PLUGIN.name == "NodeResourcesFit"
    assert PLUGIN.args_type is NodeResourcesFitArgs
    handle: Any = None
    plugin = PLUGIN.new(PLUGIN.decode({"scoringStrategy": {"type": "MostAllocated"}}, "args"), handle)
    assert isinstance(plugin, Fit) and plugin.name == NAME


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
    for variant in batch_variants(rng, snap):
        for prepare in (True, False):
            state = make_cycle_state()
            if prepare:
                plugin.pre_filter(state, pod, variant)
                plugin.pre_score(state, pod, variant)
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


# ---------------------------------------------------------------------------------- PlacementScore


def test_score_placement_is_most_allocated_over_the_placement() -> None:
    """kube's scorePlacement: (held + proposed) / allocatable over all the placement's nodes, MostAllocated
    with the configured weights; a fuller placement scores higher (packing)."""
    from pyscheduler.framework.podgroup import Placement, PodGroupAssignments, PodGroupInfo

    n1 = make_node_info(
        make_node("n1").capacity(cpu="4", memory="8Gi"), make_pod("e").req(cpu="1", memory="1Gi")
    )
    n2 = make_node_info(make_node("n2").capacity(cpu="4", memory="8Gi"))
    pods = [(make_pod(f"p{i}").req(cpu="1", memory="2Gi").obj(), "n1") for i in range(2)]
    pl = Fit()
    info = PodGroupInfo("default", "pg")
    one = pl.score_placement(make_cycle_state(), info, PodGroupAssignments(Placement("a", [n1]), pods))
    both = pl.score_placement(make_cycle_state(), info, PodGroupAssignments(Placement("b", [n1, n2]), pods))
    # n1 alone: cpu 3/4 -> 75, memory 5/8 -> 62: (75 + 62) / 2 = 68; with n2: cpu 3/8 -> 37, memory 5/16 -> 31
    assert one == (68, None)
    assert both == (34, None)
    assert pl.placement_score_extensions() is None
