"""Resource names and the three scoring strategies of NodeResourcesFit, with Go's integer arithmetic.

Each strategy turns, per configured resource, the node's (requested-after-placing-the-pod, allocatable)
into a 0-100 score and averages them by weight. Resources whose allocatable is 0 on the node (extended
resources the node lacks, or the pod does not request) are left out of the average, as in kube's
``resourceAllocationScorer``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pyscheduler.framework.dra import ExtendedResourceTotals
from pyscheduler.framework.helpers.gomath import go_div
from pyscheduler.framework.helpers.names import (
    is_scalar_resource_name,
)
from pyscheduler.framework.interfaces import MAX_NODE_SCORE
from pyscheduler.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY
from pyscheduler.framework.types import NodeInfo, Pod

from .args import (
    LEAST_ALLOCATED,
    MAX_CUSTOM_PRIORITY_SCORE,
    MAX_UTILIZATION,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    ResourceSpec,
    ScoringStrategy,
    UtilizationShapePoint,
)

# How a configured resource is read from a NodeInfo.
KIND_CPU = 0
KIND_MEMORY = 1
KIND_EPHEMERAL = 2
KIND_SCALAR = 3
KIND_NONE = 4  # not a resource the scheduler tracks per node (e.g. "pods"): never scored


def resource_kind(name: str) -> int:
    if name == CPU:
        return KIND_CPU
    if name == MEMORY:
        return KIND_MEMORY
    if name == EPHEMERAL_STORAGE:
        return KIND_EPHEMERAL
    if is_scalar_resource_name(name):
        return KIND_SCALAR
    return KIND_NONE


def pod_request(pod: Pod, kind: int, name: str, use_requested: bool) -> int:
    """kube's calculatePodResourceRequest: cpu and memory use the non-zero defaults (100m, 200Mi for
    containers that request none) unless ``use_requested``; overhead is included either way. Without
    ``use_requested`` (NodeResourcesFit's scorers) pod-level requests are ignored, as kube 1.36 builds
    those scorers without the PodLevelResources flag (``Pod.fit_score_requests``)."""
    req = pod.requests if use_requested else pod.fit_score_requests
    if kind == KIND_CPU:
        return req.milli_cpu
    if kind == KIND_MEMORY:
        return req.memory
    if kind == KIND_EPHEMERAL:
        return req.ephemeral_storage
    if kind == KIND_SCALAR:
        return req.scalar.get(name, 0)
    return 0


def allocatable_requested(
    node_info: NodeInfo,
    kind: int,
    name: str,
    pod_req: int,
    use_requested: bool,
    dra: ExtendedResourceTotals | None = None,
) -> tuple[int, int]:
    """kube's calculateResourceAllocatableRequest: (allocatable, requested including the pod); (0, 0)
    means leave the resource out (a scalar the pod does not request or the node does not have). ``dra``
    (DRAExtendedResource): a scalar the node's allocatable lacks counts the node's devices of the
    DeviceClass backing it, and those allocated, when there are any."""
    if kind == KIND_CPU:
        used = node_info.requested if use_requested else node_info.non_zero_requested
        return node_info.allocatable.milli_cpu, used.milli_cpu + pod_req
    if kind == KIND_MEMORY:
        used = node_info.requested if use_requested else node_info.non_zero_requested
        return node_info.allocatable.memory, used.memory + pod_req
    if kind == KIND_EPHEMERAL:
        return node_info.allocatable.ephemeral_storage, node_info.requested.ephemeral_storage + pod_req
    if kind == KIND_SCALAR and pod_req != 0:
        alloc = node_info.allocatable.scalar.get(name)
        if not alloc and dra is not None:
            labels = node_info.node.labels if node_info.node is not None else {}
            capacity, allocated = dra.totals(node_info.name, labels, name)
            if capacity > 0:
                return capacity, allocated + pod_req
        if alloc is not None:
            return alloc, node_info.requested.scalar.get(name, 0) + pod_req
    return 0, 0


# --------------------------------------------------------------------------------------- scorers


Scorer = Callable[[Sequence[int], Sequence[int]], int]


def least_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return 0
    return go_div((capacity - requested) * MAX_NODE_SCORE, capacity)


def most_requested_score(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    if requested > capacity:
        # pods without requests count with the non-zero defaults, so this can happen
        requested = capacity
    return go_div(requested * MAX_NODE_SCORE, capacity)


def least_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = tuple(r.weight for r in resources)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += least_requested_score(requested[i], alloc) * weights[i]
            weight_sum += weights[i]
        return go_div(node_score, weight_sum) if weight_sum else 0

    return score


def most_allocated_scorer(resources: Sequence[ResourceSpec]) -> Scorer:
    weights = tuple(r.weight for r in resources)

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            node_score += most_requested_score(requested[i], alloc) * weights[i]
            weight_sum += weights[i]
        return go_div(node_score, weight_sum) if weight_sum else 0

    return score


def build_broken_linear_function(shape: Sequence[tuple[int, int]]) -> Callable[[int], int]:
    """helper.BuildBrokenLinearFunction over (utilization, score) points sorted by utilization:
    shape[0].score below the first point, shape[-1].score above the last, linear in between
    (integer arithmetic, truncating toward zero like Go)."""
    points = tuple(shape)

    def f(p: int) -> int:
        for i, (u, s) in enumerate(points):
            if p <= u:
                if i == 0:
                    return s
                pu, ps = points[i - 1]
                return ps + go_div((s - ps) * (p - pu), u - pu)
        return points[-1][1]

    return f


def requested_to_capacity_ratio_scorer(
    resources: Sequence[ResourceSpec], shape: Sequence[UtilizationShapePoint]
) -> Scorer:
    # shape scores are 0-10 (MaxCustomPriorityScore); scale them to the scheduler's 0-100
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    raw = build_broken_linear_function([(p.utilization, p.score * factor) for p in shape])
    at_max = raw(MAX_UTILIZATION)
    weights = tuple(r.weight for r in resources)

    def resource_score(requested: int, capacity: int) -> int:
        if capacity == 0 or requested > capacity:
            return at_max
        return raw(go_div(requested * MAX_UTILIZATION, capacity))

    def score(requested: Sequence[int], allocatable: Sequence[int]) -> int:
        node_score = weight_sum = 0
        for i, alloc in enumerate(allocatable):
            if alloc == 0:
                continue
            s = resource_score(requested[i], alloc)
            if s > 0:
                node_score += s * weights[i]
                weight_sum += weights[i]
        if weight_sum == 0:
            return 0
        # Go: int64(math.Round(float64(nodeScore) / float64(weightSum))), both positive here
        return (2 * node_score + weight_sum) // (2 * weight_sum)

    return score


def build_scorer(strategy: ScoringStrategy) -> Scorer:
    if strategy.type == MOST_ALLOCATED:
        return most_allocated_scorer(strategy.resources)
    if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
        shape = strategy.requested_to_capacity_ratio.shape if strategy.requested_to_capacity_ratio else ()
        return requested_to_capacity_ratio_scorer(strategy.resources, shape)
    if strategy.type == LEAST_ALLOCATED:
        return least_allocated_scorer(strategy.resources)
    raise ValueError(f"scoring strategy {strategy.type} is not supported")


def placement_score(resources: Sequence[ResourceSpec], pods: Sequence[Pod], nodes: Sequence[NodeInfo]) -> int:
    """kube 1.36's scorePlacement (TopologyAwareWorkloadScheduling): MostAllocated over the whole
    placement, the group's proposed pods counted on top of what the placement's nodes already hold.
    The running total decides, node by node, whether an extended resource counts (as in kube)."""
    kinds = [(resource_kind(r.name), r.name) for r in resources]
    requested = [sum(pod_request(p, k, n, False) for p in pods) for k, n in kinds]
    allocatable = [0] * len(kinds)
    for ni in nodes:
        for i, (k, n) in enumerate(kinds):
            alloc, with_pods = allocatable_requested(ni, k, n, requested[i], False)
            if alloc == 0:
                continue
            allocatable[i] += alloc
            requested[i] = with_pods  # what the node holds, added to the running total
    return most_allocated_scorer(resources)(requested, allocatable)
