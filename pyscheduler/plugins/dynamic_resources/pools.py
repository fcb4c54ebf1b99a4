"""A node's view of the resource pools: which ResourceSlices target the node, grouped into pools.

Per pool only the newest generation counts; a pool whose slices of that generation are not all there
(``resourceSliceCount``) is *incomplete*; a pool with a duplicate device name, counter set or an
undeclared consumed counter is *invalid*. Slices with ``sharedCounters`` belong to every node's view of
their pool. Pools are sorted by driver and pool name, those with binding conditions last (kube's
incubating allocator). ``SliceIndex`` indexes the slices of one allocation attempt once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from pyscheduler.framework.dra import Device as SliceDevice
from pyscheduler.framework.dra import ResourceSlice
from pyscheduler.framework.selectors import NodeSelector, SelectorError
from pyscheduler.plugins.dynamic_resources.errors import AllocationError


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
        self._pools: dict[str, tuple[Mapping[str, str], list[Pool]]] = {}  # node -> (labels, pools)
        self.slices = list(slices)
        for s in self.slices:
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
        """The node's pools, sorted; kept per node for as long as the index is (and the node's labels
        stay equal): callers only read them."""
        hit = self._pools.get(node_name)
        if hit is not None and (hit[0] is labels or hit[0] == labels):
            return hit[1]
        pools = self._gather(node_name, labels)
        self._pools[node_name] = (labels, pools)
        return pools

    def _gather(self, node_name: str, labels: Mapping[str, str]) -> list[Pool]:
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


def same_slices(index: SliceIndex | None, slices: Sequence[ResourceSlice]) -> bool:
    """Whether ``index`` was built from exactly these parsed slices (the same objects, in order): the
    object store's parsed slices are kept per resourceVersion, so unchanged slices are the same objects."""
    return (
        index is not None
        and len(index.slices) == len(slices)
        and all(a is b for a, b in zip(index.slices, slices, strict=True))
    )
