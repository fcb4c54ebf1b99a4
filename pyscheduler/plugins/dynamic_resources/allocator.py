"""The structured allocator for one node: which devices a pod's unallocated claims get, or none.

Behaviour of k8s.io/dynamic-resource-allocation/structured at 1.36 with kube-scheduler's default feature
gates, i.e. its "incubating" allocator (pools sorted by driver and pool name, slices by name):

- Pools are gathered from the slices that target the node (``nodeName``, ``nodeSelector``, ``allNodes``).
  Per pool only the newest generation counts; a pool whose slices of that generation are not all there
  (``resourceSliceCount``) is *incomplete*: its devices are skipped, and an ``All`` request fails with
  "resource pool ... is currently being updated". A pool with a duplicate device name is *invalid*.
- Requests are allocated in claim order, request order, device after device, by depth-first search
  with backtracking: for each device slot the pools, slices and devices are tried in order; a device
  must match the DeviceClass selectors, then the request selectors (CEL), must not be allocated already
  (by another claim, an in-flight allocation, or earlier in this search) unless the request asks for
  admin access, and must keep every ``matchAttribute`` constraint satisfied. ``firstAvailable`` tries
  its subrequests in order and keeps the first with which everything after it can be allocated.
- ``All`` takes every matching device of the node; zero matching devices fail the request, and a device
  the claim's constraints exclude is an error.
- ``distinctAttribute`` constraints (values remembered per request name, as kube does).
- Device taints (NoSchedule/NoExecute) must be tolerated by the request; its tolerations are copied into
  the results.
- Partitionable devices: slices with ``sharedCounters`` belong to every node's view of their pool; a
  device that ``consumesCounters`` is taken only while its pool's counters last (devices allocated on
  other nodes of the pool count); ``perDeviceNodeSelection`` slices offer only devices the node reaches.
- Consumable capacity (``capacity``): requests' ``capacity.requests`` against each device's capacities
  and request policies; a device with ``allowMultipleAllocations`` is shared (a ``shareID`` and
  ``consumedCapacity`` per share, up to its capacity).
- Binding conditions: pools with such devices are tried last; results carry ``bindingConditions`` and
  ``bindingFailureConditions``; ``bindsToNode`` pins the claim to the node.
- Not replicated: kube's search-start optimisation for further devices of one request and its early exit
  when the 32-result limit is hit (same answers in the cases tested here; not proven identical).

Errors (a bad CEL expression, a missing DeviceClass) raise ``AllocationError`` with kube's wording; they
are per-claim problems and never crash the caller.
"""

from __future__ import annotations

import operator
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, overload

from pyscheduler.framework.dra import (
    ALLOCATION_MODE_ALL,
    DeviceClass,
    DeviceConstraint,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)
from pyscheduler.framework.dra import Device as SliceDevice
from pyscheduler.plugins.dynamic_resources import capacity
from pyscheduler.plugins.dynamic_resources.cel import CELRuntimeError, Device, SelectorCache
from pyscheduler.plugins.dynamic_resources.constraints import (
    Counters,
    DistinctAttribute,
    MatchAttribute,
    taint_prevents_allocation,
)
from pyscheduler.plugins.dynamic_resources.errors import (
    AllocationError,
    AllocationTimeout,
    NodeAllocationError,
)
from pyscheduler.plugins.dynamic_resources.pools import (
    Pool,
    SliceIndex,
    device_matches_node,
    gather_pools,
    node_matches,
)

__all__ = [
    "AllocationError",
    "AllocationTimeout",
    "Allocator",
    "NodeAllocationError",
    "Pool",
    "SliceIndex",
    "device_matches_node",
    "gather_pools",
    "node_matches",
    "taint_prevents_allocation",
]

DeviceID = tuple[str, str, str]


class _Undecided(Exception):
    """Allocator._first_device met a device only the full search decides on."""


ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize
TIMEOUT_CHECK_EVERY = 64  # search steps between two looks at the clock


@dataclass(slots=True)
class _Request:
    claim_index: int
    claim_key: str
    name: str  # "req" or "req/sub"
    base: str
    sub: str
    exact: ExactRequest
    cls: DeviceClass
    num_devices: int = 0
    all_devices: list[tuple[DeviceID, SliceDevice, ResourceSlice, Pool]] = field(default_factory=list)


