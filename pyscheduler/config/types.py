"""The loaded scheduler configuration: typed, frozen, defaulted and validated.

These are what ``load_config`` / ``parse_config`` return for a ``KubeSchedulerConfiguration``
(``apiVersion: kubescheduler.config.k8s.io/v1``). Field names are the snake_case forms of the camelCase
keys users write; durations (Go duration strings such as ``"15s"`` in the file) are float seconds here.

Every error found while loading is a ``ConfigError`` whose ``str`` starts with the field's path in the
file, e.g. ``profiles[0].plugins.score.enabled[1].name: unknown plugin "NodeResourceFit" (did you mean
"NodeResourcesFit"?)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from pyscheduler.framework import extension_points
from pyscheduler.framework.plugin_args import ArgsError

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"

# The profile name used when the configuration has a single profile without ``schedulerName`` (kube-scheduler
# uses "default-scheduler"; we are a second scheduler by default, so pods opt in by naming us).
DEFAULT_SCHEDULER_NAME = "py-scheduler"

# The extension points, in the camelCase spelling of ``profiles[].plugins``. ``multiPoint`` is not one: it is
# expanded into these. ``extension_points(plugin)`` callables return a subset of these names.
EXTENSION_POINTS: tuple[str, ...] = extension_points.NAMES
MULTI_POINT = "multiPoint"

# camelCase extension point -> ResolvedPlugins field
POINT_FIELDS: Mapping[str, str] = extension_points.FIELDS


class ConfigError(ArgsError):
    """A bad configuration: ``path`` is where in the file (``""`` for the file as a whole)."""

    def __init__(self, path: str, message: str, *, line: int | None = None) -> None:
        super().__init__(path, message)
        # 1-based line in the YAML file, for syntax errors
        self.line = line


def _frozen_map(m: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return MappingProxyType(dict(m or {}))


@dataclass(frozen=True)
class ResolvedPlugins:
    """A profile's plugins after merging with the defaults and expanding ``multiPoint``.

    Each extension point holds the names of the plugins that run there, in order. ``score_weights`` has
    one entry per plugin in ``score`` (always >= 1), ``placement_score_weights`` one per plugin in
    ``placementScore``. ``instantiated`` lists every plugin the framework
    must build (kube's "pluginsNeeded": enabled anywhere, multiPoint included), in first-seen order.
    """

    pre_enqueue: tuple[str, ...] = ()
    queue_sort: tuple[str, ...] = ()
    pre_filter: tuple[str, ...] = ()
    filter: tuple[str, ...] = ()
    post_filter: tuple[str, ...] = ()
    pre_score: tuple[str, ...] = ()
    score: tuple[str, ...] = ()
    reserve: tuple[str, ...] = ()
    permit: tuple[str, ...] = ()
    pre_bind: tuple[str, ...] = ()
    bind: tuple[str, ...] = ()
    post_bind: tuple[str, ...] = ()
    placement_generate: tuple[str, ...] = ()
    placement_score: tuple[str, ...] = ()
    score_weights: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    placement_score_weights: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    instantiated: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "score_weights", _frozen_map(self.score_weights))
        object.__setattr__(self, "placement_score_weights", _frozen_map(self.placement_score_weights))

    def at(self, point: str) -> tuple[str, ...]:
        """The plugins at an extension point, by its camelCase (``"preFilter"``) or field name."""
        name = POINT_FIELDS.get(point, point)
        if name not in POINT_FIELDS.values():
            raise KeyError(point)
        value: tuple[str, ...] = getattr(self, name)
        return value

    def as_dict(self) -> dict[str, tuple[str, ...]]:
        """camelCase extension point -> plugin names (every point, empty ones included)."""
        return {p: self.at(p) for p in EXTENSION_POINTS}


@dataclass(frozen=True)
class Profile:
    """One scheduling profile: pods whose ``spec.schedulerName`` equals ``scheduler_name`` use it.

    ``plugin_args`` maps each plugin in ``plugins.instantiated`` to its typed args (what
    ``PluginSpec.decode`` returned: the plugin's args dataclass, or None for plugins without args).
    ``percentage_of_nodes_to_score`` None means "use the top-level value".
    """

    scheduler_name: str
    plugins: ResolvedPlugins
    plugin_args: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    percentage_of_nodes_to_score: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "plugin_args", _frozen_map(self.plugin_args))


@dataclass(frozen=True)
class ExtenderTLSConfig:
    insecure: bool = False
    server_name: str = ""
    cert_file: str = ""
    key_file: str = ""
    ca_file: str = ""
    # PEM bytes; written base64-encoded in the file (Go []byte in JSON). *_data wins over *_file.
    cert_data: bytes = b""
    key_data: bytes = field(default=b"", repr=False)
    ca_data: bytes = b""


@dataclass(frozen=True)
class ExtenderManagedResource:
    name: str
    ignored_by_scheduler: bool = False


DEFAULT_EXTENDER_HTTP_TIMEOUT = 5.0  # kube's DefaultExtenderTimeout, applied when httpTimeout is 0 / unset


@dataclass(frozen=True)
class Extender:
    """An HTTP scheduler extender (shared by all profiles). An empty verb means "not supported"."""

    url_prefix: str
    filter_verb: str = ""
    preempt_verb: str = ""
    prioritize_verb: str = ""
    bind_verb: str = ""
    weight: int = 0
    enable_https: bool = False
    tls_config: ExtenderTLSConfig | None = None
    http_timeout: float = DEFAULT_EXTENDER_HTTP_TIMEOUT
    node_cache_capable: bool = False
    managed_resources: tuple[ExtenderManagedResource, ...] = ()
    ignorable: bool = False


@dataclass(frozen=True)
class LeaderElection:
    """Leader election (component-base ``LeaderElectionConfiguration``); durations in seconds."""

    leader_elect: bool = True
    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0
    resource_lock: str = "leases"
    resource_name: str = DEFAULT_SCHEDULER_NAME
    resource_namespace: str = "kube-system"


@dataclass(frozen=True)
class ClientConnection:
    """API client settings (component-base ``ClientConnectionConfiguration``).

    kube-scheduler defaults ``contentType`` to protobuf; the Python client speaks JSON, so ours defaults to
    ``application/json``.
    """

    kubeconfig: str = ""
    accept_content_types: str = ""
    content_type: str = "application/json"
    qps: float = 50.0
    burst: int = 100


@dataclass(frozen=True)
class SchedulerConfig:
    """A whole ``KubeSchedulerConfiguration``, defaulted and validated.

    ``percentage_of_nodes_to_score`` 0 means adaptive (kube: 5%-50% by cluster size); after loading it is
    never None. ``warnings`` lists what was accepted but ignored or only partly used (e.g. ``parallelism``).
    """

    profiles: tuple[Profile, ...]
    parallelism: int = 16
    percentage_of_nodes_to_score: int | None = 0
    pod_initial_backoff_seconds: int = 1
    pod_max_backoff_seconds: int = 10
    extenders: tuple[Extender, ...] = ()
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    client_connection: ClientConnection = field(default_factory=ClientConnection)
    delay_cache_until_active: bool = False
    enable_profiling: bool = True
    enable_contention_profiling: bool = True
    healthz_bind_address: str | None = None
    metrics_bind_address: str | None = None
    warnings: tuple[str, ...] = ()

    def profile(self, scheduler_name: str) -> Profile | None:
        for p in self.profiles:
            if p.scheduler_name == scheduler_name:
                return p
        return None

    @property
    def scheduler_names(self) -> tuple[str, ...]:
        return tuple(p.scheduler_name for p in self.profiles)
