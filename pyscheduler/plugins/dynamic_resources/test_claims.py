"""Resolving a pod's claims: direct names, templates via status.resourceClaimStatuses, kube's messages."""

from __future__ import annotations

from typing import Any

import pytest

from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.dynamic_resources.claims import ClaimLookupError, pod_claims


def pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> Pod:
    return Pod.from_dict(
        {
            "metadata": {"namespace": "ns", "name": "p", "uid": "pod-uid"},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
            "status": {"resourceClaimStatuses": statuses or []},
        }
    )


def claim(name: str, owner: str = "", deleting: bool = False) -> ResourceClaim:
    meta: dict[str, Any] = {"namespace": "ns", "name": name, "uid": f"u-{name}"}
    if owner:
        meta["ownerReferences"] = [{"kind": "Pod", "name": "p", "uid": owner, "controller": True}]
    if deleting:
        meta["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return ResourceClaim.from_dict({"metadata": meta, "spec": {"devices": {"requests": []}}})


def store(*claims: ResourceClaim) -> Any:
    by = {(c.meta.namespace, c.meta.name): c for c in claims}
    return lambda ns, name: by.get((ns, name))


def test_direct_and_template_claims_in_spec_order() -> None:
    p = pod(
        [{"name": "a", "resourceClaimName": "shared"}, {"name": "b", "resourceClaimTemplateName": "t"}],
        [{"name": "b", "resourceClaimName": "p-b-x"}],
    )
    got = pod_claims(p, store(claim("shared"), claim("p-b-x", owner="pod-uid")))
    assert [c.meta.name for c in got] == ["shared", "p-b-x"]


@pytest.mark.parametrize(
    ("claims", "statuses", "existing", "message"),
    [
        (
            [{"name": "b", "resourceClaimTemplateName": "t"}],
            [],
            [],
            'pod "ns/p": ResourceClaim not created yet',
        ),
        (
            [{"name": "a", "resourceClaimName": "gone"}],
            [],
            [],
            'resourceclaim.resource.k8s.io "gone" not found',
        ),
        (
            [{"name": "a", "resourceClaimName": "c"}],
            [],
            [claim("c", deleting=True)],
            'resourceclaim "c" is being deleted',
        ),
        (
            [{"name": "b", "resourceClaimTemplateName": "t"}],
            [{"name": "b", "resourceClaimName": "c"}],
            [claim("c", owner="someone-else")],
            "ResourceClaim ns/c was not created for Pod ns/p (Pod is not owner)",
        ),
        ([{"name": "x"}], [], [], 'spec.resourceClaim "x": none of the supported fields are set'),
    ],
)
def test_pod_waits_with_kubes_message(
    claims: list[dict[str, Any]], statuses: list[dict[str, Any]], existing: list[ResourceClaim], message: str
) -> None:
    with pytest.raises(ClaimLookupError) as e:
        pod_claims(pod(claims, statuses), store(*existing))
    assert message in str(e.value)


def test_template_entry_without_claim_name_needs_no_claim() -> None:
    p = pod([{"name": "b", "resourceClaimTemplateName": "t"}], [{"name": "b"}])
    assert pod_claims(p, store()) == []
