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

import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from pyscheduler.framework.dra import (
    ALLOCATION_MODE_ALL,
    DeviceClass,
    ExactRequest,
    ResourceClaim,
    ResourceSlice,
)
from pyscheduler.framework.dra import Device as SliceDevice
from pyscheduler.framework.selectors import NodeSelector, SelectorError
from pyscheduler.plugins.dynamic_resources import capacity
from pyscheduler.plugins.dynamic_resources.cel import CELRuntimeError, Device, SelectorCache

DeviceID = tuple[str, str, str]
ALLOCATION_RESULTS_MAX_SIZE = 32  # resourceapi.AllocationResultsMaxSize


class AllocationError(Exception):
    """The claims cannot be allocated anywhere for a reason that is not about this node's devices."""


class NodeAllocationError(AllocationError):
    """Allocation failed on this node only (kube's ErrFailedAllocationOnNode): other nodes may still do."""


class AllocationTimeout(Exception):
    """The search ran past the filter timeout (DynamicResourcesArgs.filterTimeout)."""


TIMEOUT_CHECK_EVERY = 64  # search steps between two looks at the clock


@dataclass(slots=True)
class Pool:
    driver: str
    name: str
    slices: list[ResourceSlice] = field(default_factory=list)  # the slices with devices for the node
    incomplete: bool = False
    invalid: str = ""
    # DRAPartitionableDevices: counter sets by name, and the pool's device slices for other nodes (their
    # allocated devices consume counters too)
    counter_sets: dict[str, dict[str, Fraction]] = field(default_factory=dict)
    other_slices: list[ResourceSlice] = field(default_factory=list)
    has_binding_conditions: bool = False


def node_matches(node_name: str, labels: Mapping[str, str], s: ResourceSlice) -> bool:
    if s.node_name:
        return s.node_name == node_name
    if s.all_nodes:
        return True
    if s.node_selector is not None:
        return _parse_selector(s).matches(labels, node_name)
    return False


def _parse_selector(s: ResourceSlice) -> NodeSelector:
    try:
        return NodeSelector.parse(s.node_selector or {}, "spec.nodeSelector")
    except SelectorError as e:
        raise AllocationError(f"failed to perform node selection for slice {s.meta.name}: {e}") from None


def device_matches_node(node_name: str, labels: Mapping[str, str], s: ResourceSlice, d: SliceDevice) -> bool:
    """For a slice with perDeviceNodeSelection: whether this device is reachable from the node."""
    if d.node_name:
        return d.node_name == node_name
    if d.all_nodes:
        return True
    if d.node_selector is not None:
        try:
            return NodeSelector.parse(d.node_selector, "nodeSelector").matches(labels, node_name)
        except SelectorError as e:
            raise AllocationError(
                f"failed to perform node selection for device {d.name} in slice {s.meta.name}: {e}"
            ) from None
    return False


def _build_pool(
    driver: str, name: str, found: list[ResourceSlice], every: list[ResourceSlice] | None
) -> Pool:
    """kube's buildPool: device slices (sorted by name) with unique device names, counter sets from the
    slices that carry them, every counter a device consumes declared in its set."""
    found.sort(key=lambda s: s.meta.name)
    device_slices = [s for s in found if not s.shared_counters]
    pool = Pool(driver, name, device_slices)
    names: set[str] = set()
    for s in device_slices:
        for d in s.devices:
            if d.name in names:
                pool.invalid = f"duplicate device name {d.name}"
                return pool
            names.add(d.name)
            pool.has_binding_conditions |= bool(d.binding_conditions)
    for s in found:
        for set_name, counters in s.shared_counters:
            if set_name in pool.counter_sets:
                pool.invalid = f"duplicate counter set name {set_name}"
                return pool
            pool.counter_sets[set_name] = dict(counters)
    if every is not None:
        seen = {s.meta.name for s in found}
        pool.other_slices = [s for s in every if s.meta.name not in seen and not s.shared_counters]
    for s in (*device_slices, *pool.other_slices):
        for d in s.devices:
            for set_name, counters in d.consumes_counters:
                cs = pool.counter_sets.get(set_name)
                if cs is None:
                    pool.invalid = f"counter set {set_name} not found"
                    return pool
                for counter in counters:
                    if counter not in cs:
                        pool.invalid = f"counter {counter} not found in counter set {set_name}"
                        return pool
    return pool


