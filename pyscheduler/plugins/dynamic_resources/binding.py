"""Reserve, Unreserve and PreBind of DynamicResources (kube 1.36 dynamicresources.go).

- Reserve takes the allocation Filter computed for the chosen node and signals it as in flight in the
  claim cache: from then on every later cycle counts its devices as taken, long before PreBind's write
  returns, so a burst of pods never gets the same device twice.
- Unreserve drops the in-flight allocation (the last sharer restores the cache's copy) and, when PreBind
  already reserved the claim for the pod, removes the pod from ``status.reservedFor`` again.
- PreBind writes ``status.allocation`` (with kube's finalizer first) and adds the pod to
  ``status.reservedFor`` (retried on conflict by the claim writer), assumes the stored claim in the cache
  and only then drops the in-flight allocation. With binding conditions on a device it then waits, up to
  ``bindingTimeout``, for them to become true (kube polls every 5 s). Binding threads write one claim
  one at a time, each from the newest copy in the claim cache (pods sharing a claim would otherwise
  start from the copies their cycles saw and all but the first get a 409 and write again).
"""

from __future__ import annotations

import threading
from typing import Any

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import MalformedObject, Pod
from pyscheduler.plugins.dynamic_resources.common import (
    ERR_STATE_NOT_FOUND,
    NAME,
    STATE_KEY,
    State,
    log,
    reserved_for_pod,
    with_allocation,
)
from pyscheduler.plugins.dynamic_resources.plugin_base import BindingFailed, PluginBase

EXTENDED_CLAIM_CACHE_TIMEOUT = 120.0  # kube's AssumeExtendedResourceTimeoutDefaultSeconds
EXTENDED_CLAIM_CACHE_POLL = 0.05
BINDING_POLL_SECONDS = 5.0  # kube's PreBind polls binding conditions every 5 s


class BindError(Exception):
    pass


def _sleep(seconds: float) -> None:
    """Block the binding thread (PreBind runs off the scheduling thread, as kube's does)."""
    threading.Event().wait(seconds)


