"""Scheduler configuration: a kube-scheduler 1.36 ``KubeSchedulerConfiguration`` (v1), loaded and validated.

    cfg = load_config("scheduler.yaml", registry, extension_points)   # or load_config(None, ...) for defaults
    for profile in cfg.profiles:
        profile.plugins.filter            # ("NodeUnschedulable", "NodeName", ...)
        profile.plugins.score_weights     # {"TaintToleration": 3, ...}
        profile.plugin_args["NodeResourcesFit"]   # the plugin's typed args

Errors are ``ConfigError`` (a ``ValueError``) whose text starts with the field path.
"""

from pyscheduler.config.defaults import (
    DEFAULT_MULTI_POINT,
    ExtensionPointsFn,
    PluginRef,
    PluginSetSpec,
    resolve_plugins,
)
from pyscheduler.config.load import load_config, parse_config
from pyscheduler.config.parsing import parse_duration, parse_yaml
from pyscheduler.config.types import (
    API_VERSION,
    DEFAULT_SCHEDULER_NAME,
    EXTENSION_POINTS,
    KIND,
    MULTI_POINT,
    ClientConnection,
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
    LeaderElection,
    Profile,
    ResolvedPlugins,
    SchedulerConfig,
)

__all__ = [
    "API_VERSION",
    "DEFAULT_MULTI_POINT",
    "DEFAULT_SCHEDULER_NAME",
    "EXTENSION_POINTS",
    "KIND",
    "MULTI_POINT",
    "ClientConnection",
    "ConfigError",
    "Extender",
    "ExtenderManagedResource",
    "ExtenderTLSConfig",
    "ExtensionPointsFn",
    "LeaderElection",
    "PluginRef",
    "PluginSetSpec",
    "Profile",
    "ResolvedPlugins",
    "SchedulerConfig",
    "load_config",
    "parse_config",
    "parse_duration",
    "parse_yaml",
    "resolve_plugins",
]
