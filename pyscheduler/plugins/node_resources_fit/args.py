"""NodeResourcesFitArgs: decoding, kube-scheduler's defaults and kube-scheduler's validation.

Users write (camelCase, as in ``KubeSchedulerConfiguration``)::

    args:
      ignoredResources: ["example.com/foo"]
      ignoredResourceGroups: ["example.org"]
      scoringStrategy:
        type: RequestedToCapacityRatio       # LeastAllocated | MostAllocated | RequestedToCapacityRatio
        resources: [{name: cpu, weight: 1}, {name: nvidia.com/gpu, weight: 3}]
        requestedToCapacityRatio:
          shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]

Defaults (kube's ``SetDefaults_NodeResourcesFitArgs``): no ``scoringStrategy`` means LeastAllocated over
cpu and memory with weight 1; a strategy without ``resources`` gets cpu and memory; a resource weight of 0
(or none) becomes 1. The strategy ``type`` has no default once ``scoringStrategy`` is written.

Validation (kube's ``ValidateNodeResourcesFitArgs``): ignored resources and groups must be qualified names
(groups without '/'); the type must be one of the three; weights in (0, 100]; RequestedToCapacityRatio needs
a ``requestedToCapacityRatio.shape`` of 1+ points with strictly increasing utilization in [0, 100] and
score in [0, 10]; other types must not set ``requestedToCapacityRatio``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyscheduler.framework.helpers.names import qualified_name_errors
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.plugin_args import ResourceSpec as ResourceSpec  # part of these args
from pyscheduler.framework.plugin_args import default_resources as default_resources

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
SUPPORTED_STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)

# config.MaxCustomPriorityScore: shape scores are 0-10 and scaled by MAX_NODE_SCORE / 10.
MAX_CUSTOM_PRIORITY_SCORE = 10
MAX_UTILIZATION = 100


@dataclass(frozen=True)
class UtilizationShapePoint:
    utilization: int = 0
    score: int = 0


@dataclass(frozen=True)
class RequestedToCapacityRatioParam:
    shape: tuple[UtilizationShapePoint, ...] = ()


@dataclass(frozen=True)
class ScoringStrategy:
    type: str = ""
    resources: tuple[ResourceSpec, ...] = ()
    requested_to_capacity_ratio: RequestedToCapacityRatioParam | None = None

    def __post_init__(self) -> None:
        if not self.resources:
            object.__setattr__(self, "resources", default_resources())


def default_scoring_strategy() -> ScoringStrategy:
    return ScoringStrategy(LEAST_ALLOCATED, default_resources())


@dataclass(frozen=True)
class NodeResourcesFitArgs:
    ignored_resources: tuple[str, ...] = ()
    ignored_resource_groups: tuple[str, ...] = ()
    scoring_strategy: ScoringStrategy = field(default_factory=default_scoring_strategy)

    def validate(self, path: str) -> None:
        """Raise ArgsError for the first problem kube-scheduler would report."""
        for i, res in enumerate(self.ignored_resources):
            errs = qualified_name_errors(res)
            if errs:
                raise ArgsError(f"{path}.ignoredResources[{i}]", f'Invalid value: "{res}": {errs[0]}')
        for i, group in enumerate(self.ignored_resource_groups):
            p = f"{path}.ignoredResourceGroups[{i}]"
            if "/" in group:
                raise ArgsError(p, f"Invalid value: \"{group}\": resource group name can't contain '/'")
            errs = qualified_name_errors(group)
            if errs:
                raise ArgsError(p, f'Invalid value: "{group}": {errs[0]}')
        strategy = self.scoring_strategy
        sp = f"{path}.scoringStrategy"
        if strategy.type not in SUPPORTED_STRATEGIES:
            supported = ", ".join(f'"{s}"' for s in SUPPORTED_STRATEGIES)
            raise ArgsError(
                f"{sp}.type", f'Unsupported value: "{strategy.type}": supported values: {supported}'
            )
        for i, r in enumerate(strategy.resources):
            if r.weight <= 0 or r.weight > 100:
                raise ArgsError(
                    f"{sp}.resources[{i}].weight",
                    f"Invalid value: {r.weight}: resource weight of {r.name} not in valid range (0, 100]",
                )
        if strategy.type == REQUESTED_TO_CAPACITY_RATIO:
            if strategy.requested_to_capacity_ratio is None:
                raise ArgsError(
                    f"{sp}.requestedToCapacityRatio",
                    "Required value: must be specified when type is RequestedToCapacityRatio",
                )
            validate_function_shape(
                strategy.requested_to_capacity_ratio.shape, f"{sp}.requestedToCapacityRatio.shape"
            )
        elif strategy.requested_to_capacity_ratio is not None:
            raise ArgsError(
                f"{sp}.requestedToCapacityRatio",
                "Forbidden: must be nil when type is not RequestedToCapacityRatio",
            )


def validate_function_shape(shape: tuple[UtilizationShapePoint, ...], path: str) -> None:
    """kube's validateFunctionShape (the first error only)."""
    if not shape:
        raise ArgsError(path, "Required value: at least one point must be specified")
    for i in range(1, len(shape)):
        if shape[i - 1].utilization >= shape[i].utilization:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {shape[i].utilization}: values must be sorted in increasing order",
            )
    for i, point in enumerate(shape):
        if point.utilization < 0 or point.utilization > MAX_UTILIZATION:
            raise ArgsError(
                f"{path}[{i}].utilization",
                f"Invalid value: {point.utilization}: not in valid range [0, {MAX_UTILIZATION}]",
            )
        if point.score < 0 or point.score > MAX_CUSTOM_PRIORITY_SCORE:
            raise ArgsError(
                f"{path}[{i}].score",
                f"Invalid value: {point.score}: not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
            )
