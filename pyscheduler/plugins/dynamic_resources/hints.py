"""DynamicResources' cluster events and queueing hints (kube 1.36, queueing hints on).

- Node Add / UpdateNodeLabel / UpdateNodeAllocatable: a slice's node selector may match now (no hint).
- ResourceClaim Add / Update (``is_schedulable_after_claim_change``): skip while one of the pod's claims
  is still missing; queue when any claim got deallocated (its devices are free again); skip a claim the pod
  does not use; queue when one of the pod's claims was created, or its status changed; skip otherwise
  (e.g. a driver added a finalizer).
- DeviceClass Add / Update, ResourceSlice Add / Update: new or changed devices and classes (no hint).

kube also registers Pod/UpdatePodGeneratedResourceClaim (the resourceclaim controller wrote the claim's
name into the pod's status). Here a pod waiting for that is held by PreEnqueue, and the queue runs
PreEnqueue again on every update of a held pod, which covers the same change.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any

from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.events import (
    Action,
    ClusterEvent,
    ClusterEventWithHint,
    HintIndex,
    QueueingHint,
    Resource,
)
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.dynamic_resources.claims import ClaimLookupError, pod_claims
from pyscheduler.plugins.dynamic_resources.common import log
from pyscheduler.plugins.dynamic_resources.plugin_base import PluginBase


class Hints(PluginBase):
    def events_to_register(self) -> Sequence[ClusterEventWithHint]:
        add_update = Action.ADD | Action.UPDATE
        return [
            ClusterEventWithHint(
                ClusterEvent(
                    Resource.NODE, Action.ADD | Action.UPDATE_NODE_LABEL | Action.UPDATE_NODE_ALLOCATABLE
                )
            ),
            ClusterEventWithHint(
                ClusterEvent(Resource.RESOURCE_CLAIM, add_update),
                self.is_schedulable_after_claim_change,
                CLAIM_INDEX,
            ),
            ClusterEventWithHint(ClusterEvent(Resource.DEVICE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(Resource.RESOURCE_SLICE, add_update)),
        ]

    def is_schedulable_after_claim_change(self, pod: Pod, old: Any, new: Any) -> QueueingHint:
        if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
            return QueueingHint.QUEUE  # not a claim: be safe, as kube is on a conversion error
        deallocated = old is not None and old.allocated and not new.allocated
        if not deallocated and not _may_name(pod, new):
            # kube's answer without looking the pod's claims up: a claim the pod cannot be using is
            # skipped whether those lookups succeed (not used) or fail (not schedulable yet). Every claim
            # event asks every pod waiting for its own claim: this keeps that loop cheap.
            return QueueingHint.SKIP
        try:
            uses = any(c.meta.uid == new.meta.uid for c in pod_claims(pod, self.deps.claims.get))
        except ClaimLookupError:
            return QueueingHint.SKIP
        if deallocated:
            log.debug("claim deallocated, queueing", pod=pod.key, claim=new.key)
            return QueueingHint.QUEUE
        if not uses:
            return QueueingHint.SKIP
        if old is None:
            return QueueingHint.QUEUE
        if (old.raw.get("status") or {}) == (new.raw.get("status") or {}):
            return QueueingHint.SKIP
        return QueueingHint.QUEUE


def _may_name(pod: Pod, claim: ResourceClaim) -> bool:
    """Whether ``claim`` may be one of the pod's claims: same namespace and one of the names the pod's
    claims have (``claim_keys``)."""
    return (claim.meta.namespace, claim.meta.name) in claim_keys(pod)


def claim_keys(pod: Pod) -> list[tuple[str, str]]:
    """(namespace, name) of each claim the pod names: ``resourceClaimName``, or for a template the name
    the resourceclaim controller wrote into the pod's status. Stops at a template whose claim is not
    named yet: the pod's claim lookups fail then whatever the other names, so kube's hint skips every
    claim that is not being deallocated."""
    ns = pod.namespace
    out: list[tuple[str, str]] = []
    for pc in pod.resource_claims:
        if pc.get("resourceClaimName"):
            out.append((ns, pc["resourceClaimName"]))
            continue
        for st in pod.resource_claim_statuses:
            if st.get("name") == pc.get("name"):
                if st.get("resourceClaimName"):
                    out.append((ns, st["resourceClaimName"]))
                break  # a status without a name: the template needed no claim
        else:
            break  # not created yet: pod_claims would fail, the hint skips
    return out


def _claim_event_keys(old: Any, new: Any) -> list[Hashable] | None:
    """The key of the claim an add/update is about; None (every pod waiting may be concerned) when the
    hint would queue without looking at the pod's names: not a claim, or the claim was deallocated."""
    if not isinstance(new, ResourceClaim) or (old is not None and not isinstance(old, ResourceClaim)):
        return None
    if old is not None and old.allocated and not new.allocated:
        return None
    return [(new.meta.namespace, new.meta.name)]


# The claim hint's index: a claim event asks only the waiting pods that name that claim (the queue's
# HintIndex; is_schedulable_after_claim_change skips every other pod unless the claim was deallocated).
CLAIM_INDEX = HintIndex(pod_keys=claim_keys, event_keys=_claim_event_keys)
