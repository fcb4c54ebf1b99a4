"""The structured allocator on what is left of a device or a pool: partitionable devices (counter sets,
DRAPartitionableDevices) and consumable capacity (DRAConsumableCapacity). The builders are
test_allocator's."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import pytest

from pyscheduler.framework.dra import ResourceSlice
from pyscheduler.plugins.dynamic_resources.allocator import Allocator, NodeAllocationError, SliceIndex
from pyscheduler.plugins.dynamic_resources.cel import SelectorCache
from pyscheduler.plugins.dynamic_resources.test_allocator import (
    CLASSES,
    DRIVER_A,
    NODE1,
    allocate,
    claim,
    req,
    results,
    slice_,
)

# ------------------------------------------------------------------------ partitionable devices (counters)


def counter_slice(name: str, pool: str, *sets: tuple[str, dict[str, str]], count: int = 2) -> ResourceSlice:
    """A slice that only carries the pool's counter sets (no devices, no node selection)."""
    spec: dict[str, Any] = {
        "driver": DRIVER_A,
        "pool": {"name": pool, "generation": 1, "resourceSliceCount": count},
        "sharedCounters": [
            {"name": n, "counters": {k: {"value": v} for k, v in counters.items()}} for n, counters in sets
        ],
    }
    return ResourceSlice.from_dict({"metadata": {"name": name}, "spec": spec})


def partition(name: str, memory: str, counter_set: str = "gpu-0") -> dict[str, Any]:
    return {
        "name": name,
        "consumesCounters": [{"counterSet": counter_set, "counters": {"memory": {"value": memory}}}],
    }


GPU_80G = ("gpu-0", {"memory": "80Gi"})


@pytest.mark.parametrize(
    ("devices", "count", "allocated", "want"),
    [
        pytest.param(
            [partition("whole", "80Gi"), partition("half-0", "40Gi"), partition("half-1", "40Gi")],
            1,
            set(),
            ["whole"],
            id="the whole device fits",
        ),
        pytest.param(
            [partition("whole", "80Gi"), partition("half-0", "40Gi"), partition("half-1", "40Gi")],
            2,
            set(),
            ["half-0", "half-1"],
            id="two halves: the whole one would leave nothing",
        ),
        pytest.param(
            [partition("whole", "80Gi"), partition("half-0", "40Gi"), partition("half-1", "40Gi")],
            1,
            {(DRIVER_A, "p1", "half-0")},
            ["half-1"],
            id="an allocated half leaves no room for the whole",
        ),
        pytest.param(
            [partition("whole", "80Gi"), partition("half-0", "40Gi"), partition("half-1", "40Gi")],
            3,
            set(),
            None,
            id="counters exhausted",
        ),
        pytest.param(
            [partition("big", "100Gi")],
            1,
            set(),
            None,
            id="a device needing more than the set has",
        ),
    ],
)
def test_partitionable_devices(
    devices: list[dict[str, Any]], count: int, allocated: set[tuple[str, str, str]], want: list[str] | None
) -> None:
    slices = [
        counter_slice("p1-counters", "p1", GPU_80G),
        slice_("p1-devices", "p1", DRIVER_A, *devices, count=2),
    ]
    out = allocate([claim("c0", req("r0", count=count))], slices, allocated)
    if want is None:
        assert out is None
        return
    assert [d for *_, d in results(out)[0]] == want


def test_counters_consumed_by_devices_of_other_nodes_count() -> None:
    """The pool spans two nodes through one counter set: a partition allocated on node-2 uses it up."""
    slices = [
        counter_slice("p1-counters", "p1", GPU_80G, count=3),
        slice_("p1-node1", "p1", DRIVER_A, partition("a", "80Gi"), count=3),
        slice_("p1-node2", "p1", DRIVER_A, partition("b", "80Gi"), node="node-2", count=3),
    ]
    assert allocate([claim("c0", req("r0"))], slices) is not None
    assert allocate([claim("c0", req("r0"))], slices, {(DRIVER_A, "p1", "b")}) is None


@pytest.mark.parametrize(
    ("sets", "devices", "reason"),
    [
        pytest.param(
            [GPU_80G], [partition("a", "1Gi", "gpu-9")], "counter set gpu-9 not found", id="no such set"
        ),
        pytest.param(
            [GPU_80G],
            [
                {
                    "name": "a",
                    "consumesCounters": [{"counterSet": "gpu-0", "counters": {"cores": {"value": "1"}}}],
                }
            ],
            "counter cores not found in counter set gpu-0",
            id="no such counter",
        ),
        pytest.param(
            [GPU_80G, GPU_80G], [partition("a", "1Gi")], "duplicate counter set name gpu-0", id="dup set"
        ),
    ],
)
def test_invalid_counter_pools_fail_the_node(
    sets: list[tuple[str, dict[str, str]]], devices: list[dict[str, Any]], reason: str
) -> None:
    pool = SliceIndex(
        [counter_slice("c", "p1", *sets), slice_("d", "p1", DRIVER_A, *devices, count=2)]
    ).pools(NODE1, {})
    assert [p.invalid for p in pool] == [reason]
    with pytest.raises(NodeAllocationError, match="invalid resource pools were encountered"):
        allocate(
            [claim("c0", req("r0"))],
            [counter_slice("c", "p1", *sets), slice_("d", "p1", DRIVER_A, *devices, count=2)],
        )


