"""The allocator's one-device shortcut (``Allocator._one_device``/``_first_device``): a claim asking for
one device, the DRA templates' usual claim, is answered without the depth-first search. The builders are
test_allocator's and test_allocator_capacity's."""

from __future__ import annotations

import random
from fractions import Fraction
from typing import Any

import pytest

from pyscheduler.framework.dra import ResourceClaim, ResourceSlice
from pyscheduler.plugins.dynamic_resources import allocator as alloc_mod
from pyscheduler.plugins.dynamic_resources.allocator import AllocationError, Allocator, NodeAllocationError
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache
from pyscheduler.plugins.dynamic_resources.test_allocator import (
    CLASSES,
    DRIVER_A,
    NO_SCHEDULE,
    NODE1,
    claim,
    dev,
    req,
    slice_,
)
from pyscheduler.plugins.dynamic_resources.test_allocator_capacity import (
    GPU_80G,
    cap_dev,
    counter_slice,
    partition,
)

MEM = f'device.capacity["{DRIVER_A}"].memory.compareTo(quantity("2Gi")) >= 0'


def _device(rng: random.Random, name: str) -> dict[str, Any]:
    roll = rng.random()
    if roll < 0.2:
        d = partition(name, rng.choice(["40Gi", "80Gi"]))
    elif roll < 0.3:
        d = cap_dev(name, "8Gi", multi=True)
    elif roll < 0.35:
        d = cap_dev(name, "8Gi", policy={"default": "2Gi", "validValues": ["2Gi", "4Gi", "8Gi"]})
    else:
        d = dev(name, rng.choice(["1Gi", "2Gi", "4Gi", None]))
    if rng.random() < 0.15:
        d["taints"] = [NO_SCHEDULE]
    if rng.random() < 0.1:
        d["bindingConditions"] = ["attached"]
    return d


def _slices(rng: random.Random) -> list[ResourceSlice]:
    out = []
    for p in range(rng.randint(1, 3)):
        devices = [_device(rng, f"d{10 * p + i}") for i in range(rng.randint(0, 4))]
        if devices and rng.random() < 0.05:
            devices.append(dict(devices[0]))  # a duplicate name: an invalid pool
        where: dict[str, Any] = {"allNodes": True} if rng.random() < 0.2 else {}
        partitions = any("consumesCounters" in d for d in devices)
        incomplete = rng.random() < 0.1
        count = 2 if partitions or incomplete else 1
        out.append(slice_(f"s{p}", f"p{p}", DRIVER_A, *devices, count=count, **where))
        if partitions and not incomplete:
            out.append(counter_slice(f"c{p}", f"p{p}", GPU_80G))
    return out


def _claim(rng: random.Random) -> ResourceClaim:
    r = req("r0", "class-a", 1 if rng.random() < 0.8 else 2, *((MEM,) if rng.random() < 0.3 else ()))
    if rng.random() < 0.1:
        r["exactly"]["adminAccess"] = True
    if rng.random() < 0.2:
        r["exactly"]["tolerations"] = [{"key": "broken", "operator": "Exists"}]
    if rng.random() < 0.1:
        r["exactly"]["capacity"] = {"requests": {"memory": "2Gi"}}
    constraints = [{"requests": [], "matchAttribute": f"{DRIVER_A}/numa"}] if rng.random() < 0.1 else []
    return claim("c0", r, constraints=constraints)


def _outcome(claims: list[ResourceClaim], slices: list[ResourceSlice], used: set[Any], shares: Any) -> Any:
    a = Allocator(CLASSES.get, slices, used, SelectorCache(), allocated_capacity=shares)
    try:
        out = a.allocate(NODE1, {"region": "r1"}, claims)
    except (AllocationError, NodeAllocationError) as e:
        return ("error", str(e))
    if out is None:
        return None
    got = [dict(x) for x in out]
    for x in got:  # a share's ID is random
        for r in x["devices"]["results"]:
            r.pop("shareID", None)
    return got


def test_the_one_device_shortcut_answers_as_the_search(monkeypatch: pytest.MonkeyPatch) -> None:
    """The first free, matching device a taint does not keep off, as the search's first step takes it.
    On random nodes (devices in use, tainted, with binding conditions, partitions of a counter set, shared
    devices with consumable capacity and shares already taken, request policies, incomplete and invalid
    pools, several pools) and claims (one device or two, selectors, tolerations, admin access, capacity
    requests, constraints), the allocations, None and errors are those of the search."""
    rng = random.Random(1411)
    shortcut = 0
    for _ in range(400):
        slices = _slices(rng)
        names = [(s.driver, s.pool, d.name) for s in slices for d in s.devices]
        used = {n for n in names if rng.random() < 0.25}
        shares = {n: {"memory": Fraction(2 << 30)} for n in names if rng.random() < 0.1}
        claims = [_claim(rng)]
        got = _outcome(claims, slices, used, shares)
        with monkeypatch.context() as m:
            m.setattr(alloc_mod.Allocator, "_one_device", lambda self, *a: None)
            want = _outcome(claims, slices, used, shares)
        assert got == want, (claims[0].raw, slices, used, shares)
        probe = Allocator(CLASSES.get, slices, used, SelectorCache(), allocated_capacity=shares)
        if probe._one_device(claims, [], NODE1, {}) is not None:
            shortcut += 1
    assert shortcut > 150  # most cases took the shortcut (the others check that they do not)


def test_a_past_deadline_fails_the_shortcut_at_once() -> None:
    a = Allocator(CLASSES.get, [slice_("s1", "p1", DRIVER_A, dev("d1"))], set(), SelectorCache())
    with pytest.raises(alloc_mod.AllocationTimeout):
        a.allocate(NODE1, {}, [claim("c0", req("r0"))], lambda: True)
