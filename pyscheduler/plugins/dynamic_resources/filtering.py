"""PreEnqueue, PreFilter, Filter and PostFilter of DynamicResources (kube 1.36 dynamicresources.go)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pyscheduler.framework.cycle_state import CycleState
from pyscheduler.framework.dra import ResourceClaim
from pyscheduler.framework.interfaces import PostFilterResult, PreFilterResult
from pyscheduler.framework.selectors import NodeSelector, SelectorError
from pyscheduler.framework.status import Status
from pyscheduler.framework.types import NodeInfo, Pod
from pyscheduler.plugins.dynamic_resources import extended
from pyscheduler.plugins.dynamic_resources.allocator import (
    AllocationError,
    AllocationTimeout,
    Allocator,
    NodeAllocationError,
)
from pyscheduler.plugins.dynamic_resources.claims import ClaimLookupError, pod_claims
from pyscheduler.plugins.dynamic_resources.common import (
    DEVICE_CLASS,
    ERR_CANNOT_ALLOCATE,
    ERR_CLAIM_IN_USE,
    ERR_NOT_AVAILABLE,
    ERR_STATE_NOT_FOUND,
    MSG_DEALLOCATED,
    MSG_NO_CLAIMS_TO_DEALLOCATE,
    MSG_STILL_NOT_SCHEDULABLE,
    NAME,
    STATE_KEY,
    ClaimInfo,
    State,
    can_be_reserved,
    has_binding_conditions,
    kobj,
    log,
    node_names,
    reserved_for_pod,
)
from pyscheduler.plugins.dynamic_resources.extended import ExtendedClaim
from pyscheduler.plugins.dynamic_resources.plugin_base import PluginBase

# Filter's verdicts that carry no per-node detail: one object each, shared by every node they reject
_NOT_AVAILABLE = Status.unresolvable(ERR_NOT_AVAILABLE, plugin=NAME)
_CANNOT_ALLOCATE = Status.unresolvable(ERR_CANNOT_ALLOCATE, plugin=NAME)
_NODE_NOT_FOUND = Status.as_error("node not found", plugin=NAME)


class Filtering(PluginBase):
    # ---------------------------------------------------------------------------------- PreEnqueue
    def pre_enqueue(self, pod: Pod) -> Status | None:
        if not pod.resource_claims:
            return None
        try:
            pod_claims(pod, self.deps.claims.get)
        except ClaimLookupError as e:
            return Status.unresolvable(str(e), plugin=NAME)
        return None

    # ---------------------------------------------------------------------------------- PreFilter
    def pre_filter(
        self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]
    ) -> tuple[PreFilterResult | None, Status | None]:
        s = State()
        state.write(STATE_KEY, s)
        s.ext = self._extended_claim(pod)
        if not pod.resource_claims and s.ext is None:
            return None, Status.skip(NAME)
        try:
            claims = pod_claims(pod, self.deps.claims.get)
        except ClaimLookupError as e:
            return None, Status.unresolvable(str(e), plugin=NAME)
        if not claims and s.ext is None:
            return None, Status.skip(NAME)
        s.infos = [ClaimInfo() for _ in claims]
        to_allocate = 0
        for i, claim in enumerate(claims):
            if claim.allocated and not can_be_reserved(claim) and not reserved_for_pod(pod, claim):
                return None, Status.unresolvable(ERR_CLAIM_IN_USE, plugin=NAME)
            if claim.allocated:
                info = s.infos[i]
                selector = (claim.allocation or {}).get("nodeSelector")
                if selector is not None:
                    try:
                        info.available_on = NodeSelector.parse(selector, "status.allocation.nodeSelector")
                    except SelectorError as e:
                        return None, Status.as_error(str(e), plugin=NAME)
                    info.available_names = node_names(info.available_on)
                info.binding_checks = has_binding_conditions(claim)
                continue
            to_allocate += 1
            if self.deps.claims.pending_allocation(claim.meta.uid) is not None:
                return None, Status.unresolvable(
                    f"resource claim {kobj(claim)} is in the process of being allocated", plugin=NAME
                )
            st = self._validate_classes(claim)
            if st is not None:
                return None, st
        if to_allocate or s.ext is not None:
            slices = self.resources.slices(self.handle.objects)
            s.allocator = Allocator(
                lambda name: self.resources.device_class(self.handle.objects, name),
                slices,
                self.deps.claims.allocated_devices(),
                self.cel,
                self.deps.claims.allocated_capacity(),
                index=self.slice_index(slices),
                selector_results=self.selector_results,
            )
        s.claims = claims
        s.allocated_only = not to_allocate and s.ext is None
        return None, None

    def _extended_claim(self, pod: Pod) -> ExtendedClaim | None:
        """The pod's special claim for extended resources backed by DRA (DRAExtendedResource)."""
        if not self.extended_resources or not any(
            q and extended.is_dra_extended_resource_name(r) for r, q in pod.requests.scalar.items()
        ):
            return None
        classes = list(self.handle.objects.list(DEVICE_CLASS))
        return extended.pre_filter(pod, classes, self.deps.claims.owned_by(pod.uid))

    def _validate_classes(self, claim: ResourceClaim) -> Status | None:
        for req in claim.requests:
            subs = [req.exactly] if req.exactly is not None else list(req.first_available)
            for sub in subs:
                if not sub.device_class_name:
                    return Status.as_error(f"request {sub.name}: unsupported request type", plugin=NAME)
                if self.resources.device_class(self.handle.objects, sub.device_class_name) is None:
                    return Status.unresolvable(
                        f"request {sub.name}: device class {sub.device_class_name} does not exist",
                        plugin=NAME,
                    )
        return None

    def pre_filter_extensions(self) -> None:
        return None

    # ---------------------------------------------------------------------------------- Filter
    def filter(self, state: CycleState, pod: Pod, node_info: NodeInfo) -> Status | None:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return Status.as_error(ERR_STATE_NOT_FOUND, plugin=NAME)
        if not s.claims and s.ext is None:
            return None
        node = node_info.node
        if node is None:
            return _NODE_NOT_FOUND
        st, ext_claim = self._filter_extended(s, pod, node_info, node.name)
        if st is not None or (ext_claim is None and not s.claims):
            return st
        unavailable = self._unavailable_claims(s, node.labels, node.name)
        allocations = None
        if s.allocator is not None:
            todo = [s.claims[i] for i in s.to_allocate()]
            if ext_claim is not None:
                todo.append(ext_claim)
            try:
                allocations = s.allocator.allocate(node.name, node.labels, todo, self.filter_deadline())
            except AllocationTimeout:
                return Status.as_error(f"node {node.name}: timed out trying to allocate devices", plugin=NAME)
            except NodeAllocationError as e:
                return Status.unresolvable(str(e), plugin=NAME)
            except AllocationError as e:
                return Status.as_error(str(e), plugin=NAME)
            if allocations is None or len(allocations) != len(todo):
                return _CANNOT_ALLOCATE
        if unavailable:
            with s.lock:
                s.unavailable.update(unavailable)
            return _NOT_AVAILABLE
        if allocations is not None:
            with s.lock:
                if ext_claim is not None:
                    s.ext_allocations[node.name] = allocations[-1]
                    allocations = allocations[:-1]
                s.node_allocations[node.name] = allocations
        return None

    def filter_nodes(self, state: CycleState, pod: Pod, nodes: Sequence[NodeInfo]) -> list[Status | None]:
        """``filter`` for many nodes. A pod whose claims are all allocated (most pods sharing a claim)
        only needs each node checked against where the claims are usable, as PreFilter worked it out:
        a set lookup per node for the usual node-name selector, one shared status for every rejection."""
        s = state.get(STATE_KEY)
        if not isinstance(s, State) or not s.allocated_only or not s.claims:
            f = self.filter
            return [f(state, pod, ni) for ni in nodes]
        infos = s.infos
        out: list[Status | None]
        if len(infos) == 1 and infos[0].available_names is not None and not infos[0].binding_checks:
            names = infos[0].available_names
            out = [
                _NODE_NOT_FOUND if (n := ni.node) is None else None if n.name in names else _NOT_AVAILABLE
                for ni in nodes
            ]
            if 0 not in s.unavailable and any(x is _NOT_AVAILABLE for x in out):
                with s.lock:
                    s.unavailable.add(0)
            return out
        out = []
        seen: set[int] = set()
        for ni in nodes:
            node = ni.node
            if node is None:
                out.append(_NODE_NOT_FOUND)
                continue
            unavailable = self._unavailable_claims(s, node.labels, node.name)
            if unavailable:
                seen.update(unavailable)
                out.append(_NOT_AVAILABLE)
            else:
                out.append(None)
        if seen and not seen <= s.unavailable:
            with s.lock:
                s.unavailable.update(seen)
        return out

    def _unavailable_claims(self, s: State, labels: Mapping[str, str], node_name: str) -> list[int]:
        """The allocated claims not usable on the node (allocation's node selector, binding failed)."""
        out = []
        for i, info in enumerate(s.infos):
            names = info.available_names
            if names is not None:
                usable = node_name in names
            else:
                selector = info.available_on
                usable = selector is None or selector.matches(labels, node_name)
            if not usable or (info.binding_checks and self.claim_binding_failed(s.claims[i])):
                out.append(i)
        return out

    def _filter_extended(
        self, s: State, pod: Pod, node_info: NodeInfo, node_name: str
    ) -> tuple[Status | None, ResourceClaim | None]:
        """kube's filterExtendedResources: (a failure, the special claim to allocate on this node)."""
        if s.ext is None:
            return None, None
        if not s.ext.in_memory and s.ext.claim.requests:
            return Status.unresolvable(extended.ERR_PRIOR_CLAIM, plugin=NAME), None
        try:
            node_ext = extended.for_node(s.ext, pod, node_info)
        except extended.CannotFit:
            return Status.unresolvable(extended.ERR_CANNOT_FIT, plugin=NAME), None
        with s.lock:
            s.ext.per_node[node_name] = node_ext
        if node_ext is None or s.ext.claim.allocated:
            return None, None
        return None, node_ext[0]

    # ---------------------------------------------------------------------------------- PostFilter
    def post_filter(
        self, state: CycleState, pod: Pod, filtered_node_status: Mapping[str, Status]
    ) -> tuple[PostFilterResult | None, Status | None]:
        s = state.get(STATE_KEY)
        if not isinstance(s, State):
            return None, Status.as_error(ERR_STATE_NOT_FOUND, plugin=NAME)
        if not s.claims and s.ext is None:
            return None, Status.unschedulable(MSG_NO_CLAIMS_TO_DEALLOCATE)
        for i in sorted(s.unavailable):
            claim = s.claims[i]
            users = claim.reserved_for
            if not users or (len(users) == 1 and users[0].uid == pod.uid):
                writer = self.deps.writer
                if writer is None:
                    return None, Status.as_error(
                        "no API client to deallocate ResourceClaims with", plugin=NAME
                    )
                log.debug("deallocating ResourceClaim", pod=pod.key, claim=claim.key)
                try:
                    writer.deallocate(claim.raw, pod.uid)
                except Exception as e:  # the API boundary: any failure is this cycle's error
                    return None, Status.as_error(e, plugin=NAME)
                return None, Status.unschedulable(MSG_DEALLOCATED)
        if s.ext is not None and not s.ext.in_memory:
            # the special claim of an earlier cycle: delete it, the next attempt starts anew
            if self.deps.writer is None:
                return None, Status.as_error("no API client to delete ResourceClaims with", plugin=NAME)
            try:
                self.deps.writer.delete(s.ext.claim.raw)
            except Exception as e:  # the API boundary
                return None, Status.as_error(e, plugin=NAME)
            return None, Status.unschedulable(extended.MSG_DELETED)
        return None, Status.unschedulable(MSG_STILL_NOT_SCHEDULABLE)