_Chosen = tuple[_Request, DeviceID, SliceDevice, ResourceSlice]


_SliceKey = tuple[str, str, str, str, int]  # driver, pool, slice name, uid, resourceVersion
_Verdicts = dict[tuple[str, str], bool]  # (device, expression) -> selector verdict


class SelectorResults:
    """What is known of a slice's devices across allocation attempts: selector outcomes by (driver, pool,
    slice name, uid, resourceVersion) and then (device, expression) — a device's attributes and capacity
    change only with its slice's resourceVersion, so a selector's verdict on it holds until then (errors
    are not kept: they raise each time) — and whether a device's capacities have a request policy.
    Looked up through the parsed slice and device objects first (the object store re-parses a slice only
    when its resourceVersion changes), which spares building the content key per device and node.
    Bounded: everything is dropped when ``max_size`` verdicts are kept."""

    def __init__(self, max_size: int = 200_000) -> None:
        self._max = max_size
        self._size = 0
        self._by_content: dict[_SliceKey, _Verdicts] = {}
        self._by_object: dict[int, tuple[ResourceSlice, _Verdicts]] = {}
        self._policies: dict[int, tuple[SliceDevice, bool]] = {}

    def verdicts(self, s: ResourceSlice) -> _Verdicts:
        """The slice's table of verdicts (read and filled by the caller through ``put``)."""
        got = self._by_object.get(id(s))
        if got is not None and got[0] is s:
            return got[1]
        key = (s.driver, s.pool, s.meta.name, s.meta.uid, s.meta.resource_version)
        table = self._by_content.setdefault(key, {})
        self._by_object[id(s)] = (s, table)
        return table

    def put(self, table: _Verdicts, device: str, expr: str, value: bool) -> None:
        if self._size >= self._max:
            self._size = 0
            self._by_content = {}
            self._by_object = {}
            self._policies = {}
        table[(device, expr)] = value
        self._size += 1

    def capacity_policy(self, dev: SliceDevice) -> bool:
        """Whether any capacity of the device has a request policy."""
        got = self._policies.get(id(dev))
        if got is None or got[0] is not dev:
            got = self._policies[id(dev)] = (dev, any(p.has_policy for p in dev.capacity_policies.values()))
        return got[1]


