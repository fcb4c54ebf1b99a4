"""ResourceClaims for DynamicResources: an assume cache, in-flight allocations and the allocated devices.

The behaviour follows kube-scheduler's claim tracker (dynamicresources/dra_manager.go, allocateddevices.go,
util/assumecache):

- ``ClaimTracker.on_add/on_update/on_delete`` take the watch's claims. A watched claim replaces the
  stored one only when its resourceVersion is *newer* than the stored one's (the stored one may be an
  assumed copy), so a stale watch event never undoes an allocation the scheduler already made.
- ``assume(claim)`` stores a copy the scheduler wrote (after its status update returned), at the same or
  a newer resourceVersion; ``restore(key)`` goes back to the last watched copy.
- ``signal_pending_allocation(claim)`` records an allocation made in Reserve before any API call: from
  then on ``allocated_devices()`` counts its devices, so the next scheduling cycle cannot hand them out
  again, also under a burst of pods. ``remove_pending_allocation`` (Unreserve, or once PreBind's write
  is assumed) drops it; a claim shared by several pods stays in flight until its last sharer is gone.
- Devices allocated with adminAccess do not count as allocated (kube: admin access does not consume).
- A share of a device that allows multiple allocations (a result with a shareID) does not take the device
  either: ``allocated_capacity()`` adds up what the shares consume instead (DRAConsumableCapacity).

Thread-safe: the watch threads write, the scheduling and binding threads read and assume.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

import structlog

from pyscheduler.framework.dra import ResourceClaim

log = structlog.get_logger("pyscheduler.backend.claims")

DeviceID = tuple[str, str, str]  # (driver, pool, device)


class AssumeError(Exception):
    pass


@dataclass(slots=True)
class _Entry:
    latest: ResourceClaim  # what readers see: the assumed copy, or the watched one
    api: ResourceClaim  # the last watched copy


@dataclass(slots=True)
class _InFlight:
    claim: ResourceClaim
    sharers: int


def _devices(claim: ResourceClaim) -> list[DeviceID]:
    """Devices the claim holds exclusively (not with admin access, not a share of a device)."""
    return [r.device_id for r in claim.results if not r.admin_access and not r.share_id]


def _add_shares(claim: ResourceClaim, into: dict[DeviceID, dict[str, Fraction]]) -> None:
    for r in claim.results:
        if r.admin_access or not r.share_id:
            continue
        per = into.setdefault(r.device_id, {})
        for name, v in r.consumed_capacity.items():
            per[name] = per.get(name, Fraction(0)) + v


def _controller_uids(claim: ResourceClaim | None) -> tuple[str, ...]:
    """The uids of the claim's controller ownerReferences (a pod's special claim has its pod's)."""
    if claim is None:
        return ()
    refs = (claim.raw.get("metadata") or {}).get("ownerReferences") or ()
    return tuple(
        str(o["uid"]) for o in refs if isinstance(o, Mapping) and o.get("controller") and o.get("uid")
    )


def _has_shares(claim: ResourceClaim) -> bool:
    """Whether ``_add_shares`` would count anything of the claim."""
    return any(r.share_id and not r.admin_access for r in claim.results)


