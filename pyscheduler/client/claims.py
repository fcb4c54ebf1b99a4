"""ResourceClaim status writes for DynamicResources' PreBind (and PostFilter's deallocation).

kube-scheduler's PreBind (dynamicresources.bindClaim) puts ``status.allocation`` (when the scheduler
allocated the claim) and adds the pod to ``status.reservedFor`` with one status update, retried on
conflict against a fresh copy. Here ``reserve_claim`` does the same: it starts from the copy the scheduler
has (its resourceVersion makes a concurrent change a 409), and after a 409 re-reads the claim and
re-applies the change if it still makes sense: the claim must be the same object (uid), and it must not
have been allocated differently meanwhile (then the scheduler's decision is stale and the error is
returned, as kube does: "claim got allocated elsewhere in the meantime"). The returned JSON is what the
caller assumes in the ClaimTracker.

Before the first allocation write the claim gets kube's finalizer ``resource.kubernetes.io/delete-protection``
with a plain update (the status subresource cannot change metadata), and the allocation gets an
``allocationTimestamp`` (kube 1.36 sets it when DRADeviceBindingConditions and
DRAResourceClaimDeviceStatus are on, as they are by default; binding-condition timeouts count from it).

``unreserve_claim`` (Unreserve) removes one consumer from ``status.reservedFor``; ``ClaimWriter`` bundles
these calls for the plugin, which may not import the client layer (it gets the writer from the handle).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Mapping
from typing import Any

import structlog

from pyscheduler.client.api import ApiError
from pyscheduler.framework.helpers.timefmt import rfc3339

log = structlog.get_logger("pyscheduler.client.claims")

JSON = dict[str, Any]
KIND = "ResourceClaim"
MAX_CONFLICT_RETRIES = 5  # client-go's retry.DefaultRetry makes 5 attempts
FINALIZER = "resource.kubernetes.io/delete-protection"  # resourceapi.Finalizer


class ClaimWriteError(Exception):
    pass


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def consumer_ref(pod_name: str, pod_uid: str) -> JSON:
    return {"resource": "pods", "name": pod_name, "uid": pod_uid}


def _apply(claim: JSON, allocation: Mapping[str, Any] | None, consumer: JSON, now: str) -> JSON:
    out = copy.deepcopy(claim)
    ns, name = _meta(claim).get("namespace", ""), _meta(claim).get("name", "")
    if _meta(claim).get("deletionTimestamp"):
        raise ClaimWriteError(f"claim {ns}/{name} got deleted in the meantime")
    status = out.setdefault("status", {})
    if allocation is not None:
        current = status.get("allocation")
        if current is not None and not _same_allocation(current, allocation):
            raise ClaimWriteError(f"claim {ns}/{name} got allocated elsewhere in the meantime")
        if current is None:
            status["allocation"] = copy.deepcopy(dict(allocation))
    elif status.get("allocation") is None:
        raise ClaimWriteError(f"claim {ns}/{name} got deallocated elsewhere in the meantime")
    if not status["allocation"].get("allocationTimestamp"):
        status["allocation"]["allocationTimestamp"] = now
    reserved = status.setdefault("reservedFor", [])
    if not any(r.get("uid") == consumer["uid"] for r in reserved):
        reserved.append(consumer)
    return out


def _same_allocation(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    """Equal but for the timestamp the writer adds (a retry after a lost response finds its own write)."""
    strip = ("allocationTimestamp",)
    return {k: v for k, v in a.items() if k not in strip} == {k: v for k, v in b.items() if k not in strip}


def _with_finalizer(api: Any, claim: JSON) -> JSON:
    """kube adds its finalizer with a normal update before it writes the first allocation."""
    meta = _meta(claim)
    finalizers = list(meta.get("finalizers") or [])
    if FINALIZER in finalizers:
        return claim
    body = copy.deepcopy(claim)
    body["metadata"]["finalizers"] = [*finalizers, FINALIZER]
    return dict(api.update(KIND, str(meta.get("namespace", "")), str(meta.get("name", "")), body))


def reserve_claim(
    api: Any,
    claim: Mapping[str, Any],
    allocation: Mapping[str, Any] | None,
    consumer: JSON,
    now: Callable[[], float] = time.time,
) -> JSON:
    """Write ``allocation`` (None: the claim was allocated already) and reserve the claim for ``consumer``."""
    meta = _meta(claim)
    ns, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid")
    current: JSON = dict(claim)
    for attempt in range(MAX_CONFLICT_RETRIES):
        try:
            if allocation is not None and (current.get("status") or {}).get("allocation") is None:
                current = _with_finalizer(api, current)
            body = _apply(current, allocation, consumer, rfc3339(now()))
            return dict(api.update_status(KIND, ns, name, body))
        except ApiError as e:
            if not e.is_conflict() or attempt == MAX_CONFLICT_RETRIES - 1:
                raise
            log.debug(
                "claim status conflict, retrying on a fresh copy", claim=f"{ns}/{name}", attempt=attempt + 1
            )
            current = dict(api.get(KIND, ns, name))
            if uid and _meta(current).get("uid") != uid:
                raise ClaimWriteError(f"claim {ns}/{name} was replaced (uid changed)") from None
    raise AssertionError("unreachable")


def deallocate_claim(api: Any, claim: Mapping[str, Any], consumer_uid: str = "") -> JSON:
    """Clear ``status.allocation`` of a claim nobody else reserves (PostFilter: unused, or reserved only for
    ``consumer_uid``, the pod being scheduled; its entry goes too); a 409 is returned to the caller: the
    claim changed, so the decision to deallocate has to be made again."""
    meta = _meta(claim)
    body = copy.deepcopy(dict(claim))
    status = body.setdefault("status", {})
    reserved = [
        r for r in status.get("reservedFor") or [] if not consumer_uid or r.get("uid") != consumer_uid
    ]
    status.pop("reservedFor", None)
    if reserved:
        raise ClaimWriteError(f"claim {meta.get('namespace', '')}/{meta.get('name', '')} is still in use")
    status.pop("allocation", None)
    status.pop("devices", None)
    return dict(api.update_status(KIND, str(meta.get("namespace", "")), str(meta.get("name", "")), body))


def unreserve_claim(api: Any, claim: Mapping[str, Any], consumer_uid: str) -> JSON | None:
    """Remove ``consumer_uid`` from ``status.reservedFor`` (Unreserve after a failed binding cycle), retried
    on conflict against a fresh copy. None when the claim is gone, was replaced, or no longer lists it."""
    meta = _meta(claim)
    ns, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid")
    current: JSON = dict(claim)
    for attempt in range(MAX_CONFLICT_RETRIES):
        if uid and _meta(current).get("uid") != uid:
            return None
        reserved = list((current.get("status") or {}).get("reservedFor") or [])
        keep = [r for r in reserved if r.get("uid") != consumer_uid]
        if len(keep) == len(reserved):
            return None
        body = copy.deepcopy(current)
        body["status"]["reservedFor"] = keep
        try:
            return dict(api.update_status(KIND, ns, name, body))
        except ApiError as e:
            if e.is_not_found():
                return None
            if not e.is_conflict() or attempt == MAX_CONFLICT_RETRIES - 1:
                raise
            current = dict(api.get(KIND, ns, name))
    raise AssertionError("unreachable")


class ClaimWriter:
    """The claim writes DynamicResources makes, through ``api`` (the daemon's Api): the plugin gets this
    object as ``handle.extra["claim_writer"]``."""

    def __init__(self, api: Any, now: Callable[[], float] = time.time) -> None:
        self.api = api
        self.now = now

    def reserve(self, claim: Mapping[str, Any], allocation: Mapping[str, Any] | None, consumer: JSON) -> JSON:
        return reserve_claim(self.api, claim, allocation, consumer, self.now)

    def deallocate(self, claim: Mapping[str, Any], consumer_uid: str = "") -> JSON:
        return deallocate_claim(self.api, claim, consumer_uid)

    def unreserve(self, claim: Mapping[str, Any], consumer_uid: str) -> JSON | None:
        return unreserve_claim(self.api, claim, consumer_uid)

    def create(self, claim: Mapping[str, Any]) -> JSON:
        """Create the claim for a pod's extended resources backed by DRA (kube clears name, uid and
        status first; the API server names it from ``generateName``)."""
        body = copy.deepcopy(dict(claim))
        meta = body.setdefault("metadata", {})
        for key in ("name", "uid", "resourceVersion"):
            meta.pop(key, None)
        body.pop("status", None)
        body.setdefault("apiVersion", "resource.k8s.io/v1")
        body.setdefault("kind", KIND)
        return dict(self.api.create(KIND, str(meta.get("namespace", "")), body))

    def delete(self, claim: Mapping[str, Any]) -> None:
        """kube's deleteClaim: drop its finalizer (retried on conflict), then delete; a claim already gone
        is fine."""
        delete_claim(self.api, claim)

    def set_pod_extended_resource_claim_status(
        self, namespace: str, name: str, status: Mapping[str, Any]
    ) -> None:
        """Write ``status.extendedResourceClaimStatus`` of the pod (a strategic-merge patch of pods/status)."""
        self.api.patch_pod_status(namespace, name, extended_resource_claim_status=status)


def delete_claim(api: Any, claim: Mapping[str, Any]) -> None:
    meta = _meta(claim)
    ns, name = str(meta.get("namespace", "")), str(meta.get("name", ""))
    current: JSON = dict(claim)
    for attempt in range(MAX_CONFLICT_RETRIES):
        finalizers = list(_meta(current).get("finalizers") or [])
        if FINALIZER not in finalizers:
            break
        body = copy.deepcopy(current)
        body["metadata"]["finalizers"] = [f for f in finalizers if f != FINALIZER]
        try:
            api.update(KIND, ns, name, body)
            break
        except ApiError as e:
            if e.is_not_found():
                return
            if not e.is_conflict() or attempt == MAX_CONFLICT_RETRIES - 1:
                raise
            current = dict(api.get(KIND, ns, name))
    try:
        api.delete(KIND, ns, name)
    except ApiError as e:
        if not e.is_not_found():
            raise
