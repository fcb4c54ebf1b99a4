"""NodeResourcesBalancedAllocation: prefer nodes whose resource usage stays balanced across resources
once the pod is placed (e.g. not 90% of cpu used but 10% of memory).

Extension points
----------------
- PreScore: computes the pod's requests for the configured resources (real requests, overhead included;
  *not* the 100m/200Mi non-zero defaults NodeResourcesFit scores with). A pod that requests none of them
  (best-effort) gets Skip, so this plugin does not score it at all (as kube 1.36 does, see kubernetes
  issue 129138: otherwise best-effort pods pile onto the same nodes).
- Score: for each configured resource the node has (allocatable > 0; a scalar resource only if the pod
  requests it), fraction = (node's requested [+ pod's request]) / allocatable, capped at 1. With two
  fractions std = |f1 - f2| / 2; with more, the population standard deviation; with one or none, 0.
  balance = int((1 - std) * 100), truncated as Go converts float64 to int64. An extended resource the
  node's allocatable lacks but a DeviceClass backs (DRAExtendedResource) counts the node's devices of
  that class as allocatable and the allocated ones as requested (DynamicResources provides the counts,
  see framework.dra.EXTENDED_SCORES_KEY). As kube-scheduler 1.36
  does, the score is the improvement the pod brings: 50 + (50 + balance_with_pod - balance_without) // 2
  (50: no change; checked against kube-scheduler 1.36.3's own scores by the differential test).
- ``score_nodes``: the same scores for many nodes at once, in NumPy float64 with Python's operations
  in Python's order (see ``batch``); a scalar resource the pod requests, a node lacking a resource,
  out-of-range quantities and small batches go node by node.

Args (``NodeResourcesBalancedAllocationArgs``)
----------------------------------------------
- ``resources``: ``[{name, weight}]``, default cpu and memory. A weight of 0 (or none) becomes 1; any other
  weight is rejected ("must be 1": weights are not used by this plugin), as are duplicate names.

Score-only: the plugin never rejects a pod, so it registers no cluster events.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ExtendedResourceTotals, dra_extended_totals
from pyscheduler.framework.events import ClusterEventWithHint
from pyscheduler.framework.helpers import signers
from pyscheduler.framework.helpers.names import is_scalar_resource_name
from pyscheduler.framework.interfaces import MAX_NODE_SCORE, Handle, ScoreValues
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.plugin_args import ResourceSpec as ResourceSpec  # part of these args
from pyscheduler.framework.plugin_args import default_resources as default_resources
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.resource import CPU, EPHEMERAL_STORAGE, MEMORY
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod

from .batch import MIN_BATCH, improvement_scores

NAME = "NodeResourcesBalancedAllocation"
PRE_SCORE_STATE_KEY = "PreScore" + NAME


# --------------------------------------------------------------------------------------------- args


@dataclass(frozen=True)
class NodeResourcesBalancedAllocationArgs:
    resources: tuple[ResourceSpec, ...] = field(default_factory=default_resources)

    def __post_init__(self) -> None:
        if not self.resources:
            object.__setattr__(self, "resources", default_resources())

    def validate(self, path: str) -> None:
        """kube's ValidateNodeResourcesBalancedAllocationArgs (first error)."""
        seen: set[str] = set()
        for i, r in enumerate(self.resources):
            if r.name in seen:
                raise ArgsError(f"{path}.resources[{i}].name", f'Duplicate value: "{r.name}"')
            seen.add(r.name)
            if r.weight != 1:
                raise ArgsError(f"{path}.resources[{i}].weight", f"Invalid value: {r.weight}: must be 1")


_CPU, _MEMORY, _EPHEMERAL, _SCALAR, _NONE = range(5)
# the NodeTable columns (allocatable, requested) of the kinds score_nodes vectorises
_COLUMNS = {
    _CPU: ("alloc_cpu", "req_cpu"),
    _MEMORY: ("alloc_mem", "req_mem"),
    _EPHEMERAL: ("alloc_eph", "req_eph"),
}


