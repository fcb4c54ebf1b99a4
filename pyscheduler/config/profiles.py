"""``profiles``: each profile's name, plugin sets and plugin args, and the checks across profiles.

A single profile may leave ``schedulerName`` out (it becomes ``py-scheduler``); with several, each needs
a distinct name. Every instantiated plugin gets args (its ``pluginConfig`` entry, or its decoder's
defaults). Across profiles, as kube checks when it builds the frameworks: one queueSort plugin with the
same args everywhere, and ``plugins.queueSort`` written the same way in each.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pyscheduler.config.defaults import ExtensionPointsFn, resolve_plugins
from pyscheduler.config.plugin_config import decode_args, read_plugin_config
from pyscheduler.config.plugin_sets import read_plugins
from pyscheduler.config.reader import StrictObject, read_percentage
from pyscheduler.config.types import DEFAULT_SCHEDULER_NAME, ConfigError, Profile
from pyscheduler.framework.registry import PluginSpec

_PROFILE_FIELDS = (
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
)


def read_profiles(
    raw_profiles: Sequence[Any],
    registry: Mapping[str, PluginSpec],
    extension_points: ExtensionPointsFn,
    warnings: list[str],
) -> tuple[Profile, ...]:
    """The profiles of ``raw_profiles`` (at least one), checked one by one and against each other."""
    default_name = DEFAULT_SCHEDULER_NAME if len(raw_profiles) == 1 else None
    profiles: list[Profile] = []
    indexes: list[dict[str, int]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        profile, index = read_profile(raw, path, default_name, registry, extension_points, warnings)
        if profile.scheduler_name in seen:
            raise ConfigError(
                f"{path}.schedulerName",
                f'duplicate profile name "{profile.scheduler_name}" '
                f"(also profiles[{seen[profile.scheduler_name]}])",
            )
        seen[profile.scheduler_name] = i
        profiles.append(profile)
        indexes.append(index)
    common_queue_sort(profiles, indexes)
    common_written_queue_sort(raw_profiles)
    return tuple(profiles)


def read_profile(
    raw: Any,
    path: str,
    default_name: str | None,
    registry: Mapping[str, PluginSpec],
    extension_points: ExtensionPointsFn,
    warnings: list[str],
) -> tuple[Profile, dict[str, int]]:
    obj = StrictObject(raw, path, _PROFILE_FIELDS)
    if obj.has("schedulerName"):
        name = obj.string("schedulerName")
        if not name:
            raise ConfigError(obj.at("schedulerName"), "required")
    elif default_name is not None:
        name = default_name
    else:
        raise ConfigError(obj.at("schedulerName"), "required when there is more than one profile")
    percentage = read_percentage(obj, "percentageOfNodesToScore")
    if read_percentage(obj, "percentageOfPlacementsToScore") is not None:
        warnings.append(
            f"{obj.at('percentageOfPlacementsToScore')}: ignored: pyscheduler does not schedule placements"
        )
    custom = read_plugins(obj.get("plugins"), obj.at("plugins"), registry)
    configured, config_index = read_plugin_config(
        obj.array("pluginConfig"), obj.at("pluginConfig"), registry, warnings
    )
    plugins, default_warnings = resolve_plugins(
        custom, extension_points, available=registry, path=obj.at("plugins")
    )
    warnings.extend(w for w in default_warnings if w not in warnings)
    plugin_args: dict[str, Any] = {}
    for pname in plugins.instantiated:
        if pname in configured:
            plugin_args[pname] = configured[pname]
        else:
            plugin_args[pname] = decode_args(registry[pname], None, f"{obj.at('pluginConfig')}({pname}).args")
    return Profile(name, plugins, plugin_args, percentage), config_index


def common_queue_sort(profiles: Sequence[Profile], config_indexes: Sequence[dict[str, int]]) -> None:
    """kube: every profile must use the same queueSort plugin, with the same args."""
    first = profiles[0]
    qs = first.plugins.queue_sort[0]
    for i, p in enumerate(profiles[1:], start=1):
        other = p.plugins.queue_sort[0]
        if other != qs:
            raise ConfigError(
                f"profiles[{i}].plugins.queueSort",
                f'must be the same for all profiles: "{other}" here, "{qs}" in profiles[0]',
            )
        if p.plugin_args.get(qs) != first.plugin_args.get(qs):
            j = config_indexes[i].get(qs)
            where = f"profiles[{i}].pluginConfig" + (f"[{j}].args" if j is not None else "")
            raise ConfigError(where, f'args of queueSort plugin "{qs}" must be the same for all profiles')


def _written_queue_sort(raw_profile: Any) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """The profile's queueSort set as written (kube compares it before the MultiPoint expansion)."""
    plugins = raw_profile.get("plugins") if isinstance(raw_profile, Mapping) else None
    qs = plugins.get("queueSort") if isinstance(plugins, Mapping) else None
    if not isinstance(qs, Mapping):
        return ((), ())
    enabled = tuple((p["name"], p.get("weight") or 0) for p in qs.get("enabled") or ())
    disabled = tuple(p["name"] for p in qs.get("disabled") or ())
    return enabled, disabled


def common_written_queue_sort(raw_profiles: Sequence[Any]) -> None:
    """kube's validateCommonQueueSort compares each profile's ``plugins.queueSort`` as written (after
    defaulting, which adds nothing there in v1): writing it in one profile only is an error even when
    it names the default plugin."""
    canon = _written_queue_sort(raw_profiles[0])
    if len(canon[0]) > 1:
        raise ConfigError(
            "profiles[0].plugins.queueSort.Enabled",
            f"Invalid value: {len(canon[0])}: only one queue sort plugin can be enabled",
        )
    for i, raw in enumerate(raw_profiles[1:], start=1):
        if _written_queue_sort(raw) != canon:
            raise ConfigError(f"profiles[{i}].plugins.queueSort", "must be the same for all profiles")
