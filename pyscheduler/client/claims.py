"""ResourceClaim status writes for DynamicResources' PreBind (and PostFilter's deallocation).

kube-scheduler's PreBind (dynamicresources.bindClaim) puts ``status.allocation`` (when the scheduler
allocated the claim) and adds the pod to ``status.reservedFor`` with one status update, retried on
conflict against a fresh copy. Here ``reserve_claim`` does the same: it starts from the copy the scheduler
has (its resourceVersion makes a concurrent change a 409), and after a 409 re-reads the claim and
re-applies the change if it still makes sense: the claim must be the same object (uid), and it must not
have been allocated differently meanwhile (then the scheduler's decision is stale and the error is
returned, as kube does: "claim got allocated elsewhere in the meantime"). The returned JSON is what the
caller assumes in the ClaimTracker.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import structlog

from pyscheduler.client.api import ApiError

log = structlog.get_logger("pyscheduler.client.claims")

JSON = dict[str, Any]
KIND = "ResourceClaim"
MAX_CONFLICT_RETRIES = 5  # client-go's retry.DefaultRetry makes 5 attempts


class ClaimWriteError(Exception):
    pass


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    meta = obj.get("metadata")
    return meta if isinstance(meta, Mapping) else {}


def consumer_ref(pod_name: str, pod_uid: str) -> JSON:
    return {"resource": "pods", "name": pod_name, "uid": pod_uid}


def _apply(claim: JSON, allocation: Mapping[str, Any] | None, consumer: JSON) -> JSON:
    out = copy.deepcopy(claim)
    status = out.setdefault("status", {})
    if allocation is not None:
        current = status.get("allocation")
        if current is not None and current != allocation:
            ns, name = _meta(claim).get("namespace", ""), _meta(claim).get("name", "")
            raise ClaimWriteError(f"claim {ns}/{name} got allocated elsewhere in the meantime")
        status["allocation"] = copy.deepcopy(dict(allocation))
    reserved = status.setdefault("reservedFor", [])
    if not any(r.get("uid") == consumer["uid"] for r in reserved):
        reserved.append(consumer)
    return out


def reserve_claim(
    api: Any, claim: Mapping[str, Any], allocation: Mapping[str, Any] | None, consumer: JSON
) -> JSON:
    """Write ``allocation`` (None: the claim was allocated already) and reserve the claim for ``consumer``."""
    meta = _meta(claim)
    ns, name, uid = str(meta.get("namespace", "")), str(meta.get("name", "")), meta.get("uid")
    current: JSON = dict(claim)
    for attempt in range(MAX_CONFLICT_RETRIES):
        body = _apply(current, allocation, consumer)
        try:
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


def deallocate_claim(api: Any, claim: Mapping[str, Any]) -> JSON:
    """Clear ``status.allocation`` of a claim nobody reserves (PostFilter); a 409 is returned to the caller:
    the claim changed, so the decision to deallocate has to be made again."""
    meta = _meta(claim)
    body = copy.deepcopy(dict(claim))
    status = body.setdefault("status", {})
    if status.get("reservedFor"):
        raise ClaimWriteError(f"claim {meta.get('namespace', '')}/{meta.get('name', '')} is still in use")
    status.pop("allocation", None)
    return dict(api.update_status(KIND, str(meta.get("namespace", "")), str(meta.get("name", "")), body))
