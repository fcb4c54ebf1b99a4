"""``extenders``: HTTP extenders, their TLS settings and the extended resources they manage.

Each needs a ``urlPrefix``; a ``prioritizeVerb`` needs a positive ``weight``; ``httpTimeout`` is a
non-negative Go duration (0 or unset means 5 s, kube's DefaultExtenderTimeout); TLS data fields are
base64; a managed resource is an extended resource name (kube's validateExtendedResourceName), managed
by one extender only; at most one extender binds.
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from pyscheduler.config.reader import INT64_MAX, StrictObject, field_path, type_name
from pyscheduler.config.types import (
    DEFAULT_EXTENDER_HTTP_TIMEOUT,
    ConfigError,
    Extender,
    ExtenderManagedResource,
    ExtenderTLSConfig,
)

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


def _b64(obj: StrictObject, key: str) -> bytes:
    v = obj.get(key)
    if v is None:
        return b""
    if not isinstance(v, str):
        raise ConfigError(obj.at(key), f"must be a base64-encoded string, got {type_name(v)}")
    try:
        return base64.b64decode(v, validate=True)
    except (binascii.Error, ValueError) as e:
        raise ConfigError(obj.at(key), f"must be base64-encoded: {e}") from e


def read_extenders(raw: list[Any], path: str) -> tuple[Extender, ...]:
    out: list[Extender] = []
    binders: list[int] = []
    managed_seen: dict[str, str] = {}
    for i, item in enumerate(raw):
        obj = StrictObject(item, field_path(path, i), _EXTENDER_FIELDS)
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
            t = StrictObject(obj.get("tlsConfig"), obj.at("tlsConfig"), _TLS_FIELDS)
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
            m = StrictObject(mr, field_path(obj.at("managedResources"), j), ("name", "ignoredByScheduler"))
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