# ------------------------------------------------------------------------ consumable capacity


def cap_dev(
    name: str, memory: str, multi: bool = False, policy: dict[str, Any] | None = None
) -> dict[str, Any]:
    c: dict[str, Any] = {"value": memory}
    if policy is not None:
        c["requestPolicy"] = policy
    d: dict[str, Any] = {"name": name, "capacity": {"memory": c}}
    if multi:
        d["allowMultipleAllocations"] = True
    return d


def cap_req(name: str, memory: str | None, count: int = 1) -> dict[str, Any]:
    r = req(name, count=count)
    if memory is not None:
        r["exactly"]["capacity"] = {"requests": {"memory": memory}}
    return r


def shares(out: Sequence[dict[str, Any]] | None) -> list[list[tuple[str, str | None]]]:
    assert out is not None
    return [
        [(r["device"], (r.get("consumedCapacity") or {}).get("memory")) for r in a["devices"]["results"]]
        for a in out
    ]


@pytest.mark.parametrize(
    ("device", "requests", "want"),
    [
        pytest.param(cap_dev("d1", "80Gi"), [cap_req("r0", "40Gi")], [[("d1", None)]], id="exclusive, fits"),
        pytest.param(cap_dev("d1", "80Gi"), [cap_req("r0", "100Gi")], None, id="exclusive, more than it has"),
        pytest.param(
            cap_dev("d1", "80Gi"),
            [
                {
                    "name": "r0",
                    "exactly": {"deviceClassName": "class-a", "capacity": {"requests": {"cores": "1"}}},
                }
            ],
            None,
            id="a capacity the device does not have",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True),
            [cap_req("r0", "40Gi"), cap_req("r1", "40Gi")],
            [[("d1", "40Gi"), ("d1", "40Gi")]],
            id="two shares of one device",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True), [cap_req("r0", "40Gi"), cap_req("r1", "41Gi")], None, id="over"
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True), [cap_req("r0", None)], [[("d1", "80Gi")]], id="no request: all"
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"default": "10Gi", "validRange": {"min": "10Gi"}}),
            [cap_req("r0", None)],
            [[("d1", "10Gi")]],
            id="no request: the policy default",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"validRange": {"min": "10Gi", "step": "10Gi"}}),
            [cap_req("r0", "15Gi")],
            [[("d1", "20Gi")]],
            id="rounded up to the step",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"validRange": {"min": "10Gi", "step": "10Gi"}}),
            [cap_req("r0", "1Gi")],
            [[("d1", "10Gi")]],
            id="raised to the minimum",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"validRange": {"min": "10Gi", "max": "40Gi"}}),
            [cap_req("r0", "50Gi")],
            None,
            id="above the range's max",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"validValues": ["10Gi", "20Gi", "40Gi"]}),
            [cap_req("r0", "15Gi")],
            [[("d1", "20Gi")]],
            id="the next valid value",
        ),
        pytest.param(
            cap_dev("d1", "80Gi", multi=True, policy={"validValues": ["10Gi", "20Gi"]}),
            [cap_req("r0", "30Gi")],
            None,
            id="no valid value large enough",
        ),
    ],
)
def test_consumable_capacity(
    device: dict[str, Any], requests: list[dict[str, Any]], want: list[list[tuple[str, str | None]]] | None
) -> None:
    out = allocate([claim("c0", *requests)], [slice_("s1", "p1", DRIVER_A, device)])
    if want is None:
        assert out is None
        return
    assert shares(out) == want
    ids = [r.get("shareID") for r in out[0]["devices"]["results"]] if out else []
    if device.get("allowMultipleAllocations"):
        assert all(ids) and len(set(ids)) == len(ids)  # every share has its own id
    else:
        assert not any(ids)


def test_shares_already_allocated_count() -> None:
    s = [slice_("s1", "p1", DRIVER_A, cap_dev("d1", "80Gi", multi=True))]
    a = Allocator(
        CLASSES.get, s, set(), SelectorCache(), {(DRIVER_A, "p1", "d1"): {"memory": Fraction(60 * 2**30)}}
    )
    assert a.allocate(NODE1, {}, [claim("c0", cap_req("r0", "40Gi"))]) is None
    out = a.allocate(NODE1, {}, [claim("c0", cap_req("r0", "20Gi"))])
    assert shares(out) == [[("d1", "20Gi")]]
