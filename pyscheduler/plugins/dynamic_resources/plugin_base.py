"""The plugin's shared fields (handle, args, caches) and its reading of binding conditions, which Filter
(an allocated claim whose binding failed or timed out is "not available") and PreBind both need."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import datetime
from typing import Any

from pyscheduler.framework.dra import ResourceClaim, ResourceSlice
from pyscheduler.framework.interfaces import Handle
from pyscheduler.plugins.dynamic_resources.allocator import SelectorResults
from pyscheduler.plugins.dynamic_resources.args import DynamicResourcesArgs
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache
from pyscheduler.plugins.dynamic_resources.common import Deps, Resources
from pyscheduler.plugins.dynamic_resources.pools import SliceIndex, same_slices


class BindingFailed(Exception):
    """A device's binding failure condition is true (kube's ErrDeviceBindingFailed)."""


def parse_time(text: str) -> float | None:
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except (TypeError, ValueError):
        return None


def _condition_true(conditions: Any, kind: str) -> Mapping[str, Any] | None:
    for c in conditions or ():
        if isinstance(c, Mapping) and c.get("type") == kind and c.get("status") == "True":
            return c
    return None


def _gate(handle: Handle, name: str) -> bool:
    """A feature gate from ``handle.extra["feature_gates"]`` (name -> bool); on, 1.36's default, if absent."""
    extra = getattr(handle, "extra", None)
    gates = extra.get("feature_gates") if isinstance(extra, Mapping) else None
    return bool(gates.get(name, True)) if isinstance(gates, Mapping) else True


class ClaimWriteLocks:
    """One lock per claim (by uid) while PreBind threads write it, dropped when no thread holds or
    waits for it. Pods sharing a claim are bound by concurrent threads: each would start from the copy
    its cycle saw, so all but the first got a 409 and re-read the claim before writing again."""

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._locks: dict[str, tuple[threading.Lock, list[int]]] = {}

    @contextmanager
    def hold(self, uid: str) -> Iterator[None]:
        with self._guard:
            entry = self._locks.get(uid)
            if entry is None:
                entry = self._locks[uid] = (threading.Lock(), [0])
            entry[1][0] += 1
        try:
            with entry[0]:
                yield
        finally:
            with self._guard:
                entry[1][0] -= 1
                if not entry[1][0]:
                    del self._locks[uid]

    def __len__(self) -> int:
        with self._guard:
            return len(self._locks)


class PluginBase:
    name = "DynamicResources"

    def __init__(self, args: DynamicResourcesArgs, handle: Handle, deps: Deps) -> None:
        self.args = args
        self.handle = handle
        self.deps = deps
        self.resources = Resources()
        self.cel = SelectorCache()
        # kept across cycles: selector verdicts per device version, and the slice index (with each node's
        # pools) for as long as no slice changes
        self.selector_results = SelectorResults()
        self._slice_index: SliceIndex | None = None
        self.filter_timeout = args.filter_timeout_seconds
        self.binding_timeout = args.binding_timeout_seconds
        self.extended_resources = _gate(handle, "DRAExtendedResource")
        # PreBind's status writes, one claim at a time (binding.Binding.claim_write)
        self.claim_writes = ClaimWriteLocks()

    def slice_index(self, slices: list[ResourceSlice]) -> SliceIndex:
        """The SliceIndex of ``slices``: the last one while the slices are the same parsed objects."""
        index = self._slice_index
        if index is None or not same_slices(index, slices):
            index = self._slice_index = SliceIndex(slices)
        return index

    # ---------------------------------------------------------------------------------- clocks
    def filter_deadline(self) -> Callable[[], bool] | None:
        """A per-node deadline for the allocator; None when filterTimeout is 0 (no limit)."""
        if self.filter_timeout <= 0:
            return None
        end = self.handle.now() + self.filter_timeout
        now = self.handle.now
        return lambda: now() >= end

    def wall(self) -> float:
        clock = getattr(self.handle, "clock", None)
        wall = getattr(clock, "wall", None)
        return float(wall()) if callable(wall) else 0.0

    # ---------------------------------------------------------------------------------- binding conditions
    @staticmethod
    def claim_ready_for_binding(claim: ResourceClaim) -> bool:
        """kube's isClaimReadyForBinding: every binding condition of every allocated device is true in
        status.devices; BindingFailed when a binding failure condition is true."""
        allocation = claim.allocation
        if allocation is None:
            return False
        statuses = (claim.raw.get("status") or {}).get("devices") or ()
        for res in (allocation.get("devices") or {}).get("results") or ():
            conds = res.get("bindingConditions") or ()
            if not conds:
                continue
            status = next(
                (
                    d
                    for d in statuses
                    if (d.get("driver"), d.get("pool"), d.get("device"))
                    == (res.get("driver"), res.get("pool"), res.get("device"))
                ),
                None,
            )
            if status is None:
                return False
            for failure in res.get("bindingFailureConditions") or ():
                hit = _condition_true(status.get("conditions"), failure)
                if hit is not None:
                    raise BindingFailed(
                        f"device binding failed: claim={claim.meta.name}, reason={hit.get('reason', '')}, "
                        f'message="{hit.get("message", "")}"'
                    )
            for cond in conds:
                if _condition_true(status.get("conditions"), cond) is None:
                    return False
        return True

    def claim_timed_out(self, claim: ResourceClaim) -> bool:
        """kube's isClaimTimeout: a device with binding conditions, allocated longer than bindingTimeout ago."""
        allocation = claim.allocation
        if allocation is None or not allocation.get("allocationTimestamp"):
            return False
        at = parse_time(str(allocation["allocationTimestamp"]))
        if at is None:
            return False
        for res in (allocation.get("devices") or {}).get("results") or ():
            if res.get("bindingConditions") and at + self.binding_timeout < self.wall():
                return True
        return False

    def claim_binding_failed(self, claim: ResourceClaim) -> bool:
        """Filter's check of an allocated claim: its binding failed, or it is not ready and timed out."""
        try:
            ready = self.claim_ready_for_binding(claim)
        except BindingFailed:
            return True
        return not ready and self.claim_timed_out(claim)
