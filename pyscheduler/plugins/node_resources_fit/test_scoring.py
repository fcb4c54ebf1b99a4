"""NodeResourcesFit scoring: LeastAllocated, MostAllocated, RequestedToCapacityRatio (kube's numbers), resource
names, and the PodGroup placement score."""

from typing import Any

import pytest

from pyscheduler.framework.helpers.gomath import go_div
from pyscheduler.framework.helpers.names import is_extended_resource_name, is_scalar_resource_name
from pyscheduler.framework.plugin_args import decode_args
from pyscheduler.framework.types import DEFAULT_MEMORY_REQUEST
from pyscheduler.plugins.node_resources_fit import (
    Fit,
    NodeResourcesFitArgs,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    GI,
    HUGE,
    node,
    strategy,
)
from pyscheduler.plugins.node_resources_fit.scoring import build_broken_linear_function
from pyscheduler.testing.builders import (
    NodeBuilder,
    PodBuilder,
    make_cycle_state,
    make_node,
    make_node_info,
    make_pod,
)

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