class Allocator:
    """One allocation attempt over the given state; ``allocate`` may be called once per node."""

    def __init__(
        self,
        classes: Callable[[str], DeviceClass | None],
        slices: list[ResourceSlice],
        allocated: set[DeviceID],
        cel_cache: SelectorCache,
        allocated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] | None = None,
        index: SliceIndex | None = None,
        selector_results: SelectorResults | None = None,
    ) -> None:
        """``index``: a SliceIndex of ``slices`` kept from an earlier attempt (its pools per node are kept
        too); ``selector_results``: selector outcomes kept across attempts (see SelectorResults)."""
        self.allocated_capacity = allocated_capacity or {}
        self._classes = classes
        self._class_cache: dict[str, DeviceClass | None] = {}
        # an ExactCount request's _Request does not depend on the node: made once per attempt
        self._requests: dict[tuple[int, int, str], _Request] = {}
        self._plan_cache: tuple[tuple[ResourceClaim, ...], list[list[list[_Request]]]] | None = None
        self._selected: dict[
            tuple[int, str, int, int], tuple[ResourceSlice, ExactRequest, DeviceClass, bool]
        ] = {}
        self.slices = slices
        self._index = index
        self.allocated = allocated
        self.cel = cel_cache
        self._cel_devices: dict[DeviceID, Device] = {}
        self._results = selector_results if selector_results is not None else SelectorResults()

    def classes(self, name: str) -> DeviceClass | None:
        """The DeviceClass, looked up once per attempt (every node's search asks again)."""
        if name in self._class_cache:
            return self._class_cache[name]
        got = self._class_cache[name] = self._classes(name)
        return got

    # ------------------------------------------------------------------------------ selectors
    def _cel_device(self, did: DeviceID, d: SliceDevice) -> Device:
        got = self._cel_devices.get(did)
        if got is None:
            got = Device(did[0], d.attributes, d.capacity, d.allow_multiple_allocations)
            self._cel_devices[did] = got
        return got

    def _selectors_match(
        self, who: str, selectors: tuple[str, ...], did: DeviceID, dev: SliceDevice, s: ResourceSlice
    ) -> bool:
        if not selectors:
            return True
        results = self._results
        table = results.verdicts(s)
        for i, expr in enumerate(selectors):
            hit = table.get((dev.name, expr))
            if hit is None:
                sel = self.cel.get(expr)
                if sel.error is not None:
                    raise AllocationError(f"{who}: selector #{i}: CEL compile error: {sel.error}")
                try:
                    hit = sel.matches(self._cel_device(did, dev))
                except CELRuntimeError as e:
                    raise AllocationError(f"{who}: selector #{i}: CEL runtime error: {e}") from None
                results.put(table, dev.name, expr, hit)
            if not hit:
                return False
        return True

    # ------------------------------------------------------------------------------ allocate
    def allocate(
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: list[ResourceClaim],
        expired: Callable[[], bool] | None = None,
    ) -> Sequence[dict[str, Any]] | None:
        """One allocation (status.allocation JSON) per claim, or None when this node cannot have them.
        ``expired`` (the filter timeout) is asked every few search steps; True raises AllocationTimeout."""
        if self._index is None:
            self._index = SliceIndex(self.slices)
        pools = self._index.pools(node_name, labels)
        one = self._one_device(claims, pools, node_name, labels)
        if one is not None:
            if expired is not None and expired():  # the search's first step looks at the clock
                raise AllocationTimeout()
            try:
                found = self._first_device(one, pools, node_name, labels)
            except _Undecided:  # a device the shortcut does not decide on: the search does, from scratch
                return self._search(node_name, labels, claims, pools, expired)
            if found is not None:
                return Allocations(self, node_name, claims, [[found]])
            if any(pool.invalid for pool in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return self._search(node_name, labels, claims, pools, expired)

    def _search(
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: list[ResourceClaim],
        pools: list[Pool],
        expired: Callable[[], bool] | None,
    ) -> Sequence[dict[str, Any]] | None:
        search = _Search(self, node_name, labels, claims, pools, expired)
        if not search.run():
            if any(pool.invalid for pool in pools):
                raise NodeAllocationError("invalid resource pools were encountered")
            return None
        return Allocations(self, node_name, claims, search.results)

    # ------------------------------------------------------------------------------ one device
    def _one_device(
        self, claims: list[ResourceClaim], pools: list[Pool], node_name: str, labels: Mapping[str, str]
    ) -> _Request | None:
        """The request when the claims ask for exactly one device and nothing that ties devices together:
        one claim, one ``exactly`` request, ExactCount 1, no admin access, no capacity requests, no
        constraints (what a claim from upstream's DRA templates asks). None otherwise."""
        if len(claims) != 1:
            return None
        claim = claims[0]
        if claim.constraints or len(claim.requests) != 1:
            return None
        exact = claim.requests[0].exactly
        if (
            exact is None
            or exact.allocation_mode == ALLOCATION_MODE_ALL
            or exact.count != 1
            or exact.admin_access
            or exact.capacity_requests
        ):
            return None
        return self._plan(claims, pools, {}, node_name, labels)[0][0][0]

    def _first_device(
        self, r: _Request, pools: list[Pool], node_name: str, labels: Mapping[str, str]
    ) -> _Taken | None:
        """What the search's first step gives such a request: the first device in kube's order that is
        free, matches and is not kept off by a taint, as ``take`` would record it; None when there is
        none. Raises _Undecided on meeting a device whose taking involves more (counters, shared or
        consumable capacity): the search itself must decide then."""
        allocated = self.allocated
        matches: dict[tuple[DeviceID, int, str], bool] = {}
        for pool in pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for dev in s.devices:
                    did = (pool.driver, pool.name, dev.name)
                    if did in allocated or not self._selectable(r, did, dev, matches, s, node_name, labels):
                        continue
                    if (
                        dev.allow_multiple_allocations
                        or dev.consumes_counters
                        or did in self.allocated_capacity
                        or self._results.capacity_policy(dev)
                    ):
                        raise _Undecided()
                    if dev.taints and taint_prevents_allocation(dev, r.exact):
                        continue
                    return _Taken(r, did, dev, s, pool, reserved=False, marked=True)
        return None

    def _allocation(
        self, node_name: str, chosen: list[_Taken], ci: int, claim: ResourceClaim
    ) -> dict[str, Any]:
        """status.allocation for claim ``ci`` of a successful search (``chosen``: its devices)."""
        devs = [_Search.result_entry(ci, k, t) for k, t in enumerate(chosen)]
        allocation: dict[str, Any] = {"devices": {"results": devs}}
        picked: list[_Chosen] = [(t.r, t.did, t.dev, t.sl) for t in chosen]
        config = self._config(claim, picked)
        if config:
            allocation["devices"]["config"] = config
        selector = self._node_selector(node_name, picked)
        if selector is not None:
            allocation["nodeSelector"] = selector
        return allocation

    def _plan(
        self,
        claims: list[ResourceClaim],
        pools: list[Pool],
        matches: dict[tuple[DeviceID, int, str], bool],
        node_name: str,
        labels: Mapping[str, str],
    ) -> list[list[list[_Request]]]:
        """Claim -> request -> its alternatives (one for ``exactly``). Without an ``All`` request nothing
        in it depends on the node: made once per attempt for the same claims (every node's search asks)."""
        cached = self._plan_cache
        if cached is not None and len(cached[0]) == len(claims) and all(map(operator.is_, cached[0], claims)):
            return cached[1]
        plan = [
            [
                [
                    self._request(ci, claim, req.name, a, pools, matches, node_name, labels)
                    for a in ([req.exactly] if req.exactly is not None else req.first_available)
                ]
                for req in claim.requests
            ]
            for ci, claim in enumerate(claims)
        ]
        if all(
            r.exact.allocation_mode != ALLOCATION_MODE_ALL for reqs in plan for alts in reqs for r in alts
        ):
            self._plan_cache = (tuple(claims), plan)
        return plan

    def _request(
        self,
        ci: int,
        claim: ResourceClaim,
        base: str,
        exact: ExactRequest,
        pools: list[Pool],
        matches: dict[tuple[DeviceID, int, str], bool],
        node_name: str,
        labels: Mapping[str, str],
    ) -> _Request:
        exact_count = exact.allocation_mode != ALLOCATION_MODE_ALL
        if exact_count:
            hit = self._requests.get((ci, id(exact), base))
            if hit is not None and hit.exact is exact and hit.claim_key == claim.key:
                return hit
        if not exact.device_class_name:
            raise AllocationError(
                f"claim {claim.key}, request {exact.name}: missing device class name (unsupported request type?)"
            )
        cls = self.classes(exact.device_class_name)
        if cls is None:
            raise AllocationError(
                f"claim {claim.key}, request {exact.name}: could not retrieve device class "
                f'{exact.device_class_name}: deviceclass.resource.k8s.io "{exact.device_class_name}" not found'
            )
        _, _, sub = exact.name.partition("/")
        r = _Request(ci, claim.key, exact.name, base, sub, exact, cls)
        if exact.allocation_mode == ALLOCATION_MODE_ALL:
            for pool in pools:
                if pool.incomplete:
                    raise AllocationError(
                        f"claim {claim.key}, request {exact.name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.name} is currently being updated"
                    )
                if pool.invalid:
                    raise AllocationError(
                        f"claim {claim.key}, request {exact.name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.name} is currently invalid"
                    )
                for s in pool.slices:
                    for dev in s.devices:
                        did = (pool.driver, pool.name, dev.name)
                        if self._selectable(r, did, dev, matches, s, node_name, labels):
                            r.all_devices.append((did, dev, s, pool))
            r.num_devices = len(r.all_devices)
        else:
            r.num_devices = exact.count
        if exact_count:
            self._requests[(ci, id(exact), base)] = r
        return r

    def _selectable(
        self,
        r: _Request,
        did: DeviceID,
        dev: SliceDevice,
        matches: dict[tuple[DeviceID, int, str], bool],
        s: ResourceSlice,
        node_name: str,
        labels: Mapping[str, str],
    ) -> bool:
        key = (did, r.claim_index, r.name)
        hit = matches.get(key)
        if hit is not None:
            return hit
        # the selectors' verdict does not depend on the node: kept for the attempt, by the very slice
        # and request objects (kept in the value, so that a reused id() never matches)
        skey = (id(s), dev.name, id(r.exact), id(r.cls))
        seen = self._selected.get(skey)
        if seen is not None and seen[0] is s and seen[1] is r.exact and seen[2] is r.cls:
            ok = seen[3]
        else:
            ok = self._selectors_match(
                f"class {r.cls.name}", r.cls.selectors, did, dev, s
            ) and self._selectors_match(f"claim {r.claim_key}", r.exact.selectors, did, dev, s)
            self._selected[skey] = (s, r.exact, r.cls, ok)
        if ok and s.per_device_node_selection:
            ok = device_matches_node(node_name, labels, s, dev)
        matches[key] = ok
        return ok

    @staticmethod
    def _config(claim: ResourceClaim, chosen: list[_Chosen]) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        by_request: dict[str, _Request] = {}
        for picked, *_ in chosen:
            by_request.setdefault(picked.base, picked)
        seen_classes: dict[str, list[dict[str, Any]]] = {}
        for req in claim.requests:
            r = by_request.get(req.name)
            if r is None:
                continue
            if r.cls.name in seen_classes:
                for entry in seen_classes[r.cls.name]:
                    entry["requests"].append(r.name)
                continue
            entries = []
            for c in r.cls.config:
                entry = {"source": "FromClass", "requests": [r.name], **{k: v for k, v in c.items()}}
                out.append(entry)
                entries.append(entry)
            seen_classes[r.cls.name] = entries
        for c in claim.config:
            names = list(c.get("requests") or [])
            base = {k: v for k, v in c.items()}
            if not names:
                out.append({"source": "FromClaim", **base})
                continue
            for req in claim.requests:
                used = by_request.get(req.name)
                if req.name in names or (used is not None and used.sub and used.name in names):
                    out.append({"source": "FromClaim", **base})
        return out

    @staticmethod
    def _node_selector(node_name: str, chosen: list[_Chosen]) -> dict[str, Any] | None:
        """As kube's createNodeSelector: the first node-local device (or one that binds to its node) pins
        the claim to the node (matchFields metadata.name); otherwise the requirements of single-term node
        selectors (the slice's, or the device's under perDeviceNodeSelection) are merged into one term;
        allNodes adds nothing."""
        fields: list[Any] = []
        exprs: list[Any] = []
        for _, _, dev, s in chosen:
            local, selector = (
                (dev.node_name, dev.node_selector)
                if s.per_device_node_selection
                else (s.node_name, s.node_selector)
            )
            if local or dev.binds_to_node:
                return {
                    "nodeSelectorTerms": [
                        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
                    ]
                }
            if selector is not None:
                terms = list(selector.get("nodeSelectorTerms") or [])
                if len(terms) > 1:
                    raise AllocationError(f"unsupported ResourceSlice.NodeSelector with {len(terms)} terms")
                if terms:
                    for src, dst in (
                        (terms[0].get("matchFields"), fields),
                        (terms[0].get("matchExpressions"), exprs),
                    ):
                        for req in src or []:
                            if req not in dst:
                                dst.append(req)
        if not fields and not exprs:
            return None
        term: dict[str, Any] = {}
        if exprs:
            term["matchExpressions"] = exprs
        if fields:
            term["matchFields"] = fields
        return {"nodeSelectorTerms": [term]}


class Allocations(Sequence[dict[str, Any]]):
    """One node's allocations (status.allocation JSON, one per claim), built when first read: Filter
    finds them on every feasible node, but only the chosen node's are written (Reserve), and Score reads
    only those of claims with firstAvailable requests."""

    __slots__ = ("_alloc", "_built", "_claims", "_node", "_results")

    def __init__(
        self, alloc: Allocator, node_name: str, claims: list[ResourceClaim], results: list[list[_Taken]]
    ) -> None:
        self._alloc = alloc
        self._node = node_name
        self._claims = claims
        self._results = results
        self._built: list[dict[str, Any]] | None = None

    def _build(self) -> list[dict[str, Any]]:
        if self._built is None:
            self._built = [
                self._alloc._allocation(self._node, self._results[ci], ci, claim)
                for ci, claim in enumerate(self._claims)
            ]
        return self._built

    def __len__(self) -> int:
        return len(self._claims)

    @overload
    def __getitem__(self, i: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, i: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, i: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        return self._build()[i]

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self._build())


@dataclass(slots=True)
class _Taken:
    """A device taken for one slot of a request during the search, with what taking it changed."""

    r: _Request
    did: DeviceID
    dev: SliceDevice
    sl: ResourceSlice
    pool: Pool
    reserved: bool  # its pool's counters were reserved for it
    marked: bool  # recorded in _Search.taking (a device not shared between claims)
    share: dict[str, tuple[Fraction, str]] | None = None  # capacity consumed, for a shared device
    share_id: str = ""


class _Search:
    """The state of one allocation attempt on one node: kube's depth-first search with backtracking over
    claims, requests, alternatives (firstAvailable) and device slots. ``take`` records a device with
    everything it changes (in-use marks, constraints, counters, consumed capacity) in a ``_Taken``;
    ``untake`` reverts exactly that."""

    def __init__(
        self,
        alloc: Allocator,
        node_name: str,
        labels: Mapping[str, str],
        claims: list[ResourceClaim],
        pools: list[Pool],
        expired: Callable[[], bool] | None,
    ) -> None:
        self.alloc = alloc
        self.node_name = node_name
        self.labels = labels
        self.claims = claims
        self.pools = pools
        self.expired = expired
        self.steps = 0
        self.matches: dict[tuple[DeviceID, int, str], bool] = {}
        self.counters = Counters(alloc.allocated)
        self.taking: dict[DeviceID, set[int]] = {}  # device -> claims taking it in this search
        self.results: list[list[_Taken]] = [[] for _ in claims]
        self.allocating: dict[DeviceID, dict[str, Fraction]] = {}  # capacity taken by shares so far
        self.share_count: dict[DeviceID, int] = {}
        # claim -> request -> alternatives (one for exactly); claim -> constraints
        self.requests = alloc._plan(claims, pools, self.matches, node_name, labels)
        # constraints keep the values of the devices taken: new ones per search
        self.constraints: list[list[MatchAttribute]] = [  # DistinctAttribute is one too
            [_constraint(claim, i, c) for i, c in enumerate(claim.constraints)] if claim.constraints else []
            for claim in claims
        ]

    # ------------------------------------------------------------------------------ taking devices
    def in_use(self, did: DeviceID) -> bool:
        return did in self.alloc.allocated or bool(self.taking.get(did))

    def _available_to(self, r: _Request, did: DeviceID, dev: SliceDevice) -> bool:
        if not dev.allow_multiple_allocations and r.exact.admin_access:
            return r.claim_index not in self.taking.get(did, ())
        return r.exact.admin_access or not self.in_use(did)

    def _add_constraints(self, r: _Request, did: DeviceID, dev: SliceDevice) -> bool:
        cons = self.constraints[r.claim_index]
        for added, c in enumerate(cons):
            if not c.add(r.base, r.sub, dev, did[0]):
                for c2 in cons[:added][::-1]:
                    c2.remove(r.base, r.sub)
                return False
        return True

    def take(
        self,
        r: _Request,
        did: DeviceID,
        dev: SliceDevice,
        sl: ResourceSlice,
        pool: Pool,
        must: bool = False,
    ) -> _Taken | None:
        """kube's allocateDevice: the device for the request's next slot, or None if it cannot be had.
        ``must`` (allocationMode All): a constraint excluding the device is an AllocationError."""
        if not self._available_to(r, did, dev):
            return None
        multi = dev.allow_multiple_allocations
        # a shared device whose capacity is in use already had its counters counted
        shared_in_use = multi and (did in self.alloc.allocated_capacity or self.share_count.get(did, 0) > 0)
        reserved = bool(dev.consumes_counters) and not shared_in_use
        if reserved and not self.counters.reserve(pool, dev):
            return None
        t = _Taken(r, did, dev, sl, pool, reserved, marked=False)
        if dev.taints and taint_prevents_allocation(dev, r.exact):
            self._release(t)
            return None
        if not self._add_constraints(r, did, dev):
            self._release(t)
            if must:
                # "All" wants exactly this device: a claim whose constraint excludes one of them can never
                # be allocated (kube treats it as an error, not as "no fit here")
                raise AllocationError(
                    f"claim {r.claim_key}, request {r.name}: cannot add device {'/'.join(did)} because "
                    "a claim constraint would not be satisfied"
                )
            return None
        t.marked = not multi
        if t.marked:
            self.taking.setdefault(did, set()).add(r.claim_index)
        # nothing requested, nothing consumed and no request policy on the device's capacities: it fits
        # (capacity.fits' own first answer, without its walk over the device's capacities every time)
        if (
            r.exact.capacity_requests
            or did in self.alloc.allocated_capacity
            or did in self.allocating
            or self.alloc._results.capacity_policy(dev)
        ) and not capacity.fits(
            r.exact.capacity_requests,
            dev.capacity_policies,
            self.alloc.allocated_capacity.get(did, {}),
            self.allocating.get(did, {}),
        ):
            self._drop_marks(t)
            return None
        if multi:
            self._add_share(t)
        self.results[r.claim_index].append(t)
        return t

    def _add_share(self, t: _Taken) -> None:
        t.share = capacity.consumption(t.r.exact.capacity_requests, t.dev.capacity_policies)
        t.share_id = str(uuid.uuid4())
        into = self.allocating.setdefault(t.did, {})
        for name, (v, _) in t.share.items():
            into[name] = into.get(name, Fraction(0)) + v
        self.share_count[t.did] = self.share_count.get(t.did, 0) + 1

    def untake(self, t: _Taken) -> None:
        self.results[t.r.claim_index].pop()
        if t.share is not None:
            left = self.allocating[t.did]
            for name, (v, _) in t.share.items():
                left[name] -= v
            self.share_count[t.did] -= 1
        self._drop_marks(t)

    def _drop_marks(self, t: _Taken) -> None:
        if t.marked:
            self.taking[t.did].discard(t.r.claim_index)
        for c in self.constraints[t.r.claim_index][::-1]:
            c.remove(t.r.base, t.r.sub)
        self._release(t)

    def _release(self, t: _Taken) -> None:
        if t.reserved:
            self.counters.release(t.pool, t.dev)

    # ------------------------------------------------------------------------------ the search
    def run(self) -> bool:
        if all(len(alts) == 1 for reqs in self.requests for alts in reqs):  # no firstAvailable
            taken: list[_Taken] = []
            done = self._greedy(taken)
            if done is not None:
                return done
            for t in reversed(taken):  # a dead end after a choice: the full search decides
                self.untake(t)
        return self.step(0, 0, None, 0)

    def _greedy(self, taken: list[_Taken]) -> bool | None:
        """The depth-first search's first path, without backtracking: each slot takes the first device
        ``take`` accepts. Reaching the end, that is the search's own answer (it only leaves the first
        path after a dead end). A dead end with nothing taken is the search's answer too (False: it has
        no choice to go back on); after a choice, None: the caller undoes ``taken`` and searches."""
        self._tick()
        for ci, reqs in enumerate(self.requests):
            for alts in reqs:
                r = alts[0]
                is_all = r.exact.allocation_mode == ALLOCATION_MODE_ALL
                if is_all and not r.all_devices:
                    return None if taken else False
                for di in range(r.num_devices):
                    self._tick()
                    if len(self.results[ci]) + r.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
                        return None if taken else False
                    t: _Taken | None = None
                    if is_all:
                        did, dev, sl, pool = r.all_devices[di]
                        t = self.take(r, did, dev, sl, pool, must=True)
                    else:
                        for did, dev, sl, pool in self._candidates(r):
                            t = self.take(r, did, dev, sl, pool)
                            if t is not None:
                                break
                    if t is None:
                        return None if taken else False
                    taken.append(t)
        return True

    def _tick(self) -> None:
        """kube looks at its context before every search step; the clock is read at the first step (so a
        deadline already past fails at once, as in kube) and then every TIMEOUT_CHECK_EVERY steps."""
        if self.expired is not None:
            self.steps += 1
            if self.steps % TIMEOUT_CHECK_EVERY == 1 and self.expired():
                raise AllocationTimeout()

    def step(self, ci: int, ri: int, r: _Request | None, di: int) -> bool:
        """Whether slot ``di`` of request ``ri`` (alternative ``r``) of claim ``ci`` and everything after
        it can be allocated; on success the taken devices stay in ``results``."""
        self._tick()
        if ci >= len(self.claims):
            return True
        if ri >= len(self.requests[ci]):
            return self.step(ci + 1, 0, None, 0)
        if r is None:
            # firstAvailable: in order, the first alternative with which everything after works
            return any(self.step(ci, ri, alt, 0) for alt in self.requests[ci][ri])
        is_all = r.exact.allocation_mode == ALLOCATION_MODE_ALL
        if is_all and not r.all_devices:
            return False
        if di >= r.num_devices:
            return self.step(ci, ri + 1, None, 0)
        if len(self.results[ci]) + r.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
            return False
        if is_all:
            did, dev, sl, pool = r.all_devices[di]
            return self._try(ci, ri, r, di, self.take(r, did, dev, sl, pool, must=True))
        return any(
            self._try(ci, ri, r, di, self.take(r, did, dev, sl, pool))
            for did, dev, sl, pool in self._candidates(r)
        )

    def _try(self, ci: int, ri: int, r: _Request, di: int, t: _Taken | None) -> bool:
        """With ``t`` taken (None: it could not be), go on to the next slot; undo ``t`` if that fails."""
        if t is None:
            return False
        if self.step(ci, ri, r, di + 1):
            return True
        self.untake(t)
        return False

    def _candidates(self, r: _Request) -> Iterator[tuple[DeviceID, SliceDevice, ResourceSlice, Pool]]:
        """The node's devices in kube's order (pools, slices, devices) that are free for the request and
        match its class and selectors. A generator: devices taken by deeper steps are seen as in use."""
        for pool in self.pools:
            if pool.incomplete or pool.invalid:
                continue
            for s in pool.slices:
                for dev in s.devices:
                    did = (pool.driver, pool.name, dev.name)
                    if r.exact.admin_access:
                        if r.claim_index in self.taking.get(did, ()):
                            continue
                    elif self.in_use(did):
                        continue
                    if self.alloc._selectable(r, did, dev, self.matches, s, self.node_name, self.labels):
                        yield did, dev, s, pool

    # ------------------------------------------------------------------------------ results
    @staticmethod
    def result_entry(ci: int, k: int, t: _Taken) -> dict[str, Any]:
        """One entry of status.allocation.devices.results."""
        r, did, dev = t.r, t.did, t.dev
        entry: dict[str, Any] = {"request": r.name, "driver": did[0], "pool": did[1], "device": did[2]}
        if t.share is not None:
            entry["shareID"] = t.share_id
            if t.share:
                entry["consumedCapacity"] = {
                    name: capacity.format_quantity(v, capacity.is_binary(text))
                    for name, (v, text) in t.share.items()
                }
        if r.exact.admin_access:
            entry["adminAccess"] = True
        if r.exact.raw_tolerations:
            entry["tolerations"] = [dict(tol) for tol in r.exact.raw_tolerations]
        if dev.binding_conditions:
            entry["bindingConditions"] = list(dev.binding_conditions)
        if dev.binding_failure_conditions:
            entry["bindingFailureConditions"] = list(dev.binding_failure_conditions)
        return entry


def _constraint(claim: ResourceClaim, i: int, c: DeviceConstraint) -> MatchAttribute:
    if c.match_attribute:
        return MatchAttribute(c.requests, c.match_attribute)
    if c.distinct_attribute:
        return DistinctAttribute(c.requests, c.distinct_attribute)
    raise AllocationError(
        f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
    )
