"""Builders for resource.k8s.io/v1 objects (DRA) as API JSON: DeviceClass, ResourceSlice, ResourceClaim,
ResourceClaimTemplate. Used by DynamicResources' unit tests and the integration tests; each returns a
fresh dict with ``apiVersion`` and ``kind``, ready to create on a cluster or to parse with
``pyscheduler.framework.dra``."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

JSON = dict[str, Any]
API_VERSION = "resource.k8s.io/v1"


def device_class(name: str, *selectors: str, driver: str = "") -> JSON:
    """A DeviceClass; ``driver`` adds the selector ``device.driver == "<driver>"`` first."""
    exprs = ([f'device.driver == "{driver}"'] if driver else []) + list(selectors)
    return {
        "apiVersion": API_VERSION,
        "kind": "DeviceClass",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": {"selectors": [{"cel": {"expression": e}} for e in exprs]},
    }


def device(
    name: str, attributes: Mapping[str, Any] | None = None, capacity: Mapping[str, str] | None = None
) -> JSON:
    """A device; ``attributes`` values are typed as the API types them (int, bool, else string)."""
    d: JSON = {"name": name}
    if attributes:
        attrs: JSON = {}
        for k, v in attributes.items():
            if isinstance(v, bool):
                attrs[k] = {"bool": v}
            elif isinstance(v, int):
                attrs[k] = {"int": v}
            else:
                attrs[k] = {"string": str(v)}
        d["attributes"] = attrs
    if capacity:
        d["capacity"] = {k: {"value": v} for k, v in capacity.items()}
    return d


def resource_slice(
    name: str,
    driver: str,
    devices: Sequence[JSON],
    *,
    node: str = "",
    all_nodes: bool = False,
    node_selector: Mapping[str, Any] | None = None,
    pool: str = "",
    generation: int = 1,
    slice_count: int = 1,
    extra_spec: Mapping[str, Any] | None = None,
) -> JSON:
    spec: JSON = {
        "driver": driver,
        "pool": {"name": pool or node or name, "generation": generation, "resourceSliceCount": slice_count},
        "devices": [dict(d) for d in devices],
    }
    if node:
        spec["nodeName"] = node
    elif all_nodes:
        spec["allNodes"] = True
    elif node_selector is not None:
        spec["nodeSelector"] = dict(node_selector)
    spec.update(extra_spec or {})
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceSlice",
        "metadata": {"name": name, "uid": f"uid-{name}", "resourceVersion": "1"},
        "spec": spec,
    }


def exactly(
    name: str, device_class_name: str, *selectors: str, count: int | None = None, mode: str = "", **more: Any
) -> JSON:
    """A request with ``exactly``; ``more`` adds fields as written (``adminAccess=True``, ``tolerations``...)."""
    e: JSON = {"deviceClassName": device_class_name}
    if selectors:
        e["selectors"] = [{"cel": {"expression": s}} for s in selectors]
    if mode:
        e["allocationMode"] = mode
    if count is not None:
        e["count"] = count
    e.update(more)
    return {"name": name, "exactly": e}


def first_available(name: str, *subrequests: tuple[str, str] | JSON) -> JSON:
    """A request with ``firstAvailable``: (subrequest name, class) pairs or full subrequest dicts."""
    subs = [s if isinstance(s, dict) else {"name": s[0], "deviceClassName": s[1]} for s in subrequests]
    return {"name": name, "firstAvailable": subs}


def claim_spec(*requests: JSON, constraints: Sequence[JSON] = (), config: Sequence[JSON] = ()) -> JSON:
    devices: JSON = {"requests": list(requests)}
    if constraints:
        devices["constraints"] = list(constraints)
    if config:
        devices["config"] = list(config)
    return {"devices": devices}


def resource_claim(
    name: str,
    *requests: JSON,
    namespace: str = "default",
    constraints: Sequence[JSON] = (),
    uid: str = "",
    resource_version: str = "1",
    status: Mapping[str, Any] | None = None,
    owner: Mapping[str, Any] | None = None,
) -> JSON:
    meta: JSON = {
        "name": name,
        "namespace": namespace,
        "uid": uid or str(uuid.uuid5(uuid.NAMESPACE_OID, f"{namespace}/{name}")),
        "resourceVersion": resource_version,
    }
    if owner:
        meta["ownerReferences"] = [dict(owner)]
    out: JSON = {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaim",
        "metadata": meta,
        "spec": claim_spec(*requests, constraints=constraints),
    }
    if status:
        out["status"] = dict(status)
    return out


def claim_template(
    name: str, *requests: JSON, namespace: str = "default", constraints: Sequence[JSON] = ()
) -> JSON:
    return {
        "apiVersion": API_VERSION,
        "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"spec": claim_spec(*requests, constraints=constraints)},
    }


def without_server_fields(obj: Mapping[str, Any]) -> JSON:
    """``obj`` ready to POST: no uid or resourceVersion (the builders set them for unit tests)."""
    out = dict(obj)
    meta = dict(out.get("metadata") or {})
    meta.pop("uid", None)
    meta.pop("resourceVersion", None)
    out["metadata"] = meta
    return out