class ClaimTracker:
    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._claims: dict[str, _Entry] = {}
        self._in_flight: dict[str, _InFlight] = {}  # by claim uid
        # device -> number of stored claims (latest copies) allocating it; >1 never happens in a
        # consistent cluster, but counting keeps removal exact if it does.
        self._allocated: dict[DeviceID, int] = {}
        # the stored claims (latest copies) holding a share of a device, by key: allocated_capacity runs
        # at every DRA PreFilter and need not look at the thousands of claims that hold none
        self._sharing: dict[str, ResourceClaim] = {}
        # controller owner uid -> keys of the stored claims it controls: a pod's special claim for its
        # DRA-backed extended resources is found without walking every claim (owned_by)
        self._by_owner: dict[str, set[str]] = {}
        self._listeners: list[Callable[[ResourceClaim | None, ResourceClaim | None], None]] = []

    # ---------------------------------------------------------------------------------- listeners
    def add_listener(self, fn: Callable[[ResourceClaim | None, ResourceClaim | None], None]) -> None:
        """``fn(old, new)`` after every change readers can see (watch events, assume, restore)."""
        self._listeners.append(fn)

    def _emit(self, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        for fn in self._listeners:
            try:
                fn(old, new)
            except Exception:
                log.exception("claim listener failed")

    # ---------------------------------------------------------------------------------- bookkeeping
    def _count(self, claim: ResourceClaim | None, delta: int) -> None:
        if claim is None:
            return
        for d in _devices(claim):
            n = self._allocated.get(d, 0) + delta
            if n > 0:
                self._allocated[d] = n
            else:
                self._allocated.pop(d, None)

    def _set_latest(
        self, entry: _Entry | None, key: str, new: ResourceClaim, api: ResourceClaim
    ) -> ResourceClaim | None:
        old = entry.latest if entry else None
        self._count(old, -1)
        self._count(new, +1)
        self._own(key, old, new)
        self._claims[key] = _Entry(latest=new, api=api)
        if _has_shares(new):
            self._sharing[key] = new
        elif old is not None:
            self._sharing.pop(key, None)
        return old

    def _own(self, key: str, old: ResourceClaim | None, new: ResourceClaim | None) -> None:
        before, after = _controller_uids(old), _controller_uids(new)
        if before == after:
            return
        for uid in before:
            keys = self._by_owner.get(uid)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_owner[uid]
        for uid in after:
            self._by_owner.setdefault(uid, set()).add(key)

    # ---------------------------------------------------------------------------------- watch
    def on_add(self, claim: ResourceClaim) -> None:
        self._upsert(claim)

    def on_update(self, old: ResourceClaim, new: ResourceClaim) -> None:
        self._upsert(new)

    def _upsert(self, claim: ResourceClaim) -> None:
        with self._lock:
            entry = self._claims.get(claim.key)
            if entry is not None and claim.meta.resource_version <= entry.latest.meta.resource_version:
                log.debug(
                    "claim event not newer than the stored copy, skipped",
                    claim=claim.key,
                    version=claim.meta.resource_version,
                    stored=entry.latest.meta.resource_version,
                )
                return
            old = self._set_latest(entry, claim.key, claim, claim)
        self._emit(old, claim)

    def on_delete(self, claim: ResourceClaim) -> None:
        with self._lock:
            entry = self._claims.pop(claim.key, None)
            if entry is None:
                return
            self._count(entry.latest, -1)
            self._own(claim.key, entry.latest, None)
            self._sharing.pop(claim.key, None)
        self._emit(entry.latest, None)

    # ---------------------------------------------------------------------------------- assume
    def assume(self, claim: ResourceClaim) -> None:
        """Store the scheduler's own copy (e.g. the claim its status write returned)."""
        with self._lock:
            entry = self._claims.get(claim.key)
            if entry is None:
                raise AssumeError(f"ResourceClaim {claim.key!r} not found")
            stored = entry.latest.meta.resource_version
            if claim.meta.resource_version < stored:
                raise AssumeError(
                    f"ResourceClaim {claim.key!r} is out of sync (stored: {stored}, assume: {claim.meta.resource_version})"
                )
            old = self._set_latest(entry, claim.key, claim, entry.api)
        self._emit(old, claim)

    def restore(self, key: str) -> None:
        with self._lock:
            entry = self._claims.get(key)
            if entry is None or entry.latest is entry.api:
                return
            old = self._set_latest(entry, key, entry.api, entry.api)
        self._emit(old, entry.api)

    # ---------------------------------------------------------------------------------- in flight
    def signal_pending_allocation(self, claim: ResourceClaim) -> None:
        """Reserve allocated ``claim`` (a copy with status.allocation): its devices are taken from now on."""
        with self._lock:
            f = self._in_flight.get(claim.meta.uid)
            if f is not None:
                f.sharers += 1
                return
            self._in_flight[claim.meta.uid] = _InFlight(claim, 1)

    def pending_allocation(self, uid: str) -> ResourceClaim | None:
        with self._lock:
            f = self._in_flight.get(uid)
            return f.claim if f else None

    def remove_pending_allocation(self, uid: str, force: bool = False) -> bool:
        with self._lock:
            f = self._in_flight.get(uid)
            if f is None:
                return False
            if force or f.sharers == 1:
                del self._in_flight[uid]
                return True
            f.sharers -= 1
            return False

    # ---------------------------------------------------------------------------------- reads
    def get(self, namespace: str, name: str) -> ResourceClaim | None:
        with self._lock:
            e = self._claims.get(f"{namespace}/{name}")
            return e.latest if e else None

    def owned_by(self, uid: str) -> list[ResourceClaim]:
        """The stored claims (latest copies) whose controller ownerReference has this uid."""
        with self._lock:
            return [self._claims[k].latest for k in self._by_owner.get(uid, ())]

    def list(self) -> list[ResourceClaim]:
        with self._lock:
            return [e.latest for e in self._claims.values()]

    def allocated_capacity(self) -> dict[DeviceID, dict[str, Fraction]]:
        """DRAConsumableCapacity: per device shared by several claims, the capacity their shares consume
        (stored claims and in-flight allocations; kube's AggregatedCapacity)."""
        out: dict[DeviceID, dict[str, Fraction]] = {}
        with self._lock:
            for claim in self._sharing.values():
                _add_shares(claim, out)
            for f in self._in_flight.values():
                if self._claims.get(f.claim.key) is None or not self._claims[f.claim.key].latest.allocated:
                    _add_shares(f.claim, out)
        return out

    def allocated_devices(self) -> set[DeviceID]:
        """Devices allocated by stored claims plus those of in-flight allocations (one consistent view)."""
        with self._lock:
            out = set(self._allocated)
            for f in self._in_flight.values():
                out.update(_devices(f.claim))
            return out
