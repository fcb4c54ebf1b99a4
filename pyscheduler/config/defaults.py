"""kube-scheduler 1.36's default plugins, and how a profile's ``plugins`` merge with them and expand.

This reproduces two pieces of kube-scheduler:

1. ``pkg/scheduler/apis/config/v1/default_plugins.go``: the defaults are a single ``multiPoint`` list
   (``getDefaultPlugins``), and ``mergePluginSet`` merges what the user wrote into them, per extension
   point: user ``disabled`` names (or ``"*"``) drop defaults; a user ``enabled`` entry naming a default
   replaces it in place (so its weight wins but the default order is kept); other user entries follow, in
   the order written.
2. ``pkg/scheduler/framework/runtime/framework.go``: ``updatePluginList`` fills each extension point from
   its own ``enabled`` list (a plugin must implement the point, and may appear once), then
   ``expandMultiPointPlugins`` adds each ``multiPoint`` plugin to every point it implements, unless that
   point disables it (or ``"*"``). A plugin also enabled explicitly at a point keeps its explicit place:
   the final order is explicit plugins that were also in multiPoint (explicit order), then multiPoint-only
   plugins (multiPoint order), then the remaining explicit plugins. Score weights come from the ``score``
   entry first, else the ``multiPoint`` entry; 0 or unset means 1 (``getScoreWeights``). A profile needs
   exactly one queueSort plugin and at least one bind plugin.

The points a plugin takes part in come from the caller's ``extension_points(name)`` (the real registry
inspects plugin classes); nothing here imports plugins.

Default multiPoint list (kube 1.36 with default feature gates; weights only where kube sets one):
SchedulingGates, PrioritySort, NodeUnschedulable, NodeName, TaintToleration (3), NodeAffinity (2),
NodePorts, NodeResourcesFit (1), VolumeRestrictions, NodeVolumeLimits, VolumeBinding, VolumeZone,
PodTopologySpread (2), InterPodAffinity (2), DynamicResources (2), DefaultPreemption,
NodeResourcesBalancedAllocation (1), ImageLocality (1), DefaultBinder, NodeDeclaredFeatures (appended
when its gate is on, as it is by default in 1.36). DynamicResources is inserted right before
DefaultPreemption by kube's applyDynamicResources (its gate is GA and locked on), so that PostFilter first
deallocates an idle claim before preemption evicts anyone. A default the registry lacks is skipped with a
warning.

Alpha gates (``--feature-gates``, see ``config/feature_gates.py``) append as kube's ``applyFeatureGates``
does: GangScheduling when ``GangScheduling`` is on; TopologyPlacementGenerator, then PodGroupPodsCount
(1), when ``TopologyAwareWorkloadScheduling`` is on.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from pyscheduler.config import feature_gates
from pyscheduler.config.types import (
    EXTENSION_POINTS,
    MULTI_POINT,
    POINT_FIELDS,
    ConfigError,
    ResolvedPlugins,
)

ExtensionPointsFn = Callable[[str], Iterable[str]]

WILDCARD = "*"


@dataclass(frozen=True)
class PluginRef:
    """One ``{name, weight}`` entry; ``path`` is where it was written (``""`` for a built-in default)."""

    name: str
    weight: int | None = None
    path: str = ""


@dataclass(frozen=True)
class PluginSetSpec:
    """An extension point's ``enabled`` / ``disabled`` lists; ``path`` is the point's path in the file."""

    enabled: tuple[PluginRef, ...] = ()
    disabled: tuple[PluginRef, ...] = ()
    path: str = ""


# kube 1.36 getDefaultPlugins() with default feature gates.
DEFAULT_MULTI_POINT: tuple[PluginRef, ...] = (
    PluginRef("SchedulingGates"),
    PluginRef("PrioritySort"),
    PluginRef("NodeUnschedulable"),
    PluginRef("NodeName"),
    PluginRef("TaintToleration", 3),
    PluginRef("NodeAffinity", 2),
    PluginRef("NodePorts"),
    PluginRef("NodeResourcesFit", 1),
    PluginRef("VolumeRestrictions"),
    PluginRef("NodeVolumeLimits"),
    PluginRef("VolumeBinding"),
    PluginRef("VolumeZone"),
    PluginRef("PodTopologySpread", 2),
    PluginRef("InterPodAffinity", 2),
    PluginRef("DynamicResources", 2),  # kube's applyDynamicResources: before DefaultPreemption, weight 2
    PluginRef("DefaultPreemption"),
    PluginRef("NodeResourcesBalancedAllocation", 1),
    PluginRef("ImageLocality", 1),
    PluginRef("DefaultBinder"),
    PluginRef("NodeDeclaredFeatures"),  # appended by kube's applyFeatureGates (gate beta, on in 1.36)
)

# kube in-tree plugins pyscheduler does not implement. Disabling one is a no-op; enabling one is an error;
# a pluginConfig entry for one is ignored with a warning (so a kube config that tunes it still loads).
NOT_IMPLEMENTED: frozenset[str] = frozenset()

# Appended to the defaults when their feature gate is on (kube's applyGangScheduling and
# applyTopologyAwareWorkloadScheduling), in this order.
GATED_MULTI_POINT: tuple[tuple[str, PluginRef], ...] = (
    (feature_gates.GANG_SCHEDULING, PluginRef("GangScheduling")),
    (feature_gates.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, PluginRef("TopologyPlacementGenerator")),
    (feature_gates.TOPOLOGY_AWARE_WORKLOAD_SCHEDULING, PluginRef("PodGroupPodsCount", 1)),
)

# Plugins removed from the v1 API (kube validation's invalidPluginsByVersion).
REMOVED_PLUGINS: frozenset[str] = frozenset({"AzureDiskLimits", "CinderLimits", "EBSLimits", "GCEPDLimits"})

# Every kube in-tree plugin name (1.36), implemented here or not.
KUBE_IN_TREE_PLUGINS: frozenset[str] = (
    frozenset(p.name for p in DEFAULT_MULTI_POINT)
    | frozenset(ref.name for _, ref in GATED_MULTI_POINT)
    | NOT_IMPLEMENTED
)


def suggest(name: str, candidates: Iterable[str]) -> str:
    """`` (did you mean "X"?)`` for a misspelt name, or ``""`` when nothing is close."""
    cands = sorted(set(candidates))
    folded = {c.lower(): c for c in cands}
    matches = [folded[name.lower()]] if name.lower() in folded else []
    if not matches:
        matches = difflib.get_close_matches(name, cands, n=2, cutoff=0.8)
    if not matches:
        return ""
    return " (did you mean " + " or ".join(f'"{m}"' for m in matches) + "?)"


def default_plugins(
    available: Collection[str] | None = None, gates: feature_gates.FeatureGates | None = None
) -> tuple[dict[str, PluginSetSpec], list[str]]:
    """The default plugin sets (only ``multiPoint``), keeping defaults in ``available`` (all if None);
    ``gates`` (default: the process's, ``feature_gates.current()``) add the gated plugins.

    Returns the sets and a warning for each default the registry lacks.
    """
    gates = gates or feature_gates.current()
    warnings: list[str] = []
    refs: list[PluginRef] = []
    gated = [ref for gate, ref in GATED_MULTI_POINT if gates.enabled(gate)]
    for ref in (*DEFAULT_MULTI_POINT, *gated):
        if available is not None and ref.name not in available:
            warnings.append(f"default plugin {ref.name} is not registered; it is left out of every profile")
            continue
        refs.append(ref)
    return {MULTI_POINT: PluginSetSpec(enabled=tuple(refs))}, warnings


def merge_plugin_set(default: PluginSetSpec, custom: PluginSetSpec) -> PluginSetSpec:
    """kube's ``mergePluginSet``: the user's set over the default one for one extension point."""
    disabled = tuple(PluginRef(d.name, None, d.path) for d in custom.disabled) + tuple(
        PluginRef(d.name, None, d.path) for d in default.disabled
    )
    disabled_names = {d.name for d in disabled}
    # the last user entry of a name replaces the default; earlier duplicates are appended (and rejected
    # later as a double registration), as in kube
    custom_index = {p.name: i for i, p in enumerate(custom.enabled)}
    replaced: set[int] = set()
    enabled: list[PluginRef] = []
    if WILDCARD not in disabled_names:
        for dp in default.enabled:
            if dp.name in disabled_names:
                continue
            if dp.name in custom_index:
                i = custom_index[dp.name]
                dp = custom.enabled[i]
                replaced.add(i)
            enabled.append(dp)
    enabled.extend(p for i, p in enumerate(custom.enabled) if i not in replaced)
    return PluginSetSpec(tuple(enabled), disabled, custom.path or default.path)


def merge_plugins(
    defaults: Mapping[str, PluginSetSpec], custom: Mapping[str, PluginSetSpec] | None
) -> dict[str, PluginSetSpec]:
    """kube's ``mergePlugins`` over every extension point and ``multiPoint``."""
    out: dict[str, PluginSetSpec] = {}
    for point in (MULTI_POINT, *EXTENSION_POINTS):
        d = defaults.get(point, PluginSetSpec())
        c = (custom or {}).get(point)
        out[point] = d if c is None else merge_plugin_set(d, c)
    return out


_POINT_KEYS = {p.lower(): p for p in EXTENSION_POINTS}


def _normalize_points(points: Iterable[str]) -> frozenset[str]:
    """Accept ``preFilter`` / ``pre_filter`` / ``PreFilter``; ignore names that are not extension points."""
    out = set()
    for p in points:
        key = p.replace("_", "").lower()
        if key in _POINT_KEYS:
            out.add(_POINT_KEYS[key])
    return frozenset(out)


def _at(path: str, suffix: str) -> str:
    return f"{path}.{suffix}" if path else suffix


def expand_plugins(
    plugins: Mapping[str, PluginSetSpec],
    extension_points: ExtensionPointsFn,
    path: str = "plugins",
) -> ResolvedPlugins:
    """Per-extension-point plugin lists from merged sets (``merge_plugins``' output).

    Every enabled name must be a registered plugin (the loader checks this first). ``path`` is the profile's
    ``plugins`` path, for errors about the profile as a whole.
    """
    cache: dict[str, frozenset[str]] = {}

    def points_of(name: str) -> frozenset[str]:
        if name not in cache:
            cache[name] = _normalize_points(extension_points(name))
        return cache[name]

    multi = plugins.get(MULTI_POINT, PluginSetSpec())
    lists: dict[str, list[str]] = {}
    for point in EXTENSION_POINTS:
        pset = plugins.get(point, PluginSetSpec())
        explicit = _explicit_list(point, pset, points_of)
        disabled = {d.name for d in pset.disabled}
        lists[point] = (
            explicit
            if WILDCARD in disabled
            else _expand_multi_point(point, explicit, disabled, multi, points_of)
        )
    _check_required_points(lists, path)
    kwargs: dict[str, tuple[str, ...]] = {POINT_FIELDS[p]: tuple(v) for p, v in lists.items()}
    return ResolvedPlugins(
        **kwargs,
        score_weights=_weights(lists, plugins, "score"),
        # placementScore plugins are weighted the same way (kube's placementScorePluginWeight)
        placement_score_weights=_weights(lists, plugins, "placementScore"),
        instantiated=_instantiated(plugins),
    )


def _explicit_list(point: str, pset: PluginSetSpec, points_of: Callable[[str], frozenset[str]]) -> list[str]:
    """kube's updatePluginList: the point's own enabled list, each implementing the point, once."""
    explicit: list[str] = []
    for ref in pset.enabled:
        where = _at(ref.path or _at(pset.path, "enabled"), "name")
        implemented = points_of(ref.name)
        if point not in implemented:
            has = ", ".join(p for p in EXTENSION_POINTS if p in implemented) or "none"
            raise ConfigError(where, f'plugin "{ref.name}" does not extend {point} (it implements: {has})')
        if ref.name in explicit:
            raise ConfigError(where, f'plugin "{ref.name}" is enabled more than once at {point}')
        explicit.append(ref.name)
    return explicit


def _expand_multi_point(
    point: str,
    explicit: list[str],
    disabled: set[str],
    multi: PluginSetSpec,
    points_of: Callable[[str], frozenset[str]],
) -> list[str]:
    """kube's expandMultiPointPlugins: multiPoint plugins implementing the point and not disabled there,
    after the explicit ones that override them and before the other explicit ones."""
    overrides: set[str] = set()
    from_multi: list[str] = []
    for ref in multi.enabled:
        if point not in points_of(ref.name) or ref.name in disabled:
            continue
        if ref.name in explicit:
            overrides.add(ref.name)
            continue
        if ref.name in from_multi:
            where = _at(ref.path or _at(multi.path, "enabled"), "name")
            raise ConfigError(where, f'plugin "{ref.name}" is enabled more than once in multiPoint')
        from_multi.append(ref.name)
    return [n for n in explicit if n in overrides] + from_multi + [n for n in explicit if n not in overrides]


def _check_required_points(lists: Mapping[str, list[str]], path: str) -> None:
    """Exactly one queueSort plugin and at least one bind plugin, as kube's framework needs."""
    queue_sort = lists["queueSort"]
    if len(queue_sort) != 1:
        got = ", ".join(f'"{n}"' for n in queue_sort)
        raise ConfigError(
            _at(path, "queueSort"),
            f"exactly one queueSort plugin is required, got {len(queue_sort)}" + (f": {got}" if got else ""),
        )
    if not lists["bind"]:
        raise ConfigError(_at(path, "bind"), "at least one bind plugin is required")


def _weights(
    lists: Mapping[str, list[str]], plugins: Mapping[str, PluginSetSpec], point: str
) -> dict[str, int]:
    """kube's getScoreWeights: the point's own entry wins over the multiPoint one; 0 / unset means 1."""
    weights: dict[str, int] = {}
    listed = set(lists[point])
    for ref in (
        *plugins.get(point, PluginSetSpec()).enabled,
        *plugins.get(MULTI_POINT, PluginSetSpec()).enabled,
    ):
        if ref.name in listed and ref.name not in weights:
            weights[ref.name] = ref.weight or 1
    return {n: weights[n] for n in lists[point]}


def _instantiated(plugins: Mapping[str, PluginSetSpec]) -> tuple[str, ...]:
    """Every plugin enabled anywhere, in the order first met (point by point, multiPoint last)."""
    instantiated: list[str] = []
    for point in (*EXTENSION_POINTS, MULTI_POINT):
        for ref in plugins.get(point, PluginSetSpec()).enabled:
            if ref.name not in instantiated:
                instantiated.append(ref.name)
    return tuple(instantiated)


def resolve_plugins(
    custom: Mapping[str, PluginSetSpec] | None,
    extension_points: ExtensionPointsFn,
    *,
    available: Collection[str] | None = None,
    path: str = "plugins",
) -> tuple[ResolvedPlugins, list[str]]:
    """Defaults merged with ``custom`` and expanded; returns the plugins and any warnings."""
    defaults, warnings = default_plugins(available)
    return expand_plugins(merge_plugins(defaults, custom), extension_points, path), warnings
