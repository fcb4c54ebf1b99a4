"""The one table of extension points: each point's name in a KubeSchedulerConfiguration, the field that
holds its plugins in a resolved profile, the plugin method that marks a plugin as implementing it, and
its Protocol. The config layer, the runtime and the plugin registry derive their views from this table,
so adding or renaming a point is one row here.

Order is kube's: the order in which a pod meets the points, and the order of ``profiles[].plugins``.
``multiPoint`` is not a point: the config layer expands it into these.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import MappingProxyType

from pyscheduler.framework.interfaces import (
    BindPlugin,
    FilterPlugin,
    PermitPlugin,
    PlacementGeneratePlugin,
    PlacementScorePlugin,
    PostBindPlugin,
    PostFilterPlugin,
    PreBindPlugin,
    PreEnqueuePlugin,
    PreFilterPlugin,
    PreScorePlugin,
    QueueSortPlugin,
    ReservePlugin,
    ScorePlugin,
)


@dataclass(frozen=True, slots=True)
class ExtensionPoint:
    name: str  # camelCase, as in profiles[].plugins ("preFilter")
    field: str  # snake_case field of a resolved profile ("pre_filter")
    method: str  # the plugin method that implements it ("pre_filter"; "less" for queueSort)
    protocol: type


TABLE: tuple[ExtensionPoint, ...] = (
    ExtensionPoint("preEnqueue", "pre_enqueue", "pre_enqueue", PreEnqueuePlugin),
    ExtensionPoint("queueSort", "queue_sort", "less", QueueSortPlugin),
    ExtensionPoint("preFilter", "pre_filter", "pre_filter", PreFilterPlugin),
    ExtensionPoint("filter", "filter", "filter", FilterPlugin),
    ExtensionPoint("postFilter", "post_filter", "post_filter", PostFilterPlugin),
    ExtensionPoint("preScore", "pre_score", "pre_score", PreScorePlugin),
    ExtensionPoint("score", "score", "score", ScorePlugin),
    ExtensionPoint("reserve", "reserve", "reserve", ReservePlugin),
    ExtensionPoint("permit", "permit", "permit", PermitPlugin),
    ExtensionPoint("preBind", "pre_bind", "pre_bind", PreBindPlugin),
    ExtensionPoint("bind", "bind", "bind", BindPlugin),
    ExtensionPoint("postBind", "post_bind", "post_bind", PostBindPlugin),
    # the pod group scheduling cycle (TopologyAwareWorkloadScheduling); kube's Plugins lists them last
    ExtensionPoint("placementGenerate", "placement_generate", "generate_placements", PlacementGeneratePlugin),
    ExtensionPoint("placementScore", "placement_score", "score_placement", PlacementScorePlugin),
)

NAMES: tuple[str, ...] = tuple(p.name for p in TABLE)
BY_NAME = MappingProxyType({p.name: p for p in TABLE})
FIELDS = MappingProxyType({p.name: p.field for p in TABLE})


def implemented_by(plugin_type: type | object) -> set[str]:
    """The extension points a plugin class (or instance) implements, by its methods."""
    return {p.name for p in TABLE if callable(getattr(plugin_type, p.method, None))}
