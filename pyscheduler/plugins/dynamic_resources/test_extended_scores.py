"""Scoring extended resources backed by DRA: NodeResourcesFit and BalancedAllocation count a node's
devices of the backing DeviceClass (and the allocated ones) where its allocatable lacks the resource."""

from __future__ import annotations

from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.plugin_args import ResourceSpec
from pyscheduler.plugins.dynamic_resources import offer_extended_scores
from pyscheduler.plugins.dynamic_resources.test_dynamic_resources import DRIVER, JSON, World
from pyscheduler.plugins.node_resources_balanced_allocation import (
    BalancedAllocation,
    NodeResourcesBalancedAllocationArgs,
)
from pyscheduler.plugins.node_resources_fit import Fit, NodeResourcesFitArgs, ScoringStrategy
from pyscheduler.testing.builders import make_node, make_node_info, make_pod
from pyscheduler.testing.dra import device, device_class, resource_claim, resource_slice

GPU = "example.com/gpu"


def gpu_class() -> JSON:
    cls = device_class("gpu", 'device.attributes["gpu.example.com"].model == "a"', driver=DRIVER)
    cls["spec"]["extendedResourceName"] = GPU
    return cls


def models(node: str, *names: str) -> JSON:
    return resource_slice(
        f"{node}-gpus", DRIVER, [device(f"gpu-{i}", {"model": m}) for i, m in enumerate(names)], node=node
    )


def allocated(name: str, node: str, dev: str) -> JSON:
    result = {"request": "r", "driver": DRIVER, "pool": node, "device": dev}
    return resource_claim(name, status={"allocation": {"devices": {"results": [result]}}})


def world(*extra: JSON) -> World:
    # node-1: four model "a" devices (one allocated) and one model "b"; node-2: three model "a"
    return World(
        gpu_class(),
        models("node-1", "a", "a", "a", "a", "b"),
        models("node-2", "a", "a", "a"),
        allocated("held", "node-1", "gpu-0"),
        *extra,
        nodes=("node-1", "node-2"),
    )


def gpu_pod(n: int = 1, cpu: str = "1") -> Any:
    return make_pod("p").req(cpu=cpu).res({GPU: str(n)}).res({GPU: str(n)}, limits=True).obj()


def most_allocated_fit(w: World) -> Fit:
    strategy = ScoringStrategy(type="MostAllocated", resources=(ResourceSpec(GPU, 1),))
    return Fit(NodeResourcesFitArgs(scoring_strategy=strategy), w.handle)


def fit_scores(fit: Fit, pod: Any, nodes: list[Any]) -> list[int]:
    state = CycleState()
    assert fit.pre_score(state, pod, nodes) is None
    one_by_one = [fit.score(state, pod, ni)[0] for ni in nodes]
    batch, st = fit.score_nodes(state, pod, nodes)
    assert st is None and list(batch) == one_by_one
    return one_by_one


def test_fit_counts_the_class_devices_on_nodes_without_the_resource() -> None:
    w = world()
    nodes = [w.node_info("node-1"), w.node_info("node-2")]
    # node-1: 4 class devices (model b does not match), 1 allocated, + 1 for the pod -> 2/4;
    # node-2: 3 devices, none allocated -> 1/3 (MostAllocated: requested * 100 // capacity)
    assert fit_scores(most_allocated_fit(w), gpu_pod(), nodes) == [2 * 100 // 4, 1 * 100 // 3]
    # two for the pod: 3/4 and 2/3
    assert fit_scores(most_allocated_fit(w), gpu_pod(2), nodes) == [3 * 100 // 4, 2 * 100 // 3]


def test_fit_prefers_the_node_allocatable() -> None:
    w = world()
    listed = make_node_info(make_node("node-1").res({GPU: "10"}))  # a device plugin advertises 10
    assert fit_scores(most_allocated_fit(w), gpu_pod(), [listed]) == [1 * 100 // 10]


def test_not_counted_without_the_gate() -> None:
    w = world()
    w.handle.extra["feature_gates"] = {"DRAExtendedResource": False}
    nodes = [w.node_info("node-1"), w.node_info("node-2")]
    # the only configured resource is left out on both nodes: MostAllocated of nothing is 0
    assert fit_scores(most_allocated_fit(w), gpu_pod(), nodes) == [0, 0]
    del w.handle.extra["dra_extended_scores"]
    offer_extended_scores(w.handle)  # the gate off: nothing offered
    assert "dra_extended_scores" not in w.handle.extra


def test_counted_the_same_without_dynamic_resources_in_the_profile() -> None:
    """kube-scheduler's shared DRA manager exists whatever the profile: Fit counts the devices all the
    same when the profile disables DynamicResources (pyscheduler.app offers the counts per profile)."""
    w = world()
    nodes = [w.node_info("node-1"), w.node_info("node-2")]
    with_plugin = fit_scores(most_allocated_fit(w), gpu_pod(), nodes)
    del w.handle.extra["dra_extended_scores"]
    assert fit_scores(most_allocated_fit(w), gpu_pod(), nodes) == [0, 0]  # nobody offers the counts
    offer_extended_scores(w.handle)
    assert fit_scores(most_allocated_fit(w), gpu_pod(), nodes) == with_plugin == [50, 33]


def test_a_class_selector_error_leaves_the_resource_out() -> None:
    cls = gpu_class()
    cls["spec"]["selectors"].append(
        {"cel": {"expression": 'device.attributes["gpu.example.com"].missing == 1'}}
    )
    w = World(cls, models("node-1", "a", "a"), nodes=("node-1",))
    assert fit_scores(most_allocated_fit(w), gpu_pod(), [w.node_info("node-1")]) == [0]


def test_balanced_allocation_counts_them_too() -> None:
    w = world()
    ba = BalancedAllocation(
        NodeResourcesBalancedAllocationArgs(resources=(ResourceSpec("cpu", 1), ResourceSpec(GPU, 1))),
        w.handle,
    )
    nodes = [make_node_info(make_node(n).res({"cpu": "4"})) for n in ("node-1", "node-2")]
    pod = gpu_pod(1, cpu="1")
    state = CycleState()
    assert ba.pre_score(state, pod, nodes) is None
    got = [ba.score(state, pod, ni)[0] for ni in nodes]
    batch, st = ba.score_nodes(state, pod, nodes)
    assert st is None and list(batch) == got

    def expected(ni: Any, gpu_used: int, gpu_cap: int) -> int:
        cpu_cap = ni.allocatable.milli_cpu
        with_pod = [min(1000 / cpu_cap, 1.0), min((gpu_used + 1) / gpu_cap, 1.0)]
        without = [0.0, min(gpu_used / gpu_cap, 1.0)]
        balance = [int((1 - abs((f[0] - f[1]) / 2)) * 100.0) for f in (with_pod, without)]
        return 50 + (50 + balance[0] - balance[1]) // 2

    assert got == [expected(nodes[0], 1, 4), expected(nodes[1], 0, 3)]
    assert got[0] != got[1]
