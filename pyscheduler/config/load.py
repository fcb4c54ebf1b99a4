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
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from pyscheduler.config.defaults import (
    KUBE_IN_TREE_PLUGINS,
    NOT_IMPLEMENTED,
    REMOVED_PLUGINS,
    WILDCARD,
    ExtensionPointsFn,
    PluginRef,
    PluginSetSpec,
    resolve_plugins,
    suggest,
)
from pyscheduler.config.parsing import fmt_seconds, parse_duration, parse_yaml
from pyscheduler.config.types import (
    API_VERSION,
    DEFAULT_EXTENDER_HTTP_TIMEOUT,
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
    SchedulerConfig,
)
from pyscheduler.framework.plugin_args import ArgsError
from pyscheduler.framework.registry import PluginSpec

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
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
_PROFILE_FIELDS = (
    "schedulerName",
    "percentageOfNodesToScore",
    "percentageOfPlacementsToScore",
    "plugins",
    "pluginConfig",
)
# alpha (TopologyAwareWorkloadScheduling) points of the v1 API that pyscheduler does not run
_PLACEMENT_POINTS = ("placementGenerate", "placementScore", "placementFeasible", "podGroupPostFilter")
_PLUGINS_FIELDS = (*EXTENSION_POINTS, MULTI_POINT, *_PLACEMENT_POINTS)
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
_EXTENDER_FIELDS = (
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
)
_TLS_FIELDS = ("insecure", "serverName", "certFile", "keyFile", "caFile", "certData", "keyData", "caData")


# fields kube validates that pyscheduler accepts but does not act on (yet); named in a warning when set
_NOT_USED = {
    "parallelism": "partly used: caps the forked Filter workers of a chunk whose Filter would take over 50 ms"
    " in one process (none of the benchmark workloads); Score runs in one process",
    "delayCacheUntilActive": "not used: the cache is filled at start whether or not this instance leads",
    "enableProfiling": "not used: pyscheduler serves no /debug/pprof",
    "enableContentionProfiling": "not used: pyscheduler serves no /debug/pprof",
}

# ------------------------------------------------------------------------------------ field reader


