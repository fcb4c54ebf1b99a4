"""The allocator's bookkeeping for one allocation attempt, apart from the search itself: the
``matchAttribute`` and ``distinctAttribute`` constraints of a claim, the device taints a request must
tolerate (DRADeviceTaints), and what is left of each pool's counter sets (DRAPartitionableDevices).
kube's ``structured`` allocator keeps the same state; the search (``allocator.py``) adds and removes
devices through these as it goes forward and back."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from pyscheduler.framework.dra import Device as SliceDevice
from pyscheduler.framework.dra import ExactRequest
from pyscheduler.plugins.dynamic_resources.pools import Pool

DeviceID = tuple[str, str, str]


class MatchAttribute:
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


class DistinctAttribute(MatchAttribute):
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


class Counters:
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
