"""Plugin registration: a name, a factory, and the type of its args.

Each plugin module exports ``PLUGIN = PluginSpec(NAME, factory, ArgsClass)``. The in-tree registry
(``pyscheduler.plugins.registry``) lists them; out-of-tree plugins are found through the
``pyscheduler.plugins`` entry-point group, whose entries point at a ``PluginSpec``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.plugin_args import decode_args

Factory = Callable[[Any, Handle], Any]


@dataclass(frozen=True)
class PluginSpec:
    name: str
    factory: Factory
    args_type: type | None = None
    description: str = ""

    def decode(self, raw: Mapping[str, Any] | None, path: str) -> Any:
        """Typed, validated args from a pluginConfig entry (defaults when ``raw`` is None)."""
        if self.args_type is None:
            if raw:
                from pyscheduler.framework.plugin_args import ArgsError

                keys = [k for k in raw if k not in ("apiVersion", "kind")]
                if keys:
                    raise ArgsError(f"{path}.{keys[0]}", f"plugin {self.name} takes no arguments")
            return None
        return decode_args(self.args_type, raw, path)

    def new(self, args: Any, handle: Handle) -> Any:
        return self.factory(args, handle)