def _kind(name: str) -> int:
    if name == CPU:
        return _CPU
    if name == MEMORY:
        return _MEMORY
    if name == EPHEMERAL_STORAGE:
        return _EPHEMERAL
    return _SCALAR if is_scalar_resource_name(name) else _NONE


# ------------------------------------------------------------------------------------------- plugin


@dataclass(frozen=True, slots=True)
class _PreScoreState:
    pod_requests: tuple[int, ...]
    # DRAExtendedResource: device counts for configured resources a DeviceClass backs (None: none does)
    dra: ExtendedResourceTotals | None = None

    def clone(self) -> _PreScoreState:
        return self


class BalancedAllocation:
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[signers.Fragment], Status | None]:
        """Opportunistic batching: what this plugin's answers read of the pod (kube's SignPod)."""
        return signers.sign_resources(pod, self.handle)

    def __init__(
        self, args: NodeResourcesBalancedAllocationArgs | None = None, handle: Handle | None = None
    ) -> None:
        self.args = args if args is not None else NodeResourcesBalancedAllocationArgs()
        self.handle = handle
        self._resources = tuple((_kind(r.name), r.name) for r in self.args.resources)
        self._scalar_resources = tuple(n for k, n in self._resources if k == _SCALAR)
        # The default (cpu and memory) gets a direct path: Score runs per node per pod.
        self._cpu_memory = [k for k, _ in self._resources] == [_CPU, _MEMORY]

    def _pod_requests(self, pod: Pod) -> tuple[int, ...]:
        req = pod.requests
        out: list[int] = []
        for kind, rname in self._resources:
            if kind == _CPU:
                out.append(req.milli_cpu)
            elif kind == _MEMORY:
                out.append(req.memory)
            elif kind == _EPHEMERAL:
                out.append(req.ephemeral_storage)
            elif kind == _SCALAR:
                out.append(req.scalar.get(rname, 0))
            else:
                out.append(0)
        return tuple(out)

    def pre_score(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> Status | None:
        reqs = self._pod_requests(pod)
        if not any(reqs):
            return Status.skip(NAME)
        state.write(PRE_SCORE_STATE_KEY, _PreScoreState(reqs, self._dra_totals()))
        return None

    def _dra_totals(self) -> ExtendedResourceTotals | None:
        """kube's getDRAPreScoredParams: device counts when a configured scalar resource is DRA-backed."""
        if not self._scalar_resources or self.handle is None or not _gate(self.handle, "DRAExtendedResource"):
            return None
        return dra_extended_totals(self.handle, self._scalar_resources)

    def score(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> tuple[int, Status | None]:
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            reqs, dra = s.pod_requests, s.dra
        else:
            reqs = self._pod_requests(pod)
            if not any(reqs):
                return 0, None
            dra = self._dra_totals()
        return self._score(reqs, node_info, dra), None

    def score_nodes(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[ScoreValues, Status | None]:
        """``score`` for every node, on NumPy columns when the resources allow (see ``batch``)."""
        s = state.get(PRE_SCORE_STATE_KEY)
        if isinstance(s, _PreScoreState):
            reqs, dra = s.pod_requests, s.dra
        else:
            reqs = self._pod_requests(pod)
            if not any(reqs):
                return [0] * len(nodes), None
            dra = self._dra_totals()
        got = None
        if len(nodes) >= MIN_BATCH and dra is None:
            resources = self._batch_resources(reqs)
            if resources is not None:
                got = improvement_scores(nodes, resources)
        if got is None:
            return [self._score(reqs, ni, dra) for ni in nodes], None
        out, missing = got
        if missing.any():
            for i in np.flatnonzero(missing).tolist():
                out[i] = self._score(reqs, nodes[i])
        return out, None

    def _batch_resources(self, reqs: tuple[int, ...]) -> list[tuple[str, str, int]] | None:
        """(alloc column, requested column, pod request) per resource that can count; None when a
        scalar resource the pod requests counts (the columns do not hold those)."""
        out: list[tuple[str, str, int]] = []
        for (kind, _), q in zip(self._resources, reqs, strict=True):
            cols = _COLUMNS.get(kind)
            if cols is not None:
                out.append((cols[0], cols[1], q))
            elif kind == _SCALAR and q != 0:
                return None
        return out

    def _score(
        self, reqs: tuple[int, ...], node_info: NodeInfo, dra: ExtendedResourceTotals | None = None
    ) -> int:
        alloc_r, used_r = node_info.allocatable, node_info.requested
        if self._cpu_memory and alloc_r.milli_cpu and alloc_r.memory:
            c0 = used_r.milli_cpu / alloc_r.milli_cpu
            m0 = used_r.memory / alloc_r.memory
            c1 = min((used_r.milli_cpu + reqs[0]) / alloc_r.milli_cpu, 1.0)
            m1 = min((used_r.memory + reqs[1]) / alloc_r.memory, 1.0)
            with_ = int((1 - math.fabs((c1 - m1) / 2)) * float(MAX_NODE_SCORE))
            without = int((1 - math.fabs((min(c0, 1.0) - min(m0, 1.0)) / 2)) * float(MAX_NODE_SCORE))
            return 50 + (50 + with_ - without) // 2
        with_pod: list[float] = []
        without_pod: list[float] = []
        for i, (kind, rname) in enumerate(self._resources):
            q = reqs[i]
            if kind == _CPU:
                alloc, used = alloc_r.milli_cpu, used_r.milli_cpu
            elif kind == _MEMORY:
                alloc, used = alloc_r.memory, used_r.memory
            elif kind == _EPHEMERAL:
                alloc, used = alloc_r.ephemeral_storage, used_r.ephemeral_storage
            elif kind == _SCALAR and q != 0:
                alloc, used = _scalar(node_info, rname, dra)
            else:
                continue
            if alloc == 0:
                continue
            with_pod.append(min(float(used + q) / float(alloc), 1.0))
            without_pod.append(min(float(used) / float(alloc), 1.0))
        # kube 1.36 scores the change in balance the pod brings: 50 means no change, more is better.
        with_ = balanced_score(with_pod, sum(with_pod))
        without = balanced_score(without_pod, sum(without_pod))
        return 50 + (50 + with_ - without) // 2

    def score_extensions(self) -> None:
        return None

    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        # A Score plugin never makes a pod unschedulable: no event can be needed to retry it.
        return []


def _scalar(node_info: NodeInfo, rname: str, dra: ExtendedResourceTotals | None) -> tuple[int, int]:
    """(allocatable, requested) of a scalar resource; (0, 0) leaves it out. A resource the node's
    allocatable lacks but a DeviceClass backs counts the node's devices of that class (DRAExtendedResource)."""
    alloc = node_info.allocatable.scalar.get(rname, 0)
    if not alloc and dra is not None:
        node = node_info.node
        capacity, allocated = dra.totals(node_info.name, node.labels if node is not None else {}, rname)
        if capacity > 0:
            return capacity, allocated
    return alloc, node_info.requested.scalar.get(rname, 0)


def _gate(handle: Handle, name: str) -> bool:
    """A feature gate from ``handle.extra["feature_gates"]``; on, 1.36's default, if absent."""
    extra = getattr(handle, "extra", None)
    gates = extra.get("feature_gates") if isinstance(extra, Mapping) else None
    return bool(gates.get(name, True)) if isinstance(gates, Mapping) else True


def balanced_score(fractions: Sequence[float], total: float) -> int:
    """kube's balancedResourceScorer on the capped fractions (``total`` is their sum, in order)."""
    n = len(fractions)
    std = 0.0
    if n == 2:
        std = math.fabs((fractions[0] - fractions[1]) / 2)
    elif n > 2:
        mean = total / n
        acc = 0.0
        for f in fractions:
            acc = acc + (f - mean) * (f - mean)
        std = math.sqrt(acc / n)
    return int((1 - std) * float(MAX_NODE_SCORE))


def new(args: NodeResourcesBalancedAllocationArgs | None, handle: Handle) -> BalancedAllocation:
    return BalancedAllocation(args, handle)


PLUGIN = PluginSpec(
    NAME,
    new,
    NodeResourcesBalancedAllocationArgs,
    "prefers nodes whose cpu/memory (or configured resources) usage stays balanced with the pod",
)
