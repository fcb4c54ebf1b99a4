"""A pod's ResourceClaims, resolved as kube's DynamicResources plugin does (foreachPodResourceClaim and
k8s.io/dynamic-resource-allocation/resourceclaim.Name / IsForPod).

- ``resourceClaimName``: that claim, as is.
- ``resourceClaimTemplateName``: the claim named in ``status.resourceClaimStatuses`` for this entry; until
  the resourceclaim controller has created it the pod waits ("ResourceClaim not created yet"); a status
  entry with no claim name means the pod does not need a claim for this entry (skipped). A claim made from
  a template must be owned by the pod.
- A claim that does not exist, or is being deleted, keeps the pod waiting with kube's message.

``ClaimLookupError`` carries that message; PreEnqueue/PreFilter turn it into an
UnschedulableAndUnresolvable status, and the queueing hints requeue the pod on claim events.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.types import Pod

ERR_CLAIM_NOT_FOUND = "ResourceClaim not created yet"
ERR_API_UNSUPPORTED = "none of the supported fields are set"


class ClaimLookupError(Exception):
    pass


def claim_name(pod: Pod, pod_claim: dict[str, Any]) -> tuple[str | None, bool]:
    """(claim name or None to skip, must check owner)."""
    if pod_claim.get("resourceClaimName"):
        return str(pod_claim["resourceClaimName"]), False
    if pod_claim.get("resourceClaimTemplateName"):
        for st in pod.resource_claim_statuses:
            if st.get("name") == pod_claim.get("name"):
                name = st.get("resourceClaimName")
                return (str(name) if name else None), True
        raise ClaimLookupError(f'pod "{pod.namespace}/{pod.name}": {ERR_CLAIM_NOT_FOUND}')
    raise ClaimLookupError(
        f'pod "{pod.namespace}/{pod.name}", spec.resourceClaim "{pod_claim.get("name", "")}": {ERR_API_UNSUPPORTED}'
    )


def pod_claims(pod: Pod, get: Callable[[str, str], ResourceClaim | None]) -> list[ResourceClaim]:
    """The pod's claims in spec order; ClaimLookupError (kube's message) when one is not usable yet."""
    out = []
    for pc in pod.resource_claims:
        name, check_owner = claim_name(pod, pc)
        if name is None:
            continue
        claim = get(pod.namespace, name)
        if claim is None:
            raise ClaimLookupError(f'resourceclaim.resource.k8s.io "{name}" not found')
        if claim.meta.deleting:
            raise ClaimLookupError(f'resourceclaim "{name}" is being deleted')
        if check_owner:
            owners = (claim.raw.get("metadata") or {}).get("ownerReferences") or ()
            if not any(o.get("uid") == pod.uid and o.get("controller") for o in owners):
                raise ClaimLookupError(
                    f"ResourceClaim {claim.meta.namespace}/{name} was not created for Pod "
                    f"{pod.namespace}/{pod.name} (Pod is not owner)"
                )
        out.append(claim)
    return out
