"""DynamicResources: Dynamic Resource Allocation (resource.k8s.io/v1) at kube-scheduler 1.36 semantics.

A pod lists ResourceClaims in ``spec.resourceClaims`` (by name, or from a ResourceClaimTemplate, whose
claim the resourceclaim controller creates and names in ``status.resourceClaimStatuses``). The plugin
allocates each unallocated claim's devices from the ResourceSlices of the chosen node, writes the
allocation and reserves the claim for the pod before the pod is bound.

Extension points (kube's order and words):

- PreEnqueue: every claim exists, is not being deleted, and a claim from a template is owned by the pod;
  else the pod is held ("ResourceClaim not created yet", ``resourceclaim.resource.k8s.io "c" not found``,
  ``resourceclaim "c" is being deleted``, "... (Pod is not owner)").
- PreFilter: a pod without claims skips Filter. An allocated claim that cannot take another consumer
  ("resourceclaim in use"), an allocation still in flight for another pod ("resource claim NS/NAME is in
  the process of being allocated") or a missing class ("request R: device class C does not exist") keep
  the pod unschedulable (UnschedulableAndUnresolvable). Otherwise the structured allocator is set up over
  the classes, the slices and every device already allocated (the claim cache, in-flight allocations
  included).
- Filter: an allocated claim must be usable on the node (its ``nodeSelector``; its binding conditions not
  failed or timed out), else "resourceclaim not available on the node"; the unallocated claims must all
  be allocatable from the devices the node can reach, else "cannot allocate all claims" (or "invalid
  resource pools were encountered"). A bad CEL selector is an Error. The search per node is limited by
  ``filterTimeout`` (an Error: "node N: timed out trying to allocate devices"). The framework calls it
  batched (``filter_nodes``); for a pod whose claims are all allocated PreFilter has worked out where
  they are usable (the node names of a by-name selector, whether binding conditions need asking), so
  each node is a set lookup and every rejection one shared Status.
- PostFilter (before DefaultPreemption): deallocates one allocated claim that was not available on some
  node and that no other pod uses ("deallocation of ResourceClaim completed"); else "still not
  schedulable", or "no new claims to deallocate" for a pod without claims.
- Score (weight 2 in the default profile): firstAvailable claims score higher where they get an earlier
  subrequest; NormalizeScore scales to [0, 100].
- Reserve / Unreserve / PreBind: see ``binding``.

Extended resources backed by DRA (DRAExtendedResource): see ``extended``; the pod's special claim is
allocated with its other claims, created in PreBind, deleted by Unreserve after a failed binding and by
PostFilter when an earlier cycle left one ("deletion of ResourceClaim completed"). The factory also
offers ``extended_scores.ExtendedScores`` in ``handle.extra`` (framework.dra.EXTENDED_SCORES_KEY): the
device counts by which NodeResourcesFit and BalancedAllocation score such resources;
``offer_extended_scores`` offers them when no profile has this plugin (``pyscheduler.app`` calls it
after building the profiles, as kube's shared DRA manager exists whatever the profiles).

Args (DynamicResourcesArgs): ``filterTimeout`` (default 10s, 0 = none), ``bindingTimeout`` (default 600s).

Needs ``handle.extra["claims"]`` (the claim assume cache) and, to write, ``handle.extra["claim_writer"]``;
``pyscheduler.app`` provides both and watches the resource.k8s.io kinds when a profile enables this plugin
(or, without it, when the cluster serves resource.k8s.io/v1: NodeResourcesFit then leaves DRA-backed
extended resources alone, as kube does, and scores them by the device counts).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pyscheduler.framework.dra import EXTENDED_SCORES_KEY
from pyscheduler.framework.interfaces import Handle
from pyscheduler.framework.registry import PluginSpec
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import Pod
from pyscheduler.plugins.dynamic_resources.args import DynamicResourcesArgs
from pyscheduler.plugins.dynamic_resources.binding import Binding
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache
from pyscheduler.plugins.dynamic_resources.common import (
    ERR_CANNOT_ALLOCATE,
    ERR_CLAIM_IN_USE,
    ERR_NOT_AVAILABLE,
    NAME,
    Deps,
    Resources,
)
from pyscheduler.plugins.dynamic_resources.extended_scores import ExtendedScores
from pyscheduler.plugins.dynamic_resources.filtering import Filtering
from pyscheduler.plugins.dynamic_resources.hints import Hints
from pyscheduler.plugins.dynamic_resources.scoring import Scoring

__all__ = [
    "ERR_CANNOT_ALLOCATE",
    "ERR_CLAIM_IN_USE",
    "ERR_NOT_AVAILABLE",
    "NAME",
    "PLUGIN",
    "DynamicResources",
    "DynamicResourcesArgs",
    "new",
    "offer_extended_scores",
]


class DynamicResources(Filtering, Scoring, Binding, Hints):
    name = NAME

    def sign_pod(self, pod: Pod) -> tuple[list[tuple[str, Any]], Status | None]:
        """Opportunistic batching (kube's SignPod): a pod with resource claims is refused (where it fits
        depends on the devices allocated so far); any other pod adds nothing to its signature."""
        if pod.resource_claims:
            return [], Status.unschedulable("pods with dra resource claims are not signable")
        return [], None


class _MissingClaimCache:
    """Stands in when the handle has no claim cache: every claim is missing, so a pod with claims stays
    pending with kube's "not found" message instead of the plugin failing."""

    def get(self, namespace: str, name: str) -> None:
        return None

    def owned_by(self, uid: str) -> list[Any]:
        return []

    def list(self) -> list[Any]:
        return []

    def allocated_devices(self) -> set[tuple[str, str, str]]:
        return set()

    def allocated_capacity(self) -> dict[tuple[str, str, str], dict[str, Any]]:
        return {}

    def signal_pending_allocation(self, claim: Any) -> None:
        pass

    def pending_allocation(self, uid: str) -> None:
        return None

    def remove_pending_allocation(self, uid: str, force: bool = False) -> bool:
        return False

    def assume(self, claim: Any) -> None:
        pass

    def restore(self, key: str) -> None:
        pass