class Binding(PluginBase):
    sleep = staticmethod(_sleep)  # a test replaces it to drive time

    # ---------------------------------------------------------------------------------- Reserve
    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            if not pod.resource_claims:  # nothing to reserve (e.g. a pod group's re-assume, no PreFilter)
                return None
            return Status.as_error(ERR_STATE_NOT_FOUND, plugin=NAME)
        self._reserve_extended(s, pod, node_name)
        todo = s.to_allocate()
        if not todo or s.allocator is None:
            return None
        allocations = s.node_allocations.get(node_name)
        if not allocations:
            return Status.as_error("claim allocation not found for node", plugin=NAME)
        if len(allocations) != len(todo):
            return Status.as_error(
                f"internal error, have {len(allocations)} allocations, {len(todo)} claims to allocate, "
                f"want {len(todo)} claims",
                plugin=NAME,
            )
        for i, allocation in zip(todo, allocations, strict=True):
            s.infos[i].allocation = allocation
            self.deps.claims.signal_pending_allocation(with_allocation(s.claims[i], allocation))
            log.debug("reserved devices in flight", pod=pod.key, claim=s.claims[i].key, node=node_name)
        return None

    def _reserve_extended(self, s: State, pod: Pod, node_name: str) -> None:
        """The special claim's devices on this node go in flight under its temporary uid."""
        if s.ext is None:
            return
        node_ext = s.ext.per_node.get(node_name)
        allocation = s.ext_allocations.get(node_name)
        if node_ext is None or allocation is None:
            return
        s.ext_allocation = allocation
        self.deps.claims.signal_pending_allocation(with_allocation(node_ext[0], allocation))
        log.debug("reserved devices in flight for extended resources", pod=pod.key, node=node_name)

    # ---------------------------------------------------------------------------------- Unreserve
    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return
        self._unreserve_extended(s, pod)
        if not s.claims:
            return
        for claim in s.claims:
            if self.deps.claims.remove_pending_allocation(claim.meta.uid):
                self.deps.claims.restore(claim.key)
            if claim.allocated and reserved_for_pod(pod, claim) and self.deps.writer is not None:
                try:
                    self.deps.writer.unreserve(claim.raw, pod.uid)
                except Exception:  # the next attempt gets here again; kube logs and goes on too
                    log.exception("unreserve claim failed", pod=pod.key, claim=claim.key)

    def _unreserve_extended(self, s: State, pod: Pod) -> None:
        if s.ext is None:
            return
        self.deps.claims.remove_pending_allocation(s.ext.claim.meta.uid, force=True)
        created = s.ext.created
        if created is None or self.deps.writer is None:
            return
        try:
            self.deps.writer.delete(created)
        except Exception:  # kube logs and goes on too
            log.exception("deleting the extended resource claim failed", pod=pod.key)
        s.ext.created = None

    # ---------------------------------------------------------------------------------- PreBind
    def pre_bind(self, state: CycleState, pod: Pod, node_name: str) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            if not pod.resource_claims:
                return None
            return Status.as_error(ERR_STATE_NOT_FOUND, plugin=NAME)
        for i, claim in enumerate(s.claims):
            if reserved_for_pod(pod, claim):
                continue
            try:
                s.claims[i] = self._bind_claim(s, i, pod)
            except Exception as e:  # the API boundary: the binding cycle fails and Unreserve runs
                return Status.as_error(e, plugin=NAME)
        if s.ext is not None and s.ext_allocation is not None:
            try:
                self._bind_extended(s, pod, node_name)
            except Exception as e:  # the API boundary: the binding cycle fails and Unreserve runs
                return Status.as_error(e, plugin=NAME)
        if not s.claims:
            return None
        return self._wait_for_binding_conditions(s, pod, node_name)

    def _bind_extended(self, s: State, pod: Pod, node_name: str) -> None:
        """kube's bindClaim for the special claim: create it, write its allocation and reservation, wait
        (up to 120 s) until the watch has it so its devices never look free, and write the pod's
        ``status.extendedResourceClaimStatus``."""
        assert s.ext is not None
        writer = self.deps.writer
        if writer is None:
            raise BindError("no API client to write ResourceClaims with")
        node_ext = s.ext.per_node.get(node_name)
        if node_ext is None:
            raise BindError(f"extended resource claim not found for node {node_name}")
        claim, mappings = node_ext
        temp_uid = s.ext.claim.meta.uid
        record = getattr(self.handle_extra("metrics"), "resourceclaim_create", None)
        try:
            created = writer.create(claim.raw)
        except Exception:
            if callable(record):
                record("failure")
            raise
        if callable(record):
            record("success")
        s.ext.created = created
        stored = writer.reserve(
            created, s.ext_allocation, {"resource": "pods", "name": pod.name, "uid": pod.uid}
        )
        s.ext.created = stored
        name = str((stored.get("metadata") or {}).get("name", ""))
        self._wait_in_cache(pod.namespace, name)
        self.deps.claims.remove_pending_allocation(temp_uid, force=True)
        writer.set_pod_extended_resource_claim_status(
            pod.namespace, pod.name, {"requestMappings": mappings, "resourceClaimName": name}
        )

    def _wait_in_cache(self, namespace: str, name: str) -> None:
        deadline = self.handle.now() + EXTENDED_CLAIM_CACHE_TIMEOUT
        while self.handle.now() < deadline:
            seen = self.deps.claims.get(namespace, name)
            if seen is not None and seen.allocated:
                return
            self.sleep(EXTENDED_CLAIM_CACHE_POLL)
        log.debug("extended resource claim not in the cache yet", claim=f"{namespace}/{name}")

    def _bind_claim(self, s: State, i: int, pod: Pod) -> ResourceClaim:
        claim = s.claims[i]
        allocation = s.infos[i].allocation
        writer = self.deps.writer
        force = False
        try:
            if writer is None:
                raise BindError("no API client to write ResourceClaims with")
            consumer = {"resource": "pods", "name": pod.name, "uid": pod.uid}
            with self.claim_writes.hold(claim.meta.uid):
                stored = writer.reserve(self._latest(claim).raw, allocation, consumer)
            try:
                updated = ResourceClaim.from_dict(stored)
            except MalformedObject as e:
                raise BindError(f"claim {claim.key} as stored cannot be read: {e}") from None
            try:
                self.deps.claims.assume(updated)
                force = True  # the cache now holds the allocation: it need not stay in flight
            except Exception as e:
                log.debug("claim not stored in assume cache", claim=claim.key, error=str(e))
            return updated
        finally:
            if allocation is not None:
                self.deps.claims.remove_pending_allocation(claim.meta.uid, force=force)

    def _latest(self, claim: ResourceClaim) -> ResourceClaim:
        """The newest copy of ``claim`` the cache has (another pod's PreBind may have written and assumed
        it since this pod's PreFilter): the write starts from it, not from a copy the API server would
        answer with 409. The writer still re-reads and retries on a conflict, so a copy that is not the
        server's latest after all only costs that round trip."""
        latest = self.deps.claims.get(claim.meta.namespace, claim.meta.name)
        return latest if latest is not None and latest.meta.uid == claim.meta.uid else claim

    def _wait_for_binding_conditions(self, s: State, pod: Pod, node_name: str) -> Status | None:
        if not any(
            r.get("bindingConditions")
            for c in s.claims
            if c.allocation is not None
            for r in (c.allocation.get("devices") or {}).get("results") or ()
        ):
            return None
        recorder = self.handle_extra("recorder")
        if recorder is not None:
            try:
                recorder.event(
                    pod,
                    "Normal",
                    "BindingConditionsPending",
                    "Scheduling",
                    f"waiting for binding conditions for device on node {node_name}",
                )
            except Exception:
                log.exception("recording BindingConditionsPending failed", pod=pod.key)
        start = self.handle.now()
        st, label = self._poll_binding_conditions(s, start + self.binding_timeout)
        metrics = self.handle_extra("metrics")
        record = getattr(metrics, "dra_binding_conditions", None)
        if callable(record):
            waits: list[str] = []
            allocations: list[str] = []
            for c in s.claims:
                results = ((c.allocation or {}).get("devices") or {}).get("results") or ()
                waits.extend(str(r.get("driver", "")) for r in results)
                allocations.extend(str(r.get("driver", "")) for r in results if r.get("bindingConditions"))
            record(pod.scheduler_name, waits, allocations, label, self.handle.now() - start)
        return st

    def _poll_binding_conditions(self, s: State, deadline: float) -> tuple[Status | None, str]:
        """Every 5 s until the binding conditions hold: (the result, kube's metric status label)."""
        while True:
            try:
                if self._pod_ready_for_binding(s):
                    return None, "success"
            except BindingFailed as e:
                return Status.as_error(str(e), plugin=NAME), "failure"
            except BindError as e:
                label = "timeout" if str(e).startswith("device binding timeout") else "error"
                return Status.as_error(str(e), plugin=NAME), label
            left = deadline - self.handle.now()
            if left <= 0:
                return Status.as_error(
                    "device binding timeout: context deadline exceeded", plugin=NAME
                ), "timeout"
            self.sleep(min(BINDING_POLL_SECONDS, left))

    def _pod_ready_for_binding(self, s: State) -> bool:
        for i, claim in enumerate(s.claims):
            latest = self.deps.claims.get(claim.meta.namespace, claim.meta.name)
            if latest is None:
                raise BindError(f'resourceclaim.resource.k8s.io "{claim.meta.name}" not found')
            s.claims[i] = latest
            if not self.claim_ready_for_binding(latest):
                if self.claim_timed_out(latest):
                    raise BindError(f"device binding timeout: claim={latest.meta.name}")
                return False
        return True

    def handle_extra(self, key: str) -> Any:
        extra = getattr(self.handle, "extra", None)
        return extra.get(key) if isinstance(extra, dict) else None
