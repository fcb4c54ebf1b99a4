"""The in-tree plugin registry: kube-scheduler's default plugins, our example plugins, and out-of-tree
plugins found through the ``pyscheduler.plugins`` entry-point group.

Each module listed here exports ``PLUGIN`` (a ``PluginSpec``). An out-of-tree entry point names either a
``PluginSpec`` or a factory; a name that clashes with an in-tree plugin is an error at start.
"""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points
from typing import Any

from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.runtime import extension_points_of

# kube-scheduler 1.36's default plugins, in the default profile's order.
IN_TREE_MODULES = (
    "scheduling_gates",
    "priority_sort",
    "node_unschedulable",
    "node_name",
    "taint_toleration",
    "node_affinity",
    "node_ports",
    "node_resources_fit",
    "volume_restrictions",
    "node_volume_limits",
    "volume_binding",
    "volume_zone",
    "pod_topology_spread",
    "inter_pod_affinity",
    "dynamic_resources",
    "default_preemption",
    "node_resources_balanced_allocation",
    "image_locality",
    "default_binder",
    "node_declared_features",
    # workload-aware scheduling: in the default profile only with their alpha feature gates on
    "gang_scheduling",
    "topology_placement",
    "pod_group_pods_count",
)

# Example plugins shipped with pyscheduler: off by default, enabled by configuration.
EXAMPLE_MODULES: tuple[str, ...] = (
    "examples.label_match",
    "examples.network_traffic",
    "examples.coscheduling",
    "examples.binding_notifier",
    "examples.volume_ready",
)

ENTRY_POINT_GROUP = "pyscheduler.plugins"


class RegistryError(ValueError):
    pass


def in_tree() -> dict[str, PluginSpec]:
    out: dict[str, PluginSpec] = {}
    for mod in (*IN_TREE_MODULES, *EXAMPLE_MODULES):
        m = importlib.import_module(f"pyscheduler.plugins.{mod}")
        spec: PluginSpec = m.PLUGIN
        out[spec.name] = spec
    return out


def out_of_tree(existing: dict[str, PluginSpec]) -> dict[str, PluginSpec]:
    out: dict[str, PluginSpec] = {}
    origin: dict[str, str] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        dist = ep.dist.name if ep.dist else "?"
        if ep.name in origin and origin[ep.name] != dist:
            raise RegistryError(
                f"out-of-tree plugin {ep.name!r} is declared by two installed packages: {origin[ep.name]} and "
                f"{dist}; uninstall one"
            )
        origin[ep.name] = dist
        if ep.name in existing:
            raise RegistryError(
                f"out-of-tree plugin {ep.name!r} (entry point {ep.value} in {ep.dist.name if ep.dist else '?'}) "
                f"clashes with the built-in plugin of the same name"
            )
        try:
            obj: Any = ep.load()
        except Exception as e:
            raise RegistryError(f"loading out-of-tree plugin {ep.name!r} from {ep.value}: {e}") from e
        if isinstance(obj, PluginSpec):
            if obj.name != ep.name:
                raise RegistryError(f"entry point {ep.name!r} names a PluginSpec called {obj.name!r}")
            out[ep.name] = obj
        elif callable(obj):
            out[ep.name] = PluginSpec(ep.name, obj, getattr(obj, "args_type", None))
        else:
            raise RegistryError(f"entry point {ep.name!r} is neither a PluginSpec nor a factory")
    return out


def full_registry() -> dict[str, PluginSpec]:
    reg = in_tree()
    reg.update(out_of_tree(reg))
    return reg


def plugin_extension_points(spec: PluginSpec) -> set[str]:
    """Extension points of a plugin, from the class its factory returns (the factory's return
    annotation, or the plugin class exported as ``PLUGIN_CLASS`` / the factory itself if a class)."""
    cls = getattr(spec, "plugin_class", None)
    if cls is None:
        factory = spec.factory
        if isinstance(factory, type):
            cls = factory
        else:
            import inspect
            import typing

            try:
                hints = typing.get_type_hints(factory)
                cls = hints.get("return")
            except Exception:
                cls = None
            if cls is None:
                mod = inspect.getmodule(factory)
                cls = getattr(mod, "PLUGIN_CLASS", None)
    if cls is None:
        return set()
    return extension_points_of(cls)