def new(args: DynamicResourcesArgs | None, handle: Handle) -> DynamicResources:
    extra = getattr(handle, "extra", None)
    extra = extra if isinstance(extra, dict) else {}
    claims = extra.get("claims")
    deps = Deps(
        claims=claims if claims is not None else _MissingClaimCache(), writer=extra.get("claim_writer")
    )
    plugin = DynamicResources(args or DynamicResourcesArgs(), handle, deps)
    if plugin.extended_resources and isinstance(getattr(handle, "extra", None), dict):
        # NodeResourcesFit and BalancedAllocation score DRA-backed extended resources through this
        handle.extra.setdefault(  # type: ignore[attr-defined]
            EXTENDED_SCORES_KEY, ExtendedScores(handle, deps.claims, plugin.resources, plugin.cel)
        )
    return plugin


def offer_extended_scores(handle: Handle) -> None:
    """Offer the device counts NodeResourcesFit and BalancedAllocation score DRA-backed extended resources
    by (``handle.extra[EXTENDED_SCORES_KEY]``) also when no profile has DynamicResources: kube-scheduler's
    framework hands those plugins its shared DRA manager whatever the profiles (pkg/scheduler/scheduler.go
    makes it with the DynamicResourceAllocation gate, locked on). The service then has its own caches;
    with DynamicResources in a profile its factory offered the plugin's first and this does nothing."""
    extra = getattr(handle, "extra", None)
    if not isinstance(extra, dict) or EXTENDED_SCORES_KEY in extra:
        return
    gates = extra.get("feature_gates")
    if isinstance(gates, Mapping) and not gates.get("DRAExtendedResource", True):
        return
    claims = extra.get("claims")
    extra[EXTENDED_SCORES_KEY] = ExtendedScores(
        handle, claims if claims is not None else _MissingClaimCache(), Resources(), SelectorCache()
    )


PLUGIN = PluginSpec(
    NAME,
    new,
    DynamicResourcesArgs,
    "allocates devices for ResourceClaims (DRA, resource.k8s.io/v1) from the node's ResourceSlices",
)