def _at(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _type_name(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list):
        return "a list"
    return repr(value)


class _Obj:
    """A JSON object read strictly: unknown keys are errors, ``null`` means "not set"."""

    def __init__(self, raw: Any, path: str, fields: Sequence[str], what: str = "an object") -> None:
        if not isinstance(raw, Mapping):
            raise ConfigError(path, f"must be {what}, got {_type_name(raw)}")
        for key in raw:
            if not isinstance(key, str):
                raise ConfigError(path, f"field names must be strings, got {key!r}")
            if key not in fields:
                hint = suggest(key, fields)
                msg = f"unknown field{hint}" if hint else f"unknown field; known fields: {', '.join(fields)}"
                raise ConfigError(_at(path, key), msg)
        self.raw: Mapping[str, Any] = raw
        self.path = path

    def at(self, key: str) -> str:
        return _at(self.path, key)

    def get(self, key: str) -> Any:
        return self.raw.get(key)

    def has(self, key: str) -> bool:
        return self.raw.get(key) is not None

    def string(self, key: str, default: str = "") -> str:
        v = self.raw.get(key)
        if v is None:
            return default
        if not isinstance(v, str):
            raise ConfigError(self.at(key), f"must be a string, got {v!r}")
        return v

    def boolean(self, key: str, default: bool = False) -> bool:
        v = self.raw.get(key)
        if v is None:
            return default
        if not isinstance(v, bool):
            raise ConfigError(self.at(key), f"must be a boolean, got {v!r}")
        return v

    def integer(self, key: str, default: int, maximum: int = INT32_MAX) -> int:
        v = self.opt_integer(key, maximum)
        return default if v is None else v

    def opt_integer(self, key: str, maximum: int = INT32_MAX) -> int | None:
        v = self.raw.get(key)
        if v is None:
            return None
        if isinstance(v, bool) or not isinstance(v, int):
            raise ConfigError(self.at(key), f"must be an integer, got {v!r}")
        if not -maximum - 1 <= v <= maximum:
            bits = 32 if maximum == INT32_MAX else 64
            raise ConfigError(self.at(key), f"must fit in a {bits}-bit integer, got {v}")
        return v

    def number(self, key: str, default: float) -> float:
        v = self.raw.get(key)
        if v is None:
            return default
        if isinstance(v, bool) or not isinstance(v, int | float):
            raise ConfigError(self.at(key), f"must be a number, got {v!r}")
        return float(v)

    def duration(self, key: str, default: float) -> float:
        v = self.raw.get(key)
        return default if v is None else parse_duration(v, self.at(key))

    def array(self, key: str) -> list[Any]:
        v = self.raw.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise ConfigError(self.at(key), f"must be a list, got {_type_name(v)}")
        return v


def _percentage(obj: _Obj, key: str) -> int | None:
    v = obj.opt_integer(key)
    if v is not None and not 0 <= v <= 100:
        raise ConfigError(obj.at(key), f"must be in the range 0-100, got {v}")
    return v


# --------------------------------------------------------------------------------------- plugins


def _unknown_plugin(name: str, candidates: Sequence[str] | set[str], what: str = "registered") -> str:
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
    raise ConfigError(path, _unknown_plugin(name, set(registry)))


def _plugin_ref(raw: Any, path: str) -> PluginRef:
    obj = _Obj(raw, path, ("name", "weight"), "an object with a name")
    name = obj.string("name")
    if not name:
        raise ConfigError(obj.at("name"), "required")
    weight = obj.opt_integer("weight")
    if weight is not None and weight < 0:
        raise ConfigError(obj.at("weight"), f"must be a positive integer (0 or unset means 1), got {weight}")
    return PluginRef(name, weight, path)


def _plugin_set(raw: Any, path: str, point: str, registry: Mapping[str, PluginSpec]) -> PluginSetSpec:
    obj = _Obj(raw, path, ("enabled", "disabled"))
    enabled: list[PluginRef] = []
    first_at: dict[str, int] = {}
    for i, item in enumerate(obj.array("enabled")):
        ref = _plugin_ref(item, _at(obj.at("enabled"), i))
        name_path = _at(ref.path, "name")
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
        ref = _plugin_ref(item, _at(obj.at("disabled"), i))
        known = ref.name == WILDCARD or ref.name in registry or ref.name in KUBE_IN_TREE_PLUGINS
        if not known and ref.name not in REMOVED_PLUGINS:
            candidates = set(registry) | KUBE_IN_TREE_PLUGINS
            raise ConfigError(_at(ref.path, "name"), _unknown_plugin(ref.name, candidates, "known"))
        disabled.append(ref)
    return PluginSetSpec(tuple(enabled), tuple(disabled), path)


def _plugins(raw: Any, path: str, registry: Mapping[str, PluginSpec]) -> dict[str, PluginSetSpec]:
    if raw is None:
        return {}
    obj = _Obj(raw, path, _PLUGINS_FIELDS)
    for point in _PLACEMENT_POINTS:
        if obj.has(point):
            pset = _Obj(obj.get(point), obj.at(point), ("enabled", "disabled"))
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


def _decode_args(spec: PluginSpec, raw: Any, path: str) -> Any:
    try:
        return spec.decode(raw, path)
    except ArgsError as e:
        raise ConfigError(e.path, e.detail) from e
    except (TypeError, ValueError) as e:
        raise ConfigError(path, str(e)) from e


def _plugin_config(
    raw: list[Any], path: str, registry: Mapping[str, PluginSpec], warnings: list[str]
) -> tuple[dict[str, Any], dict[str, int]]:
    """Decoded args by plugin name, and each name's index in the list."""
    args: dict[str, Any] = {}
    index: dict[str, int] = {}
    for i, item in enumerate(raw):
        entry_path = _at(path, i)
        obj = _Obj(item, entry_path, ("name", "args"))
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
            raise ConfigError(obj.at("name"), _unknown_plugin(name, set(registry)))
        raw_args = obj.get("args")
        args_path = obj.at("args")
        if raw_args is not None and not isinstance(raw_args, Mapping):
            raise ConfigError(args_path, f"must be an object, got {_type_name(raw_args)}")
        if raw_args is not None and name in KUBE_IN_TREE_PLUGINS:
            kind = raw_args.get("kind")
            if kind is not None and kind != f"{name}Args":
                raise ConfigError(_at(args_path, "kind"), f'must be "{name}Args", got {kind!r}')
            version = raw_args.get("apiVersion")
            if version is not None and version != API_VERSION:
                raise ConfigError(_at(args_path, "apiVersion"), f'must be "{API_VERSION}", got {version!r}')
        args[name] = _decode_args(registry[name], raw_args, args_path)
    return args, index


def _profile(
    raw: Any,
    path: str,
    default_name: str | None,
    registry: Mapping[str, PluginSpec],
    extension_points: ExtensionPointsFn,
    warnings: list[str],
) -> tuple[Profile, dict[str, int]]:
    obj = _Obj(raw, path, _PROFILE_FIELDS)
    if obj.has("schedulerName"):
        name = obj.string("schedulerName")
        if not name:
            raise ConfigError(obj.at("schedulerName"), "required")
    elif default_name is not None:
        name = default_name
    else:
        raise ConfigError(obj.at("schedulerName"), "required when there is more than one profile")
    percentage = _percentage(obj, "percentageOfNodesToScore")
    if _percentage(obj, "percentageOfPlacementsToScore") is not None:
        warnings.append(
            f"{obj.at('percentageOfPlacementsToScore')}: ignored: pyscheduler does not schedule placements"
        )
    custom = _plugins(obj.get("plugins"), obj.at("plugins"), registry)
    configured, config_index = _plugin_config(
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
            plugin_args[pname] = _decode_args(
                registry[pname], None, f"{obj.at('pluginConfig')}({pname}).args"
            )
    return Profile(name, plugins, plugin_args, percentage), config_index


def _common_queue_sort(profiles: Sequence[Profile], config_indexes: Sequence[dict[str, int]]) -> None:
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


def _common_written_queue_sort(raw_profiles: Sequence[Any]) -> None:
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


# ------------------------------------------------------------------------------ extenders and co.

_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _qualified_name_error(value: str) -> str | None:
    parts = value.split("/")
    if len(parts) > 2:
        return "a qualified name must be of the form [prefix/]name"
    name = parts[-1]
    if len(parts) == 2:
        prefix = parts[0]
        if not prefix:
            return "the prefix part of a qualified name must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return "the prefix part of a qualified name must be a lowercase DNS subdomain"
    if not name or len(name) > 63 or not _QUALIFIED_NAME.match(name):
        return (
            "the name part of a qualified name must be 1-63 characters: alphanumerics, '-', '_' or '.', "
            "starting and ending with an alphanumeric"
        )
    return None


def extended_resource_name_error(name: str) -> str | None:
    """kube's validateExtendedResourceName: a qualified name, with a domain outside kubernetes.io."""
    err = _qualified_name_error(name)
    if err:
        return err
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return (
            "is not an extended resource name "
            "(it needs a domain prefix outside kubernetes.io, e.g. example.com/gpu)"
        )
    if _qualified_name_error("requests." + name):
        return 'is not an extended resource name ("requests." + name must be a qualified name)'
    return None


def _b64(obj: _Obj, key: str) -> bytes:
    v = obj.get(key)
    if v is None:
        return b""
    if not isinstance(v, str):
        raise ConfigError(obj.at(key), f"must be a base64-encoded string, got {_type_name(v)}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ConfigError(obj.at(key), f"must be base64-encoded: {e}") from e


def _extenders(raw: list[Any], path: str) -> tuple[Extender, ...]:
    out: list[Extender] = []
    binders: list[int] = []
    managed_seen: dict[str, str] = {}
    for i, item in enumerate(raw):
        obj = _Obj(item, _at(path, i), _EXTENDER_FIELDS)
        url = obj.string("urlPrefix")
        if not url:
            raise ConfigError(obj.at("urlPrefix"), "required")
        prioritize = obj.string("prioritizeVerb")
        weight = obj.integer("weight", 0, maximum=INT64_MAX)
        if prioritize and weight <= 0:
            raise ConfigError(
                obj.at("weight"), f"must be a positive integer when prioritizeVerb is set, got {weight}"
            )
        bind = obj.string("bindVerb")
        if bind:
            binders.append(i)
        tls: ExtenderTLSConfig | None = None
        if obj.has("tlsConfig"):
            t = _Obj(obj.get("tlsConfig"), obj.at("tlsConfig"), _TLS_FIELDS)
            tls = ExtenderTLSConfig(
                insecure=t.boolean("insecure"),
                server_name=t.string("serverName"),
                cert_file=t.string("certFile"),
                key_file=t.string("keyFile"),
                ca_file=t.string("caFile"),
                cert_data=_b64(t, "certData"),
                key_data=_b64(t, "keyData"),
                ca_data=_b64(t, "caData"),
            )
        timeout = obj.duration("httpTimeout", 0.0)
        if timeout < 0:
            raise ConfigError(obj.at("httpTimeout"), f"must not be negative, got {obj.get('httpTimeout')!r}")
        managed: list[ExtenderManagedResource] = []
        for j, mr in enumerate(obj.array("managedResources")):
            m = _Obj(mr, _at(obj.at("managedResources"), j), ("name", "ignoredByScheduler"))
            rname = m.string("name")
            if not rname:
                raise ConfigError(m.at("name"), "required")
            err = extended_resource_name_error(rname)
            if err:
                raise ConfigError(m.at("name"), f"{rname!r}: {err}")
            if rname in managed_seen:
                raise ConfigError(
                    m.at("name"),
                    f'duplicate extender managed resource "{rname}" (also at {managed_seen[rname]})',
                )
            managed_seen[rname] = m.at("name")
            managed.append(ExtenderManagedResource(rname, m.boolean("ignoredByScheduler")))
        out.append(
            Extender(
                url_prefix=url,
                filter_verb=obj.string("filterVerb"),
                preempt_verb=obj.string("preemptVerb"),
                prioritize_verb=prioritize,
                bind_verb=bind,
                weight=weight,
                enable_https=obj.boolean("enableHTTPS"),
                tls_config=tls,
                http_timeout=timeout or DEFAULT_EXTENDER_HTTP_TIMEOUT,
                node_cache_capable=obj.boolean("nodeCacheCapable"),
                managed_resources=tuple(managed),
                ignorable=obj.boolean("ignorable"),
            )
        )
    if len(binders) > 1:
        raise ConfigError(
            path,
            f"only one extender can implement bind, found {len(binders)} "
            f"(extenders {', '.join(str(b) for b in binders)})",
        )
    return tuple(out)


def _leader_election(raw: Any, path: str) -> LeaderElection:
    d = LeaderElection()
    if raw is None:
        return d
    obj = _Obj(raw, path, _LEADER_ELECTION_FIELDS)
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
    obj = _Obj(raw, path, _CLIENT_CONNECTION_FIELDS)
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
        raise ConfigError("", f"the configuration must be an object, got {_type_name(data)}")
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
    obj = _Obj(data, "", _TOP_FIELDS)
    warnings: list[str] = []

    parallelism = obj.integer("parallelism", 16)
    if parallelism <= 0:
        raise ConfigError("parallelism", f"must be greater than zero, got {parallelism}")
    percentage = _percentage(obj, "percentageOfNodesToScore")
    if _percentage(obj, "percentageOfPlacementsToScore") is not None:
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

    raw_profiles = obj.array("profiles") or [{}]
    default_name = DEFAULT_SCHEDULER_NAME if len(raw_profiles) == 1 else None
    profiles: list[Profile] = []
    indexes: list[dict[str, int]] = []
    seen: dict[str, int] = {}
    for i, raw in enumerate(raw_profiles):
        path = f"profiles[{i}]"
        profile, index = _profile(raw, path, default_name, registry, extension_points, warnings)
        if profile.scheduler_name in seen:
            raise ConfigError(
                f"{path}.schedulerName",
                f'duplicate profile name "{profile.scheduler_name}" '
                f"(also profiles[{seen[profile.scheduler_name]}])",
            )
        seen[profile.scheduler_name] = i
        profiles.append(profile)
        indexes.append(index)
    _common_queue_sort(profiles, indexes)
    _common_written_queue_sort(raw_profiles)

    return SchedulerConfig(
        profiles=tuple(profiles),
        parallelism=parallelism,
        percentage_of_nodes_to_score=0 if percentage is None else percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        extenders=_extenders(obj.array("extenders"), "extenders"),
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
