"""A profile's ``pluginConfig``: each plugin's args, decoded by the plugin's own ``PluginSpec.decode``.

One entry per plugin name; the name must be registered (a kube plugin pyscheduler does not implement is
skipped with a warning, a removed one is an error); for kube's in-tree plugins the args' ``kind`` and
``apiVersion``, when written, must be ``<Name>Args`` and v1. An ``ArgsError`` from a decoder keeps its own
field path.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyscheduler.config.defaults import KUBE_IN_TREE_PLUGINS, NOT_IMPLEMENTED, REMOVED_PLUGINS
from pyscheduler.config.plugin_sets import unknown_plugin
from pyscheduler.config.reader import StrictObject, field_path, type_name
from pyscheduler.config.types import API_VERSION, ConfigError
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec


def decode_args(spec: PluginSpec, raw: Any, path: str) -> Any:
    try:
        return spec.decode(raw, path)
    except ArgsError as e:
        raise ConfigError(e.path, e.detail) from e
    except (TypeError, ValueError) as e:
        raise ConfigError(path, str(e)) from e


def read_plugin_config(
    raw: list[Any], path: str, registry: Mapping[str, PluginSpec], warnings: list[str]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Decoded args by plugin name, and each name's index in the list."""
    args: dict[str, Any] = {}
    index: dict[str, int] = {}
    for i, item in enumerate(raw):
        entry_path = field_path(path, i)
        obj = StrictObject(item, entry_path, ("name", "args"))
        name = obj.string("name")
        if not name:
            raise ConfigError(obj.at("name"), "required")
        if name in index:
            raise ConfigError(
                obj.at("name"), f'duplicate entry for plugin "{name}" (also at pluginConfig[{index[name]}])'
            )
        index[name] = i
        if name in REMOVED_PLUGINS:
            raise ConfigError(obj.at("name"), f'plugin "{name}" was removed from {API_VERSION}')
        if name not in registry:
            if name in NOT_IMPLEMENTED:
                warnings.append(
                    f"{obj.at('name')}: ignored: pyscheduler does not implement the {name} plugin"
                )
                continue
            raise ConfigError(obj.at("name"), unknown_plugin(name, set(registry)))
        raw_args = obj.get("args")
        args_path = obj.at("args")
        if raw_args is not None and not isinstance(raw_args, Mapping):
            raise ConfigError(args_path, f"must be an object, got {type_name(raw_args)}")
        if raw_args is not None and name in KUBE_IN_TREE_PLUGINS:
            kind = raw_args.get("kind")
            if kind is not None and kind != f"{name}Args":
                raise ConfigError(field_path(args_path, "kind"), f'must be "{name}Args", got {kind!r}')
            version = raw_args.get("apiVersion")
            if version is not None and version != API_VERSION:
                raise ConfigError(
                    field_path(args_path, "apiVersion"), f'must be "{API_VERSION}", got {version!r}'
                )
        args[name] = decode_args(registry[name], raw_args, args_path)
    return args, index
