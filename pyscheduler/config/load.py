"""Reading a ``KubeSchedulerConfiguration`` file: strict decoding, kube's defaults, kube's validation.

Decoding is strict like kube-scheduler's (unknown or duplicate fields are errors; a number is not a
string; durations are Go duration strings such as ``"15s"``, ``"1m30s"``, ``"500ms"``). Defaults follow
kube's ``SetDefaults_KubeSchedulerConfiguration`` and validation kube's
``ValidateKubeSchedulerConfiguration`` plus the checks kube makes when it builds the frameworks (plugin
lists, one queueSort plugin shared by every profile, at least one bind plugin) and client-go's
leader-election checks. The first problem found is raised as a ``ConfigError`` naming its field path.

Where pyscheduler differs from kube-scheduler:

- A single profile without ``schedulerName`` is named ``py-scheduler`` (kube: ``default-scheduler``); with
  several profiles each needs a name, as in kube. The lease is ``kube-system/py-scheduler`` by default.
- ``clientConnection.contentType`` defaults to ``application/json`` (kube: protobuf).
- Names are checked against the plugin registry: an unknown plugin in an ``enabled`` list or in
  ``pluginConfig`` is an error with close matches suggested. ``disabled`` may also name kube plugins we do
  not implement (DynamicResources...); their ``pluginConfig`` is ignored with a warning.
- A default plugin missing from the registry is left out, with a warning.
- A negative score weight is an error (kube lets it through); 0 or unset means 1, as in kube.
- An extender needs a ``urlPrefix`` and a non-negative ``httpTimeout``.
- ``healthzBindAddress`` / ``metricsBindAddress`` are unknown fields in v1 and refused, as kube does.
  ``percentageOfPlacementsToScore`` (alpha, TopologyAwareWorkloadScheduling) is accepted and ignored with a
  warning; the alpha placement extension points are rejected.
- Fields validated like kube but not (yet) acted on are named in ``SchedulerConfig.warnings`` when set:
  ``parallelism``, ``delayCacheUntilActive``, ``enableProfiling``, ``enableContentionProfiling``,
  ``clientConnection.acceptContentTypes`` / ``contentType`` (pyscheduler always speaks JSON).
- A duration longer than the Lease's 32-bit ``leaseDurationSeconds`` is refused for ``leaseDuration``.

This module reads the top-level fields (``leaderElection``, ``clientConnection``, backoff, scoring
percentage) and hands the rest to one module per part: ``parsing`` (strict YAML, Go durations),
``reader`` (the strict object reader and field paths), ``profiles`` (each profile and the checks across
them), ``plugin_sets`` (``plugins``), ``plugin_config`` (``pluginConfig`` args) and ``extenders``.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from pyscheduler.config.defaults import ExtensionPointsFn
from pyscheduler.config.extenders import read_extenders
from pyscheduler.config.parsing import fmt_seconds, parse_yaml
from pyscheduler.config.profiles import read_profiles
from pyscheduler.config.reader import INT32_MAX, INT64_MAX, StrictObject, read_percentage, type_name
from pyscheduler.config.types import (
    API_VERSION,
    KIND,
    ClientConnection,
    ConfigError,
    LeaderElection,
    SchedulerConfig,
)
from pyscheduler.framework.registry import PluginSpec

__all__ = ["API_VERSION", "KIND", "ConfigError", "load_config", "parse_config"]

# client-go leaderelection.JitterFactor: renewDeadline must exceed retryPeriod * 1.2
LEADER_ELECTION_JITTER = Fraction(6, 5)

_TOP_FIELDS = (
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
)
_LEADER_ELECTION_FIELDS = (
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
)
_CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


# fields kube validates that pyscheduler accepts but does not act on (yet); named in a warning when set
_NOT_USED = {
    "parallelism": "partly used: caps the forked Filter workers of a chunk whose Filter would take over 50 ms"
    " in one process (none of the benchmark workloads); Score runs in one process",
    "delayCacheUntilActive": "not used: the cache is filled at start whether or not this instance leads",
    "enableProfiling": "not used: pyscheduler serves no /debug/pprof",
    "enableContentionProfiling": "not used: pyscheduler serves no /debug/pprof",
}

# ------------------------------------------------------------------- leaderElection and clientConnection


def _leader_election(raw: Any, path: str) -> LeaderElection:
    d = LeaderElection()
    if raw is None:
        return d
    obj = StrictObject(raw, path, _LEADER_ELECTION_FIELDS)
    le = LeaderElection(
        leader_elect=obj.boolean("leaderElect", d.leader_elect),
        lease_duration=obj.duration("leaseDuration", d.lease_duration),
        renew_deadline=obj.duration("renewDeadline", d.renew_deadline),
        retry_period=obj.duration("retryPeriod", d.retry_period),
        resource_lock=obj.string("resourceLock") or d.resource_lock,
        resource_name=obj.string("resourceName") or d.resource_name,
        resource_namespace=obj.string("resourceNamespace") or d.resource_namespace,
    )
    if not le.leader_elect:
        return le
    for key, value in (
        ("leaseDuration", le.lease_duration),
        ("renewDeadline", le.renew_deadline),
        ("retryPeriod", le.retry_period),
    ):
        if value <= 0:
            raise ConfigError(obj.at(key), f"must be greater than zero, got {fmt_seconds(value)}")
    if le.lease_duration <= le.renew_deadline:
        raise ConfigError(
            obj.at("leaseDuration"),
            f"must be greater than renewDeadline ({fmt_seconds(le.lease_duration)} <= "
            f"{fmt_seconds(le.renew_deadline)})",
        )
    if Fraction(le.renew_deadline) <= LEADER_ELECTION_JITTER * Fraction(le.retry_period):
        raise ConfigError(
            obj.at("renewDeadline"),
            f"must be greater than 1.2 x retryPeriod (client-go's JitterFactor); got renewDeadline "
            f"{fmt_seconds(le.renew_deadline)} and retryPeriod {fmt_seconds(le.retry_period)}",
        )
    if le.lease_duration > INT32_MAX:
        raise ConfigError(
            obj.at("leaseDuration"),
            f"must be at most {INT32_MAX}s: the Lease's leaseDurationSeconds is a 32-bit integer, "
            f"got {fmt_seconds(le.lease_duration)}",
        )
    if le.resource_lock != "leases":
        raise ConfigError(obj.at("resourceLock"), f'must be "leases", got {le.resource_lock!r}')
    return le


def _client_connection(raw: Any, path: str) -> ClientConnection:
    d = ClientConnection()
    if raw is None:
        return d
    obj = StrictObject(raw, path, _CLIENT_CONNECTION_FIELDS)
    burst = obj.integer("burst", 0)
    if burst < 0:
        raise ConfigError(obj.at("burst"), f"must be non-negative, got {burst}")
    return ClientConnection(
        kubeconfig=obj.string("kubeconfig"),
        accept_content_types=obj.string("acceptContentTypes"),
        content_type=obj.string("contentType") or d.content_type,
        # kube's defaulting treats 0 as unset
        qps=obj.number("qps", 0.0) or d.qps,
        burst=burst or d.burst,
    )


# ------------------------------------------------------------------------------------------- entry


def parse_config(
    data: Mapping[str, Any] | None,
    registry: Mapping[str, PluginSpec],
    extension_points: ExtensionPointsFn,
) -> SchedulerConfig:
    """A validated SchedulerConfig from a decoded ``KubeSchedulerConfiguration`` object.

    ``registry`` maps plugin names to their specs (args are decoded through ``PluginSpec.decode``);
    ``extension_points(name)`` names the extension points (``EXTENSION_POINTS`` spellings) a plugin
    implements.
    """
    if data is None:
        raise ConfigError(
            "apiVersion", f'required: the file must be a KubeSchedulerConfiguration ("{API_VERSION}")'
        )
    if not isinstance(data, Mapping):
        raise ConfigError("", f"the configuration must be an object, got {type_name(data)}")
    version = data.get("apiVersion")
    if version is None:
        raise ConfigError("apiVersion", f'required; must be "{API_VERSION}"')
    if version != API_VERSION:
        raise ConfigError("apiVersion", f'must be "{API_VERSION}", got {version!r}')
    kind = data.get("kind")
    if kind != KIND:
        raise ConfigError(
            "kind", f'must be "{KIND}", got {kind!r}' if kind is not None else f'required; must be "{KIND}"'
        )
    obj = StrictObject(data, "", _TOP_FIELDS)
    warnings: list[str] = []

    parallelism = obj.integer("parallelism", 16)
    if parallelism <= 0:
        raise ConfigError("parallelism", f"must be greater than zero, got {parallelism}")
    percentage = read_percentage(obj, "percentageOfNodesToScore")
    if read_percentage(obj, "percentageOfPlacementsToScore") is not None:
        warnings.append("percentageOfPlacementsToScore: ignored: pyscheduler does not schedule placements")
    initial = obj.integer("podInitialBackoffSeconds", 1, maximum=INT64_MAX)
    if initial <= 0:
        raise ConfigError("podInitialBackoffSeconds", f"must be greater than 0, got {initial}")
    maximum = obj.integer("podMaxBackoffSeconds", 10, maximum=INT64_MAX)
    if maximum < initial:
        raise ConfigError(
            "podMaxBackoffSeconds",
            f"must be greater than or equal to podInitialBackoffSeconds ({initial}), got {maximum}",
        )
    leader_election = _leader_election(obj.get("leaderElection"), "leaderElection")
    client_connection = _client_connection(obj.get("clientConnection"), "clientConnection")
    enable_profiling = obj.boolean("enableProfiling", True)
    enable_contention = obj.boolean("enableContentionProfiling", enable_profiling)
    delay_cache = obj.boolean("delayCacheUntilActive")
    for key, note in _NOT_USED.items():
        if obj.has(key):
            warnings.append(f"{key}: {note}")
    if client_connection.accept_content_types or client_connection.content_type != "application/json":
        warnings.append(
            "clientConnection.contentType: pyscheduler sends and accepts application/json, "
            f"not {client_connection.content_type!r} / {client_connection.accept_content_types!r}"
        )

    profiles = read_profiles(obj.array("profiles") or [{}], registry, extension_points, warnings)

    return SchedulerConfig(
        profiles=profiles,
        parallelism=parallelism,
        percentage_of_nodes_to_score=0 if percentage is None else percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        extenders=read_extenders(obj.array("extenders"), "extenders"),
        leader_election=leader_election,
        client_connection=client_connection,
        delay_cache_until_active=delay_cache,
        enable_profiling=enable_profiling,
        enable_contention_profiling=enable_contention,
        warnings=tuple(warnings),
    )


def load_config(
    path: str | None,
    registry: Mapping[str, PluginSpec],
    extension_points: ExtensionPointsFn,
) -> SchedulerConfig:
    """The configuration in the YAML (or JSON) file at ``path``; None means all defaults (one profile,
    ``py-scheduler``, with kube's default plugins)."""
    if path is None:
        return parse_config({"apiVersion": API_VERSION, "kind": KIND}, registry, extension_points)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise ConfigError("", f"cannot read {path}: {e.strerror or e}") from e
    except UnicodeDecodeError as e:
        raise ConfigError("", f"{path}: not UTF-8 text: {e}") from e
    return parse_config(parse_yaml(text, path), registry, extension_points)
