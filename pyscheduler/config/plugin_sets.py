"""A profile's ``plugins``: one ``enabled``/``disabled`` set per extension point, checked by name.

An enabled name must be a registered plugin (a removed kube plugin, one pyscheduler does not implement
and a typo each get their own message), at most once per point, never ``"*"``; a disabled name may also
be any kube in-tree plugin or ``"*"``. Weights are non-negative (0 or unset means 1). The alpha placement
points of TopologyAwareWorkloadScheduling are refused when they list anything. What the sets resolve to
(MultiPoint expansion, kube's defaults) is ``defaults.resolve_plugins``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.config.defaults import (
    KUBE_IN_TREE_PLUGINS,
    NOT_IMPLEMENTED,
    REMOVED_PLUGINS,
    WILDCARD,
    PluginRef,
    PluginSetSpec,
    suggest,
)
from pyscheduler.config.reader import StrictObject, field_path
from pyscheduler.config.types import API_VERSION, EXTENSION_POINTS, MULTI_POINT, ConfigError
from pyscheduler.framework.registry import PluginSpec

# alpha (TopologyAwareWorkloadScheduling) points of the v1 API that pyscheduler does not run
_PLACEMENT_POINTS = ("placementGenerate", "placementScore", "placementFeasible", "podGroupPostFilter")
_PLUGINS_FIELDS = (*EXTENSION_POINTS, MULTI_POINT, *_PLACEMENT_POINTS)


def unknown_plugin(name: str, candidates: Sequence[str] | set[str], what: str = "registered") -> str:
    hint = suggest(name, candidates)
    if hint:
        return f'unknown plugin "{name}"{hint}'
    return f'unknown plugin "{name}"; {what} plugins: {", ".join(sorted(candidates)) or "none"}'


def _check_enabled_name(name: str, registry: Mapping[str, PluginSpec], path: str) -> None:
    if name == WILDCARD:
        raise ConfigError(path, '"*" is only allowed in a disabled list')
    if name in registry:
        return
    if name in REMOVED_PLUGINS:
        raise ConfigError(path, f'plugin "{name}" was removed from {API_VERSION}')
    if name in NOT_IMPLEMENTED:
        raise ConfigError(
            path, f'plugin "{name}" is a kube-scheduler plugin that pyscheduler does not implement'
        )
    raise ConfigError(path, unknown_plugin(name, set(registry)))


def _plugin_ref(raw: Any, path: str) -> PluginRef:
    obj = StrictObject(raw, path, ("name", "weight"), "an object with a name")
    name = obj.string("name")
    if not name:
        raise ConfigError(obj.at("name"), "required")
    weight = obj.opt_integer("weight")
    if weight is not None and weight < 0:
        raise ConfigError(obj.at("weight"), f"must be a positive integer (0 or unset means 1), got {weight}")
    return PluginRef(name, weight, path)


def _plugin_set(raw: Any, path: str, point: str, registry: Mapping[str, PluginSpec]) -> PluginSetSpec:
    obj = StrictObject(raw, path, ("enabled", "disabled"))
    enabled: list[PluginRef] = []
    first_at: dict[str, int] = {}
    for i, item in enumerate(obj.array("enabled")):
        ref = _plugin_ref(item, field_path(obj.at("enabled"), i))
        name_path = field_path(ref.path, "name")
        _check_enabled_name(ref.name, registry, name_path)
        if ref.name in first_at:
            raise ConfigError(
                name_path,
                f'plugin "{ref.name}" is enabled more than once at {point} '
                f"(also at enabled[{first_at[ref.name]}])",
            )
        first_at[ref.name] = i
        enabled.append(ref)
    disabled: list[PluginRef] = []
    for i, item in enumerate(obj.array("disabled")):
        ref = _plugin_ref(item, field_path(obj.at("disabled"), i))
        known = ref.name == WILDCARD or ref.name in registry or ref.name in KUBE_IN_TREE_PLUGINS
        if not known and ref.name not in REMOVED_PLUGINS:
            candidates = set(registry) | KUBE_IN_TREE_PLUGINS
            raise ConfigError(field_path(ref.path, "name"), unknown_plugin(ref.name, candidates, "known"))
        disabled.append(ref)
    return PluginSetSpec(tuple(enabled), tuple(disabled), path)


def read_plugins(raw: Any, path: str, registry: Mapping[str, PluginSpec]) -> dict[str, PluginSetSpec]:
    if raw is None:
        return {}
    obj = StrictObject(raw, path, _PLUGINS_FIELDS)
    for point in _PLACEMENT_POINTS:
        if obj.has(point):
            pset = StrictObject(obj.get(point), obj.at(point), ("enabled", "disabled"))
            if pset.array("enabled") or pset.array("disabled"):
                raise ConfigError(
                    obj.at(point),
                    "needs the TopologyAwareWorkloadScheduling feature gate, "
                    "which pyscheduler does not implement",
                )
    out: dict[str, PluginSetSpec] = {}
    for point in (MULTI_POINT, *EXTENSION_POINTS):
        if obj.has(point):
            out[point] = _plugin_set(obj.get(point), obj.at(point), point, registry)
    return out
