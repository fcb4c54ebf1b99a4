"""KubeSchedulerConfiguration loading: defaults, merge and multiPoint expansion, validation errors.

The expansion cases mirror kube-scheduler's TestNewFrameworkMultiPointExpansion
(pkg/scheduler/framework/runtime/framework_test.go) and the default set its ExpandedPluginsV1
(pkg/scheduler/apis/config/testing/defaults/defaults.go), without the removed *Limits plugins.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from pyscheduler.config import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    ConfigError,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElection,
    ResolvedPlugins,
    SchedulerConfig,
    load_config,
    parse_config,
    parse_duration,
)
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec

TESTDATA = Path(__file__).parent / "testdata"

# ------------------------------------------------------------------------------------ fake registry

ALL_POINTS = set(EXTENSION_POINTS)
POINTS: dict[str, set[str]] = {
    "SchedulingGates": {"preEnqueue"},
    "PrioritySort": {"queueSort"},
    "NodeUnschedulable": {"filter"},
    "NodeName": {"filter"},
    "TaintToleration": {"filter", "preScore", "score"},
    "NodeAffinity": {"preFilter", "filter", "preScore", "score"},
    "NodePorts": {"preFilter", "filter"},
    "NodeResourcesFit": {"preFilter", "filter", "preScore", "score"},
    "VolumeRestrictions": {"preFilter", "filter"},
    "NodeVolumeLimits": {"preFilter", "filter"},
    "VolumeBinding": {"preFilter", "filter", "reserve", "preBind", "preScore", "score"},
    "VolumeZone": {"preFilter", "filter"},
    "PodTopologySpread": {"preFilter", "filter", "preScore", "score"},
    "InterPodAffinity": {"preFilter", "filter", "preScore", "score"},
    "DynamicResources": {"preEnqueue", "preFilter", "filter", "postFilter", "score", "reserve", "preBind"},
    "DefaultPreemption": {"postFilter"},
    "NodeResourcesBalancedAllocation": {"preScore", "score"},
    "ImageLocality": {"score"},
    "DefaultBinder": {"bind"},
    "NodeDeclaredFeatures": {"preFilter", "filter"},
    # kube's test plugins
    "Everything": ALL_POINTS,  # testPlugin
    "CustomScore": {"preScore", "score"},  # scorePlugin1
    "CustomScore2": {"score"},  # scorePlugin2
    "CustomNormalizeScore": {"score"},  # scoreWithNormalizePlugin1
    "CustomSort": {"queueSort"},
    "CustomBinder": {"bind"},
}


@dataclasses.dataclass(frozen=True)
class FitArgs:
    scoring_strategy: str = "LeastAllocated"
    ignored_resources: tuple[str, ...] = ()

    def validate(self, path: str) -> None:
        if self.scoring_strategy not in ("LeastAllocated", "MostAllocated"):
            raise ArgsError(f"{path}.scoringStrategy", f"unsupported strategy {self.scoring_strategy!r}")


@dataclasses.dataclass(frozen=True)
class AffinityArgs:
    hard_pod_affinity_weight: int = 1

    def validate(self, path: str) -> None:
        w = self.hard_pod_affinity_weight
        if not 0 <= w <= 100:
            raise ArgsError(f"{path}.hardPodAffinityWeight", f"must be in the range 0-100, got {w}")


@dataclasses.dataclass(frozen=True)
class SortArgs:
    reverse: bool = False


ARGS: dict[str, type] = {
    "NodeResourcesFit": FitArgs,
    "InterPodAffinity": AffinityArgs,
    "CustomSort": SortArgs,
}


def _factory(args: Any, handle: Any) -> Any:
    return None


REGISTRY: dict[str, PluginSpec] = {n: PluginSpec(n, _factory, ARGS.get(n)) for n in POINTS}


def points(name: str) -> set[str]:
    return POINTS[name]


def cfg(**fields: Any) -> dict[str, Any]:
    return {"apiVersion": API_VERSION, "kind": KIND, **fields}


def parse(data: Mapping[str, Any], registry: Mapping[str, PluginSpec] = REGISTRY) -> SchedulerConfig:
    return parse_config(data, registry, points)


def plugins_of(plugins: Mapping[str, Any]) -> ResolvedPlugins:
    return parse(cfg(profiles=[{"plugins": plugins}])).profiles[0].plugins


def error_of(data: Mapping[str, Any]) -> str:
    with pytest.raises(ConfigError) as e:
        parse(data)
    return str(e.value)


# ---------------------------------------------------------------------------------------- defaults

DEFAULT_FILTER = (
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
    "NodeDeclaredFeatures",
)
DEFAULT_PRE_SCORE = (
    "TaintToleration",
    "NodeAffinity",
    "NodeResourcesFit",
    "VolumeBinding",
    "PodTopologySpread",
    "InterPodAffinity",
    "NodeResourcesBalancedAllocation",
)
DEFAULT_SCORE_WEIGHTS = {
    "TaintToleration": 3,
    "NodeAffinity": 2,
    "NodeResourcesFit": 1,
    "VolumeBinding": 1,
    "PodTopologySpread": 2,
    "InterPodAffinity": 2,
    "DynamicResources": 2,
    "NodeResourcesBalancedAllocation": 1,
    "ImageLocality": 1,
}
# kube's ExpandedPluginsV1
DEFAULT_EXPANDED = {
    "preEnqueue": ("SchedulingGates", "DynamicResources"),
    "queueSort": ("PrioritySort",),
    "preFilter": (
        "NodeAffinity",
        "NodePorts",
        "NodeResourcesFit",
        "VolumeRestrictions",
        "NodeVolumeLimits",
        "VolumeBinding",
        "VolumeZone",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeDeclaredFeatures",
    ),
    "filter": DEFAULT_FILTER,
    "postFilter": ("DynamicResources", "DefaultPreemption"),
    "preScore": DEFAULT_PRE_SCORE,
    "score": tuple(DEFAULT_SCORE_WEIGHTS),
    "reserve": ("VolumeBinding", "DynamicResources"),
    "permit": (),
    "preBind": ("VolumeBinding", "DynamicResources"),
    "bind": ("DefaultBinder",),
    "postBind": (),
    "placementGenerate": (),  # the gang plugins join only with their alpha gates on
    "placementScore": (),
}


def test_defaults_without_a_file() -> None:
    c = load_config(None, REGISTRY, points)
    assert c.parallelism == 16
    assert c.percentage_of_nodes_to_score == 0
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (1, 10)
    assert c.extenders == ()
    assert c.delay_cache_until_active is False
    assert c.leader_election == LeaderElection(
        leader_elect=True,
        lease_duration=15.0,
        renew_deadline=10.0,
        retry_period=2.0,
        resource_lock="leases",
        resource_name="py-scheduler",
        resource_namespace="kube-system",
    )
    assert (c.client_connection.qps, c.client_connection.burst) == (50.0, 100)
    assert c.warnings == ()
    [p] = c.profiles
    assert p.scheduler_name == DEFAULT_SCHEDULER_NAME == "py-scheduler"
    assert p.percentage_of_nodes_to_score is None
    assert p.plugins.as_dict() == DEFAULT_EXPANDED
    assert dict(p.plugins.score_weights) == DEFAULT_SCORE_WEIGHTS
    assert set(p.plugins.instantiated) == set(POINTS) - {
        "Everything",
        "CustomScore",
        "CustomScore2",
        "CustomNormalizeScore",
        "CustomSort",
        "CustomBinder",
    }
    # every instantiated plugin has args: typed defaults, or None for plugins without args
    assert p.plugin_args["NodeResourcesFit"] == FitArgs()
    assert p.plugin_args["InterPodAffinity"] == AffinityArgs(1)
    assert p.plugin_args["NodeName"] is None
    assert set(p.plugin_args) == set(p.plugins.instantiated)
    assert c.profile("py-scheduler") is p
    assert c.profile("default-scheduler") is None


@pytest.mark.parametrize(
    "data",
    [
        cfg(),
        cfg(profiles=[]),
        cfg(profiles=None),
        cfg(profiles=[{}]),
        cfg(profiles=[{"schedulerName": None, "plugins": None}]),
        cfg(profiles=[{"plugins": {}}]),
        cfg(profiles=[{"plugins": {"score": {}, "multiPoint": {"enabled": [], "disabled": []}}}]),
    ],
)
def test_empty_forms_give_one_default_profile(data: dict[str, Any]) -> None:
    [p] = parse(data).profiles
    assert p.scheduler_name == "py-scheduler"
    assert p.plugins.as_dict() == DEFAULT_EXPANDED


def test_loaded_config_is_frozen() -> None:
    c = parse(cfg())
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.parallelism = 3  # type: ignore[misc]
    with pytest.raises(TypeError):
        c.profiles[0].plugin_args["NodeName"] = 1  # type: ignore[index]
    with pytest.raises(TypeError):
        c.profiles[0].plugins.score_weights["ImageLocality"] = 9  # type: ignore[index]


def test_default_plugin_missing_from_registry_is_left_out_with_a_warning() -> None:
    registry = {n: s for n, s in REGISTRY.items() if n not in ("ImageLocality", "VolumeZone")}
    c = parse(cfg(), registry)
    p = c.profiles[0].plugins
    assert "ImageLocality" not in p.score and "VolumeZone" not in p.filter
    assert len(c.warnings) == 2
    assert c.warnings == (
        "default plugin VolumeZone is not registered; it is left out of every profile",
        "default plugin ImageLocality is not registered; it is left out of every profile",
    )


def test_extension_point_names_are_normalized() -> None:
    snake = {
        "preEnqueue": "pre_enqueue",
        "queueSort": "queue_sort",
        "preFilter": "pre_filter",
        "postFilter": "post_filter",
        "preScore": "pre_score",
        "preBind": "pre_bind",
        "postBind": "post_bind",
    }
    c = parse_config(cfg(), REGISTRY, lambda n: {snake.get(p, p) for p in POINTS[n]} | {"normalizeScore"})
    assert c.profiles[0].plugins.as_dict() == DEFAULT_EXPANDED


# ---------------------------------------------------------------------------- multiPoint expansion

NONE_BUT = {"disabled": [{"name": "*"}]}  # multiPoint without the defaults, as in kube's framework tests


def _every_point(name: str, **overrides: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {p: overrides.get(p, (name,)) for p in EXTENSION_POINTS}


@pytest.mark.parametrize(
    ("plugins", "want", "weights"),
    [
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "Everything", "weight": 5}], **NONE_BUT}},
            _every_point("Everything"),
            {"Everything": 5},
            id="plugin expansion",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "Everything"}], **NONE_BUT},
                "preScore": {"disabled": [{"name": "Everything"}]},
                "score": {"disabled": [{"name": "Everything"}]},
            },
            _every_point("Everything", preScore=(), score=()),
            {},
            id="disable MultiPoint plugin at some extension points",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "Everything"}, {"name": "CustomScore"}], **NONE_BUT}},
            _every_point(
                "Everything", preScore=("Everything", "CustomScore"), score=("Everything", "CustomScore")
            ),
            {"Everything": 1, "CustomScore": 1},
            id="multiple MultiPoint plugins",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "Everything"}, {"name": "CustomScore"}], **NONE_BUT},
                "preScore": {"disabled": [{"name": "*"}]},
            },
            _every_point("Everything", preScore=(), score=("Everything", "CustomScore")),
            {"Everything": 1, "CustomScore": 1},
            id="disable MultiPoint extension",
        ),
        pytest.param(
            {
                "multiPoint": {
                    "enabled": [
                        {"name": "CustomNormalizeScore"},
                        {"name": "Everything"},
                        {"name": "CustomScore"},
                    ],
                    **NONE_BUT,
                },
                "score": {"enabled": [{"name": "CustomScore"}, {"name": "Everything"}]},
            },
            _every_point(
                "Everything",
                preScore=("Everything", "CustomScore"),
                score=("CustomScore", "Everything", "CustomNormalizeScore"),
            ),
            {"CustomScore": 1, "Everything": 1, "CustomNormalizeScore": 1},
            id="reorder MultiPoint plugins (specified extension takes precedence)",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "Everything"}, {"name": "CustomScore"}], **NONE_BUT},
                "score": {
                    "enabled": [
                        {"name": "CustomNormalizeScore"},
                        {"name": "CustomScore"},
                        {"name": "Everything"},
                    ]
                },
            },
            _every_point(
                "Everything",
                preScore=("Everything", "CustomScore"),
                score=("CustomScore", "Everything", "CustomNormalizeScore"),
            ),
            {"CustomScore": 1, "Everything": 1, "CustomNormalizeScore": 1},
            id="reorder only when the plugin is also in MultiPoint",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "Everything"}, {"name": "CustomScore"}], **NONE_BUT},
                "score": {
                    "enabled": [{"name": "CustomScore", "weight": 5}, {"name": "Everything", "weight": 3}]
                },
            },
            _every_point(
                "Everything", preScore=("Everything", "CustomScore"), score=("CustomScore", "Everything")
            ),
            {"CustomScore": 5, "Everything": 3},
            id="override MultiPoint plugin weights",
        ),
        pytest.param(
            {
                "multiPoint": {
                    "enabled": [{"name": "CustomSort"}, {"name": "CustomBinder"}, {"name": "CustomScore"}],
                    **NONE_BUT,
                }
            },
            {
                **{p: () for p in EXTENSION_POINTS},
                "queueSort": ("CustomSort",),
                "preScore": ("CustomScore",),
                "score": ("CustomScore",),
                "bind": ("CustomBinder",),
            },
            {"CustomScore": 1},
            id="disable and enable MultiPoint plugins with '*'",
        ),
        pytest.param(
            {
                "multiPoint": {
                    "enabled": [{"name": "CustomBinder"}, {"name": "CustomSort"}, {"name": "CustomScore"}],
                    "disabled": [{"name": "*"}, {"name": "CustomScore"}],
                }
            },
            {
                **{p: () for p in EXTENSION_POINTS},
                "queueSort": ("CustomSort",),
                "preScore": ("CustomScore",),
                "score": ("CustomScore",),
                "bind": ("CustomBinder",),
            },
            {"CustomScore": 1},
            id="enabled wins over disabled in the same multiPoint set",
        ),
        pytest.param(
            {
                "multiPoint": {"enabled": [{"name": "Everything"}, {"name": "CustomScore"}], **NONE_BUT},
                "score": {
                    "enabled": [
                        {"name": "CustomScore", "weight": 5},
                        {"name": "CustomScore2", "weight": 5},
                        {"name": "Everything", "weight": 3},
                    ]
                },
            },
            _every_point(
                "Everything",
                preScore=("Everything", "CustomScore"),
                score=("CustomScore", "Everything", "CustomScore2"),
            ),
            {"CustomScore": 5, "Everything": 3, "CustomScore2": 5},
            id="override weights and load a plugin once",
        ),
    ],
)
def test_multi_point_expansion(
    plugins: dict[str, Any], want: dict[str, tuple[str, ...]], weights: dict[str, int]
) -> None:
    got = plugins_of(plugins)
    assert got.as_dict() == want
    assert dict(got.score_weights) == weights


def _with(point: str, names: tuple[str, ...]) -> dict[str, tuple[str, ...]]:
    return {**DEFAULT_EXPANDED, point: names}


@pytest.mark.parametrize(
    ("plugins", "changes", "weights"),
    [
        pytest.param(
            {"score": {"disabled": [{"name": "ImageLocality"}]}},
            {"score": tuple(n for n in DEFAULT_SCORE_WEIGHTS if n != "ImageLocality")},
            {n: w for n, w in DEFAULT_SCORE_WEIGHTS.items() if n != "ImageLocality"},
            id="disable a default at one point",
        ),
        pytest.param(
            {"multiPoint": {"disabled": [{"name": "NodeName"}]}},
            {"filter": tuple(n for n in DEFAULT_FILTER if n != "NodeName")},
            DEFAULT_SCORE_WEIGHTS,
            id="disable a default everywhere",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "NodeAffinity", "weight": 7}]}},
            {},
            {**DEFAULT_SCORE_WEIGHTS, "NodeAffinity": 7},
            id="re-enable a default in multiPoint: new weight, same place",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "TaintToleration"}]}},
            {},
            {**DEFAULT_SCORE_WEIGHTS, "TaintToleration": 1},
            id="re-enable a default in multiPoint without weight: weight 1 as in kube",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": 5}]}},
            {"score": ("ImageLocality", *(n for n in DEFAULT_SCORE_WEIGHTS if n != "ImageLocality"))},
            {**DEFAULT_SCORE_WEIGHTS, "ImageLocality": 5},
            id="score entry moves the plugin first and sets its weight",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "TaintToleration"}]}},
            {},
            {**DEFAULT_SCORE_WEIGHTS, "TaintToleration": 1},
            id="score entry without weight resets the multiPoint weight to 1 as in kube",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "NodeAffinity", "weight": 0}]}},
            {"score": ("NodeAffinity", *(n for n in DEFAULT_SCORE_WEIGHTS if n != "NodeAffinity"))},
            {**DEFAULT_SCORE_WEIGHTS, "NodeAffinity": 1},
            id="weight 0 means 1",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "CustomScore", "weight": 4}]}},
            {
                "preScore": (*DEFAULT_PRE_SCORE, "CustomScore"),
                "score": (*DEFAULT_SCORE_WEIGHTS, "CustomScore"),
            },
            {**DEFAULT_SCORE_WEIGHTS, "CustomScore": 4},
            id="new multiPoint plugin goes after the defaults",
        ),
        pytest.param(
            {
                "filter": {
                    "disabled": [{"name": "*"}],
                    "enabled": [{"name": "NodePorts"}, {"name": "NodeName"}],
                }
            },
            {"filter": ("NodePorts", "NodeName")},
            DEFAULT_SCORE_WEIGHTS,
            id="replace a point's plugins",
        ),
        pytest.param(
            {"queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "PrioritySort"}]}},
            {"queueSort": ("CustomSort",)},
            DEFAULT_SCORE_WEIGHTS,
            id="replace the queueSort plugin",
        ),
        pytest.param(
            {"bind": {"enabled": [{"name": "CustomBinder"}]}},
            {"bind": ("DefaultBinder", "CustomBinder")},
            DEFAULT_SCORE_WEIGHTS,
            id="explicit plugin not in multiPoint runs after the multiPoint ones",
        ),
        pytest.param(
            {"bind": {"enabled": [{"name": "CustomBinder"}, {"name": "DefaultBinder"}]}},
            {"bind": ("DefaultBinder", "CustomBinder")},
            DEFAULT_SCORE_WEIGHTS,
            id="overrides first, then multiPoint, then the other explicit ones",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "NodeName"}], "disabled": [{"name": "NodeName"}]}},
            {"filter": (*(n for n in DEFAULT_FILTER if n != "NodeName"), "NodeName")},
            DEFAULT_SCORE_WEIGHTS,
            id="disabling at a point only drops the multiPoint entry",
        ),
        pytest.param(
            {"preScore": {"disabled": [{"name": "*"}]}, "score": {"disabled": [{"name": "*"}]}},
            {"preScore": (), "score": ()},
            {},
            id="no scoring",
        ),
    ],
)
def test_merge_with_defaults(
    plugins: dict[str, Any], changes: dict[str, tuple[str, ...]], weights: dict[str, int]
) -> None:
    got = plugins_of(plugins)
    assert got.as_dict() == {**DEFAULT_EXPANDED, **changes}
    assert dict(got.score_weights) == weights


def test_instantiated_plugins_follow_kube_plugins_needed() -> None:
    # disabled at its only point, but still enabled in multiPoint: kube still builds it
    got = plugins_of({"score": {"disabled": [{"name": "ImageLocality"}]}})
    assert "ImageLocality" in got.instantiated
    got = plugins_of({"multiPoint": {"disabled": [{"name": "ImageLocality"}]}})
    assert "ImageLocality" not in got.instantiated
    got = plugins_of({"permit": {"enabled": [{"name": "Everything"}]}})
    assert got.permit == ("Everything",) and "Everything" in got.instantiated


def test_at_accepts_both_spellings() -> None:
    p = plugins_of({})
    assert p.at("preFilter") == p.at("pre_filter") == p.pre_filter
    with pytest.raises(KeyError):
        p.at("normalizeScore")


# ------------------------------------------------------------------------------------ plugin errors


def _profile_plugins(plugins: dict[str, Any]) -> dict[str, Any]:
    return cfg(profiles=[{"plugins": plugins}])


@pytest.mark.parametrize(
    ("plugins", "want"),
    [
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality"}, {"name": "NodeResourceFit"}]}},
            'profiles[0].plugins.score.enabled[1].name: unknown plugin "NodeResourceFit" '
            '(did you mean "NodeResourcesFit"?)',
            id="misspelt",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "nodename"}]}},
            'profiles[0].plugins.filter.enabled[0].name: unknown plugin "nodename" (did you mean '
            '"NodeName"?)',
            id="wrong case",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "Zzz"}]}},
            'profiles[0].plugins.multiPoint.enabled[0].name: unknown plugin "Zzz"; registered '
            "plugins: CustomBinder",
            id="nothing close",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "EBSLimits"}]}},
            'profiles[0].plugins.filter.enabled[0].name: plugin "EBSLimits" was removed from '
            "kubescheduler.config.k8s.io/v1",
            id="removed plugin",
        ),
        pytest.param(
            {"filter": {"disabled": [{"name": "NodeNam"}]}},
            'profiles[0].plugins.filter.disabled[0].name: unknown plugin "NodeNam" (did you mean '
            '"NodeName"?)',
            id="misspelt disabled",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "*"}]}},
            'profiles[0].plugins.filter.enabled[0].name: "*" is only allowed in a disabled list',
            id="wildcard enabled",
        ),
        pytest.param(
            {"filter": {"enabled": [{"weight": 2}]}},
            "profiles[0].plugins.filter.enabled[0].name: required",
            id="no name",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "NodeName"}]}},
            'profiles[0].plugins.score.enabled[0].name: plugin "NodeName" does not extend score '
            "(it implements: filter)",
            id="plugin does not implement the point",
        ),
        pytest.param(
            {"filter": {"enabled": [{"name": "NodeName"}, {"name": "NodePorts"}, {"name": "NodeName"}]}},
            'profiles[0].plugins.filter.enabled[2].name: plugin "NodeName" is enabled more than '
            "once at filter (also at enabled[0])",
            id="duplicate at a point",
        ),
        pytest.param(
            {"multiPoint": {"enabled": [{"name": "Everything"}, {"name": "Everything"}], **NONE_BUT}},
            'profiles[0].plugins.multiPoint.enabled[1].name: plugin "Everything" is enabled more '
            "than once at multiPoint (also at enabled[0])",
            id="duplicate in multiPoint",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": -1}]}},
            "profiles[0].plugins.score.enabled[0].weight: must be a positive integer (0 or unset "
            "means 1), got -1",
            id="negative weight",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": "2"}]}},
            "profiles[0].plugins.score.enabled[0].weight: must be an integer, got '2'",
            id="weight not a number",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "weight": 2**31}]}},
            "profiles[0].plugins.score.enabled[0].weight: must fit in a 32-bit integer, got 2147483648",
            id="weight too big",
        ),
        pytest.param(
            {"score": {"enabled": [{"name": "ImageLocality", "wieght": 2}]}},
            'profiles[0].plugins.score.enabled[0].wieght: unknown field (did you mean "weight"?)',
            id="unknown field in a plugin entry",
        ),
        pytest.param(
            {"scores": {"enabled": [{"name": "ImageLocality"}]}},
            'profiles[0].plugins.scores: unknown field (did you mean "score"?)',
            id="unknown extension point",
        ),
        pytest.param(
            {"score": {"enable": []}},
            'profiles[0].plugins.score.enable: unknown field (did you mean "enabled"?)',
            id="unknown field in a plugin set",
        ),
        pytest.param(
            {"score": {"enabled": {"name": "ImageLocality"}}},
            "profiles[0].plugins.score.enabled: must be a list, got an object",
            id="enabled not a list",
        ),
        pytest.param(
            {"score": {"enabled": ["ImageLocality"]}},
            "profiles[0].plugins.score.enabled[0]: must be an object with a name, got 'ImageLocality'",
            id="plugin entry not an object",
        ),
        pytest.param(
            {"queueSort": {"enabled": [{"name": "CustomSort"}]}},
            'profiles[0].plugins.queueSort: exactly one queueSort plugin is required, got 2: "PrioritySort", '
            '"CustomSort"',
            id="two queueSort plugins",
        ),
        pytest.param(
            {"multiPoint": NONE_BUT},
            "profiles[0].plugins.queueSort: exactly one queueSort plugin is required, got 0",
            id="no plugins at all",
        ),
        pytest.param(
            {"bind": {"disabled": [{"name": "DefaultBinder"}]}},
            "profiles[0].plugins.bind: at least one bind plugin is required",
            id="no bind plugin",
        ),
        pytest.param(
            {"placementScore": {"enabled": [{"name": "ImageLocality"}]}},
            "profiles[0].plugins.placementScore: needs the TopologyAwareWorkloadScheduling feature gate",
            id="alpha placement point",
        ),
    ],
)
def test_plugin_errors(plugins: dict[str, Any], want: str) -> None:
    assert error_of(_profile_plugins(plugins)).startswith(want)


def test_disabling_kube_plugins_we_do_not_implement_is_allowed() -> None:
    got = plugins_of({"multiPoint": {"disabled": [{"name": "GangScheduling"}, {"name": "EBSLimits"}]}})
    assert got.as_dict() == DEFAULT_EXPANDED


# ------------------------------------------------------------------------------------ pluginConfig


def _plugin_config(*entries: Any, **profile: Any) -> dict[str, Any]:
    return cfg(profiles=[{"pluginConfig": list(entries), **profile}])


def test_plugin_args_are_decoded_through_the_registry() -> None:
    c = parse(
        _plugin_config(
            {
                "name": "InterPodAffinity",
                "args": {
                    "apiVersion": API_VERSION,
                    "kind": "InterPodAffinityArgs",
                    "hardPodAffinityWeight": 7,
                },
            },
            {
                "name": "NodeResourcesFit",
                "args": {"scoringStrategy": "MostAllocated", "ignoredResources": ["x"]},
            },
            {"name": "NodeName"},
            {"name": "NodePorts", "args": None},
        )
    )
    args = c.profiles[0].plugin_args
    assert args["InterPodAffinity"] == AffinityArgs(7)
    assert args["NodeResourcesFit"] == FitArgs("MostAllocated", ("x",))
    assert args["NodeName"] is None and args["NodePorts"] is None
    assert args["PodTopologySpread"] is None  # no args type


def test_args_of_plugins_not_enabled_are_validated_but_not_kept() -> None:
    c = parse(_plugin_config({"name": "CustomSort", "args": {"reverse": True}}))
    assert "CustomSort" not in c.profiles[0].plugin_args
    assert "profiles[0].pluginConfig[0].args.reverse: must be a boolean" in error_of(
        _plugin_config({"name": "CustomSort", "args": {"reverse": 1}})
    )


@pytest.mark.parametrize(
    ("entries", "want"),
    [
        pytest.param(
            [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 101}}],
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: must be in the range 0-100, got 101",
            id="args fail the plugin's validation",
        ),
        pytest.param(
            [{"name": "NodeResourcesFit", "args": {"scoringStrategy": "Spread"}}],
            "profiles[0].pluginConfig[0].args.scoringStrategy: unsupported strategy 'Spread'",
            id="args fail validation 2",
        ),
        pytest.param(
            [{"name": "InterPodAffinity", "args": {"hardPodAfinityWeight": 2}}],
            "profiles[0].pluginConfig[0].args.hardPodAfinityWeight: unknown field",
            id="unknown args field",
        ),
        pytest.param(
            [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": "2"}}],
            "profiles[0].pluginConfig[0].args.hardPodAffinityWeight: must be an integer",
            id="args field of the wrong type",
        ),
        pytest.param(
            [{"name": "InterPodAffinity", "args": {"kind": "NodeAffinityArgs"}}],
            "profiles[0].pluginConfig[0].args.kind: must be \"InterPodAffinityArgs\", got 'NodeAffinityArgs'",
            id="args of another kind",
        ),
        pytest.param(
            [{"name": "InterPodAffinity", "args": {"apiVersion": "kubescheduler.config.k8s.io/v1beta3"}}],
            "profiles[0].pluginConfig[0].args.apiVersion: must be",
            id="args of another version",
        ),
        pytest.param(
            [{"name": "InterPodAffinity", "args": [1]}],
            "profiles[0].pluginConfig[0].args: must be an object, got a list",
            id="args not an object",
        ),
        pytest.param(
            [{"name": "NodeName", "args": {"foo": 1}}],
            "profiles[0].pluginConfig[0].args.foo: plugin NodeName takes no arguments",
            id="plugin without args",
        ),
        pytest.param(
            [{"name": "NodeName"}, {"name": "NodePorts"}, {"name": "NodeName"}],
            'profiles[0].pluginConfig[2].name: duplicate entry for plugin "NodeName" (also at '
            "pluginConfig[0])",
            id="duplicate",
        ),
        pytest.param(
            [{"name": "InterPodAfinity", "args": {}}],
            'profiles[0].pluginConfig[0].name: unknown plugin "InterPodAfinity" (did you mean '
            '"InterPodAffinity"?)',
            id="unknown plugin",
        ),
        pytest.param(
            [{"name": "GCEPDLimits"}],
            'profiles[0].pluginConfig[0].name: plugin "GCEPDLimits" was removed',
            id="removed plugin",
        ),
        pytest.param(
            [{"args": {}}],
            "profiles[0].pluginConfig[0].name: required",
            id="no name",
        ),
        pytest.param(
            [{"name": "NodeName", "arg": {}}],
            'profiles[0].pluginConfig[0].arg: unknown field (did you mean "args"?)',
            id="unknown field",
        ),
    ],
)
def test_plugin_config_errors(entries: list[Any], want: str) -> None:
    assert error_of(_plugin_config(*entries)).startswith(want)


def test_config_error_is_an_args_error_and_a_value_error() -> None:
    with pytest.raises(ConfigError) as e:
        parse(_plugin_config({"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": -1}}))
    assert isinstance(e.value, ArgsError) and isinstance(e.value, ValueError)
    assert e.value.path == "profiles[0].pluginConfig[0].args.hardPodAffinityWeight"
    assert e.value.detail == "must be in the range 0-100, got -1"


# ---------------------------------------------------------------------------------------- profiles


def test_multiple_profiles() -> None:
    c = parse(
        cfg(
            profiles=[
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "percentageOfNodesToScore": 70,
                    "plugins": {"score": {"disabled": [{"name": "*"}]}},
                    "pluginConfig": [{"name": "InterPodAffinity", "args": {"hardPodAffinityWeight": 3}}],
                },
            ]
        )
    )
    assert c.scheduler_names == ("a", "b")
    a, b = c.profiles
    assert a.plugins.score == DEFAULT_EXPANDED["score"] and b.plugins.score == ()
    assert (a.percentage_of_nodes_to_score, b.percentage_of_nodes_to_score) == (None, 70)
    assert a.plugin_args["InterPodAffinity"] == AffinityArgs(1)
    assert b.plugin_args["InterPodAffinity"] == AffinityArgs(3)


def test_same_custom_queue_sort_in_every_profile() -> None:
    qs = {"queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}}
    pc = [{"name": "CustomSort", "args": {"reverse": True}}]
    c = parse(
        cfg(
            profiles=[
                {"schedulerName": "a", "plugins": qs, "pluginConfig": pc},
                {"schedulerName": "b", "plugins": qs, "pluginConfig": pc},
            ]
        )
    )
    assert [p.plugins.queue_sort for p in c.profiles] == [("CustomSort",), ("CustomSort",)]
    assert c.profiles[1].plugin_args["CustomSort"] == SortArgs(True)


@pytest.mark.parametrize(
    ("profiles", "want"),
    [
        pytest.param(
            [{"schedulerName": "a"}, {}],
            "profiles[1].schedulerName: required when there is more than one profile",
            id="unnamed among several",
        ),
        pytest.param([{"schedulerName": ""}], "profiles[0].schedulerName: required", id="empty name"),
        pytest.param(
            [{"schedulerName": "a"}, {"schedulerName": "b"}, {"schedulerName": "a"}],
            'profiles[2].schedulerName: duplicate profile name "a" (also profiles[0])',
            id="duplicate names",
        ),
        pytest.param(
            [
                {"schedulerName": "a"},
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}
                    },
                },
            ],
            'profiles[1].plugins.queueSort: must be the same for all profiles: "CustomSort" here, '
            '"PrioritySort" in profiles[0]',
            id="different queueSort plugins",
        ),
        pytest.param(
            [
                {
                    "schedulerName": "a",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}
                    },
                },
                {
                    "schedulerName": "b",
                    "plugins": {
                        "queueSort": {"enabled": [{"name": "CustomSort"}], "disabled": [{"name": "*"}]}
                    },
                    "pluginConfig": [{"name": "NodeName"}, {"name": "CustomSort", "args": {"reverse": True}}],
                },
            ],
            'profiles[1].pluginConfig[1].args: args of queueSort plugin "CustomSort" must be the '
            "same for all profiles",
            id="different queueSort args",
        ),
        pytest.param(
            [{"schedulerName": "a", "percentageOfNodesToScore": 101}],
            "profiles[0].percentageOfNodesToScore: must be in the range 0-100, got 101",
            id="percentage",
        ),
        pytest.param(
            [{"schedulerName": "a", "plugin": {}}],
            'profiles[0].plugin: unknown field (did you mean "plugins"?)',
            id="unknown profile field",
        ),
        pytest.param([["a"]], "profiles[0]: must be an object, got a list", id="profile not an object"),
        pytest.param(
            [{"schedulerName": 5}], "profiles[0].schedulerName: must be a string, got 5", id="name type"
        ),
    ],
)
def test_profile_errors(profiles: list[Any], want: str) -> None:
    assert error_of(cfg(profiles=profiles)) == want


# -------------------------------------------------------------------------------------- top level


@pytest.mark.parametrize(
    ("data", "want"),
    [
        pytest.param(
            {"kind": KIND},
            'apiVersion: required; must be "kubescheduler.config.k8s.io/v1"',
            id="no apiVersion",
        ),
        pytest.param(
            {"apiVersion": "kubescheduler.config.k8s.io/v1beta3", "kind": KIND},
            'apiVersion: must be "kubescheduler.config.k8s.io/v1", got '
            "'kubescheduler.config.k8s.io/v1beta3'",
            id="old apiVersion",
        ),
        pytest.param(
            {"apiVersion": API_VERSION}, 'kind: required; must be "KubeSchedulerConfiguration"', id="no kind"
        ),
        pytest.param(
            {"apiVersion": API_VERSION, "kind": "KubeProxyConfiguration"},
            "kind: must be \"KubeSchedulerConfiguration\", got 'KubeProxyConfiguration'",
            id="wrong kind",
        ),
        pytest.param(
            cfg(parallelizm=4), 'parallelizm: unknown field (did you mean "parallelism"?)', id="unknown field"
        ),
        pytest.param(
            cfg(foo=1), "foo: unknown field; known fields: apiVersion, kind, parallelism", id="unknown"
        ),
        pytest.param(cfg(parallelism=0), "parallelism: must be greater than zero, got 0", id="parallelism"),
        pytest.param(cfg(parallelism=2.5), "parallelism: must be an integer, got 2.5", id="parallelism type"),
        pytest.param(
            cfg(percentageOfNodesToScore=-1),
            "percentageOfNodesToScore: must be in the range 0-100, got -1",
            id="percentage",
        ),
        pytest.param(
            cfg(podInitialBackoffSeconds=0),
            "podInitialBackoffSeconds: must be greater than 0, got 0",
            id="backoff",
        ),
        pytest.param(
            cfg(podInitialBackoffSeconds=5, podMaxBackoffSeconds=4),
            "podMaxBackoffSeconds: must be greater than or equal to podInitialBackoffSeconds (5), got 4",
            id="max backoff below initial",
        ),
        pytest.param(cfg(profiles={"a": 1}), "profiles: must be a list, got an object", id="profiles type"),
        pytest.param(
            cfg(delayCacheUntilActive="yes"),
            "delayCacheUntilActive: must be a boolean, got 'yes'",
            id="bool type",
        ),
        pytest.param(
            cfg(clientConnection={"burst": -1}),
            "clientConnection.burst: must be non-negative, got -1",
            id="burst",
        ),
        pytest.param(
            cfg(clientConnection={"qps": "fast"}),
            "clientConnection.qps: must be a number, got 'fast'",
            id="qps",
        ),
        pytest.param(
            cfg(clientConnection={"kubeConfig": ""}),
            'clientConnection.kubeConfig: unknown field (did you mean "kubeconfig"?)',
            id="client connection field",
        ),
    ],
)
def test_top_level_errors(data: dict[str, Any], want: str) -> None:
    assert error_of(data).startswith(want)


def test_top_level_values() -> None:
    c = parse(
        cfg(
            parallelism=4,
            percentageOfNodesToScore=30,
            podInitialBackoffSeconds=3,
            podMaxBackoffSeconds=3,
            delayCacheUntilActive=True,
            enableProfiling=False,
            clientConnection={"kubeconfig": "/k", "qps": 0, "burst": 0, "contentType": "application/json"},
        )
    )
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (4, 30)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (3, 3)
    assert c.delay_cache_until_active is True
    assert (c.enable_profiling, c.enable_contention_profiling) == (False, False)
    assert c.client_connection.kubeconfig == "/k"
    assert (c.client_connection.qps, c.client_connection.burst) == (50.0, 100)  # 0 means the default


def test_alpha_and_unused_fields_are_accepted_with_warnings() -> None:
    c = parse(
        cfg(
            percentageOfPlacementsToScore=50,
            parallelism=4,
            delayCacheUntilActive=True,
            clientConnection={"contentType": "application/vnd.kubernetes.protobuf"},
            profiles=[{"percentageOfPlacementsToScore": 10, "plugins": {"placementScore": {}}}],
        )
    )
    assert (c.parallelism, c.delay_cache_until_active) == (4, True)
    assert c.warnings == (
        "percentageOfPlacementsToScore: ignored: pyscheduler does not schedule placements",
        "parallelism: partly used: caps the forked Filter workers of a chunk whose Filter would take over 50 ms"
        " in one process (none of the benchmark workloads); Score runs in one process",
        "delayCacheUntilActive: not used: the cache is filled at start whether or not this instance leads",
        "clientConnection.contentType: pyscheduler sends and accepts application/json, "
        "not 'application/vnd.kubernetes.protobuf' / ''",
        "profiles[0].percentageOfPlacementsToScore: ignored: pyscheduler does not schedule placements",
    )


@pytest.mark.parametrize("key", ["healthzBindAddress", "metricsBindAddress"])
def test_pre_v1_bind_addresses_are_refused(key: str) -> None:
    # kube 1.36 decodes v1 strictly: these fields left with v1beta3
    with pytest.raises(ConfigError) as e:
        parse(cfg(**{key: "0.0.0.0:10251"}))
    assert e.value.path == key
    assert "unknown field" in str(e.value)


# --------------------------------------------------------------------------------- leader election


@pytest.mark.parametrize(
    ("value", "seconds"),
    [
        ("0", 0.0),
        ("15s", 15.0),
        ("1m30s", 90.0),
        ("500ms", 0.5),
        ("1.5h", 5400.0),
        ("2h45m", 9900.0),
        ("1h1m1s1ms", 3661.001),
        ("100us", 0.0001),
        ("100\u00b5s", 0.0001),
        ("100\u03bcs", 0.0001),
        ("10ns", 1e-8),
        (".5s", 0.5),
        ("1.s", 1.0),
        ("+3s", 3.0),
        ("-1.5s", -1.5),
    ],
)
def test_parse_duration(value: str, seconds: float) -> None:
    assert parse_duration(value) == pytest.approx(seconds)


@pytest.mark.parametrize(
    "value", ["", "s", "15", "1x", "1s2", "--1s", "1 s", " 1s", "1S", ".s", 15, 1.5, None]
)
def test_parse_duration_rejects(value: Any) -> None:
    with pytest.raises(ConfigError) as e:
        parse_duration(value, "leaderElection.leaseDuration")
    assert str(e.value).startswith("leaderElection.leaseDuration: ")


@pytest.mark.parametrize(
    ("le", "want"),
    [
        pytest.param({}, LeaderElection(), id="defaults"),
        pytest.param(
            {"leaseDuration": "1m", "renewDeadline": "30s", "retryPeriod": "500ms"},
            LeaderElection(lease_duration=60.0, renew_deadline=30.0, retry_period=0.5),
            id="durations",
        ),
        pytest.param(
            {"resourceName": "sched", "resourceNamespace": "ns", "resourceLock": ""},
            LeaderElection(resource_name="sched", resource_namespace="ns"),
            id="names; empty lock means leases",
        ),
        pytest.param(
            {"leaderElect": False, "leaseDuration": "1s", "renewDeadline": "5s", "resourceLock": "endpoints"},
            LeaderElection(
                leader_elect=False, lease_duration=1.0, renew_deadline=5.0, resource_lock="endpoints"
            ),
            id="not validated when disabled",
        ),
        pytest.param(
            {"renewDeadline": "2500ms", "retryPeriod": "2s"},
            LeaderElection(renew_deadline=2.5),
            id="renew just above 1.2 x retry",
        ),
    ],
)
def test_leader_election(le: dict[str, Any], want: LeaderElection) -> None:
    assert parse(cfg(leaderElection=le)).leader_election == want


@pytest.mark.parametrize(
    ("le", "want"),
    [
        pytest.param(
            {"leaseDuration": 15},
            'leaderElection.leaseDuration: must be a duration string such as "15s", got 15',
            id="number",
        ),
        pytest.param(
            {"leaseDuration": "15"},
            "leaderElection.leaseDuration: invalid duration '15'",
            id="no unit",
        ),
        pytest.param(
            {"retryPeriod": "0s"}, "leaderElection.retryPeriod: must be greater than zero, got 0s", id="zero"
        ),
        pytest.param(
            {"leaseDuration": "10s"},
            "leaderElection.leaseDuration: must be greater than renewDeadline (10s <= 10s)",
            id="lease equal to renew",
        ),
        pytest.param(
            {"renewDeadline": "2400ms", "retryPeriod": "2s"},
            "leaderElection.renewDeadline: must be greater than 1.2 x retryPeriod",
            id="renew not above 1.2 x retry",
        ),
        pytest.param(
            {"resourceLock": "endpointsleases"},
            "leaderElection.resourceLock: must be \"leases\", got 'endpointsleases'",
            id="lock",
        ),
        pytest.param(
            {"leaderElection": True},
            'leaderElection.leaderElection: unknown field (did you mean "leaderElect"?)',
            id="unknown field",
        ),
    ],
)
def test_leader_election_errors(le: dict[str, Any], want: str) -> None:
    assert error_of(cfg(leaderElection=le)).startswith(want)


# ---------------------------------------------------------------------------------------- extenders


def test_extenders() -> None:
    c = parse(
        cfg(
            extenders=[
                {
                    "urlPrefix": "https://ext:8443/scheduler",
                    "filterVerb": "filter",
                    "preemptVerb": "preempt",
                    "prioritizeVerb": "prioritize",
                    "bindVerb": "bind",
                    "weight": 5,
                    "enableHTTPS": True,
                    "tlsConfig": {
                        "serverName": "ext",
                        "certFile": "/c",
                        "keyFile": "/k",
                        "caFile": "/ca",
                        "certData": "Y2VydA==",
                        "keyData": "a2V5",
                    },
                    "httpTimeout": "30s",
                    "nodeCacheCapable": True,
                    "managedResources": [
                        {"name": "example.com/foo", "ignoredByScheduler": True},
                        {"name": "example.com/bar"},
                    ],
                    "ignorable": True,
                },
                {"urlPrefix": "http://other/", "filterVerb": "filter"},
            ]
        )
    )
    a, b = c.extenders
    assert (a.url_prefix, a.filter_verb, a.preempt_verb, a.prioritize_verb, a.bind_verb) == (
        "https://ext:8443/scheduler",
        "filter",
        "preempt",
        "prioritize",
        "bind",
    )
    assert (a.weight, a.enable_https, a.http_timeout, a.node_cache_capable, a.ignorable) == (
        5,
        True,
        30.0,
        True,
        True,
    )
    assert a.tls_config == ExtenderTLSConfig(
        server_name="ext", cert_file="/c", key_file="/k", ca_file="/ca", cert_data=b"cert", key_data=b"key"
    )
    assert "key_data" not in repr(a.tls_config)  # the private key stays out of logs
    assert a.managed_resources == (
        ExtenderManagedResource("example.com/foo", True),
        ExtenderManagedResource("example.com/bar", False),
    )
    assert (b.weight, b.http_timeout, b.tls_config, b.enable_https) == (0, 5.0, None, False)


@pytest.mark.parametrize(
    ("extenders", "want"),
    [
        pytest.param(
            [{"urlPrefix": "http://e", "prioritizeVerb": "prioritize"}],
            "extenders[0].weight: must be a positive integer when prioritizeVerb is set, got 0",
            id="prioritize without weight",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "prioritizeVerb": "prioritize", "weight": -2}],
            "extenders[0].weight: must be a positive integer when prioritizeVerb is set, got -2",
            id="negative weight",
        ),
        pytest.param(
            [
                {"urlPrefix": "http://a", "bindVerb": "bind"},
                {"urlPrefix": "http://b"},
                {"urlPrefix": "http://c", "bindVerb": "bind"},
            ],
            "extenders: only one extender can implement bind, found 2 (extenders 0, 2)",
            id="two binders",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "managedResources": [{"name": "cpu"}]}],
            "extenders[0].managedResources[0].name: 'cpu': is not an extended resource name",
            id="native resource",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "managedResources": [{"name": "kubernetes.io/foo"}]}],
            "extenders[0].managedResources[0].name: 'kubernetes.io/foo': is not an extended resource name",
            id="kubernetes.io resource",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "managedResources": [{"name": "Example.com/foo"}]}],
            "extenders[0].managedResources[0].name: 'Example.com/foo': the prefix part of a qualified name",
            id="bad prefix",
        ),
        pytest.param(
            [
                {"urlPrefix": "http://a", "managedResources": [{"name": "example.com/foo"}]},
                {"urlPrefix": "http://b", "managedResources": [{"name": "example.com/foo"}]},
            ],
            'extenders[1].managedResources[0].name: duplicate extender managed resource "example.com/foo" '
            "(also at extenders[0].managedResources[0].name)",
            id="duplicate managed resource",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "tlsConfig": {"caData": "not base64!"}}],
            "extenders[0].tlsConfig.caData: must be base64-encoded",
            id="bad base64",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "enableHttps": True}],
            'extenders[0].enableHttps: unknown field (did you mean "enableHTTPS"?)',
            id="v1 spells enableHTTPS",
        ),
        pytest.param([{"filterVerb": "filter"}], "extenders[0].urlPrefix: required", id="no url"),
        pytest.param(
            [{"urlPrefix": "http://e", "httpTimeout": 5}],
            'extenders[0].httpTimeout: must be a duration string such as "15s", got 5',
            id="timeout number",
        ),
        pytest.param(
            [{"urlPrefix": "http://e", "httpTimeout": "-1s"}],
            "extenders[0].httpTimeout: must not be negative",
            id="negative timeout",
        ),
    ],
)
def test_extender_errors(extenders: list[Any], want: str) -> None:
    assert error_of(cfg(extenders=extenders)).startswith(want)


# ------------------------------------------------------------------------------------------- files


def test_load_full_file() -> None:
    c = load_config(str(TESTDATA / "full.yaml"), REGISTRY, points)
    assert (c.parallelism, c.percentage_of_nodes_to_score) == (8, 40)
    assert (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds) == (2, 20)
    assert c.delay_cache_until_active is True
    assert (c.enable_profiling, c.enable_contention_profiling) == (False, False)
    assert c.leader_election == LeaderElection(
        lease_duration=90.0, renew_deadline=45.0, retry_period=5.0, resource_namespace="scheduling"
    )
    assert c.client_connection.kubeconfig == "/etc/kubernetes/scheduler.conf"
    assert (c.client_connection.qps, c.client_connection.burst) == (100.0, 200)
    main, no_scoring = c.profiles
    assert main.scheduler_name == "py-scheduler"
    assert main.plugins.score == (
        "NodeResourcesFit",
        "TaintToleration",
        "NodeAffinity",
        "VolumeBinding",
        "PodTopologySpread",
        "InterPodAffinity",
        "DynamicResources",
        "NodeResourcesBalancedAllocation",
        "CustomScore",
    )
    assert dict(main.plugins.score_weights) == {
        **{n: w for n, w in DEFAULT_SCORE_WEIGHTS.items() if n != "ImageLocality"},
        "NodeResourcesFit": 5,
        "CustomScore": 4,
    }
    assert main.plugins.pre_score == (*DEFAULT_PRE_SCORE, "CustomScore")
    assert main.plugin_args["InterPodAffinity"] == AffinityArgs(5)
    assert main.plugin_args["NodeResourcesFit"] == FitArgs("MostAllocated")
    assert no_scoring.scheduler_name == "no-scoring"
    assert no_scoring.percentage_of_nodes_to_score == 100
    assert (no_scoring.plugins.pre_score, no_scoring.plugins.score) == ((), ())
    assert no_scoring.plugins.filter == DEFAULT_FILTER
    assert no_scoring.plugin_args["InterPodAffinity"] == AffinityArgs(1)
    [ext] = c.extenders
    assert (ext.weight, ext.http_timeout, ext.enable_https) == (3, 1.5, True)
    assert ext.tls_config == ExtenderTLSConfig(insecure=True, ca_data=b"hello")
    assert ext.managed_resources == (ExtenderManagedResource("example.com/gpu", True),)
    # the file sets fields pyscheduler validates but does not act on: each is named
    assert [w.split(":")[0] for w in c.warnings] == [
        "parallelism",
        "delayCacheUntilActive",
        "enableProfiling",
    ]


@pytest.mark.parametrize(
    ("name", "want", "line"),
    [
        ("bad_syntax.yaml", "bad_syntax.yaml:9:10: invalid YAML: ", 9),
        ("duplicate_key.yaml", "duplicate_key.yaml:6:1: invalid YAML: found duplicate key 'parallelism'", 6),
        ("old_version.yaml", 'apiVersion: must be "kubescheduler.config.k8s.io/v1", got', None),
        (
            "typo_plugin.yaml",
            'profiles[0].plugins.score.enabled[1].name: unknown plugin "NodeResourceFit" '
            '(did you mean "NodeResourcesFit"?)',
            None,
        ),
        ("empty.yaml", "apiVersion: required", None),
    ],
)
def test_load_file_errors(name: str, want: str, line: int | None) -> None:
    with pytest.raises(ConfigError) as e:
        load_config(str(TESTDATA / name), REGISTRY, points)
    assert want in str(e.value)
    assert e.value.line == line


def test_load_yaml_that_is_not_an_object(tmp_path: Path) -> None:
    f = tmp_path / "list.yaml"
    f.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="the configuration must be an object, got a list"):
        load_config(str(f), REGISTRY, points)


def test_load_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"cannot read .*nope\.yaml"):
        load_config(str(tmp_path / "nope.yaml"), REGISTRY, points)


def test_load_json_file(tmp_path: Path) -> None:
    f = tmp_path / "c.json"
    f.write_text(
        '{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",'
        ' "parallelism": 3}'
    )
    assert load_config(str(f), REGISTRY, points).parallelism == 3


def test_parse_does_not_modify_its_input() -> None:
    data = cfg(profiles=[{"plugins": {"score": {"enabled": [{"name": "ImageLocality", "weight": 3}]}}}])
    before = copy.deepcopy(data)
    parse(data)
    assert data == before
