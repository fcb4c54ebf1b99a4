"""NodeResourcesFitArgs: defaults, decoding and kube's validation messages."""

from typing import Any

import pytest

from pyscheduler.framework.plugin_args import ArgsError, decode_args
from pyscheduler.plugins.node_resources_fit import (
    NAME,
    PLUGIN,
    Fit,
    NodeResourcesFitArgs,
    ResourceSpec,
    ScoringStrategy,
)
from pyscheduler.plugins.node_resources_fit._fixtures import (
    FOO,
    strategy,
)

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
