"""The API the scheduler talks to: resources, lists, watches and the scheduler's own verbs.

``Api`` is the one boundary between the scheduler and the API server. It is a ``Transport``
(``transport.py``: connections, credentials, rate limit, retries) plus what the calls mean:

- **Resources.** ``KINDS`` names every kind the scheduler reads or writes (API prefix, plural,
  namespaced); ``resource_path`` builds a collection, object or subresource path from it, and
  ``get``/``create``/``update``/``update_status``/``patch``/``delete`` work on any of them.
- **Lists** are paginated with ``limit``/``continue``; when a continue token expires mid-list (410)
  the list restarts without pagination, as client-go's pager does.
- **Watches** are streamed (``watch.py``): ``Api.watch`` returns a ``Watch`` another thread can stop.
- **Scheduler verbs.** ``bind`` (the Binding subresource, its errors returned as a ``Status``),
  ``patch_pod_status`` (a condition, ``nominatedNodeName``), ``delete_pod`` (preemption),
  ``create_event``.

Failures raise ``ApiError`` (``errors.py``). The error classes, the token bucket, the pool factory and
``Watch`` are importable from here too, so a caller of ``Api`` needs one import.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Mapping
from typing import Any, Final

import structlog

from pyscheduler.client.errors import (
    ApiConnectionError,
    ApiError,
    FencedError,
    GoneError,
    error_from_response,
    is_conflict,
    is_forbidden,
    is_gone,
    is_not_found,
    is_retryable,
)
from pyscheduler.client.ratelimit import TokenBucket
from pyscheduler.client.transport import (
    JSON,
    USER_AGENT,
    Query,
    Transport,
    make_pool,
    pool_kwargs,
)
from pyscheduler.client.watch import Watch
from pyscheduler.framework.helpers.timefmt import rfc3339
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod

log = structlog.get_logger("pyscheduler.client")

__all__ = [
    "JSON",
    "KINDS",
    "PATCH_CONTENT_TYPES",
    "USER_AGENT",
    "Api",
    "ApiConnectionError",
    "ApiError",
    "FencedError",
    "GoneError",
    "Query",
    "TokenBucket",
    "Watch",
    "error_from_response",
    "is_conflict",
    "is_forbidden",
    "is_gone",
    "is_not_found",
    "is_retryable",
    "make_pool",
    "pool_kwargs",
    "resource_path",
]

PATCH_CONTENT_TYPES: Final = {
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
    "json": "application/json-patch+json",
    "apply": "application/apply-patch+yaml",
}

# kind -> (API prefix, resource, namespaced)
KINDS: Final[dict[str, tuple[str, str, bool]]] = {
    "Pod": ("/api/v1", "pods", True),
    "Node": ("/api/v1", "nodes", False),
    "Namespace": ("/api/v1", "namespaces", False),
    "ConfigMap": ("/api/v1", "configmaps", True),
    "Service": ("/api/v1", "services", True),
    "ReplicationController": ("/api/v1", "replicationcontrollers", True),
    "PersistentVolumeClaim": ("/api/v1", "persistentvolumeclaims", True),
    "PersistentVolume": ("/api/v1", "persistentvolumes", False),
    "ReplicaSet": ("/apis/apps/v1", "replicasets", True),
    "StatefulSet": ("/apis/apps/v1", "statefulsets", True),
    "StorageClass": ("/apis/storage.k8s.io/v1", "storageclasses", False),
    "CSINode": ("/apis/storage.k8s.io/v1", "csinodes", False),
    "CSIDriver": ("/apis/storage.k8s.io/v1", "csidrivers", False),
    "CSIStorageCapacity": ("/apis/storage.k8s.io/v1", "csistoragecapacities", True),
    "VolumeAttachment": ("/apis/storage.k8s.io/v1", "volumeattachments", False),
    "PodDisruptionBudget": ("/apis/policy/v1", "poddisruptionbudgets", True),
    "PriorityClass": ("/apis/scheduling.k8s.io/v1", "priorityclasses", False),
    "Lease": ("/apis/coordination.k8s.io/v1", "leases", True),
    "Event": ("/apis/events.k8s.io/v1", "events", True),
    # DynamicResources
    "ResourceClaim": ("/apis/resource.k8s.io/v1", "resourceclaims", True),
    "ResourceClaimTemplate": ("/apis/resource.k8s.io/v1", "resourceclaimtemplates", True),
    "DeviceClass": ("/apis/resource.k8s.io/v1", "deviceclasses", False),
    "ResourceSlice": ("/apis/resource.k8s.io/v1", "resourceslices", False),
    # workload-aware scheduling (alpha API, GenericWorkload)
    "PodGroup": ("/apis/scheduling.k8s.io/v1alpha2", "podgroups", True),
    "Workload": ("/apis/scheduling.k8s.io/v1alpha2", "workloads", True),
}


def _seg(s: str) -> str:
    return urllib.parse.quote(s, safe="")


def resource_path(
    kind: str, namespace: str | None = None, name: str | None = None, subresource: str | None = None
) -> str:
    """The REST path of a kind from ``KINDS`` (collection, object, or subresource)."""
    try:
        prefix, resource, namespaced = KINDS[kind]
    except KeyError:
        raise ValueError(f"unknown kind {kind!r}; known: {', '.join(sorted(KINDS))}") from None
    if namespaced:
        if not namespace:
            if name:
                raise ValueError(f"{kind} is namespaced: a namespace is needed for {name!r}")
            path = f"{prefix}/{resource}"  # all namespaces (list/watch)
        else:
            path = f"{prefix}/namespaces/{_seg(namespace)}/{resource}"
    else:
        path = f"{prefix}/{resource}"
    if name:
        path += f"/{_seg(name)}"
        if subresource:
            path += f"/{subresource}"
    elif subresource:
        raise ValueError("a subresource needs an object name")
    return path


class Api(Transport):
    """The API server's resources and the scheduler's verbs over a ``Transport``; see the module
    docstring."""

    # ------------------------------------------------------------------------------ list & watch
    def list(
        self,
        path: str,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
        page_size: int = 500,
        timeout: float = 60.0,
    ) -> tuple[list[JSON], str]:
        """All items of a collection (consistent read, paginated); returns (items, list resourceVersion).

        Items of a list carry no ``kind``/``apiVersion``. If a continue token expires (410) the list is
        restarted without pagination."""
        items: list[JSON] = []
        cont: str | None = None
        limit: int | None = page_size if page_size > 0 else None
        while True:
            query: dict[str, str | int | bool | None] = {
                "labelSelector": label_selector,
                "fieldSelector": field_selector,
                "limit": limit,
                "continue": cont,
            }
            try:
                _, out = self.request("GET", path, query=query, timeout=timeout)
            except GoneError:
                if cont is None:
                    raise
                log.info("list continue token expired, relisting without pagination", path=path)
                items, cont, limit = [], None, None
                continue
            if not isinstance(out, dict):
                raise ApiError(
                    200, "BadResponse", f"expected a list object, got {type(out).__name__}", "GET", path
                )
            items.extend(out.get("items") or ())
            meta = out.get("metadata") or {}
            cont = meta.get("continue") or None
            if not cont:
                return items, str(meta.get("resourceVersion") or "")

    def watch(
        self,
        path: str,
        resource_version: str,
        *,
        field_selector: str | None = None,
        label_selector: str | None = None,
        timeout_seconds: int = 300,
        read_timeout: float | None = None,
        bookmarks: bool = True,
    ) -> Watch:
        """A stream of (type, object) from ``resource_version`` on; see ``Watch``."""
        query: dict[str, str | int | bool | None] = {
            "watch": "1",
            "resourceVersion": resource_version or None,
            "allowWatchBookmarks": True if bookmarks else None,
            "timeoutSeconds": int(timeout_seconds),
            "labelSelector": label_selector,
            "fieldSelector": field_selector,
        }
        rt = read_timeout if read_timeout is not None else timeout_seconds + max(30.0, 0.1 * timeout_seconds)
        return Watch(self, path, self.url(path, query), rt)

    def serves(self, group_version_path: str) -> bool:
        """Whether the API server serves this group/version (``/apis/resource.k8s.io/v1``): discovery,
        which every authenticated user may read (``system:discovery``), so no RBAC rule. False on 404;
        any other failure, after the client's retries, is raised."""
        try:
            self.request("GET", group_version_path)
        except ApiError as e:
            if e.is_not_found():
                return False
            raise
        return True

    # ------------------------------------------------------------------------------ generic objects
    def get(self, kind: str, namespace: str | None, name: str) -> JSON:
        _, out = self.request("GET", resource_path(kind, namespace, name))
        return _as_obj(out)

    def create(self, kind: str, namespace: str | None, body: Mapping[str, Any]) -> JSON:
        _, out = self.request("POST", resource_path(kind, namespace), body=body)
        return _as_obj(out)

    def update(self, kind: str, namespace: str | None, name: str, body: Mapping[str, Any]) -> JSON:
        """PUT: optimistic concurrency through ``metadata.resourceVersion`` (409 if stale)."""
        _, out = self.request("PUT", resource_path(kind, namespace, name), body=body)
        return _as_obj(out)

    def update_status(self, kind: str, namespace: str | None, name: str, body: Mapping[str, Any]) -> JSON:
        """PUT the status subresource; 409 when ``metadata.resourceVersion`` is stale."""
        _, out = self.request("PUT", resource_path(kind, namespace, name, "status"), body=body)
        return _as_obj(out)

    def patch(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        body: Any,
        *,
        subresource: str | None = None,
        patch_type: str = "merge",
        field_manager: str | None = None,
    ) -> JSON:
        """PATCH with ``patch_type`` one of merge, strategic, json, apply (apply needs field_manager)."""
        try:
            ct = PATCH_CONTENT_TYPES[patch_type]
        except KeyError:
            raise ValueError(
                f"unknown patch type {patch_type!r}; use one of {', '.join(PATCH_CONTENT_TYPES)}"
            ) from None
        query = {"fieldManager": field_manager} if field_manager else None
        _, out = self.request(
            "PATCH",
            resource_path(kind, namespace, name, subresource),
            query=query,
            body=body,
            content_type=ct,
        )
        return _as_obj(out)

    def delete(
        self,
        kind: str,
        namespace: str | None,
        name: str,
        *,
        uid: str | None = None,
        grace_period_seconds: int | None = None,
        propagation_policy: str | None = None,
    ) -> bool:
        """Delete; False when the object is already gone (404) or was replaced (uid precondition failed)."""
        opts: JSON = {"apiVersion": "v1", "kind": "DeleteOptions"}
        if uid:
            opts["preconditions"] = {"uid": uid}
        if grace_period_seconds is not None:
            opts["gracePeriodSeconds"] = int(grace_period_seconds)
        if propagation_policy:
            opts["propagationPolicy"] = propagation_policy
        try:
            self.request("DELETE", resource_path(kind, namespace, name), body=opts)
        except ApiError as e:
            if e.is_not_found() or (uid and e.is_conflict()):
                return False
            raise
        return True

    # ------------------------------------------------------------------------------ scheduler verbs
    def bind(self, pod: Pod, node_name: str) -> Status | None:
        """POST pods/{name}/binding with a uid precondition. None on success; otherwise an error Status
        whose ``error`` is the ApiError (409: already bound, or the pod was replaced; 404: pod gone;
        those are final and not retried). A 409 "already assigned to node <this node>" to a *retry* is
        success: an earlier attempt went through and only its answer was lost.

        Reported to ``metrics_observer.async_api_call`` as kube's dispatcher reports its ``pod_binding``
        calls (result success or error, the time taken, retries included)."""
        observe = getattr(self.metrics_observer, "async_api_call", None)
        if observe is None:
            return self._bind(pod, node_name)
        start = time.perf_counter()
        result = "error"
        try:
            status = self._bind(pod, node_name)
            if status is None:
                result = "success"
            return status
        finally:
            observe("pod_binding", result, time.perf_counter() - start)

    def _bind(self, pod: Pod, node_name: str) -> Status | None:
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod.name, "namespace": pod.namespace, "uid": pod.uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node_name},
        }
        try:
            self.request("POST", resource_path("Pod", pod.namespace, pod.name, "binding"), body=body)
        except ApiError as e:
            if (
                e.is_conflict()
                and e.attempts > 1
                and f'is already assigned to node "{node_name}"' in e.message
            ):
                # An earlier attempt of this very Binding (same pod uid, same node) was carried out but its
                # answer was lost (a 5xx from a proxy, a read timeout): the pod is bound where we sent it.
                # Reporting the retry's 409 would requeue a bound pod and mark it PodScheduled=False.
                log.info(
                    "bind answer lost; the retry shows the pod bound to this node",
                    pod=pod.key,
                    node=node_name,
                )
                return None
            return Status.as_error(e)
        return None

    def patch_pod_status(
        self,
        namespace: str,
        name: str,
        *,
        condition: Mapping[str, Any] | None = None,
        nominated_node_name: str | None = None,
        extended_resource_claim_status: Mapping[str, Any] | None = None,
        resource_version: str = "",
    ) -> JSON | None:
        """Strategic-merge patch of pods/{name}/status: merge one condition (by ``type``; its
        ``lastTransitionTime`` defaults to now) and/or set ``status.nominatedNodeName`` ("" clears it) and/or
        ``status.extendedResourceClaimStatus`` (DynamicResources' PreBind). ``resource_version``: only if
        the pod is still at that version (else ApiError 409). Returns the updated pod, or None when there
        was nothing to patch."""
        status: JSON = {}
        if extended_resource_claim_status is not None:
            status["extendedResourceClaimStatus"] = dict(extended_resource_claim_status)
        if condition is not None:
            c = dict(condition)
            if not c.get("type"):
                raise ValueError("a pod condition needs a type")
            c.setdefault("lastTransitionTime", rfc3339(self.clock.wall()))
            status["conditions"] = [c]
        if nominated_node_name is not None:
            status["nominatedNodeName"] = nominated_node_name or None
        if not status:
            return None
        body: JSON = {"status": status}
        if resource_version:  # a precondition: 409 Conflict if the pod changed since that version
            body["metadata"] = {"resourceVersion": resource_version}
        return self.patch("Pod", namespace, name, body, subresource="status", patch_type="strategic")

    def patch_pod_group_status(self, namespace: str, name: str, condition: Mapping[str, Any]) -> JSON:
        """Strategic-merge patch of a PodGroup's status (scheduling.k8s.io/v1alpha2): merge one condition
        by ``type`` (the pod group cycle's PodGroupScheduled)."""
        return self.patch(
            "PodGroup",
            namespace,
            name,
            {"status": {"conditions": [dict(condition)]}},
            subresource="status",
            patch_type="strategic",
        )

    def add_pod_condition(self, namespace: str, name: str, condition: Mapping[str, Any]) -> JSON | None:
        """Merge a condition (e.g. DisruptionTarget before preemption) into the pod's status."""
        return self.patch_pod_status(namespace, name, condition=condition)

    def delete_pod(
        self, namespace: str, name: str, *, uid: str | None = None, grace_period_seconds: int | None = None
    ) -> bool:
        """Delete a pod (preemption); False if it is already gone or was replaced (uid differs)."""
        return self.delete("Pod", namespace, name, uid=uid, grace_period_seconds=grace_period_seconds)

    def patch_event_series(self, namespace: str, name: str, series: Mapping[str, Any]) -> JSON:
        """Merge-PATCH an events.k8s.io/v1 Event's ``series`` (count, lastObservedTime)."""
        return self.patch("Event", namespace, name, {"series": dict(series)})

    def create_event(self, body: Mapping[str, Any]) -> JSON:
        """POST an events.k8s.io/v1 Event into ``body.metadata.namespace`` (default ``default``)."""
        ns = (body.get("metadata") or {}).get("namespace") or "default"
        return self.create("Event", ns, body)


def _as_obj(out: Any) -> JSON:
    if isinstance(out, dict):
        return out
    return {} if out is None else {"value": out}