class SliceIndex:
    """The slices of one allocation attempt, indexed once so that gathering a node's pools looks only at
    that node's slices and the node-independent ones (not at every slice of the cluster per node)."""

    def __init__(self, slices: Iterable[ResourceSlice]) -> None:
        self.by_node: dict[str, list[ResourceSlice]] = {}
        # allNodes / nodeSelector / counter sets / per-device node selection
        self.shared: list[tuple[ResourceSlice, NodeSelector | None]] = []
        # per pool: newest generation, and how many slices of it exist (over all nodes)
        self.generations: dict[tuple[str, str], tuple[int, int]] = {}
        self.by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        for s in slices:
            self.by_pool.setdefault((s.driver, s.pool), []).append(s)
            key = (s.driver, s.pool)
            gen, n = self.generations.get(key, (s.pool_generation, 0))
            if s.pool_generation > gen:
                gen, n = s.pool_generation, 0
            if s.pool_generation == gen:
                n += 1
            self.generations[key] = (gen, n)
            if s.node_name and not s.shared_counters:
                self.by_node.setdefault(s.node_name, []).append(s)
            elif s.all_nodes or s.shared_counters or s.per_device_node_selection:
                self.shared.append((s, None))
            elif s.node_selector is not None:
                self.shared.append((s, _parse_selector(s)))
            # a slice with no node selection at all is some future extension: left out, as kube does

    def _relevant(
        self, s: ResourceSlice, sel: NodeSelector | None, node_name: str, labels: Mapping[str, str]
    ) -> bool:
        if s.shared_counters or s.all_nodes:
            return True  # counter sets are needed to use a pool wherever its devices are
        if s.per_device_node_selection:
            return any(device_matches_node(node_name, labels, s, d) for d in s.devices)
        return sel is not None and sel.matches(labels, node_name)

    def pools(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
        by_pool: dict[tuple[str, str], list[ResourceSlice]] = {}
        mine = list(self.by_node.get(node_name, ()))
        mine.extend(s for s, sel in self.shared if self._relevant(s, sel, node_name, labels))
        for s in mine:
            key = (s.driver, s.pool)
            have = by_pool.get(key)
            if not have or s.pool_generation > have[0].pool_generation:
                by_pool[key] = [s]
            elif s.pool_generation == have[0].pool_generation:
                have.append(s)
        pools = []
        for (driver, name), found in by_pool.items():
            gen, want = found[0].pool_generation, found[0].pool_slice_count
            every = None
            if len(found) != want:
                # Other slices of the pool may target other nodes: count all of this generation.
                newest, count = self.generations[(driver, name)]
                if newest > gen:
                    continue  # obsolete: a newer generation is being published
                if count != want:
                    pools.append(Pool(driver, name, incomplete=True))
                    continue
                every = [s for s in self.by_pool[(driver, name)] if s.pool_generation == gen]
            pools.append(_build_pool(driver, name, found, every))
        # pools whose devices have binding conditions come last: devices usable at once are preferred
        pools.sort(key=lambda p: (p.has_binding_conditions, p.driver, p.name))
        return pools


def gather_pools(slices: Iterable[ResourceSlice], node_name: str, labels: Mapping[str, str]) -> list[Pool]:
    return SliceIndex(slices).pools(node_name, labels)


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
    all_devices: list[tuple[DeviceID, SliceDevice, ResourceSlice]] = field(default_factory=list)


class _MatchAttribute:
    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        self.requests = set(requests)
        self.attribute = attribute
        self.value: tuple[str, Any] | None = None
        self.n = 0

    def _applies(self, base: str, sub: str) -> bool:
        return not self.requests or base in self.requests or (bool(sub) and f"{base}/{sub}" in self.requests)

    def _lookup(self, device: SliceDevice, driver: str) -> tuple[str, Any] | None:
        attr = device.attributes.get(self.attribute)
        if attr is None:
            domain, sep, ident = self.attribute.partition("/")
            if not sep or domain != driver:
                return None
            attr = device.attributes.get(ident)
        if attr is None:
            return None
        for k in ("string", "int", "bool", "version"):
            if attr.get(k) is not None:
                return (k, attr[k])
        return None

    def add(self, base: str, sub: str, device: SliceDevice, driver: str) -> bool:
        if not self._applies(base, sub):
            return True
        v = self._lookup(device, driver)
        if v is None:
            return False
        if self.n == 0:
            self.value, self.n = v, 1
            return True
        if v != self.value:
            return False
        self.n += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if not self._applies(base, sub):
            return
        self.n -= 1
        if self.n == 0:
            self.value = None


def taint_prevents_allocation(device: SliceDevice, request: ExactRequest) -> bool:
    """A NoSchedule or NoExecute taint the request does not tolerate (DRADeviceTaints, beta and on in
    1.36); other effects, None included, do not keep a device from being allocated."""
    return any(
        t.effect in ("NoSchedule", "NoExecute") and not any(tol.tolerates(t) for tol in request.tolerations)
        for t in device.taints
    )


class _DistinctAttribute(_MatchAttribute):
    """kube's distinctAttributeConstraint: every device the constraint covers has a different value of the
    attribute. As kube does, the values are remembered per request name (not per device), so a second
    device of the same request replaces the first one's value in the comparison set."""

    def __init__(self, requests: tuple[str, ...], attribute: str) -> None:
        super().__init__(requests, attribute)
        self.values: dict[str, tuple[str, Any]] = {}

    def add(self, base: str, sub: str, device: SliceDevice, driver: str) -> bool:
        if self.requests and not self._applies(base, sub):
            return True
        v = self._lookup(device, driver)
        if v is None:
            return False
        if self.n and any(v == seen for seen in self.values.values()):
            return False
        self.values[base] = v
        self.n += 1
        return True

    def remove(self, base: str, sub: str) -> None:
        if self.requests and not self._applies(base, sub):
            return
        self.values.pop(base, None)
        self.n -= 1


_Chosen = tuple[_Request, DeviceID, SliceDevice, ResourceSlice]


class _Counters:
    """DRAPartitionableDevices: what is left of each pool's counter sets. Available counters start from the
    pool's counter sets minus what its allocated devices (on any node) consume; the devices picked in this
    attempt consume more. As kube does, pools are told apart by pool name only."""

    def __init__(self, allocated: set[DeviceID]) -> None:
        self.allocated = allocated
        self.available: dict[str, dict[str, dict[str, Fraction]]] = {}
        self.consumed: dict[str, dict[str, dict[str, Fraction]]] = {}

    def _available(self, pool: Pool) -> dict[str, dict[str, Fraction]]:
        got = self.available.get(pool.name)
        if got is None:
            got = {name: dict(counters) for name, counters in pool.counter_sets.items()}
            for s in (*pool.slices, *pool.other_slices):
                for d in s.devices:
                    if (s.driver, s.pool, d.name) not in self.allocated:
                        continue
                    for set_name, counters in d.consumes_counters:
                        have = got.get(set_name, {})
                        for c, v in counters.items():
                            if c in have:
                                have[c] -= v  # may go negative: then nothing is left
            self.available[pool.name] = got
        return got

    def reserve(self, pool: Pool, dev: SliceDevice) -> bool:
        available = self._available(pool)
        consumed = self.consumed.setdefault(pool.name, {})
        for set_name, counters in dev.consumes_counters:
            into = consumed.setdefault(set_name, {})
            for c, v in counters.items():
                into[c] = into.get(c, Fraction(0)) + v
        for set_name, counters in available.items():
            used = consumed.get(set_name, {})
            for c, v in counters.items():
                if v < used.get(c, 0):
                    self.release(pool, dev)
                    return False
        return True

    def release(self, pool: Pool, dev: SliceDevice) -> None:
        consumed = self.consumed.get(pool.name, {})
        for set_name, counters in dev.consumes_counters:
            into = consumed.get(set_name, {})
            for c, v in counters.items():
                into[c] = into.get(c, Fraction(0)) - v


class Allocator:
    """One allocation attempt over the given state; ``allocate`` may be called once per node."""

    def __init__(
        self,
        classes: Callable[[str], DeviceClass | None],
        slices: list[ResourceSlice],
        allocated: set[DeviceID],
        cel_cache: SelectorCache,
        allocated_capacity: Mapping[DeviceID, Mapping[str, Fraction]] | None = None,
    ) -> None:
        self.allocated_capacity = allocated_capacity or {}
        self.classes = classes
        self.slices = slices
        self._index: SliceIndex | None = None
        self.allocated = allocated
        self.cel = cel_cache
        self._cel_devices: dict[DeviceID, Device] = {}

    # ------------------------------------------------------------------------------ selectors
    def _cel_device(self, did: DeviceID, d: SliceDevice) -> Device:
        got = self._cel_devices.get(did)
        if got is None:
            got = Device(did[0], d.attributes, d.capacity, d.allow_multiple_allocations)
            self._cel_devices[did] = got
        return got

    def _selectors_match(self, who: str, selectors: tuple[str, ...], dev: Device) -> bool:
        for i, expr in enumerate(selectors):
            sel = self.cel.get(expr)
            if sel.error is not None:
                raise AllocationError(f"{who}: selector #{i}: CEL compile error: {sel.error}")
            try:
                if not sel.matches(dev):
                    return False
            except CELRuntimeError as e:
                raise AllocationError(f"{who}: selector #{i}: CEL runtime error: {e}") from None
        return True

    # ------------------------------------------------------------------------------ allocate
    def allocate(  # noqa: C901 (over 15 branches; to split, issue #22)
        self,
        node_name: str,
        labels: Mapping[str, str],
        claims: list[ResourceClaim],
        expired: Callable[[], bool] | None = None,
    ) -> list[dict[str, Any]] | None:
        """One allocation (status.allocation JSON) per claim, or None when this node cannot have them.
        ``expired`` (the filter timeout) is asked every few search steps; True raises AllocationTimeout."""
        if self._index is None:
            self._index = SliceIndex(self.slices)
        pools = self._index.pools(node_name, labels)
        matches: dict[tuple[DeviceID, int, str], bool] = {}
        requests: list[list[list[_Request]]] = []  # claim -> request -> alternatives (1 for exactly)
        constraints: list[list[_MatchAttribute]] = []  # _DistinctAttribute is one too
        for ci, claim in enumerate(claims):
            per_claim = []
            for req in claim.requests:
                alts = [req.exactly] if req.exactly is not None else list(req.first_available)
                per_claim.append(
                    [self._request(ci, claim, req.name, a, pools, matches, node_name, labels) for a in alts]
                )
            requests.append(per_claim)
            cons = []
            for i, c in enumerate(claim.constraints):
                if c.match_attribute:
                    cons.append(_MatchAttribute(c.requests, c.match_attribute))
                elif c.distinct_attribute:
                    cons.append(_DistinctAttribute(c.requests, c.distinct_attribute))
                else:
                    raise AllocationError(
                        f"claim {claim.key}, constraint #{i}: empty constraint (unsupported constraint type?)"
                    )
            constraints.append(cons)

        taking: dict[DeviceID, set[int]] = {}
        results: list[list[_Chosen]] = [[] for _ in claims]
        shares: dict[tuple[int, int], tuple[str, dict[str, tuple[Fraction, str]]]] = {}  # (claim, result #)
        allocating: dict[DeviceID, dict[str, Fraction]] = {}  # capacity taken by shares picked so far
        share_count: dict[DeviceID, int] = {}
        pool_of = {(p.driver, p.name): p for p in pools}
        counters = _Counters(self.allocated)

        def in_use(did: DeviceID) -> bool:
            return did in self.allocated or bool(taking.get(did))

        def take(  # noqa: C901 (kube's allocateDevice, step by step)
            r: _Request, did: DeviceID, dev: SliceDevice, sl: ResourceSlice, must: bool = False
        ) -> Callable[[], None] | None:
            multi = dev.allow_multiple_allocations
            if not multi and r.exact.admin_access:
                if r.claim_index in taking.get(did, ()):
                    return None
            elif not r.exact.admin_access and in_use(did):
                return None
            pool = pool_of[(did[0], did[1])]
            # a shared device whose capacity is in use already had its counters counted
            shared_in_use = multi and (did in self.allocated_capacity or share_count.get(did, 0) > 0)
            reserved = bool(dev.consumes_counters) and not shared_in_use
            if reserved and not counters.reserve(pool, dev):
                return None

            def release() -> None:
                if reserved:
                    counters.release(pool, dev)

            if dev.taints and taint_prevents_allocation(dev, r.exact):
                release()
                return None
            for added, c in enumerate(constraints[r.claim_index]):
                if not c.add(r.base, r.sub, dev, did[0]):
                    for c2 in constraints[r.claim_index][:added][::-1]:
                        c2.remove(r.base, r.sub)
                    release()
                    if must:
                        # "All" wants exactly this device: a claim whose constraint excludes one of them
                        # can never be allocated (kube treats it as an error, not as "no fit here")
                        raise AllocationError(
                            f"claim {r.claim_key}, request {r.name}: cannot add device {'/'.join(did)} because "
                            "a claim constraint would not be satisfied"
                        )
                    return None
            marked = not multi
            if marked:
                taking.setdefault(did, set()).add(r.claim_index)

            def drop_marks() -> None:
                if marked:
                    taking[did].discard(r.claim_index)
                for c in constraints[r.claim_index][::-1]:
                    c.remove(r.base, r.sub)
                release()

            policies = dev.capacity_policies
            if not capacity.fits(
                r.exact.capacity_requests,
                policies,
                self.allocated_capacity.get(did, {}),
                allocating.get(did, {}),
            ):
                drop_marks()
                return None
            share: dict[str, tuple[Fraction, str]] = {}
            if multi:
                share = capacity.consumption(r.exact.capacity_requests, policies)
                into = allocating.setdefault(did, {})
                for name, (v, _) in share.items():
                    into[name] = into.get(name, Fraction(0)) + v
                share_count[did] = share_count.get(did, 0) + 1
                shares[(r.claim_index, len(results[r.claim_index]))] = (str(uuid.uuid4()), share)
            results[r.claim_index].append((r, did, dev, sl))

            def undo() -> None:
                results[r.claim_index].pop()
                if multi:
                    shares.pop((r.claim_index, len(results[r.claim_index])), None)
                    left = allocating[did]
                    for name, (v, _) in share.items():
                        left[name] -= v
                    share_count[did] -= 1
                drop_marks()

            return undo

        steps = [0]

        def one(ci: int, ri: int, r: _Request | None, di: int) -> bool:  # noqa: C901 (over 15 branches; to split, issue #22)
            if expired is not None:
                steps[0] += 1
                if steps[0] % TIMEOUT_CHECK_EVERY == 0 and expired():
                    raise AllocationTimeout()
            if ci >= len(claims):
                return True
            if ri >= len(requests[ci]):
                return one(ci + 1, 0, None, 0)
            if r is None:
                # firstAvailable: in order, the first alternative with which everything after works
                return any(one(ci, ri, alt, 0) for alt in requests[ci][ri])
            if r.exact.allocation_mode == ALLOCATION_MODE_ALL and not r.all_devices:
                return False
            if di >= r.num_devices:
                return one(ci, ri + 1, None, 0)
            if len(results[ci]) + r.num_devices - di > ALLOCATION_RESULTS_MAX_SIZE:
                return False
            if r.exact.allocation_mode == ALLOCATION_MODE_ALL:
                did, dev, sl = r.all_devices[di]
                undo = take(r, did, dev, sl, must=True)
                if undo is None:
                    return False
                if one(ci, ri, r, di + 1):
                    return True
                undo()
                return False
            for pool in pools:
                if pool.incomplete or pool.invalid:
                    continue
                for s in pool.slices:
                    for dev in s.devices:
                        did = (pool.driver, pool.name, dev.name)
                        if r.exact.admin_access:
                            if ci in taking.get(did, ()):
                                continue
                        elif in_use(did):
                            continue
                        if not self._selectable(r, did, dev, matches, s, node_name, labels):
                            continue
                        undo = take(r, did, dev, s)
                        if undo is None:
                            continue
                        if one(ci, ri, r, di + 1):
                            return True
                        undo()
            return False

        if not one(0, 0, None, 0):
            for pool in pools:
                if pool.invalid:
                    raise NodeAllocationError("invalid resource pools were encountered")
            return None
        out = []
        for ci, claim in enumerate(claims):
            devs = []
            for k, (r, did, dev, _) in enumerate(results[ci]):
                entry: dict[str, Any] = {
                    "request": r.name,
                    "driver": did[0],
                    "pool": did[1],
                    "device": did[2],
                }
                if (ci, k) in shares:
                    share_id, share = shares[(ci, k)]
                    entry["shareID"] = share_id
                    if share:
                        entry["consumedCapacity"] = {
                            name: capacity.format_quantity(v, capacity.is_binary(text))
                            for name, (v, text) in share.items()
                        }
                if r.exact.admin_access:
                    entry["adminAccess"] = True
                if r.exact.raw_tolerations:
                    entry["tolerations"] = [dict(t) for t in r.exact.raw_tolerations]
                if dev.binding_conditions:
                    entry["bindingConditions"] = list(dev.binding_conditions)
                if dev.binding_failure_conditions:
                    entry["bindingFailureConditions"] = list(dev.binding_failure_conditions)
                devs.append(entry)
            allocation: dict[str, Any] = {"devices": {"results": devs}}
            config = self._config(claim, results[ci])
            if config:
                allocation["devices"]["config"] = config
            selector = self._node_selector(node_name, results[ci])
            if selector is not None:
                allocation["nodeSelector"] = selector
            out.append(allocation)
        return out

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
                            r.all_devices.append((did, dev, s))
            r.num_devices = len(r.all_devices)
        else:
            r.num_devices = exact.count
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
        cdev = self._cel_device(did, dev)
        ok = self._selectors_match(f"class {r.cls.name}", r.cls.selectors, cdev) and self._selectors_match(
            f"claim {r.claim_key}", r.exact.selectors, cdev
        )
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
